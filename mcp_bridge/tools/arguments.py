"""The argument types several tools share, described for the model (docs/design.md, "The
edges"), the shape of a required one (``required``) and the two shapes every optional
argument takes: ``optional`` (None when left out) and ``one_of`` (one of a few words).

A tool's signature is its input schema (the SDK reads it), so each tool still names every
argument; what is said of it is written once, here or in that signature."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field


def required(kind: Any, description: str) -> Any:
    """An argument of ``kind`` the model must give, described for it."""
    return Annotated[kind, Field(description=description)]


def optional(kind: Any, description: str, **schema: Any) -> Any:
    """An argument of ``kind`` the model may leave out (it is then None), described for it;
    ``schema`` is Field's other arguments."""
    return Annotated[kind | None, Field(description=description, **schema)]


def one_of(description: str, *words: str) -> Any:
    """An optional argument that is exactly one of ``words``."""
    return optional(str, description, json_schema_extra={"enum": list(words)})


SessionArg = optional(str, "Session name, e.g. 'brave-amber-otter'. Omit for this connection's current one.")
PositionArg = one_of("'front' = blocking work, done next; 'back' = eventual work (default).", "front", "back")
WorkerArg = optional(str, "Your worker name if agents share the session (1-64 of A-Za-z0-9._-).")
DependsArg = optional(list[str], "Plan ids this plan waits for: it is pulled only once they are completed.")
ReviewArg = optional(bool, "true: when completed, the plan waits for a reviewer's approval before it counts as done.")
RequestIdArg = optional(str, "Retry key (1-64 of A-Za-z0-9._:-): a resend returns the first answer, changing nothing.")
