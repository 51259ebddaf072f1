"""Every read of 9plan. Queries never write; their query count does not grow with the data."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.conf import settings
from django.db.models import Case, Exists, F, OuterRef, Q, Value, When

from sessions_app import access, inputs, planfiles, search
from sessions_app.clock import utc_text
from sessions_app.errors import (
    NOT_COMPLETED,
    NOTHING_HELD,
    OTHER_WORKERS_HOLD,
    NoActivePlan,
    PlanNotFound,
    SessionNotFound,
)
from sessions_app.models import (
    DEFAULT_WORKER,
    Event,
    Plan,
    PlanDependency,
    Session,
    WebhookDelivery,
    WebhookSubscription,
)
from sessions_app.reads import interventions
from sessions_app.reads.snapshot import snapshot
from sessions_app.store import plan_counts

LIST_CAP = 20
# What a state read shows of each queued plan.
_QUEUE_FIELDS = ("id", "session", "sort_key", "goal", "waiting_for_person", "attempts")


def get_session(name: object) -> Session:
    """The session, for a caller who may see it: one of another project is not found, with
    the same answer as one that does not exist (sessions_app/access.py)."""
    name = inputs.session_name(name)
    session = next(iter(Session.objects.filter(name=name).order_by()), None)
    if session is None:
        raise SessionNotFound.named(name)
    # The column is NOT NULL; the stubs type a foreign key with a database default as optional.
    access.require(access.VIEW, project=cast(str, session.project_id), session_name=name)
    return session


def visible_sessions():
    """The sessions the caller may see (a queryset; every session for the local user)."""
    projects = access.current().visible_projects()
    sessions = Session.objects.all()
    return sessions if projects is None else sessions.filter(project_id__in=projects)


def visible_plans():
    """The plans of the sessions the caller may see (a queryset)."""
    projects = access.current().visible_projects()
    plans = Plan.objects.all()
    return plans if projects is None else plans.filter(session__project_id__in=projects)


def visible_events():
    """The events of the sessions the caller may see (a queryset)."""
    projects = access.current().visible_projects()
    events = Event.objects.all()
    return events if projects is None else events.filter(session__project_id__in=projects)


def session_path(name: str) -> str:
    return str(planfiles.session_dir(name))


def plan_path(plan: Plan) -> str:
    return str(planfiles.plan_path(plan.session_id, plan.file_stem))


def queue(session: Session, *, limit: int | None = LIST_CAP) -> tuple[list[Plan], int]:
    """The queued plans in order (the first ``limit``), and how many there are in all."""
    rows = Plan.objects.filter(session_id=session.name, status=Plan.Status.QUEUED).order_by("sort_key")
    if limit:
        rows = rows.only(*_QUEUE_FIELDS)[:limit]
    return list(rows), session.count_queued


def claimed_plans(session: Session) -> list[Plan]:
    """The session's active plans, one per worker holding one: the default worker's first,
    then by when they were claimed."""
    default_first = Case(When(worker=DEFAULT_WORKER, then=Value(0)), default=Value(1))
    rows = Plan.objects.filter(session_id=session.name, status=Plan.Status.ACTIVE)
    return list(rows.order_by(default_first, "claimed_at", "id"))


# Whether the plan (of the query it is part of) depends on a plan not completed yet.
WAITS_FOR_OTHERS = Exists(
    PlanDependency.objects.filter(
        plan=OuterRef("pk"), depends_on__status__in=[s for s in Plan.Status.values if s != Plan.Status.COMPLETED]
    )
)
# The queued plans that are ready, of every session. Built once and narrowed per call:
# resolving the subquery above into a statement was a good part of every pull's cost, and it
# takes no value of a call's own.
READY_PLANS = Plan.objects.filter(status=Plan.Status.QUEUED, waiting_for_person=False).exclude(WAITS_FOR_OTHERS)


def ready_plans(session_name: str):
    """The session's queued plans that are ready (a queryset): no person must act first,
    and every plan each depends on is completed. Taken in queue order, the first ready plan
    is found walking the (session, status, sort_key) index past the blocked ones ahead of
    it only."""
    return READY_PLANS.filter(session_id=session_name)


def expired_claims(now: datetime) -> list[Plan]:
    """Active plans (of the sessions the caller may see) whose lease ran out before ``now``,
    the oldest first: still their workers' until another worker pulls or a person takes
    them back."""
    rows = visible_plans().filter(status=Plan.Status.ACTIVE, lease_expires_at__lt=now)
    return list(rows.only("id", "session_id", "worker", "lease_expires_at").order_by("lease_expires_at", "id"))


def active_plan(session: Session) -> Plan | None:
    claimed = claimed_plans(session)
    return claimed[0] if claimed else None


@dataclass
class SessionState:
    session: Session
    queue: list[Plan]
    queue_length: int
    active: Plan | None
    completed_count: int
    discarded_count: int
    # Every worker's plan (``active`` is the first of them), and the first queued plans that
    # cannot be handed out now, with what each waits for.
    claimed: list[Plan] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)

    @property
    def default_workers_plan(self) -> Plan | None:
        return next((p for p in self.claimed if p.worker == DEFAULT_WORKER), None)


def session_state(name: object, *, limit: int | None = LIST_CAP) -> SessionState:
    with snapshot():  # one snapshot for the session, its queue and its claims
        session = get_session(name)
        rows, total = queue(session, limit=limit)
        claimed = claimed_plans(session)
        blocked = blocked_plans(session.name, limit=limit or LIST_CAP) if total else []
    return SessionState(
        session,
        rows,
        total,
        claimed[0] if claimed else None,
        session.count_completed,
        session.count_discarded,
        claimed,
        blocked,
    )


# --- what queued plans wait for ------------------------------------------------------------


@dataclass(frozen=True)
class Waited:
    """A plan another plan waits for, as it is now."""

    id: str
    status: str
    worker: str | None
    lease_expires_at: datetime | None

    def describe(self) -> str:
        if self.status == Plan.Status.ACTIVE:
            return f"{self.id} (active, worker '{self.worker}', lease until {utc_text(self.lease_expires_at)})"
        return f"{self.id} ({self.status})"


@dataclass(frozen=True)
class Blocked:
    """A queued plan that cannot be handed out now: it waits for a person, or for plans
    that are not completed yet."""

    plan_id: str
    goal: str
    waiting_for_person: bool
    attempts: int
    waits_for: tuple[Waited, ...]

    def describe(self) -> str:
        if self.waiting_for_person:
            return f"{self.plan_id} waits for a person to requeue or discard it ({self.attempts} claim{'s' if self.attempts != 1 else ''} ran out)"
        return f"{self.plan_id} waits for " + ", ".join(w.describe() for w in self.waits_for)


# How far down the queue blocked plans are looked for: the first ones are what a person or
# an agent needs to see, and the read then costs the same whatever the queue holds.
BLOCKED_SCAN = 50


def plans_in(session_name: str, status: str, *, limit: int | None = 8) -> tuple[list[Plan], int]:
    """The session's plans in ``status`` (in review, held), the longest waiting first: the
    first ``limit`` of them, and how many there are."""
    rows = Plan.objects.filter(session_id=session_name, status=status).order_by("updated_at", "id")
    total = rows.count()
    return list(rows.only("id", "session_id", "goal", "status", "updated_at")[:limit] if limit else rows), total


def blocked_plans(session_name: str, *, limit: int = LIST_CAP) -> list[Blocked]:
    """The first ``limit`` plans among the first BLOCKED_SCAN of the queue that are not
    ready, in queue order, with what each waits for: two statements, whatever the queue."""
    scanned = (
        Plan.objects.filter(session_id=session_name, status=Plan.Status.QUEUED)
        .order_by("sort_key")
        .only("id", "session", "goal", "waiting_for_person", "attempts")
        .annotate(waits=WAITS_FOR_OTHERS)[:BLOCKED_SCAN]
    )
    blocked = [p for p in scanned if p.waiting_for_person or p.waits][:limit]
    waited: dict[str, list[Waited]] = {p.id: [] for p in blocked}
    links = (
        PlanDependency.objects.filter(plan_id__in=[p.id for p in blocked if p.waits])
        .exclude(depends_on__status=Plan.Status.COMPLETED)
        .order_by("depends_on__created_at", "depends_on_id")
        .values_list(
            "plan_id", "depends_on_id", "depends_on__status", "depends_on__worker", "depends_on__lease_expires_at"
        )
    )
    for plan_id, dep, status, worker, until in links:
        waited[plan_id].append(Waited(dep, status, worker, until))
    return [Blocked(p.id, p.goal, p.waiting_for_person, p.attempts, tuple(waited[p.id])) for p in blocked]


@dataclass(frozen=True)
class Dependencies:
    """A plan's dependencies both ways: what it waits for (``depends_on``, with each one's
    status) and which plans wait for it (``dependents``)."""

    depends_on: list[tuple[str, str]]
    dependents: list[tuple[str, str]]

    @property
    def ready(self) -> bool:
        return all(status == Plan.Status.COMPLETED for _, status in self.depends_on)


def dependencies(plan_id: str) -> Dependencies:
    """One query, whatever the plan."""
    rows = (
        PlanDependency.objects.filter(Q(plan_id=plan_id) | Q(depends_on_id=plan_id))
        .order_by("plan_id", "depends_on_id")
        .values_list("plan_id", "plan__status", "depends_on_id", "depends_on__status")
    )
    found = Dependencies([], [])
    for plan, plan_status, dep, dep_status in rows:
        if plan == plan_id:
            found.depends_on.append((dep, dep_status))
        else:
            found.dependents.append((plan, plan_status))
    return found


def dependencies_of(plan_ids: list[str]) -> dict[str, Dependencies]:
    """Dependencies both ways of several plans at once (two queries)."""
    found = {pid: Dependencies([], []) for pid in plan_ids}
    for plan_id, dep, status in (
        PlanDependency.objects.filter(plan_id__in=plan_ids)
        .order_by("depends_on_id")
        .values_list("plan_id", "depends_on_id", "depends_on__status")
    ):
        found[plan_id].depends_on.append((dep, status))
    for dep, plan_id, status in (
        PlanDependency.objects.filter(depends_on_id__in=plan_ids)
        .order_by("plan_id")
        .values_list("depends_on_id", "plan_id", "plan__status")
    ):
        found[dep].dependents.append((plan_id, status))
    return found


def dependency_outcomes(plan_id: str) -> list[Plan]:
    """The completed plans ``plan_id`` depends on (a plan has at most MAX_DEPENDENCIES), in
    id order, with their goals and outcomes: what a pulled plan's inputs came from."""
    rows = Plan.objects.filter(dependent_links__plan_id=plan_id, status=Plan.Status.COMPLETED)
    return list(rows.only("id", "goal", "outcome").order_by("id"))


LATE_SHOWN = 3


@dataclass(frozen=True)
class LateWrite:
    """Text a worker sent after its claim on the plan was reclaimed: never applied, kept."""

    worker: str
    op: str
    text: str
    at: datetime


def late_writes(plan_id: str, *, limit: int = LATE_SHOWN) -> list[LateWrite]:
    """The plan's late writes, newest first."""
    events = Event.objects.filter(plan_id=plan_id, kind=Event.Kind.LATE_WRITE_KEPT).order_by("-id")[:limit]
    found = []
    for e in events:
        detail = e.detail if isinstance(e.detail, dict) else {}
        found.append(
            LateWrite(
                str(detail.get("worker", "")), str(detail.get("op", "")), str(detail.get("text", "")), e.created_at
            )
        )
    return found


def queue_length(name: str) -> int:
    session = Session.objects.filter(name=name).order_by()
    length = next(iter(session.values_list("count_queued", flat=True)), None)
    if length is None:
        raise SessionNotFound.named(name)
    return length


@dataclass(frozen=True)
class QueueStatus:
    length: int
    completed: int
    next_id: str | None  # the plan a pull would hand out: the first ready one
    next_goal: str | None
    # Plans neither queued nor finished: held by workers, in review, or held after review.
    # While there are any, an empty queue does not mean the task is done. Counted only for
    # an empty queue (None otherwise), the one case where the answer tells it.
    unfinished: int | None = None


UNFINISHED = (Plan.Status.ACTIVE, Plan.Status.IN_REVIEW, Plan.Status.HELD)


def queue_status(name: str) -> QueueStatus:
    """The queue's length, the plan a pull would hand out next (the first ready one), the
    completed count and how many plans are still out of the queue unfinished, for a session
    known to exist: what an agent needs after finishing a plan, in two plain statements
    (one with subqueries for all of it took longer to build than the two to run): the
    front of a queue that has one, else the unfinished count."""
    session = Session.objects.filter(name=name).order_by()
    counts = next(iter(session.values_list("count_queued", "count_completed")), None)
    if counts is None:
        raise SessionNotFound.named(name)
    if counts[0]:
        front = ready_plans(name).order_by("sort_key").values_list("id", "goal").first() or (None, None)
        return QueueStatus(*counts, *front)
    unfinished = Plan.objects.filter(session_id=name, status__in=UNFINISHED).count()
    return QueueStatus(*counts, None, None, unfinished)


def session_plans(status: str):
    """The plans in ``status`` of the session row an enclosing sessions query is on."""
    return Plan.objects.filter(session=OuterRef("pk"), status=status)


def plan_count(status: str) -> F:
    """The count of a session's plans in ``status``, for annotating a sessions query: the
    counter on the session row, so a page of sessions reads no plans at all."""
    return F(plan_counts.COLUMNS[status])


class SessionCounts(TypedDict):
    """What ``sessions_with_counts`` annotates each session with."""

    queue_length: int
    completed_count: int
    discarded_count: int
    has_active_plan: bool


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    CountedSession = WithAnnotations[Session, SessionCounts]


def sessions_with_counts():
    """The sessions the caller may see, newest first, each annotated with its counts (one
    query however many)."""
    return (
        visible_sessions()
        .annotate(
            queue_length=plan_count(Plan.Status.QUEUED),
            completed_count=plan_count(Plan.Status.COMPLETED),
            discarded_count=plan_count(Plan.Status.DISCARDED),
            has_active_plan=Exists(session_plans(Plan.Status.ACTIVE)),
        )
        .order_by("-created_at", "name")
    )


def session_list(*, limit: int = LIST_CAP) -> tuple[list[CountedSession], int]:
    """The sessions the caller may see, newest first, annotated with their counts in one
    query, and how many there are."""
    return list(sessions_with_counts()[:limit]), visible_sessions().count()


def queue_place(plan: Plan) -> int | None:
    """1 for the plan the next pull takes, 2 for the one after, ...; None unless queued."""
    if plan.status != Plan.Status.QUEUED or plan.sort_key is None:
        return None
    ahead = Plan.objects.filter(
        session_id=plan.session_id, status=Plan.Status.QUEUED, sort_key__lt=plan.sort_key
    ).count()
    return ahead + 1


def plan_file_text(plan: Plan) -> tuple[str, str]:
    """The plan's text as the agent should read it: the file, or the database rendering when
    the file is missing or cannot be used; and a notice saying why it was not used ("")."""
    read = planfiles.read_plan_file(plan.session_id, plan.file_stem)
    if read.usable and read.text is not None:  # a usable read has its text
        return read.text, ""
    rendered = planfiles.render(plan.sections())
    if read.state == planfiles.MISSING:
        return rendered, ""
    path = planfiles.plan_path(plan.session_id, plan.file_stem)
    return rendered, f"The plan file {path} {read.problem}; it was not read, and the text below is the database's."


# A hit: its plan (with the searched sections and its session), its rank (1 = best) and
# whether it holds every word of the query.
HistoryHit = search.Hit


def history_search(
    query: object, *, session_name: object | None, max_results: object = None, whole_project: bool = False
) -> list[HistoryHit]:
    """Completed plans matching the query, best first: of the session, of every session
    (``session_name`` None) the caller may see, or (``whole_project``) of every session of
    the named session's project, which the caller must be able to see."""
    query = inputs.text("query", query, required=True, max_chars=settings.NINEPLAN_MAX_QUERY_CHARS)
    limit = inputs.positive_int("max_results", max_results, default=5, maximum=50)
    projects = access.current().visible_projects()
    if whole_project:
        # get_session applies the caller's rights: a session of a project the caller may
        # not see is not found, so its project's plans are never searched.
        project = cast(str, get_session(session_name).project_id)
        with snapshot():
            return search.search(query, session_name=None, limit=limit, projects=frozenset([project]))
    if session_name is not None:
        session_name = inputs.session_name(session_name)
        if projects is not None:
            # A caller limited to some projects learns nothing of another's session, not
            # even from its hits: the session is checked first (one query more).
            get_session(session_name)
    with snapshot():
        hits = search.search(query, session_name=session_name, limit=limit, projects=projects)
        if not hits and session_name is not None and projects is None:
            # Index rows leave with their session's plans, so hits prove the session exists:
            # the check costs a query only when nothing was found.
            get_session(session_name)
    return hits


def history_get(*, session_name: object, plan_id: object) -> Plan:
    """A completed plan of the session, with its outcome."""
    session = get_session(session_name)
    plan_id = inputs.plan_id(plan_id)
    plan = Plan.objects.filter(session=session, id=plan_id).first()
    if plan is None:
        raise PlanNotFound.in_session(plan_id, session.name)
    if plan.status != Plan.Status.COMPLETED:
        raise PlanNotFound(
            f"Plan {plan_id} is {plan.status}, not completed; history holds completed plans only."
            + (f" {fate.describe()}" if (fate := interventions.latest_intervention(plan)) else ""),
            field="plan_id",
            reason=NOT_COMPLETED,
        )
    return plan


def plan_read(*, session_name: object, plan_id: object = None, worker: object = None) -> Plan:
    """A plan of the session in any state, by id; without an id, the plan ``worker`` (of the
    calling token, or of the local user) holds: what an agent on any machine reads its
    plan back with."""
    session = get_session(session_name)
    if plan_id is None:
        worker = inputs.worker(worker)
        held = Plan.objects.filter(
            session_id=session.name, status=Plan.Status.ACTIVE, claimant=access.current().claimant, worker=worker
        )
        plan_id = next(iter(held.order_by().values_list("id", flat=True)), None)
        if plan_id is None:
            # An agent that lost its context may have worked under a worker name it no longer
            # knows: name the workers that hold plans rather than send it to pull new work.
            raise holds_nothing(session.name, worker, " Pass plan_id to read any plan of the session.", reading=True)
    plan_id = inputs.plan_id(plan_id)
    plan = Plan.objects.filter(session=session, id=plan_id).first()
    if plan is None:
        raise PlanNotFound.in_session(plan_id, session.name)
    return plan


# How many workers an answer names when it lists those holding plans.
HOLDERS_SHOWN = 5


def holds_nothing(session_name: str, worker: str, fate_text: str, *, reading: bool = False) -> NoActivePlan:
    """NO_ACTIVE_PLAN for ``worker``; for the default worker, while other workers of the
    session hold plans, it names them (a call that left out its worker acts for the default
    one, and may have meant one of them). ``reading``: the caller only wanted to read its
    plan back, so the answer says how to find it rather than to pull new work."""
    if worker != DEFAULT_WORKER:
        return NoActivePlan(
            f"Session '{session_name}' has no active plan held by worker '{worker}'.{fate_text}",
            reason=NOTHING_HELD if reading else None,
        )
    holders = list(
        Plan.objects.filter(session_id=session_name, status=Plan.Status.ACTIVE)
        .exclude(worker=worker)
        .order_by("claimed_at", "id")
        .values_list("worker", flat=True)[: HOLDERS_SHOWN + 1]
    )
    if not holders:
        return NoActivePlan(
            f"Session '{session_name}' has no active plan.{fate_text}", reason=NOTHING_HELD if reading else None
        )
    named = ", ".join(f"'{w}'" for w in holders[:HOLDERS_SHOWN]) + (" and more" if len(holders) > HOLDERS_SHOWN else "")
    return NoActivePlan(
        f"The default worker holds no plan in session '{session_name}'; other workers do: {named}.{fate_text}",
        reason=OTHER_WORKERS_HOLD,
        field="worker",
    )


def last_rejection(plan: Plan) -> Event | None:
    """The latest rejection of the plan in review, if it was ever sent back."""
    if not plan.rejections:
        return None
    return Event.objects.filter(plan_id=plan.id, kind=Event.Kind.PLAN_REJECTED).order_by("-id").first()


# --- webhooks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SubscriptionRow:
    subscription: WebhookSubscription
    pending: int
    delivered: int
    failed: int
    # Why its newest message not delivered failed its last attempt ("" when none did): a
    # refused address says so here, where people look first.
    last_error: str
    last_error_delivery: int | None


def webhook_subscriptions(project: str | None = None) -> list[SubscriptionRow]:
    """The subscriptions of the projects the caller manages (of ``project`` only, when
    named), with how many of their deliveries are in each status and the last error of
    one not delivered; one query."""
    from django.db.models import Count, QuerySet, Subquery

    qs = WebhookSubscription.objects.order_by("project_id", "id")
    if project is not None:
        qs = qs.filter(project_id=project)
    projects = access.projects_where(access.MANAGE)
    if projects is not None:
        qs = qs.filter(project_id__in=projects)
    counted = {
        status: Count("deliveries", filter=Q(deliveries__status=status)) for status in WebhookDelivery.Status.values
    }
    failing = (
        WebhookDelivery.objects.filter(subscription=OuterRef("pk"))
        .exclude(status=WebhookDelivery.Status.DELIVERED)
        .exclude(last_error="")
        .order_by("-id")
    )
    # Counted under the statuses' names, which the checker cannot follow.
    annotated: QuerySet[Any] = qs.annotate(
        **counted,
        last_error=Subquery(failing.values("last_error")[:1]),
        last_error_delivery=Subquery(failing.values("id")[:1]),
    )
    return [
        SubscriptionRow(sub, sub.pending, sub.delivered, sub.failed, sub.last_error or "", sub.last_error_delivery)
        for sub in annotated
    ]
