"""The inspection tools: the invariant check, the session list, a session's state."""

from __future__ import annotations

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult

from mcp_bridge import responses
from mcp_bridge.tools import answers, runner
from mcp_bridge.tools.arguments import SessionArg
from sessions_app import planfiles
from sessions_app.maintenance import invariants
from sessions_app.reads import excerpts, queries


def admin_validate(ctx: Context, session_name: SessionArg = None) -> CallToolResult:
    """Check the session's invariants (queue order, plan files); each problem names its fix.
    Example: {}"""

    def body(name: str) -> CallToolResult:
        result = invariants.check_invariants(name)
        data = {
            "valid": result.valid,
            "invariants": result.invariants,
            "issues": [excerpts.fit_json(i, 160) for i in result.issues[: answers.ISSUE_CAP]],
            "issues_more": max(0, len(result.issues) - answers.ISSUE_CAP),
        }
        return responses.ok(
            name,
            "Valid." if result.valid else f"{len(result.issues)} issue(s) found.",
            data,
        )

    return runner.run(ctx, session_name, body)


def admin_sessions(ctx: Context) -> CallToolResult:
    """List the sessions, newest first, with their counts: find a name to resume.
    Example: {}"""

    def body(name: str | None) -> CallToolResult:
        sessions, total = queries.session_list(limit=answers.LIST_CAP)
        rows = [
            {
                "name": s.name,
                "created": s.created_at.isoformat(timespec="seconds"),
                "task_description": excerpts.fit_json(s.task_description, 40),
                "queue_length": s.queue_length,
                "completed_count": s.completed_count,
                "has_active_plan": s.has_active_plan,
            }
            for s in sessions
        ]
        data = {"sessions": rows, "total": total, "more": total - len(rows)}
        return responses.ok(name, f"{total} session(s).", data)

    return runner.run(ctx, None, body, needs_session=False)


def admin_state(ctx: Context, session_name: SessionArg = None) -> CallToolResult:
    """Debug view of the session: queue, active plans, plan files against the database.
    Example: {}"""

    def body(name: str) -> CallToolResult:
        state = queries.session_state(name, limit=answers.LIST_CAP)
        files = planfiles.list_plan_files(name)
        validation_result = invariants.check_invariants(name)
        data = {
            "task_description": excerpts.fit_json(state.session.task_description, 150),
            "queue": answers.queue_entries(state.queue, key="position"),
            "queue_length": state.queue_length,
            "active_plan": answers.active_plan(state.active, runner.files_for(ctx), 100),
            "completed_count": state.completed_count,
            "plan_files": files[: answers.LIST_CAP],
            "plan_files_count": len(files),
            "file_db_match": validation_result.invariants["files_match_database"]
            and validation_result.invariants["no_orphaned_files"],
        }
        answers.add_in_review(data, name)
        answers.parallel_view(state, data)
        return responses.ok(name, "Session state.", data)

    return runner.run(ctx, session_name, body)
