"""The argument types several tools share, described for the model (docs/design.md, "The
edges")."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

SessionArg = Annotated[
    str | None,
    Field(description="Session name, e.g. 'brave-amber-otter'. Omit for this connection's current one."),
]
PositionArg = Annotated[
    str | None,
    Field(
        description="'front' = blocking work, done next; 'back' = eventual work (default).",
        json_schema_extra={"enum": ["front", "back"]},
    ),
]


WorkerArg = Annotated[
    str | None,
    Field(description="Your worker name if agents share the session (1-64 of A-Za-z0-9._-)."),
]
DependsArg = Annotated[
    list[str] | None,
    Field(description="Plan ids this plan waits for: it is pulled only once they are completed."),
]


ReviewArg = Annotated[
    bool | None,
    Field(description="true: when completed, the plan waits for a reviewer's approval before it counts as done."),
]


RequestIdArg = Annotated[
    str | None,
    Field(description="Retry key (1-64 of A-Za-z0-9._:-): a resend returns the first answer, changing nothing."),
]
