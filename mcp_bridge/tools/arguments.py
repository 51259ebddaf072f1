"""The argument types several tools share, described for the model (docs/design.md, "The
edges").

A tool's signature is its input schema (the SDK reads it), so each tool still names every
argument; what is said of it is written once, here or in that signature. A required
argument is ``Annotated[kind, Field(description=...)]``; an optional one is
``Annotated[kind | None, Field(description=...)] = None`` (None when left out); one of a
few words is an optional ``str`` whose Field lists them, ``json_schema_extra=one_of(...)``.
The words are advertised, not enforced by the schema: the service refuses another word with
a message that names the accepted ones."""

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


SessionArg = Annotated[
    str | None, Field(description="Session name, e.g. 'brave-amber-otter'. Omit for this connection's current one.")
]
PositionArg = Annotated[
    str | None,
    Field(
        description="'front' = blocking work, done next; 'back' = eventual work (default).",
        json_schema_extra=one_of("front", "back"),
    ),
]
WorkerArg = Annotated[
    str | None, Field(description="Your worker name if agents share the session (1-64 of A-Za-z0-9._-).")
]
DependsArg = Annotated[
    list[str] | None, Field(description="Plan ids this plan waits for: it is pulled only once they are completed.")
]
ReviewArg = Annotated[
    bool | None,
    Field(description="true: when completed, the plan waits for a reviewer's approval before it counts as done."),
]
RequestIdArg = Annotated[
    str | None,
    Field(description="Retry key (1-64 of A-Za-z0-9._:-): a resend returns the first answer, changing nothing."),
]
