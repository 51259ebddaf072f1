"""The argument types the tools share (mcp_bridge/tools/arguments.py): what each accepts and
how its schema describes it for the model, and that the tools' schemas carry those words."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from mcp_bridge.tools import arguments
from mcp_bridge.tools.arguments import one_of


def test_one_of_advertises_its_words_in_the_schema():
    words = one_of("front", "back")
    adapter = TypeAdapter(Annotated[str | None, Field(description="Which end.", json_schema_extra=words)])
    schema = adapter.json_schema()
    assert schema["enum"] == ["front", "back"] and schema["description"] == "Which end."
    assert adapter.validate_python("front") == "front" and adapter.validate_python(None) is None
    with pytest.raises(ValidationError):
        adapter.validate_python(3)


@pytest.mark.parametrize(
    ("shared", "kind"),
    [
        (arguments.SessionArg, {"type": "string"}),
        (arguments.WorkerArg, {"type": "string"}),
        (arguments.RequestIdArg, {"type": "string"}),
        (arguments.ReviewArg, {"type": "boolean"}),
        (arguments.DependsArg, {"type": "array", "items": {"type": "string"}}),
    ],
)
def test_the_shared_arguments_are_optional_and_described(shared, kind):
    schema = TypeAdapter(shared).json_schema()
    assert schema["description"].strip()
    assert schema["anyOf"] == [kind, {"type": "null"}]


def test_the_position_names_both_ends_in_its_words_and_its_description():
    schema = TypeAdapter(arguments.PositionArg).json_schema()
    assert schema["enum"] == ["front", "back"]
    assert "'front'" in schema["description"] and "'back'" in schema["description"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_every_tool_taking_a_shared_optional_argument_describes_it_in_the_shared_words(client):
    shared = {
        "session_name": TypeAdapter(arguments.SessionArg).json_schema()["description"],
        "worker": TypeAdapter(arguments.WorkerArg).json_schema()["description"],
        "request_id": TypeAdapter(arguments.RequestIdArg).json_schema()["description"],
    }
    seen = set()
    for tool in (await client.list_tools()).tools:
        for name, spec in tool.input_schema.get("properties", {}).items():
            # A tool that requires one (resuming names its session) words it itself.
            if name in shared and name not in tool.input_schema.get("required", []):
                assert spec["description"] == shared[name], f"{tool.name}.{name}"
                seen.add(name)
    assert seen == set(shared)


@pytest.mark.parametrize("value", [0, 1, 1800, -3])
def test_a_whole_number_is_taken_as_it_is(value):
    assert TypeAdapter(arguments.WholeNumber | None).validate_python(value) == value


@pytest.mark.parametrize("value", [True, False, "1800", "1", 1.0, 2.5, "true"])
def test_a_whole_number_refuses_a_flag_text_or_fraction(value):
    # Lax pydantic takes true as 1 and "1800" as 1800: a slip would become a real value.
    with pytest.raises(ValidationError) as refused:
        TypeAdapter(arguments.WholeNumber | None).validate_python(value)
    assert all(err["type"] in {"int_type", "none_required"} for err in refused.value.errors())


def test_a_whole_number_is_described_as_an_integer_in_the_schema():
    assert TypeAdapter(arguments.WholeNumber).json_schema() == {"type": "integer"}
