"""The pieces of tool answers several tools share: capped lists of workers, blocked plans
and plans in review, the queue's entries, and a write's answer with its plan-file notice.

Every answer but a plan's own text stays under 2 KB of UTF-8 whatever the session holds
(docs/design.md, "The edges"): lists are capped (with a count of the rest) and long texts
become short snippets measured in encoded bytes, since one emoji costs four.
"""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult

from mcp_bridge import responses
from sessions_app import planfiles, services
from sessions_app.models import DEFAULT_WORKER, Plan
from sessions_app.reads import excerpts, interventions, queries

LIST_CAP = 8
WORKERS_CAP = 6
BLOCKED_CAP = 3
BATCH_CAP = 15
ISSUE_CAP = 6
SEARCH_BYTES = 1500
DEPENDENCIES_CAP = 4
DEPENDENCIES_BYTES = 900


def lease_text(plan: Plan) -> str | None:
    return plan.lease_expires_at.isoformat(timespec="seconds") if plan.lease_expires_at else None


def workers(state: queries.SessionState) -> list[dict[str, Any]]:
    return [
        {
            "worker": p.worker,
            "plan_id": p.id,
            "goal": excerpts.fit_json(p.goal, 40),
            "lease_until": lease_text(p),
        }
        for p in state.claimed[:WORKERS_CAP]
    ]


def blocked(state: queries.SessionState) -> list[str]:
    return [excerpts.fit_json(b.describe(), 150) for b in state.blocked[:BLOCKED_CAP]]


def parallel_view(state: queries.SessionState, data: dict[str, Any]) -> None:
    """Every worker's plan and lease, and what blocked plans wait for: only when a named
    worker holds a plan or something is blocked, so a single agent's answers keep their shape."""
    if any(p.worker != DEFAULT_WORKER for p in state.claimed):
        data["workers"] = workers(state)
        data["workers_more"] = max(0, len(state.claimed) - WORKERS_CAP)
    if state.blocked:
        data["blocked"] = blocked(state)


def with_file_notice(notice: str, summary: str, data: dict[str, Any], *, local: bool = True) -> str:
    """What the service said about the plan file (not used, or merged with newer text) is
    reported in the answer (``plan_file_notice``); to an agent on another machine without
    the server's paths."""
    if not notice:
        return summary
    if not local:
        notice = notice.replace(str(planfiles.sessions_root()), "the server's sessions folder")
    data["plan_file_notice"] = excerpts.fit_json(notice, 600)
    return f"{summary} About the plan file: see plan_file_notice."


def plan_written(
    name: str,
    written: services.Written,
    summary: str,
    *,
    local: bool = True,
    with_path: bool = False,
    **data: Any,
) -> CallToolResult:
    """The answer to a write of the worker's plan: its id, then ``data`` (and, ``with_path``,
    its file's path for an agent that reads this server's files), and the service's notice
    about the plan file when it has one."""
    data = {"plan_id": written.plan.id, **data, **(file_path(local, written.plan) if with_path else {})}
    if written.changed_by_others:
        # A person changed the plan while this worker held it (restored a revision): the
        # worker must not go on from the text it had in mind.
        data["changed_by_others"] = [excerpts.fit_json(t, 240) for t in written.changed_by_others]
        again = "read its file again" if local else "read it again with 9plan_plan_read"
        summary += f" Others changed this plan meanwhile: see changed_by_others, and {again}."
    return responses.ok(name, with_file_notice(written.file_notice, summary, data, local=local), data)


def file_path(local: bool, plan: Plan, key: str = "plan_path") -> dict[str, str]:
    """The plan file's path (under ``key``), for an agent that reads this server's files;
    else nothing."""
    return {key: queries.plan_path(plan)} if local else {}


def active_plan(plan: Plan | None, local: bool, goal_chars: int) -> dict[str, str] | None:
    """A session's active plan as its state shows it: id, goal (cut to ``goal_chars``), and
    for a local agent its file's path; None when no plan is active."""
    if plan is None:
        return None
    return {"id": plan.id, "goal": excerpts.fit_json(plan.goal, goal_chars), **file_path(local, plan, "file_path")}


def plan_text(local: bool, plan: Plan) -> tuple[str, str]:
    """The plan's text as its agent should read it, and a notice about the file ("" if
    none): the file for an agent that reads this server's files, else the database's text."""
    if local:
        return queries.plan_file_text(plan)
    return planfiles.render(plan.sections()), ""


def add_in_review(data: dict[str, Any], session_name: str) -> None:
    """The plans waiting for a reviewer, when there are any."""
    rows, total = queries.plans_in(session_name, Plan.Status.IN_REVIEW, limit=4)
    if total:
        data["in_review"] = [{"id": p.id, "goal": excerpts.fit_json(p.goal, 60)} for p in rows]
        data["in_review_count"] = total


def add_held(data: dict[str, Any], session_name: str) -> int:
    """The plans held after too many rejections in review, when there are any; how many."""
    rows, total = queries.plans_in(session_name, Plan.Status.HELD, limit=4)
    if total:
        data["held"] = [{"id": p.id, "goal": excerpts.fit_json(p.goal, 60)} for p in rows]
        data["held_count"] = total
    return total


def resume_hint(state: queries.SessionState, active: Plan | None, held: int, *, local: bool = True) -> str:
    """What a resumed agent does next: carry on with its plan (read back from its file, or,
    for an agent on another machine, with 9plan_plan_read), get back a plan its worker
    holds, pull one, or, when only held plans are left, tell the user that a person must
    release them."""
    if active is not None and local:
        hint = "Active plan: read its file and continue."
    elif active is not None:
        hint = "Active plan: get its text and notes back with 9plan_plan_read, then continue."
    elif state.claimed:
        hint = (
            f"{len(state.claimed)} worker(s) hold plans (see workers): a worker gets its plan back with "
            "9plan_plan_read and its worker name; or call 9plan_queue_pull for another."
        )
    elif held and not state.queue_length:
        return (
            f"No plan is queued or active, but {held} plan(s) are held (see held): "
            f"{interventions.HELD_UNTIL}. Tell the user."
        )
    else:
        hint = "No active plan: call 9plan_queue_pull."
    if held:
        hint += f" {held} plan(s) are held (see held): {interventions.HELD_UNTIL}."
    return hint


def queue_entries(rows: list[Plan], key: str = "queue_position") -> list[dict[str, Any]]:
    return [{"id": p.id, "goal": excerpts.fit_json(p.goal, 60), key: i + 1} for i, p in enumerate(rows)]


def add_dependency_outcomes(data: dict[str, Any], plan: Plan) -> None:
    """What the plan's completed dependencies produced: each one's id, goal and outcome,
    shortened to fit the answer (9plan_plan_read gives one whole)."""
    done = queries.dependency_outcomes(plan.id)
    if not done:
        return
    shown = done[:DEPENDENCIES_CAP]
    each = DEPENDENCIES_BYTES // len(shown)
    data["dependencies"] = [
        {
            "id": p.id,
            "goal": excerpts.fit_json(p.goal, 80),
            "outcome": excerpts.fit_json(p.outcome, each - 80),
        }
        for p in shown
    ]
    if len(done) > len(shown):
        data["dependencies_more"] = len(done) - len(shown)
