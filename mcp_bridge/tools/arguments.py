"""The argument types several tools share, described for the model (docs/design.md, "The
edges").

A tool's signature is its input schema (the SDK reads it), so each tool still names every
argument; what is said of it is written once, here or in that signature. A required
argument is ``Annotated[kind, Field(description=...)]``; an optional one is
``Annotated[kind | None, Field(description=...)] = None`` (None when left out); one of a
few words is an optional ``str`` whose Field lists them, ``json_schema_extra=one_of(...)``.
The words are advertised, not enforced by the schema: the service refuses another word with
a message that names the accepted ones.

The three arguments nearly every tool takes (``session_name``, ``worker``, ``request_id``)
are described once, in the server instructions (mcp_bridge/prompts.py, "ARGUMENTS"), not in
each tool: tools/list is spent from the model's context on every turn."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, Strict

# A whole number as JSON writes one, nothing else: pydantic's lax mode would take true as 1
# and "1800" as 1800, so a slip of the model's would become a real value (a one-second
# lease) instead of an error naming the argument.
WholeNumber = Annotated[int, Strict()]


def one_of(*words: str) -> dict[str, Any]:
    """Field's ``json_schema_extra`` advertising that an argument is one of ``words``."""
    return {"enum": list(words)}


# Described in the server instructions (ARGUMENTS), not here: see the module's docstring.
SessionArg = Annotated[str | None, Field()]
WorkerArg = Annotated[str | None, Field()]
RequestIdArg = Annotated[str | None, Field()]
SHARED = ("session_name", "worker", "request_id")

PositionArg = Annotated[
    str | None,
    Field(description="'front' (next) or 'back' (default).", json_schema_extra=one_of("front", "back")),
]
DependsArg = Annotated[list[str] | None, Field(description="Plan ids to complete first.")]
ReviewArg = Annotated[bool | None, Field(description="true: a reviewer approves it.")]
