"""Reads behind the admin pages. Like sessions_app.reads.queries they never write, and each page
costs a fixed number of queries however many sessions, plans and events there are."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from sessions_app import clock, planfiles
from sessions_app.errors import PlanNotFound
from sessions_app.maintenance import invariants
from sessions_app.models import SECTIONS, Event, Plan, Session
from sessions_app.reads import needs_you, queries

if TYPE_CHECKING:
    from sessions_app.reads.needs_you import PlanInProject

QUEUE_SHOWN = 200
HISTORY_SHOWN = 50
EVENTS_SHOWN = 100
PLAN_EVENTS_SHOWN = 200
HISTORY_FIELDS = ("id", "session_id", "goal", "outcome", "discard_reason", "completed_at", "discarded_at")


def has_active_plan() -> Exists:
    return Exists(queries.session_plans(Plan.Status.ACTIVE))


def has_queued_work() -> Exists:
    return Exists(queries.session_plans(Plan.Status.QUEUED))


def _count_of(which: Q) -> Coalesce:
    """How many of the session's plans ``which`` selects: a subquery of the one list query
    (these statuses have no counter on the session row; each reads the session's plans in
    those statuses only, by the (session, status) index)."""
    plans = Plan.objects.filter(which, session=OuterRef("pk")).order_by().values("session")
    return Coalesce(Subquery(plans.annotate(n=Count("id")).values("n")[:1]), 0)


def annotate_sessions(qs: QuerySet[Session]) -> QuerySet[Session]:
    """Sessions with the columns of the sessions list, all computed in the one list query."""
    active = queries.session_plans(Plan.Status.ACTIVE)
    # The newest event by id: one step down the (session, id) index, where the latest
    # created_at would read every event of the session.
    last_event = Event.objects.filter(session=OuterRef("pk")).order_by("-id").values("created_at")[:1]
    return qs.annotate(
        queue_length=queries.plan_count(Plan.Status.QUEUED),
        completed_count=queries.plan_count(Plan.Status.COMPLETED),
        discarded_count=queries.plan_count(Plan.Status.DISCARDED),
        in_review_count=_count_of(needs_you.IN_REVIEW),
        held_count=_count_of(needs_you.HELD),
        waiting_count=_count_of(needs_you.WAITING),
        workers_count=_count_of(Q(status=Plan.Status.ACTIVE)),
        active_plan_id=Subquery(active.values("id")[:1]),
        active_plan_goal=Subquery(active.values("goal")[:1]),
        last_activity=Subquery(last_event),
    )


@dataclass
class SessionPage:
    state: queries.SessionState
    completed: list[Plan]
    discarded: list[Plan]
    events: list[Event]
    event_count: int
    series: list[tuple[datetime, int, int]]
    validation: invariants.InvariantReport
    now: datetime
    in_review: tuple[list[Plan], int]  # the first plans waiting for a reviewer, and how many
    held: tuple[list[Plan], int]  # the first plans held after their last rejection, and how many


def _latest(session: Session, status: str, stamp: str) -> list[Plan]:
    """The session's plans in ``status``, the most recent by ``stamp`` first."""
    qs = Plan.objects.filter(session=session, status=status).order_by(f"-{stamp}", "-id")
    return list(qs.only(*HISTORY_FIELDS)[:HISTORY_SHOWN])


@dataclass
class SessionLive:
    """What a session page's live parts show: its queue, workers, plans awaiting a
    decision and newest events."""

    state: queries.SessionState
    events: list[Event]
    event_count: int
    now: datetime
    in_review: tuple[list[Plan], int]
    held: tuple[list[Plan], int]


def session_live(name: object) -> SessionLive:
    state = queries.session_state(name, limit=QUEUE_SHOWN)
    events = Event.objects.filter(session=state.session)
    return SessionLive(
        state=state,
        events=list(events.order_by("-created_at", "-id")[:EVENTS_SHOWN]),
        event_count=events.count(),
        now=clock.now(),
        in_review=queries.plans_in(state.session.name, Plan.Status.IN_REVIEW, limit=QUEUE_SHOWN),
        held=queries.plans_in(state.session.name, Plan.Status.HELD, limit=QUEUE_SHOWN),
    )


def session_page(name: object) -> SessionPage:
    live = session_live(name)
    session = live.state.session
    return SessionPage(
        state=live.state,
        completed=_latest(session, Plan.Status.COMPLETED, "completed_at"),
        discarded=_latest(session, Plan.Status.DISCARDED, "discarded_at"),
        events=live.events,
        event_count=live.event_count,
        series=session_series(session),
        validation=invariants.check_invariants(session.name),
        now=live.now,
        in_review=live.in_review,
        held=live.held,
    )


# Queue membership changes by event kind: entering the queue (a reclaimed claim and a
# rejection in review put the plan back at the front), leaving it (a held plan waits for a
# person outside the queue); and the kinds that make a plan done.
_ENTERS_QUEUE = {
    Event.Kind.PLAN_CREATED,
    Event.Kind.PLAN_DEFERRED,
    Event.Kind.PLAN_REQUEUED,
    Event.Kind.PLAN_RECLAIMED,
    Event.Kind.PLAN_REJECTED,
}
_COMPLETES = {Event.Kind.PLAN_COMPLETED, Event.Kind.PLAN_APPROVED}
_LEAVES_QUEUE = {Event.Kind.PLAN_PULLED, Event.Kind.PLAN_DISCARDED, Event.Kind.PLAN_HELD, *_COMPLETES}


def session_series(session: Session) -> list[tuple[datetime, int, int]]:
    """(time, queue length, completions so far) after each event that changes either.

    Replayed from the event log, plan by plan, so a discard counts against the queue only
    when the plan was queued at the time (discarding the active plan leaves it as it was).
    """
    rows = (
        Event.objects.filter(session=session, kind__in=_ENTERS_QUEUE | _LEAVES_QUEUE)
        .order_by("created_at", "id")
        .values_list("kind", "plan_id", "created_at")
    )
    queued: set[str] = set()
    done = 0
    series: list[tuple[datetime, int, int]] = []
    for kind, plan_id, at in rows.iterator(chunk_size=2000):
        if kind in _ENTERS_QUEUE:
            queued.add(plan_id)
        else:
            queued.discard(plan_id)
            if kind in _COMPLETES:
                done += 1
        series.append((at, len(queued), done))
    return series


def plan_events(plan: Plan) -> tuple[list[Event], int]:
    events = Event.objects.filter(plan=plan)
    # Newest first, as the session's timeline.
    return list(events.order_by("-created_at", "-id")[:PLAN_EVENTS_SHOWN]), events.count()


def session_of_plan(plan_id: str) -> str | None:
    """The session of the plan, if the user may see it."""
    return queries.visible_plans().filter(id=plan_id).values_list("session_id", flat=True).first()


def plan_for_restore(plan_id: str) -> PlanInProject | None:
    """What the restore's confirmation names: the plan's status and its worker (None if the
    user may not see the plan)."""
    fields = ("id", "session_id", "status", "worker", "goal", "lease_expires_at")
    return queries.visible_plans().only(*fields).annotate(project=F("session__project_id")).filter(id=plan_id).first()


@dataclass
class FileCheck:
    path: str
    exists: bool
    expected: bool
    differing: list[str]
    problem: str = ""  # the file is there but cannot be used: a link, FIFO, too large, not UTF-8

    @property
    def matches(self) -> bool:
        return self.exists == self.expected and not self.differing and not self.problem


def plan_file_check(plan: Plan) -> FileCheck:
    """Whether the plan's file is where the database says it should be, with the same text.

    Both sides go through the file format's parser, so line-ending and trailing-newline
    differences the format cannot carry do not count as a mismatch.
    """
    path = queries.plan_path(plan)
    read = planfiles.read_plan_file(plan.session_id, plan.file_stem)
    if read.state == planfiles.MISSING:
        return FileCheck(path, exists=False, expected=plan.is_open, differing=[])
    if not read.usable:
        return FileCheck(path, exists=True, expected=plan.is_open, differing=[], problem=read.problem)
    assert read.text is not None  # a usable read has its text
    on_disk = planfiles.parse(read.text)
    in_db = planfiles.parse(planfiles.render(plan.sections())).sections
    differing = [name for name in SECTIONS if on_disk.sections.get(name) != in_db.get(name)]
    if on_disk.preamble:
        differing.append("text above the first heading")
    return FileCheck(path, exists=True, expected=plan.is_open, differing=differing)


@dataclass
class PlanPage:
    plan: Plan
    place: int | None
    file: FileCheck
    events: list[Event]
    event_count: int
    dependencies: queries.Dependencies
    late_writes: list[queries.LateWrite]


def plan_page(plan_id: str) -> PlanPage:
    """Everything the plan page shows, in a fixed number of queries and one file read."""
    plan = queries.visible_plans().filter(id=plan_id).first()
    if plan is None:
        raise PlanNotFound(f"No plan {plan_id} exists.")
    events, event_count = plan_events(plan)
    return PlanPage(
        plan,
        queries.queue_place(plan),
        plan_file_check(plan),
        events,
        event_count,
        queries.dependencies(plan.id),
        queries.late_writes(plan.id),
    )
