"""The write kit every service shares: what a write returns, the session and plan rows
locked for it, the event it records, and the few steps of a plan's life that several
services take (back to the queue, a note appended when it fits).

Each piece runs inside the caller's write transaction (sessions_app/store/transactions.py);
none opens one itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from django.conf import settings
from django.db.models import F

from sessions_app import access, clock, errors
from sessions_app.errors import PlanNotFound, SessionNotFound, ValidationFailed
from sessions_app.models import DEFAULT_WORKER, SECTIONS, Event, Plan, Session
from sessions_app.services.webhooks import write_messages
from sessions_app.webhooks import event_types as webhook_types

# Event.actor declares its max_length; the stubs type any field's as optional.
ACTOR_CHARS = cast(int, Event._meta.get_field("actor").max_length)

# What a write of a plan sets beside its text: its version and when it changed.
TOUCHED = ("version", "updated_at")
# What changes when a plan goes back to the queue: its claim ends.
RETURNED = ("status", "sort_key", "claimant", "worker", "claimed_at", "lease_expires_at")
LEASE = ("lease_expires_at",)


@dataclass(frozen=True)
class Written:
    """What a write did to a plan: the plan as stored; its place in the queue (1 = pulled
        next) when the write left it queued, as the write's own transaction saw it (counting
        afterwards could also count plans another writer queued meanwhile); and, when its plan
        file was not taken in, why (``file_notice``, for the caller to pass on); and what others
    did to the plan meanwhile (``changed_by_others``)."""

    plan: Plan
    place: int | None = None
    file_notice: str = ""
    # What a person did to the worker's plan since the worker last wrote it (a restore of
    # an earlier revision), one sentence each: for the worker's answer to say.
    changed_by_others: tuple[str, ...] = ()


def session_row(name: str, *, lock: bool = True):
    """The session's row with its counts and options, for a write; on PostgreSQL locked
    until the transaction ends when ``lock`` (on SQLite, BEGIN IMMEDIATE has serialised the
    writers already).

    The lock is FOR NO KEY UPDATE, what an UPDATE of the counts takes anyway, never FOR
    UPDATE: rows that refer to the session (events, plans) take a share of its key, which FOR
    UPDATE would wait for. A writer that inserted an event and then changed a plan's status
    would then strengthen its own lock while a pull waited for FOR UPDATE: a deadlock. The
    plans' row locks are the same for the same reason (docs/design.md, "Transactions and
    writer turns")."""
    rows = Session.objects.filter(name=name).order_by()
    return rows.select_for_update(no_key=True) if lock else rows


def only_row(rows):
    """The row a lookup by key finds (``rows``, a queryset), or None: read without the
    ORDER BY and LIMIT that ``first()`` would add to build and run."""
    return next(iter(rows), None)


def lock_session(name: str, need: str) -> Session:
    """The session row (``name`` already checked), with its plan counts as they are inside
    this write transaction; locked on PostgreSQL. The caller must be allowed ``need`` (an
    access right) in the session's project: a session it may not see is not found."""
    return _allowed(only_row(session_row(name)), name, need)


def _allowed(session: Session | None, name: str, need: str) -> Session:
    if session is None:
        raise SessionNotFound.named(name)
    # The column is NOT NULL; the stubs type a foreign key with a database default as optional.
    access.require(need, project=cast(str, session.project_id), session_name=name)
    return session


def enter_session(name: str, need: str) -> Session:
    """The session row unlocked, once the caller is allowed ``need`` in its project: for a
    write that locks plan rows before (or instead of) the session row."""
    return _allowed(only_row(session_row(name, lock=False)), name, need)


def plans_for_write(plans=None, *, skip_locked: bool = False):
    """Plans (a queryset: ``plans``, or all) as a write reads them, locked on PostgreSQL
    until the transaction ends: the plan rows alone, never the session's row joined to them.
    ``skip_locked``: a row another writer holds is passed over, never waited for, as a writer
    holding the session row must never wait for a plan row (docs/design.md, "Transactions
    and writer turns")."""
    plans = Plan.objects.all() if plans is None else plans
    return plans.select_for_update(no_key=True, skip_locked=skip_locked, of=("self",))


def plan_for_write(session_name: str, plan_id: str, need: str) -> Plan:
    """The plan ``plan_id`` of the session (both already checked), locked for this write on
    PostgreSQL: the plan row before the session row, as every writer takes them. The caller
    must be allowed ``need`` in the session's project; whether the plan exists is only told
    to a caller who may see the session."""
    found = only_row(
        plans_for_write()
        .filter(session_id=session_name, id=plan_id)
        .annotate(session_project=F("session__project_id"))
        .order_by()
    )
    if found is None:
        enter_session(session_name, need)
        raise PlanNotFound.in_session(plan_id, session_name)
    access.require(need, project=found.session_project, session_name=session_name)
    return found


def record_event(session_name: str, kind: str, actor: str, plan: Plan | str | None = None, **detail) -> None:
    """An event of the session, and its webhook messages (the outbox), in the transaction of
    the change it records. A completion or discard records its event before the plan's
    status changes: the outbox tells from that status whether the queue empties."""
    plan_id = plan.id if isinstance(plan, Plan) else plan
    # On PostgreSQL its save takes the event feed's lock first (event_feed.before_event_saved).
    event = Event.objects.create(
        session_id=session_name, plan_id=plan_id, kind=kind, actor=actor, detail=detail, created_at=clock.now()
    )
    types = webhook_types.types_of(kind, detail)
    if types:
        write_messages(event, types)


def touch(plan: Plan, at: datetime | None = None) -> None:
    """The plan's text or state changed: one version more, and when."""
    plan.version += 1
    plan.updated_at = at or clock.now()


def worker_actor(actor: str, worker: str) -> str:
    """Who an event names: the caller, and the worker when it named one (a single agent's
    events read as they always did)."""
    if worker == DEFAULT_WORKER:
        return actor
    return f"{actor[: ACTOR_CHARS - len(worker) - 1]}/{worker}"


def lease_until(lease_seconds: int, now: datetime) -> datetime:
    return now + timedelta(seconds=lease_seconds)


# --- the queue ---------------------------------------------------------------------------


def next_sort_key(session: Session, position: str) -> int:
    """The sort key of a plan put at ``position`` (front or back) of the session's queue."""
    # One end of the (session, status, sort_key) index, read directly. MIN and MAX
    # in one aggregate make SQLite scan the whole queue instead, a cost that grows with
    # the queue (docs/benchmarks.md).
    queued = Plan.objects.filter(session_id=session.name, status=Plan.Status.QUEUED)
    end = queued.order_by("sort_key" if position == "front" else "-sort_key").values_list("sort_key", flat=True).first()
    if end is None:
        return 0
    return end - 1 if position == "front" else end + 1


def place_at(session: Session, position: str, *, was_queued: bool = False) -> int:
    """Where a plan put at ``position`` now is in the queue (1 = next), from the queue's
    length as this transaction found it. A plan that ``was_queued`` already is counted in
    that length; a plan entering the queue is not."""
    if position == "front":
        return 1
    return session.count_queued if was_queued else session.count_queued + 1


def back_to_queue(plan: Plan, session: Session, position: str) -> int:
    """The plan goes to ``position`` of the queue, unclaimed (no worker, no lease); returns
    its place. A plan that was queued already (one waiting for a person) moves there. The
    caller writes the plan row."""
    was_queued = plan.status == Plan.Status.QUEUED
    plan.status = Plan.Status.QUEUED
    end_claim(plan)
    plan.sort_key = next_sort_key(session, position)
    return place_at(session, position, was_queued=was_queued)


def end_claim(plan: Plan) -> None:
    """The plan is no longer anyone's: no claimant, worker, claim time or lease."""
    plan.claimant = ""
    plan.worker = plan.claimed_at = plan.lease_expires_at = None


def check_queue_room(session: Session, adding: int) -> None:
    limit = settings.NINEPLAN_MAX_QUEUE_LENGTH
    length = session.count_queued
    if length + adding > limit:
        raise ValidationFailed(
            f"queue: adding {adding} plan(s) would make the queue {length + adding} long; at most {limit} are allowed.",
            field="queue",
            reason=errors.QUEUE_FULL,
        )


# --- notes -------------------------------------------------------------------------------


def compose_append(stored: str, fragment: str) -> str:
    """Stored notes without trailing whitespace, a blank line, then the fragment
    without its leading whitespace-only lines. Interior characters are never touched
    (docs/design.md, "Plan files")."""
    head = stored.rstrip()
    # A line ends at "\n" (so "\r\n" too), as in plan files; splitlines() would also
    # break at NEL or U+2028 and drop them from the start of the first real line.
    start = 0
    while (end := fragment.find("\n", start)) != -1 and fragment[start:end].strip() == "":
        start = end + 1
    tail = fragment[start:]
    return tail if head == "" else f"{head}\n\n{tail}"


def append_note_if_room(plan: Plan, note: str) -> bool:
    """Appends a note 9plan writes itself (a reclaim, a dropped dependency) to the plan's
    Notes, unless that would break a size limit: such a note must never make the write that
    adds it fail. Returns whether it was appended."""
    notes = compose_append(plan.notes, note)
    size = sum(len(v) for v in {**plan.sections(), "notes": notes}.values())
    if len(notes) > settings.NINEPLAN_MAX_FIELD_CHARS or size > settings.NINEPLAN_MAX_PLAN_CHARS:
        return False
    plan.notes = notes
    return True


def set_sections(plan: Plan, sections: dict[str, str]) -> None:
    for name in SECTIONS:
        setattr(plan, name, sections[name])
