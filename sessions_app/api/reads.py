"""Reads behind the REST API. Like sessions_app.reads.queries they never write, and each costs a
fixed number of queries however many sessions, plans and events there are.

Fingerprints (for ETags) rely on the event log: every change to a session's queue or to a
plan records an event in the same transaction, so the newest event id moves with every
change, and is found through the (session, id) index without reading the plans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery, Window
from django.db.models.functions import RowNumber

from sessions_app import access
from sessions_app.errors import PlanNotFound, SessionNotFound
from sessions_app.models import Event, Plan, PlanDependency, Session
from sessions_app.reads import queries

PLAN_EVENTS_SHOWN = 100
SUMMARY_FIELDS = (
    "id",
    "session_id",
    "status",
    "goal",
    "created_at",
    "updated_at",
    "completed_at",
    "discarded_at",
    "worker",
    "lease_expires_at",
    "attempts",
)


def _last_event(**match) -> Subquery:
    return Subquery(Event.objects.filter(**match).order_by("-id").values("id")[:1])


def session_fingerprint(name: str) -> str:
    """A value that changes whenever anything in the session changes (one query): every
    change writes an event, but a renewed lease writes none, so the leases count too."""
    leases = Plan.objects.filter(session=OuterRef("pk"), status=Plan.Status.ACTIVE).order_by("-lease_expires_at")
    row = (
        Session.objects.filter(name=name)
        .annotate(last=_last_event(session=OuterRef("pk")), lease=Subquery(leases.values("lease_expires_at")[:1]))
        .values_list("last", "lease", "project_id")
        .first()
    )
    if row is None:
        raise SessionNotFound.named(name)
    # Every conditional read of a session starts here: the caller must see its project.
    access.require(access.VIEW, project=row[2], session_name=name)
    lease = f"-{row[1].timestamp():.6f}" if row[1] else ""
    return f"s{row[0] or 0}{lease}"


def unmet_dependencies():
    """For a plans query: whether the plan waits for a plan that is not completed."""
    return Exists(PlanDependency.objects.filter(plan=OuterRef("pk")).exclude(depends_on__status=Plan.Status.COMPLETED))


def sessions(*, has_active_plan: bool | None, has_queued: bool | None, search: str | None) -> QuerySet[Session]:
    """Sessions with the counts of queries.session_list, filtered; newest first."""
    qs = queries.sessions_with_counts()
    if has_active_plan is not None:
        qs = qs.filter(has_active_plan=has_active_plan)
    if has_queued is True:
        qs = qs.filter(queue_length__gt=0)
    elif has_queued is False:
        qs = qs.filter(queue_length=0)
    if search:
        qs = qs.filter(Q(name__icontains=search) | Q(task_description__icontains=search))
    return qs


def queue(name: str) -> QuerySet[Plan]:
    """The session's queued plans in queue order."""
    return (
        Plan.objects.filter(session_id=name, status=Plan.Status.QUEUED)
        .order_by("sort_key")
        .only("id", "session_id", "goal", "sort_key", "waiting_for_person", "attempts")
        .annotate(place=Window(RowNumber(), order_by=F("sort_key").asc()), unmet=unmet_dependencies())
    )


def plans(name: str, *, status: str | None) -> QuerySet[Plan]:
    """The session's plans, oldest first (ties broken by id, so the order is total)."""
    qs = Plan.objects.filter(session_id=name)
    if status is not None:
        qs = qs.filter(status=status)
    return qs.order_by("created_at", "id").only(*SUMMARY_FIELDS)


@dataclass(frozen=True)
class PlanDetail:
    plan: Plan
    place: int | None  # 1 = pulled next; None unless queued
    events: list[Event]  # the first PLAN_EVENTS_SHOWN, oldest first
    events_count: int
    fingerprint: str  # changes whenever the plan does (for its ETag)
    dependencies: queries.Dependencies
    late_writes: list[queries.LateWrite]

    @property
    def ready(self) -> bool | None:
        """Whether the next pull may take it; None unless queued."""
        if self.plan.status != Plan.Status.QUEUED:
            return None
        return self.dependencies.ready and not self.plan.waiting_for_person


def _not_found(name: str, plan_id: str) -> NoReturn:
    queries.get_session(name)  # a missing session is SESSION_NOT_FOUND, not PLAN_NOT_FOUND
    raise PlanNotFound.in_session(plan_id, name)


def plan(name: str, plan_id: str) -> Plan:
    """The plan alone, for what hangs off it (its revisions): one query."""
    found = Plan.objects.filter(session_id=name, id=plan_id).annotate(project=F("session__project_id")).first()
    if found is None:
        _not_found(name, plan_id)
    access.require(access.VIEW, project=found.project, session_name=name)
    return found


def plan_detail(name: str, plan_id: str) -> PlanDetail:
    """The plan, its place, its first events and how many there are (three queries at most)."""
    plan = (
        Plan.objects.filter(session_id=name, id=plan_id)
        .annotate(
            last_event=_last_event(plan=OuterRef("pk")), events_count=Count("events"), project=F("session__project_id")
        )
        .first()
    )
    if plan is None:
        _not_found(name, plan_id)
    access.require(access.VIEW, project=plan.project, session_name=name)
    return PlanDetail(
        plan=plan,
        place=queries.queue_place(plan),
        events=list(Event.objects.filter(plan=plan).order_by("id")[:PLAN_EVENTS_SHOWN]),
        events_count=plan.events_count,
        fingerprint=(
            f"p{plan.version}-{plan.last_event or 0}-{plan.status}-{plan.updated_at.timestamp():.6f}"
            f"-{plan.lease_expires_at.timestamp() if plan.lease_expires_at else 0:.6f}"
        ),
        dependencies=queries.dependencies(plan.id),
        late_writes=queries.late_writes(plan.id),
    )


def feed_scope(session_name: str | None, plan_id: str | None) -> tuple[Session | None, Plan | None]:
    """The session and plan an event feed is narrowed to; each must exist."""
    session = queries.get_session(session_name) if session_name is not None else None
    plan = None
    if plan_id is not None:
        qs = queries.visible_plans().filter(id=plan_id)
        if session is not None:
            qs = qs.filter(session=session)
        plan = qs.only("id", "session_id").first()
        if plan is None:
            where = f" in session '{session.name}'" if session is not None else ""
            raise PlanNotFound(f"No plan {plan_id}{where}.")
    return session, plan
