"""The argument types the tools share (mcp_bridge/tools/arguments.py): what each accepts and
how its schema describes it for the model, and that the tools' schemas carry those words."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from mcp_bridge.tools import arguments
from mcp_bridge.tools.arguments import one_of, optional, required


def test_a_required_argument_is_its_kind_described():
    adapter = TypeAdapter(required(int, "How many plans."))
    assert adapter.json_schema() == {"type": "integer", "description": "How many plans."}
    assert adapter.validate_python(3) == 3
    with pytest.raises(ValidationError):
        adapter.validate_python(None)
    with pytest.raises(ValidationError):
        adapter.validate_python("three")


def test_an_optional_argument_may_be_none_and_passes_fields_other_arguments_on():
    adapter = TypeAdapter(optional(int, "At most this many.", ge=1, le=50))
    schema = adapter.json_schema()
    assert schema["description"] == "At most this many."
    assert {"type": "null"} in schema["anyOf"]
    assert {"type": "integer", "minimum": 1, "maximum": 50} in schema["anyOf"]
    assert adapter.validate_python(None) is None and adapter.validate_python(50) == 50
    with pytest.raises(ValidationError):
        adapter.validate_python(0)


def test_one_of_advertises_its_words_in_the_schema():
    adapter = TypeAdapter(one_of("Which end.", "front", "back"))
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
