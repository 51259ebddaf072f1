"""Reading a plan back: the one a worker holds, or any plan of the session by id."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from mcp_bridge import responses
from mcp_bridge.tools import answers, runner
from mcp_bridge.tools.arguments import SessionArg, WorkerArg
from sessions_app.models import Plan
from sessions_app.reads import queries


def plan_read(
    ctx: Context,
    plan_id: Annotated[str | None, Field(description="Any plan of the session; omit for yours.")] = None,
    worker: WorkerArg = None,
    session_name: SessionArg = None,
) -> CallToolResult:
    """Read a plan's text and Notes: yours (no plan_id) or any of the session's.
    Example: {}"""

    def body(name: str) -> CallToolResult:
        plan = queries.plan_read(session_name=name, plan_id=plan_id, worker=worker)
        local = runner.files_for(ctx) and plan.is_open
        data = {
            "plan_id": plan.id,
            "status": plan.status,
            **answers.file_path(local, plan),
            "version": plan.version,
        }
        if plan.status == Plan.Status.ACTIVE:
            data.update(worker=plan.worker, lease_until=answers.lease_text(plan))
        text, notice = answers.plan_text(local, plan)
        if plan.outcome:
            text += f"\n# Outcome\n{plan.outcome}\n"
        summary = answers.with_file_notice(notice, f"Plan {plan.id} ({plan.status}); its full text follows.", data)
        return responses.ok(name, summary, data, body=text)

    return runner.run(ctx, session_name, body)
