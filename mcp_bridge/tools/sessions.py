"""The session tools: create and resume."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from mcp_bridge import responses
from mcp_bridge.tools import answers, runner
from mcp_bridge.tools.arguments import RequestIdArg, one_of
from sessions_app import services
from sessions_app.reads import excerpts, interventions, queries


def session_create(
    ctx: Context,
    task_description: Annotated[str | None, Field(description="The task in a sentence or two.")] = None,
    review: Annotated[
        str | None,
        Field(
            description="'required': completed plans wait for a reviewer.",
            json_schema_extra=one_of("none", "required"),
        ),
    ] = None,
    lease_seconds: Annotated[
        int | None,
        Field(description="Claim lease, seconds (1800)."),
    ] = None,
    max_attempts: Annotated[int | None, Field(description="Expired claims before a person decides (3).")] = None,
    project: Annotated[str | None, Field(description="Needed if your token has several.")] = None,
    request_id: RequestIdArg = None,
) -> CallToolResult:
    """Start a session (one task's queue) and make it current; keep its three-word name to
    resume.
    Example: {"task_description": "Port billing"}"""
    call = runner.asked(
        "session_create",
        task_description=task_description,
        review=review,
        lease_seconds=lease_seconds,
        max_attempts=max_attempts,
        project=project,
    )

    def body(_: str | None) -> CallToolResult:
        session = services.session_create(
            task_description=task_description,
            review=review,
            lease_seconds=lease_seconds,
            max_attempts=max_attempts,
            project=project,
            actor=runner.actor(ctx),
        )
        runner.connection_state(ctx).set(ctx, session.name)
        summary = "Session created. Next: add plans with 9plan_queue_add, then 9plan_queue_pull."
        if not runner.connection_state(ctx).remembers(ctx):
            summary += runner.STATELESS_HINT.format(name=session.name)
        data = {"project": session.project_id}
        if runner.files_for(ctx):
            data["session_path"] = queries.session_path(session.name)
        return responses.ok(session.name, summary, data)

    return runner.run(ctx, None, body, needs_session=False, request_id=request_id, call=call)


def session_resume(
    ctx: Context,
    session_name: Annotated[str, Field(description="Its three-word name.")],
) -> CallToolResult:
    """After a restart or context loss: make a session current and get its queue and
    active plans.
    Example: {"session_name": "brave-amber-otter"}"""

    def body(name: str) -> CallToolResult:
        state = queries.session_state(name, limit=answers.LIST_CAP)
        runner.connection_state(ctx).set(ctx, state.session.name)
        active = state.default_workers_plan
        local = runner.files_for(ctx)
        data: dict[str, Any] = {
            **({"session_path": queries.session_path(state.session.name)} if local else {}),
            "task_description": excerpts.fit_json(state.session.task_description, 200),
            "queue": answers.queue_entries(state.queue),
            "queue_length": state.queue_length,
            "queue_more": state.queue_length - len(state.queue),
            "active_plan": answers.active_plan(active, local, 120),
            "completed_count": state.completed_count,
        }
        answers.add_in_review(data, state.session.name)
        held = answers.add_held(data, state.session.name)
        answers.parallel_view(state, data)
        # What a reviewer or an integration did to the session's plans since an agent last
        # acted here: a discarded or taken-back plan must not go unnoticed.
        changed = interventions.interventions(state.session.name)
        if changed:
            data["changed_by_others"] = [excerpts.fit_json(c.describe(), 240) for c in changed]
        hint = answers.resume_hint(state, active, held, local=local)
        if changed:
            hint += " Others changed plans meanwhile: see changed_by_others."
        if not runner.connection_state(ctx).remembers(ctx):
            hint += runner.STATELESS_HINT.format(name=state.session.name)
        return responses.ok(state.session.name, f"Session resumed. {hint}", data)

    if session_name is None or not isinstance(session_name, str):
        session_name = ""
    return runner.run(ctx, session_name, body)
