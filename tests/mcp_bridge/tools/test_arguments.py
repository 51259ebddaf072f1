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
    # session_name, worker and request_id are described in the instructions instead.
    assert bool(schema.get("description", "").strip()) is (shared not in SHARED_TYPES)
    assert schema["anyOf"] == [kind, {"type": "null"}]


SHARED_TYPES = (arguments.SessionArg, arguments.WorkerArg, arguments.RequestIdArg)


def test_the_position_names_both_ends_in_its_words_and_its_description():
    schema = TypeAdapter(arguments.PositionArg).json_schema()
    assert schema["enum"] == ["front", "back"]
    assert "'front'" in schema["description"] and "'back'" in schema["description"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_shared_optional_arguments_are_described_once_in_the_instructions(client):
    instructions = " ".join(client.instructions.split())
    seen = set()
    for tool in (await client.list_tools()).tools:
        for name, spec in tool.input_schema.get("properties", {}).items():
            # A tool that requires one (resuming names its session) words it itself.
            if name in arguments.SHARED and name not in tool.input_schema.get("required", []):
                assert "description" not in spec, f"{tool.name}.{name}"
                seen.add(name)
    assert seen == set(arguments.SHARED)
    assert "session_name (omit it" in instructions
    assert "worker (your worker name" in instructions and "1-64 of A-Za-z0-9._-" in instructions
    assert "request_id (a retry key" in instructions
