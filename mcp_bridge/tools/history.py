"""The history tools: search completed plans, read one."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from mcp_bridge import responses
from mcp_bridge.tools import answers, runner
from mcp_bridge.tools.arguments import SessionArg, WholeNumber, one_of
from sessions_app import inputs
from sessions_app.reads import excerpts, queries


def history_search(
    ctx: Context,
    query: Annotated[str, Field(description="What you need, in words.")],
    max_results: Annotated[WholeNumber | None, Field(description="1 to 8 (default 5).")] = None,
    session_name: SessionArg = None,
    scope: Annotated[
        str | None,
        Field(
            description="'session' (default) or 'project'.",
            json_schema_extra=one_of(*inputs.SEARCH_SCOPES),
        ),
    ] = None,
) -> CallToolResult:
    """Search completed plans' text, outcome and notes for what earlier work produced;
    words match in any form.
    Example: {"query": "invoice models"}"""

    def body(name: str) -> CallToolResult:
        limit = inputs.positive_int("max_results", max_results, default=5, maximum=8)
        whole_project = inputs.choice("scope", scope, inputs.SEARCH_SCOPES, default="session") == "project"
        hits = queries.history_search(query, session_name=name, max_results=limit, whole_project=whole_project)
        # More results get shorter snippets, so the answer's size does not grow with them.
        named = max((len(h.plan.session_id) + 14 for h in hits), default=0) if whole_project else 0
        each = answers.SEARCH_BYTES // max(1, len(hits)) - 60 - named
        results = [
            {
                "id": h.plan.id,
                # Across the project a hit may be another session's: it is read with that name.
                **({"session": h.plan.session_id} if whole_project else {}),
                "goal": excerpts.fit_json(h.plan.goal, each * 2 // 5),
                "outcome": excerpts.fit_json(h.plan.outcome, each * 3 // 5),
                "relevance_rank": h.rank,
            }
            for h in hits
        ]
        read = " Read one with 9plan_history_get" + (" and its session as session_name." if whole_project else ".")
        summary = f"{len(results)} result(s)." + (read if results else "")
        return responses.ok(name, summary, {"results": results})

    return runner.run(ctx, session_name, body)


def history_get(
    ctx: Context,
    plan_id: Annotated[str, Field(description="A completed plan's id.")],
    session_name: SessionArg = None,
) -> CallToolResult:
    """Read one completed plan whole: its sections, notes and outcome.
    Example: {"plan_id": "k3x9q"}"""

    def body(name: str) -> CallToolResult:
        plan = queries.history_get(session_name=name, plan_id=plan_id)
        data = {
            "plan_id": plan.id,
            **plan.sections(),
            "outcome": plan.outcome,
            # A string here, so the text and the structured content spell the time alike.
            "completed_at": plan.completed_at.isoformat(timespec="seconds") if plan.completed_at else None,
        }
        return responses.ok(name, "Completed plan.", data)

    return runner.run(ctx, session_name, body)
