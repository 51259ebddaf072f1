"""The tools for the plan a worker holds: defer, complete, discard and note."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from mcp_bridge.tools import answers, runner
from mcp_bridge.tools.arguments import PositionArg, RequestIdArg, SessionArg, WorkerArg, one_of
from sessions_app import services
from sessions_app.models import Plan
from sessions_app.reads import excerpts, queries


def plan_defer(
    ctx: Context,
    reason: Annotated[str, Field(description="Why; added to its Notes.")],
    position: PositionArg = None,
    worker: WorkerArg = None,
    session_name: SessionArg = None,
    request_id: RequestIdArg = None,
) -> CallToolResult:
    """Put your active plan back unfinished (blocked, or split into subplans).
    Example: {"reason": "Needs the schema first"}"""
    call = runner.asked("plan_defer", reason=reason, position=position, worker=worker, session_name=session_name)

    def body(name: str) -> CallToolResult:
        placed = services.plan_defer(
            session_name=name, reason=reason, position=position, worker=worker, actor=runner.actor(ctx)
        )
        return answers.plan_written(
            name, placed, "Plan deferred.", local=runner.files_for(ctx), with_path=True, queue_position=placed.place
        )

    return runner.run(ctx, session_name, body, request_id=request_id, call=call)


def plan_complete(
    ctx: Context,
    outcome: Annotated[
        str,
        Field(description="What was produced: files, names, decisions."),
    ],
    worker: WorkerArg = None,
    session_name: SessionArg = None,
    request_id: RequestIdArg = None,
) -> CallToolResult:
    """Finish your active plan; later plans find its outcome by search.
    Example: {"outcome": "Invoice models in billing/models.py"}"""
    call = runner.asked("plan_complete", outcome=outcome, worker=worker, session_name=session_name)

    def body(name: str) -> CallToolResult:
        written = services.plan_complete(session_name=name, outcome=outcome, worker=worker, actor=runner.actor(ctx))
        plan = written.plan
        status = queries.queue_status(name)
        data: dict[str, Any] = {
            "queue_length": status.length,
            "completed_count": status.completed,
            "next": None
            if status.next_id is None
            else {
                "id": status.next_id,
                "goal": excerpts.fit_json(status.next_goal, 120),
            },
        }
        if plan.status == Plan.Status.IN_REVIEW:
            data["status"] = plan.status
            done = "Plan submitted for review: a reviewer approves it (then it is searchable) or sends it back."
        else:
            done = "Plan completed."
        if status.next_id:
            hint = "Next: 9plan_queue_pull."
        elif status.length:
            waits = queries.blocked_plans(name, limit=answers.BLOCKED_CAP)
            data["blocked"] = [excerpts.fit_json(w.describe(), 150) for w in waits]
            hint = f"{status.length} plan(s) are queued but none is ready yet: see blocked for what they wait for."
        elif status.unfinished:
            data["unfinished_count"] = status.unfinished
            hint = (
                f"Nothing else is queued, but {status.unfinished} plan(s) are still active with other workers or "
                "await review: the task is not done yet."
            )
        else:
            hint = "The queue is empty: task complete! 🎉"
        return answers.plan_written(name, written, f"{done} {hint}", local=runner.files_for(ctx), **data)

    return runner.run(ctx, session_name, body, request_id=request_id, call=call)


def plan_discard(
    ctx: Context,
    reason: Annotated[str, Field(description="Why it is dropped.")],
    worker: WorkerArg = None,
    session_name: SessionArg = None,
    request_id: RequestIdArg = None,
) -> CallToolResult:
    """Drop your active plan undone (obsolete or wrong); it never enters history. Defer it
    instead if it is still needed.
    Example: {"reason": "Superseded by the auth plan"}"""
    call = runner.asked("plan_discard", reason=reason, worker=worker, session_name=session_name)

    def body(name: str) -> CallToolResult:
        written = services.plan_discard(session_name=name, reason=reason, worker=worker, actor=runner.actor(ctx))
        return answers.plan_written(
            name,
            written,
            "Plan discarded.",
            local=runner.files_for(ctx),
            queue_length=queries.queue_length(name),
        )

    return runner.run(ctx, session_name, body, request_id=request_id, call=call)


def plan_note(
    ctx: Context,
    text: Annotated[str, Field(description="The note (Markdown).")],
    mode: Annotated[
        str | None,
        Field(
            description="'append' (default) or 'replace' (all Notes).",
            json_schema_extra=one_of("append", "replace"),
        ),
    ] = None,
    worker: WorkerArg = None,
    session_name: SessionArg = None,
    request_id: RequestIdArg = None,
) -> CallToolResult:
    """Write your active plan's Notes so findings survive context loss.
    Example: {"text": "Schema uses UUID keys"}"""
    call = runner.asked("plan_note", text=text, mode=mode, worker=worker, session_name=session_name)

    def body(name: str) -> CallToolResult:
        written = services.plan_note(session_name=name, text=text, mode=mode, worker=worker, actor=runner.actor(ctx))
        done = {"mode": mode or "append", "notes_chars": len(written.plan.notes)}
        return answers.plan_written(
            name, written, "Notes written.", local=runner.files_for(ctx), with_path=True, **done
        )

    return runner.run(ctx, session_name, body, request_id=request_id, call=call)
