"""9plan's MCP tools: thin typed wrappers. Each validates, calls one service or query (and
the queries its answer needs), and formats the answer; nothing here changes state by itself.

Tools are plain ``def`` functions: the SDK runs them in worker threads, where the ORM
may be used (an ``async def`` tool touching the ORM would fail).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Annotated, Any

from django.db import close_old_connections
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from mcp_bridge import auth, responses
from mcp_bridge.readiness import wait_ready
from sessions_app import excerpts, inputs, planfiles, queries, review, services
from sessions_app.errors import STATELESS_CONNECTION, NineplanError, NoSessionSelected
from sessions_app.identifiers import is_session_name
from sessions_app.models import DEFAULT_WORKER, Plan

log = logging.getLogger("nineplan.mcp")
# Who the events of a tool call name: over stdio (and over loopback HTTP without a token)
# simply "agent"; with a token, "agent:<token name>", so reviewers can tell machines apart.
ACTOR = "agent"
# Every answer but a plan's own text stays under 2 KB of UTF-8 whatever the session holds
# (docs/design.md, "The edges"): lists are capped (with a count of the rest) and long texts
# become short snippets measured in encoded bytes, since one emoji costs four.
LIST_CAP = 8
WORKERS_CAP = 6
BLOCKED_CAP = 3
BATCH_CAP = 15
ISSUE_CAP = 6
SEARCH_BYTES = 1500


class ConnectionState:
    """The current session of each connection (set by create/resume).

    Over stdio one process is one connection. Over HTTP the MCP session id
    (``mcp-session-id``, protocol versions with an initialize handshake) tells
    connections apart. A stateless HTTP request (protocol 2026-07-28, the SDK client's
    default) carries no such id, so nothing is remembered between its calls: the client
    passes ``session_name`` on every call. Remembering "the last session" per process
    instead would hand one agent's session to every other agent of that process.

    The id is only a header: the SDK checks that it belongs to the caller's token on the
    handshake protocols of a stateful server, but a stateless request (or a stateless
    server) passes whatever id the client sends. So the state is keyed on the token as
    well as the id: a request bearing another token's id finds nothing of it.
    """

    # Stateful HTTP sessions come and go (the SDK ends idle ones); the oldest entries are
    # dropped beyond this many, so a long-running server does not grow without bound.
    MAX_CONNECTIONS = 10_000

    def __init__(self) -> None:
        self._current: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(ctx: Context | None) -> str | None:
        try:
            headers = ctx.headers if ctx is not None else None
        except Exception:  # outside a request (in-process calls) there are no headers
            headers = None
        if headers is None:
            return "local"
        sid = headers.get("mcp-session-id")
        if not sid:
            return None
        holder = _holder(ctx)
        owner = "anonymous" if holder is None else f"token-{holder.token_id}"
        return f"http:{owner}:{sid}"

    def remembers(self, ctx: Context | None) -> bool:
        """Whether this connection keeps a current session between calls."""
        return self._key(ctx) is not None

    def get(self, ctx: Context | None) -> str | None:
        key = self._key(ctx)
        if key is None:
            return None
        with self._lock:
            name = self._current.get(key)
            if name is not None:
                self._current.move_to_end(key)
            return name

    def set(self, ctx: Context | None, name: str) -> None:
        key = self._key(ctx)
        if key is None:
            return
        with self._lock:
            self._current[key] = name
            self._current.move_to_end(key)
            while len(self._current) > self.MAX_CONNECTIONS:
                self._current.popitem(last=False)


STATELESS_HINT = (
    " This connection keeps no current session (stateless HTTP): pass session_name='{name}' on every call."
)


def _state(ctx: Context) -> ConnectionState:
    return ctx.mcp_server.nineplan_state  # type: ignore[attr-defined]


def _holder(ctx: Context | None) -> auth.Holder | None:
    """The bearer token's holder of this call's HTTP request; None over stdio or without a token."""
    try:
        request = ctx.request_context.request if ctx is not None else None
    except ValueError:  # outside a request (in-process calls)
        return None
    return auth.holder_of(request)


def _actor(ctx: Context | None) -> str:
    holder = _holder(ctx)
    return ACTOR if holder is None else f"{ACTOR}:{holder.name}"


def _call(
    ctx: Context,
    session_name: str | None,
    body: Callable[[str | None], CallToolResult],
    *,
    needs_session: bool = True,
) -> CallToolResult:
    """Resolve the session, run the body, and map every failure to the error text
    (docs/design.md, "Errors")."""
    requested = session_name if session_name is not None else _state(ctx).get(ctx)
    shown = requested if is_session_name(requested) else _state(ctx).get(ctx)
    try:
        wait_ready()
        close_old_connections()
        if needs_session:
            if requested is None:
                if not _state(ctx).remembers(ctx):
                    raise NoSessionSelected(
                        "No session_name was given, and this connection keeps no current session between "
                        "calls (stateless HTTP), so every call must name its session.",
                        reason=STATELESS_CONNECTION,
                    )
                raise NoSessionSelected("No session is selected on this connection and no session_name was given.")
            inputs.session_name(requested)
        return body(requested)
    except NineplanError as exc:
        return responses.from_exception(shown, exc)
    except Exception as exc:  # never a traceback or a generic "internal error" to the agent
        log.exception("tool failed unexpectedly", extra={"session": shown})
        return responses.unexpected(shown, type(exc).__name__)
    finally:
        close_old_connections()


SessionArg = Annotated[
    str | None,
    Field(
        description="Session name, e.g. 'brave-amber-otter'. Omit for the one created or resumed on this "
        "connection."
    ),
]
PositionArg = Annotated[
    str | None,
    Field(
        description="'front' = blocking work, done next; 'back' = eventual work (default). Exactly "
        "'front' or 'back', lowercase.",
        json_schema_extra={"enum": ["front", "back"]},
    ),
]


WorkerArg = Annotated[
    str | None,
    Field(description="Your worker name if agents share the session (1-64 of A-Za-z0-9._-)."),
]
DependsArg = Annotated[
    list[str] | None, Field(description="Plan ids this plan waits for: it is pulled only once they are completed.")
]


def _lease(plan: Plan) -> str | None:
    return plan.lease_expires_at.isoformat(timespec="seconds") if plan.lease_expires_at else None


def _workers(state: queries.SessionState) -> list[dict[str, Any]]:
    return [
        {"worker": p.worker, "plan_id": p.id, "goal": excerpts.fit_json(p.goal, 40), "lease_until": _lease(p)}
        for p in state.held[:WORKERS_CAP]
    ]


def _blocked(state: queries.SessionState) -> list[str]:
    return [excerpts.fit_json(b.describe(), 150) for b in state.blocked[:BLOCKED_CAP]]


def _parallel_view(state: queries.SessionState, data: dict[str, Any]) -> None:
    """Every worker's plan and lease, and what blocked plans wait for: only when a named
    worker holds a plan or something is blocked, so a single agent's answers keep their shape."""
    if any(p.worker != DEFAULT_WORKER for p in state.held):
        data["workers"] = _workers(state)
        data["workers_more"] = max(0, len(state.held) - WORKERS_CAP)
    if state.blocked:
        data["blocked"] = _blocked(state)


def _with_file_notice(notice: str, summary: str, data: dict[str, Any]) -> str:
    """A plan file the service could not use is reported in the answer (``plan_file_notice``)."""
    if not notice:
        return summary
    data["plan_file_notice"] = excerpts.fit_json(notice, 600)
    return f"{summary} The plan file was not used: see plan_file_notice."


def _plan_written(name: str, written: services.Written, summary: str, **data: Any) -> CallToolResult:
    """The answer to a write of the worker's plan: its id, then ``data``, and a notice when
    the service could not use the plan file."""
    data = {"plan_id": written.plan.id, **data}
    return responses.ok(name, _with_file_notice(written.file_notice, summary, data), data)


ReviewArg = Annotated[
    bool | None,
    Field(description="true: when completed, the plan waits for a reviewer's approval before it counts as done."),
]


def _add_in_review(data: dict[str, Any], session_name: str) -> None:
    """The plans waiting for a reviewer, when there are any."""
    rows, total = queries.plans_in(session_name, Plan.Status.IN_REVIEW, limit=4)
    if total:
        data["in_review"] = [{"id": p.id, "goal": excerpts.fit_json(p.goal, 60)} for p in rows]
        data["in_review_count"] = total


def _queue_entries(rows: list[Plan], key: str = "queue_position") -> list[dict[str, Any]]:
    return [{"id": p.id, "goal": excerpts.fit_json(p.goal, 60), key: i + 1} for i, p in enumerate(rows)]


# --- sessions ---------------------------------------------------------------------------


def session_create(
    ctx: Context,
    task_description: Annotated[
        str | None, Field(description="The whole task in a sentence or two; shown when the session is resumed.")
    ] = None,
    review: Annotated[
        str | None,
        Field(
            description="'none' (default): a completed plan is done at once; 'required': every completed plan "
            "waits for a reviewer's approval.",
            json_schema_extra={"enum": ["none", "required"]},
        ),
    ] = None,
    lease_seconds: Annotated[
        int | None, Field(description="A pulled plan returns to the queue after this long without a write (1800).")
    ] = None,
    max_attempts: Annotated[int | None, Field(description="Expired claims before a plan waits for a person (3).")] = None,
) -> CallToolResult:
    """Start a new 9plan session: a work queue for one big task. Returns its three-word name
    (e.g. 'brave-amber-otter'); write it down, it is how you resume after context loss.
    The new session becomes this connection's current session.
    Example: {"task_description": "Port the billing service to Django"}"""

    def body(_: str | None) -> CallToolResult:
        session = services.session_create(
            task_description=task_description,
            lease_seconds=lease_seconds,
            max_attempts=max_attempts,
            review=review,
            actor=_actor(ctx),
        )
        _state(ctx).set(ctx, session.name)
        summary = "Session created. Next: add plans with 9plan_queue_add, then 9plan_queue_pull."
        if not _state(ctx).remembers(ctx):
            summary += STATELESS_HINT.format(name=session.name)
        return responses.ok(session.name, summary, {"session_path": queries.session_path(session.name)})

    return _call(ctx, None, body, needs_session=False)


def session_resume(
    ctx: Context,
    session_name: Annotated[str, Field(description="The session's three-word name, e.g. 'brave-amber-otter'.")],
) -> CallToolResult:
    """Resume a session after a restart or context compaction: makes it current and returns
    its whole state (task, queue in order, active plan, completed count). If a plan is
    active, read its file and carry on with it.
    Example: {"session_name": "brave-amber-otter"}"""

    def body(name: str | None) -> CallToolResult:
        state = queries.session_state(name, limit=LIST_CAP)
        _state(ctx).set(ctx, state.session.name)
        active = state.default_workers_plan
        data = {
            "session_path": queries.session_path(state.session.name),
            "task_description": excerpts.fit_json(state.session.task_description, 200),
            "queue": _queue_entries(state.queue),
            "queue_length": state.queue_length,
            "queue_more": state.queue_length - len(state.queue),
            "active_plan": None
            if active is None
            else {"id": active.id, "goal": excerpts.fit_json(active.goal, 120), "file_path": queries.plan_path(active)},
            "completed_count": state.completed_count,
        }
        _add_in_review(data, state.session.name)
        _parallel_view(state, data)
        # What a reviewer or an integration did to the session's plans since an agent last
        # acted here: a discarded or taken-back plan must not go unnoticed.
        changed = queries.interventions(state.session.name)
        if changed:
            data["changed_by_others"] = [excerpts.fit_json(c.describe(), 240) for c in changed]
        hint = "Active plan: read its file and continue." if active else "No active plan: call 9plan_queue_pull."
        if changed:
            hint += " Others changed plans meanwhile: see changed_by_others."
        if not _state(ctx).remembers(ctx):
            hint += STATELESS_HINT.format(name=state.session.name)
        return responses.ok(state.session.name, f"Session resumed. {hint}", data)

    if session_name is None or not isinstance(session_name, str):
        session_name = ""
    return _call(ctx, session_name, body)


# --- queue ------------------------------------------------------------------------------


def queue_add(
    ctx: Context,
    context: Annotated[str, Field(description="Where this plan fits in the overall task.")],
    goal: Annotated[str, Field(description="What this plan accomplishes, specific and checkable.")],
    approach: Annotated[str, Field(description="Concrete steps to reach the goal.")],
    success_criteria: Annotated[str, Field(description="Observable conditions that mean it is done.")],
    inputs: Annotated[
        str | None, Field(description="What it needs from other plans, described (not by id): '- schema: from the models plan'.")
    ] = None,
    outputs: Annotated[str | None, Field(description="What it produces, specific enough to search for later.")] = None,
    position: PositionArg = None,
    review: ReviewArg = None,
    depends_on: DependsArg = None,
    session_name: SessionArg = None,
) -> CallToolResult:
    """Add one self-contained plan to the queue and write its plan file. Use 'front' for work
    that blocks what you are doing, 'back' for work that can wait. Adding A, B, C at the
    front gives C, B, A: to keep an order, use 9plan_queue_add_batch.
    Example: {"context": "Billing port", "goal": "Model invoices in Django",
    "approach": "1. Read schema 2. Write models 3. Migrate", "success_criteria": "Tests pass"}"""

    def body(name: str | None) -> CallToolResult:
        fields = dict(
            context=context,
            goal=goal,
            approach=approach,
            success_criteria=success_criteria,
            inputs=inputs,
            outputs=outputs,
            depends_on=depends_on,
        )
        placed = services.plan_enqueue_many(
            session_name=name, plans=[fields], position=position, review=review, actor=_actor(ctx)
        )[0]
        plan = placed.plan
        data = {"plan_id": plan.id, "plan_path": queries.plan_path(plan), "queue_position": placed.place}
        return responses.ok(name, "Plan added.", data)

    return _call(ctx, session_name, body)


class PlanSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    context: str = Field(description="Where this plan fits in the overall task.")
    goal: str = Field(description="What this plan accomplishes.")
    approach: str = Field(description="Concrete steps.")
    success_criteria: str = Field(description="Observable completion conditions.")
    inputs: str | None = Field(default=None, description="Needed from other plans, described.")
    outputs: str | None = Field(default=None, description="What it produces.")
    depends_on: list[str | int] | None = Field(
        default=None, description="Plan ids, or indexes of earlier plans in this batch, to complete first."
    )


def queue_add_batch(
    ctx: Context,
    plans: Annotated[list[PlanSpec], Field(description="Plans in the order they should be worked (1 to 50).")],
    position: PositionArg = None,
    review: ReviewArg = None,
    session_name: SessionArg = None,
) -> CallToolResult:
    """Add several plans in one call, keeping their order, at the front or the back; all are
    added or none. Use it to decompose: [A, B, C] at 'front' are worked A, then B, then C,
    before anything already queued. For parallel work, C with depends_on [0, 1] waits for A and B.
    Example: {"plans": [{"context": "...", "goal": "A", "approach": "...",
    "success_criteria": "..."}, {...}], "position": "front"}"""

    def body(name: str | None) -> CallToolResult:
        created = services.plan_enqueue_many(
            session_name=name,
            plans=[p.model_dump() if isinstance(p, BaseModel) else p for p in plans],
            position=position,
            review=review,
            actor=_actor(ctx),
        )
        data = {
            "plans": [
                {"plan_id": q.plan.id, "queue_position": q.place} for q in created[:BATCH_CAP]
            ],
            "added": len(created),
            "plans_dir": str(planfiles.plans_dir(name)),
        }
        return responses.ok(name, f"{len(created)} plans added in order.", data)

    return _call(ctx, session_name, body)


def queue_pull(ctx: Context, worker: WorkerArg = None, session_name: SessionArg = None) -> CallToolResult:
    """Claim the first ready plan in the queue for your worker; returns its full text.
    Work on it, then call 9plan_plan_complete, 9plan_plan_defer or 9plan_plan_discard.
    Errors: PLAN_ALREADY_ACTIVE (finish yours first), QUEUE_BLOCKED (plans wait for others),
    QUEUE_EMPTY (task complete).
    Example: {}"""

    def body(name: str | None) -> CallToolResult:
        plan = services.plan_pull(session_name=name, worker=worker, actor=_actor(ctx))
        remaining = queries.queue_length(name)
        data = {
            "plan_id": plan.id,
            "plan_path": queries.plan_path(plan),
            "goal": excerpts.one_line(plan.goal, 300),
            "queue_remaining": remaining,
        }
        if plan.worker != DEFAULT_WORKER or plan.attempts:
            data.update(worker=plan.worker, attempt=plan.attempts + 1, lease_until=_lease(plan))
        summary = "Plan pulled; its full text follows. Edit the file's Notes as you work."
        late = queries.late_writes(plan.id) if plan.attempts else []
        if late:
            data["late_writes"] = [
                {"worker": w.worker, "op": w.op, "text": excerpts.fit_json(w.text, 300)} for w in late
            ]
            summary += " Text a worker sent after losing this plan is in late_writes."
        text, notice = queries.plan_file_text(plan)
        rejected = review.last_rejection(plan)
        if rejected is not None:
            # Shown first: the reviewer's notes say what the last attempt lacked.
            data["review_notes"] = {
                "by": rejected.actor,
                "at": rejected.created_at.isoformat(timespec="seconds"),
                "notes": excerpts.fit_json(rejected.detail.get("notes", ""), 700),
                "rejections": plan.rejections,
            }
            summary = (
                f"This plan was sent back in review by {rejected.actor}: read review_notes first (they are also at "
                f"the end of its Notes). {summary}"
            )
        summary = _with_file_notice(notice, summary, data)
        return responses.ok(name, summary, data, body=text)

    return _call(ctx, session_name, body)


def plan_renew(ctx: Context, worker: WorkerArg = None, session_name: SessionArg = None) -> CallToolResult:
    """Renew the lease on your plan without writing to it, when the work takes longer than
    the lease (any note, defer or complete renews it too).
    Example: {}"""

    def body(name: str | None) -> CallToolResult:
        plan = services.plan_renew(session_name=name, worker=worker, actor=_actor(ctx))
        return responses.ok(name, "Lease renewed.", {"plan_id": plan.id, "lease_until": _lease(plan)})

    return _call(ctx, session_name, body)


# --- the active plan --------------------------------------------------------------------


def plan_defer(
    ctx: Context,
    reason: Annotated[str, Field(description="Why it is put back; appended to Notes with a timestamp.")],
    position: PositionArg = None,
    worker: WorkerArg = None,
    session_name: SessionArg = None,
) -> CallToolResult:
    """Put the active plan back in the queue without finishing it. Blocked on something?
    Defer to 'back' (or add the blocker at the front first). Decomposing? Add the subplans
    with 9plan_queue_add_batch at 'front', then defer this one to 'back'. Edits you made to
    the plan file are kept.
    Example: {"reason": "Needs the schema plan first", "position": "back"}"""

    def body(name: str | None) -> CallToolResult:
        placed = services.plan_defer(
            session_name=name, reason=reason, position=position, worker=worker, actor=_actor(ctx)
        )
        return _plan_written(
            name, placed, "Plan deferred.", plan_path=queries.plan_path(placed.plan), queue_position=placed.place
        )

    return _call(ctx, session_name, body)


def plan_complete(
    ctx: Context,
    outcome: Annotated[
        str,
        Field(description="What was done and what it produced (files, names, decisions): later plans find it by search."),
    ],
    worker: WorkerArg = None,
    session_name: SessionArg = None,
) -> CallToolResult:
    """Mark the active plan done. Stores the outcome, keeps your edits to the plan file,
    makes the plan searchable with 9plan_history_search, and deletes the file. Returns the
    queue status; pull the next plan after.
    Example: {"outcome": "Added Invoice and Line models in billing/models.py; migration 0003."}"""

    def body(name: str | None) -> CallToolResult:
        written = services.plan_complete(session_name=name, outcome=outcome, worker=worker, actor=_actor(ctx))
        plan = written.plan
        status = queries.queue_status(name)
        data = {
            "queue_length": status.length,
            "completed_count": status.completed,
            "next": None if status.next_id is None else {"id": status.next_id, "goal": excerpts.fit_json(status.next_goal, 120)},
        }
        if plan.status == Plan.Status.IN_REVIEW:
            data["status"] = plan.status
            done = "Plan submitted for review: a reviewer approves it (then it is searchable) or sends it back."
        else:
            done = "Plan completed."
        if status.next_id:
            hint = "Next: 9plan_queue_pull."
        elif status.unfinished:
            data["unfinished_count"] = status.unfinished
            hint = (
                f"Nothing else is queued, but {status.unfinished} plan(s) are still active with other workers or "
                "await review: the task is not done yet."
            )
        else:
            hint = "The queue is empty: task complete! 🎉"
        return _plan_written(name, written, f"{done} {hint}", **data)

    return _call(ctx, session_name, body)


def plan_discard(
    ctx: Context,
    reason: Annotated[str, Field(description="Why the plan is dropped (obsolete, unnecessary, misconceived).")],
    worker: WorkerArg = None,
    session_name: SessionArg = None,
) -> CallToolResult:
    """Drop the active plan without doing it. A discarded plan is never searchable history.
    Use it for work that turned out obsolete or wrong; use 9plan_plan_defer if it is
    still needed later.
    Example: {"reason": "Superseded by the new auth plan"}"""

    def body(name: str | None) -> CallToolResult:
        written = services.plan_discard(session_name=name, reason=reason, worker=worker, actor=_actor(ctx))
        return _plan_written(name, written, "Plan discarded.", queue_length=queries.queue_length(name))

    return _call(ctx, session_name, body)


def plan_note(
    ctx: Context,
    text: Annotated[str, Field(description="The note to write (Markdown is fine).")],
    mode: Annotated[
        str | None,
        Field(
            description="'append' (default) adds the text after a blank line; 'replace' overwrites all Notes. "
            "Exactly 'append' or 'replace', lowercase.",
            json_schema_extra={"enum": ["append", "replace"]},
        ),
    ] = None,
    worker: WorkerArg = None,
    session_name: SessionArg = None,
) -> CallToolResult:
    """Write the active plan's Notes: findings, decisions, progress, so they survive context
    loss. 'append' is safe alongside other writers and never loses earlier notes; it is
    not idempotent (a retried append appends twice). 'replace' overwrites all Notes.
    Example: {"text": "Schema uses UUID keys; see models.py", "mode": "append"}"""

    def body(name: str | None) -> CallToolResult:
        written = services.plan_note(session_name=name, text=text, mode=mode, worker=worker, actor=_actor(ctx))
        return _plan_written(
            name,
            written,
            "Notes written.",
            mode=mode or "append",
            notes_chars=len(written.plan.notes),
            plan_path=queries.plan_path(written.plan),
        )

    return _call(ctx, session_name, body)


# --- history ----------------------------------------------------------------------------


def history_search(
    ctx: Context,
    query: Annotated[str, Field(description="Words describing what you need, e.g. 'invoice model migration'.")],
    max_results: Annotated[int | None, Field(description="How many results, 1 to 8 (default 5).")] = None,
    session_name: SessionArg = None,
) -> CallToolResult:
    """Search the session's completed plans (best match first) to find what earlier
    work produced: use it to resolve a plan's inputs. Words match in any form ("caching"
    finds "cached"), the last one also as a prefix. Plans matching all your words rank
    first; partial matches follow. Discarded plans never appear.
    Example: {"query": "invoice models"}"""

    def body(name: str | None) -> CallToolResult:
        limit = inputs.positive_int("max_results", max_results, default=5, maximum=8)
        hits = queries.history_search(query, session_name=name, max_results=limit)
        # More results get shorter snippets, so the answer's size does not grow with them.
        each = SEARCH_BYTES // max(1, len(hits)) - 60
        results = [
            {
                "id": h.plan.id,
                "goal": excerpts.fit_json(h.plan.goal, each * 2 // 5),
                "outcome": excerpts.fit_json(h.plan.outcome, each * 3 // 5),
                "relevance_rank": h.rank,
            }
            for h in hits
        ]
        summary = f"{len(results)} result(s)." + (" Read one with 9plan_history_get." if results else "")
        return responses.ok(name, summary, {"results": results})

    return _call(ctx, session_name, body)


def history_get(
    ctx: Context,
    plan_id: Annotated[str, Field(description="A completed plan's 5-character id, e.g. 'k3x9q'.")],
    session_name: SessionArg = None,
) -> CallToolResult:
    """Read one completed plan in full: every section, its notes and its outcome.
    Example: {"plan_id": "k3x9q"}"""

    def body(name: str | None) -> CallToolResult:
        plan = queries.history_get(session_name=name, plan_id=plan_id)
        data = {
            "plan_id": plan.id,
            **plan.sections(),
            "outcome": plan.outcome,
            # A string here, so the text and the structured content spell the time alike.
            "completed_at": plan.completed_at.isoformat(timespec="seconds") if plan.completed_at else None,
        }
        return responses.ok(name, "Completed plan.", data)

    return _call(ctx, session_name, body)


# --- inspection -------------------------------------------------------------------------


def admin_validate(ctx: Context, session_name: SessionArg = None) -> CallToolResult:
    """Check the session's invariants: one active plan at most, queue order intact, every
    queued/active plan has its file, no stray files. Each issue names the plan and the fix.
    Example: {}"""

    def body(name: str | None) -> CallToolResult:
        result = queries.check_invariants(name)
        data = {
            "valid": result.valid,
            "invariants": result.invariants,
            "issues": [excerpts.fit_json(i, 160) for i in result.issues[:ISSUE_CAP]],
            "issues_more": max(0, len(result.issues) - ISSUE_CAP),
        }
        return responses.ok(name, "Valid." if result.valid else f"{len(result.issues)} issue(s) found.", data)

    return _call(ctx, session_name, body)


def admin_sessions(ctx: Context, session_name: SessionArg = None) -> CallToolResult:
    """List the sessions on this server, newest first, with queue length, completed count
    and whether a plan is active. Use it to find a session name to resume.
    Example: {}"""

    def body(name: str | None) -> CallToolResult:
        if name is not None:
            queries.get_session(name)  # a named session must exist; the list is the same
        sessions, total = queries.session_list(limit=LIST_CAP)
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

    return _call(ctx, session_name, body, needs_session=False)


def admin_state(ctx: Context, session_name: SessionArg = None) -> CallToolResult:
    """Detailed state of the session for debugging: queue with positions, active plan, plan
    files on disk and whether they match the database.
    Example: {}"""

    def body(name: str | None) -> CallToolResult:
        state = queries.session_state(name, limit=LIST_CAP)
        files = planfiles.list_plan_files(name)
        validation_result = queries.check_invariants(name)
        active = state.active
        data = {
            "task_description": excerpts.fit_json(state.session.task_description, 150),
            "queue": _queue_entries(state.queue, key="position"),
            "queue_length": state.queue_length,
            "active_plan": None
            if active is None
            else {"id": active.id, "goal": excerpts.fit_json(active.goal, 100), "file_path": queries.plan_path(active)},
            "completed_count": state.completed_count,
            "plan_files": files[:LIST_CAP],
            "plan_files_count": len(files),
            "file_db_match": validation_result.invariants["files_match_database"]
            and validation_result.invariants["no_orphaned_files"],
        }
        _add_in_review(data, name)
        _parallel_view(state, data)
        return responses.ok(name, "Session state.", data)

    return _call(ctx, session_name, body)


READ_ONLY = {session_resume, history_search, history_get, admin_validate, admin_sessions, admin_state}

TOOLS: list[tuple[str, Callable[..., CallToolResult], str]] = [
    ("9plan_session_create", session_create, "Create session"),
    ("9plan_session_resume", session_resume, "Resume session"),
    ("9plan_queue_add", queue_add, "Add plan"),
    ("9plan_queue_add_batch", queue_add_batch, "Add plans in order"),
    ("9plan_queue_pull", queue_pull, "Pull next plan"),
    ("9plan_plan_defer", plan_defer, "Defer active plan"),
    ("9plan_plan_complete", plan_complete, "Complete active plan"),
    ("9plan_plan_discard", plan_discard, "Discard active plan"),
    ("9plan_plan_note", plan_note, "Write active plan's notes"),
    ("9plan_plan_renew", plan_renew, "Renew the lease"),
    ("9plan_history_search", history_search, "Search completed plans"),
    ("9plan_history_get", history_get, "Read a completed plan"),
    ("9plan_admin_validate", admin_validate, "Check invariants"),
    ("9plan_admin_sessions", admin_sessions, "List sessions"),
    ("9plan_admin_state", admin_state, "Session state dump"),
]
