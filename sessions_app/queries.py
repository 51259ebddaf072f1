"""Every read of 9plan. Queries never write; their query count does not grow with the data."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from django.db import connection
from django.db.models import Exists, F, OuterRef, Q

from sessions_app import plan_counts, planfiles, search, statements, inputs
from sessions_app.errors import NOT_COMPLETED, PlanNotFound, SessionNotFound
from sessions_app.models import DEFAULT_WORKER, SECTIONS, Event, Plan, PlanDependency, Session

LIST_CAP = 20
_PLANS = Plan._meta.db_table
_SESSIONS = Session._meta.db_table
_SESSION = Plan._meta.get_field("session").column
# The reads behind every 9plan_session_resume and state call go through statements.load: the
# ORM took several times longer to build each of their three queries than they take to
# run, and the state read was the costliest operation of the throughput mix
# (docs/benchmarks.md).
_SESSION_FIELDS = tuple(Session._meta.concrete_fields)
_QUEUE_FIELDS = tuple(
    f
    for f in Plan._meta.concrete_fields
    if f.attname in ("id", "session_id", "sort_key", "goal", "waiting_for_person", "attempts")
)


def _columns(fields: tuple) -> str:
    return ", ".join(f"t.{f.column}" for f in fields)


def get_session(name: object) -> Session:
    name = inputs.session_name(name)
    rows = statements.load(
        Session, _SESSION_FIELDS, f"SELECT {_columns(_SESSION_FIELDS)} FROM {_SESSIONS} t WHERE t.name = %s", [name]
    )
    if not rows:
        raise SessionNotFound.named(name)
    return rows[0]


def session_path(name: str) -> str:
    return str(planfiles.session_dir(name))


def plan_path(plan: Plan) -> str:
    return str(planfiles.plan_path(plan.session_id, plan.id))


def queue(session: Session, *, limit: int | None = LIST_CAP) -> tuple[list[Plan], int]:
    """The queued plans in order (the first ``limit``), and how many there are in all."""
    fields = _QUEUE_FIELDS if limit else statements.ALL_PLAN_FIELDS
    sql = f"SELECT {_columns(fields)} FROM {_PLANS} t WHERE t.{_SESSION} = %s AND t.status = %s ORDER BY t.sort_key"
    params: list = [session.name, Plan.Status.QUEUED]
    if limit:
        sql += " LIMIT %s"
        params.append(limit)
    return statements.load(Plan, fields, sql, params), session.count_queued


def held_plans(session: Session) -> list[Plan]:
    """The session's active plans, one per worker holding one: the default worker's first,
    then by when they were claimed."""
    fields = statements.ALL_PLAN_FIELDS
    return statements.load(
        Plan,
        fields,
        f"SELECT {_columns(fields)} FROM {_PLANS} t WHERE t.{_SESSION} = %s AND t.status = %s "
        "ORDER BY CASE WHEN t.worker = %s THEN 0 ELSE 1 END, t.claimed_at, t.id",
        [session.name, Plan.Status.ACTIVE, DEFAULT_WORKER],
    )


def active_plan(session: Session) -> Plan | None:
    held = held_plans(session)
    return held[0] if held else None


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
    held: list[Plan] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)

    @property
    def default_workers_plan(self) -> Plan | None:
        return next((p for p in self.held if p.worker == DEFAULT_WORKER), None)


def session_state(name: object, *, limit: int | None = LIST_CAP) -> SessionState:
    session = get_session(name)
    rows, total = queue(session, limit=limit)
    held = held_plans(session)
    blocked = blocked_plans(session.name, limit=limit or LIST_CAP) if total else []
    return SessionState(
        session,
        rows,
        total,
        held[0] if held else None,
        session.count_completed,
        session.count_discarded,
        held,
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
            return f"{self.id} (active, worker '{self.worker}', lease until {_utc(self.lease_expires_at)})"
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
            return f"{self.plan_id} waits for a person to requeue or discard it ({self.attempts} claims ran out)"
        return f"{self.plan_id} waits for " + ", ".join(w.describe() for w in self.waits_for)


def _utc(at: datetime | None) -> str:
    return "?" if at is None else f"{at.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


# How far down the queue blocked plans are looked for: the first ones are what a person or
# an agent needs to see, and the read then costs the same whatever the queue holds.
BLOCKED_SCAN = 50
_DEPS = PlanDependency._meta.db_table


def plans_in(session_name: str, status: str, *, limit: int | None = 8) -> tuple[list[Plan], int]:
    """The session's plans in ``status`` (in review, held), the longest waiting first: the
    first ``limit`` of them, and how many there are."""
    rows = Plan.objects.filter(session_id=session_name, status=status).order_by("updated_at", "id")
    total = rows.count()
    return list(rows.only("id", "session_id", "goal", "status", "updated_at")[:limit] if limit else rows), total


def blocked_plans(session_name: str, *, limit: int = LIST_CAP) -> list[Blocked]:
    """The first ``limit`` plans among the first BLOCKED_SCAN of the queue that are not
    ready, in queue order, with what each waits for: one statement."""
    rows = statements.load(
        Plan,
        _BLOCKED_FIELDS,
        f"""SELECT {_columns(_BLOCKED_FIELDS)}, q.id, q.status, q.worker, q.lease_expires_at
        FROM (SELECT {', '.join(f.column for f in _BLOCKED_FIELDS)} FROM {_PLANS}
              WHERE {_SESSION} = %s AND status = %s ORDER BY sort_key LIMIT %s) t
        LEFT JOIN {_DEPS} d ON d.plan_id = t.id
        LEFT JOIN {_PLANS} q ON q.id = d.depends_on_id AND q.status <> %s
        WHERE t.waiting_for_person = %s OR q.id IS NOT NULL
        ORDER BY t.sort_key, q.created_at, q.id""",
        [session_name, Plan.Status.QUEUED, BLOCKED_SCAN, Plan.Status.COMPLETED, True],
        extra=4,
    )
    found: dict[str, tuple[Plan, list[Waited]]] = {}
    for plan, dep, status, worker, until in rows:
        entry = found.setdefault(plan.id, (plan, []))
        if dep is not None:
            entry[1].append(Waited(dep, status, worker, _aware(until)))
    return [
        Blocked(p.id, p.goal, p.waiting_for_person, p.attempts, tuple(waits))
        for p, waits in list(found.values())[:limit]
    ]


_BLOCKED_FIELDS = tuple(
    f for f in Plan._meta.concrete_fields if f.attname in ("id", "session_id", "goal", "sort_key", "waiting_for_person", "attempts")
)


def _aware(value) -> datetime | None:
    """A timestamp read with plain SQL, as the ORM would hand it back (aware, in UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


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
    for plan_id, dep, status in PlanDependency.objects.filter(plan_id__in=plan_ids).order_by("depends_on_id").values_list(
        "plan_id", "depends_on_id", "depends_on__status"
    ):
        found[plan_id].depends_on.append((dep, status))
    for dep, plan_id, status in PlanDependency.objects.filter(depends_on_id__in=plan_ids).order_by("plan_id").values_list(
        "depends_on_id", "plan_id", "plan__status"
    ):
        found[dep].dependents.append((plan_id, status))
    return found


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
        found.append(LateWrite(str(detail.get("worker", "")), str(detail.get("op", "")), str(detail.get("text", "")), e.created_at))
    return found


# Reads run after every add, pull and complete, written out in SQL: the ORM takes far
# longer to build each query than the statements take to run (docs/benchmarks.md).
# Plain SQL that SQLite and PostgreSQL both accept.


def queue_length(name: str) -> int:
    with connection.cursor() as cur:
        cur.execute(f"SELECT count_queued FROM {_SESSIONS} WHERE name = %s", [name])
        row = cur.fetchone()
    if row is None:
        raise SessionNotFound.named(name)
    return row[0]


@dataclass(frozen=True)
class QueueStatus:
    length: int
    completed: int
    next_id: str | None
    next_goal: str | None
    # Plans neither queued nor finished: held by workers, in review, or held after review.
    # While there are any, an empty queue does not mean the task is done.
    unfinished: int = 0


UNFINISHED = (Plan.Status.ACTIVE, Plan.Status.IN_REVIEW, Plan.Status.HELD)


def queue_status(name: str) -> QueueStatus:
    """The queue's length, its next plan, the completed count and how many plans are still
    out of the queue unfinished, for a session known to exist: what an agent needs after
    finishing a plan, in one statement."""
    with connection.cursor() as cur:
        cur.execute(
            f"""SELECT s.count_queued, s.count_completed, front.id, front.goal,
                (SELECT count(*) FROM {_PLANS} WHERE {_SESSION} = %s AND status IN (%s, %s, %s))
            FROM {_SESSIONS} AS s LEFT JOIN (
                SELECT id, goal FROM {_PLANS} WHERE {_SESSION} = %s AND status = %s
                ORDER BY sort_key LIMIT 1
            ) AS front ON 1 = 1
            WHERE s.name = %s""",
            [name, *UNFINISHED, name, Plan.Status.QUEUED, name],
        )
        row = cur.fetchone()
    if row is None:
        raise SessionNotFound.named(name)
    return QueueStatus(*row)


def session_plans(status: str):
    """The plans in ``status`` of the session row an enclosing sessions query is on."""
    return Plan.objects.filter(session=OuterRef("pk"), status=status)


def plan_count(status: str) -> F:
    """The count of a session's plans in ``status``, for annotating a sessions query: the
    counter on the session row, so a page of sessions reads no plans at all."""
    return F(plan_counts.COLUMNS[status])


def sessions_with_counts():
    """All sessions, newest first, each annotated with its counts (one query however many)."""
    return Session.objects.annotate(
        queue_length=plan_count(Plan.Status.QUEUED),
        completed_count=plan_count(Plan.Status.COMPLETED),
        discarded_count=plan_count(Plan.Status.DISCARDED),
        has_active_plan=Exists(session_plans(Plan.Status.ACTIVE)),
    ).order_by("-created_at", "name")


def session_list(*, limit: int = LIST_CAP) -> tuple[list[Session], int]:
    """Sessions, newest first, annotated with their counts in one query."""
    return list(sessions_with_counts()[:limit]), Session.objects.count()


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
    read = planfiles.read_plan_file(plan.session_id, plan.id)
    if read.usable:
        return read.text, ""
    rendered = planfiles.render(plan.sections())
    if read.state == planfiles.MISSING:
        return rendered, ""
    path = planfiles.plan_path(plan.session_id, plan.id)
    return rendered, f"The plan file {path} {read.problem}; it was not read, and the text below is the database's."


# A hit: its plan (with the searched sections), its rank (1 = best) and its relevance (bigger is better).
HistoryHit = search.Hit


def history_search(query: object, *, session_name: object | None, max_results: object = None) -> list[HistoryHit]:
    from django.conf import settings

    query = inputs.text("query", query, required=True, max_chars=settings.NINEPLAN_MAX_QUERY_CHARS)
    limit = inputs.positive_int("max_results", max_results, default=5, maximum=50)
    if session_name is not None:
        session_name = inputs.session_name(session_name)
    hits = search.search(query, session_name=session_name, limit=limit)
    if not hits and session_name is not None:
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
            + (f" {fate.describe()}" if (fate := _latest_intervention(plan)) else ""),
            field="plan_id",
            reason=NOT_COMPLETED,
        )
    return plan


# --- invariants --------------------------------------------------------------------------

INVARIANTS = (
    "single_active_plan",
    "claims_valid",
    "dependencies_valid",
    "queue_order_preserved",
    "files_match_database",
    "no_orphaned_files",
    "search_index_in_sync",
)


@dataclass
class InvariantReport:
    invariants: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(INVARIANTS, True))
    issues: list[str] = field(default_factory=list)
    # The same issues grouped by the invariant they break, for pages that show each check.
    issues_by_invariant: dict[str, list[str]] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return all(self.invariants.values())

    def fail(self, invariant: str, issue: str) -> None:
        self.invariants[invariant] = False
        self.issues.append(issue)
        self.issues_by_invariant.setdefault(invariant, []).append(issue)


def check_invariants(name: object) -> InvariantReport:
    """Checks the session's invariants; every issue names the plan and the fix."""
    session = get_session(name)
    result = InvariantReport()
    plans = list(
        Plan.objects.filter(session=session, status__in=[Plan.Status.QUEUED, Plan.Status.ACTIVE]).only(
            "id", "status", "sort_key", "session_id", "worker", "claimed_at", "lease_expires_at", "waiting_for_person",
            *SECTIONS,
        )
    )
    active = [p for p in plans if p.status == Plan.Status.ACTIVE]
    by_worker: dict[str | None, list[str]] = {}
    for p in active:
        by_worker.setdefault(p.worker, []).append(p.id)
    for worker, ids in by_worker.items():
        if len(ids) > 1:
            result.fail(
                "single_active_plan",
                f"worker '{worker}' holds {len(ids)} active plans ({', '.join(ids)}); "
                "fix: requeue all but one with the admin.",
            )
    _check_claims(session, plans, result)
    _check_dependencies(session, result)
    positions: dict[int, str] = {}
    for p in plans:
        if p.status != Plan.Status.QUEUED:
            continue
        if p.sort_key is None:
            result.fail("queue_order_preserved", f"plan {p.id} is queued without a position; fix: nineplan_repair.")
        elif p.sort_key in positions:
            result.fail(
                "queue_order_preserved",
                f"plans {positions[p.sort_key]} and {p.id} share queue position {p.sort_key}; "
                "fix: nineplan_repair.",
            )
        else:
            positions[p.sort_key] = p.id
    _check_files(session, plans, result)
    indexed = search.indexed_count(session.name)
    if indexed is not None:
        completed = Plan.objects.filter(session=session, status=Plan.Status.COMPLETED).count()
        if indexed != completed:
            result.fail(
                "search_index_in_sync",
                f"the search index holds {indexed} entries for this session's {completed} completed plans; "
                "fix: nineplan_repair rebuilds the index.",
            )
    return result


def _check_claims(session: Session, plans: list[Plan], result: InvariantReport) -> None:
    """Every active plan has a worker and a lease; only active plans have a lease; a plan
    waits for a person only while queued (the database's checks hold these too: a database
    restored from elsewhere may not have them)."""
    for p in plans:
        if p.status == Plan.Status.ACTIVE and (p.worker is None or p.claimed_at is None or p.lease_expires_at is None):
            result.fail(
                "claims_valid",
                f"plan {p.id} is active without a worker and a lease; fix: requeue it with the admin.",
            )
        elif p.status == Plan.Status.QUEUED and p.lease_expires_at is not None:
            result.fail("claims_valid", f"plan {p.id} is queued but still has a lease; fix: nineplan_repair.")
    stale = Plan.objects.filter(session=session, lease_expires_at__isnull=False).exclude(status=Plan.Status.ACTIVE)
    for plan_id in stale.exclude(status=Plan.Status.QUEUED).values_list("id", flat=True)[:ISSUES_PER_CHECK]:
        result.fail("claims_valid", f"plan {plan_id} is closed but still has a lease; fix: nineplan_repair.")
    waiting = Plan.objects.filter(session=session, waiting_for_person=True).exclude(status=Plan.Status.QUEUED)
    for plan_id in waiting.values_list("id", flat=True)[:ISSUES_PER_CHECK]:
        result.fail("claims_valid", f"plan {plan_id} is marked as waiting for a person but is not queued; fix: nineplan_repair.")


ISSUES_PER_CHECK = 20


# Statuses a plan reaches only once it was pulled, so only once its dependencies were completed.
HANDED_OUT = (Plan.Status.ACTIVE, Plan.Status.IN_REVIEW, Plan.Status.HELD, Plan.Status.COMPLETED)


def _check_dependencies(session: Session, result: InvariantReport) -> None:
    """Dependencies stay within the session and form no cycle; no plan was handed out or
    completed before the plans it depends on were completed; no open plan waits for a
    discarded plan (a discard removes itself from its dependents)."""
    links = list(
        PlanDependency.objects.filter(plan__session=session).values_list(
            "plan_id", "plan__status", "depends_on_id", "depends_on__status", "depends_on__session_id"
        )
    )
    graph: dict[str, list[str]] = {}
    for plan_id, status, dep, dep_status, dep_session in links:
        graph.setdefault(plan_id, []).append(dep)
        if dep_session != session.name:
            result.fail(
                "dependencies_valid",
                f"plan {plan_id} depends on {dep} of another session ({dep_session}); fix: remove the dependency.",
            )
        elif status in HANDED_OUT and dep_status != Plan.Status.COMPLETED:
            result.fail(
                "dependencies_valid",
                f"plan {plan_id} is {status} though the plan it depends on, {dep}, is {dep_status}; fix: requeue "
                f"{plan_id} if it is active, or complete {dep}.",
            )
        elif dep_status == Plan.Status.DISCARDED and status == Plan.Status.QUEUED:
            result.fail(
                "dependencies_valid",
                f"queued plan {plan_id} waits for discarded plan {dep}, which will never complete; fix: discard or "
                f"re-add {plan_id}.",
            )
    # A cycle is impossible when dependencies are only added to existing plans; checked
    # anyway, for data restored or edited by hand.
    if _has_cycle(graph):
        result.fail("dependencies_valid", "the session's dependencies form a cycle; fix: remove one of them.")


def _has_cycle(graph: dict[str, list[str]]) -> bool:
    """Depth-first, without recursion: a chain of plans may be long."""
    done: set[str] = set()
    for start in graph:
        if start in done:
            continue
        on_path = {start}
        stack = [(start, iter(graph.get(start, ())))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                return True
            elif child not in done:
                on_path.add(child)
                stack.append((child, iter(graph.get(child, ()))))
    return False


LEFT_ALONE = "9plan neither reads, writes, moves nor deletes it"


def _check_files(session: Session, plans: list[Plan], result: Validation) -> None:
    """The plan files against the open plans. Entries are judged by their type alone, and
    only the active plan's file (the one an agent edits) is read: safely, and bounded."""
    found = planfiles.scan(session.name)
    if found.problem:
        result.fail(
            "files_match_database",
            f"{found.problem}: {LEFT_ALONE}, nor anything in it; fix: replace it with a real folder, "
            "then nineplan_repair renders the plan files from the database.",
        )
        return
    open_ids = {p.id for p in plans}
    for p in plans:
        what = found.files.get(p.id)
        if what is None:
            result.fail(
                "files_match_database",
                f"plan {p.id} ({p.status}) has no plan file; fix: nineplan_repair re-renders it from the database.",
            )
        elif what:
            result.fail(
                "files_match_database",
                f"plan file {p.id}.txt ({p.status} plan) is {what}, not a regular file: {LEFT_ALONE}; fix: remove "
                "it, then nineplan_repair renders the file from the database.",
            )
        elif p.status == Plan.Status.ACTIVE:
            read = planfiles.read_plan_file(session.name, p.id)
            if read.state in (planfiles.TOO_LARGE, planfiles.NOT_UTF8, planfiles.REFUSED):
                result.fail(
                    "files_match_database",
                    f"plan file {p.id}.txt (active plan) {read.problem}: it cannot be taken in, and the database "
                    "keeps the last good text; fix: shorten it or make it UTF-8 text again (note, defer and "
                    "complete refuse a file that is too large; bytes that are not UTF-8 are kept aside).",
                )
    for plan_id in sorted(set(found.files) - open_ids):
        what = found.files[plan_id]
        if what:
            result.fail(
                "no_orphaned_files",
                f"{plan_id}.txt in the plans folder is {what} and belongs to no queued or active plan: {LEFT_ALONE}; "
                "fix: remove it by hand.",
            )
        else:
            result.fail(
                "no_orphaned_files",
                f"plan file {plan_id}.txt belongs to no queued or active plan; "
                "fix: nineplan_repair keeps its text aside and removes it.",
            )
    for name, age, what in found.temp:
        if what:
            result.fail("no_orphaned_files", f"{name} in the plans folder is {what}: {LEFT_ALONE}; fix: remove it by hand.")
        # A fresh temporary file may be another process's write in progress, not debris.
        elif age >= planfiles.TEMP_FILE_GRACE_SECONDS:
            result.fail("no_orphaned_files", f"temporary file {name} was left by an interrupted write; fix: nineplan_repair.")


# --- what others did to an agent's plans ----------------------------------------------

INTERVENTION_KINDS = (
    "plan_discarded", "plan_requeued", "plan_moved", "plan_approved", "plan_rejected", "plan_held", "plan_restored",
)
INTERVENTIONS_SHOWN = 3


def is_agent_actor(actor: str) -> bool:
    """Agents act as "agent" (stdio, or HTTP without a token) or "agent:<token name>", with
    "/<worker>" after it when a call named its worker."""
    return actor == "agent" or actor.startswith(("agent:", "agent/"))


AGENT_ACTORS = Q(actor="agent") | Q(actor__startswith="agent:") | Q(actor__startswith="agent/")


@dataclass(frozen=True)
class Intervention:
    """A change someone other than an agent (a reviewer in the admin, an integration) made
    to a plan: what, who, when and why, so the agent that held or queued it is told."""

    plan_id: str
    kind: str
    actor: str
    at: datetime
    reason: str

    def describe(self) -> str:
        what = {
            "plan_discarded": "was discarded",
            "plan_requeued": "was taken back and returned to the queue",
            "plan_moved": "was moved in the queue",
            "plan_approved": "was approved in review",
            "plan_rejected": "was sent back in review to the front of the queue",
            "plan_held": "was rejected too often and is held for a person",
            "plan_restored": "had its text restored to an earlier revision",
        }[self.kind]
        why = f": {self.reason}" if self.reason else ""
        return f"Plan {self.plan_id} {what} by {self.actor} at {self.at.astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC{why}."


def _intervention(event: Event) -> Intervention:
    detail = event.detail if isinstance(event.detail, dict) else {}
    reason = (
        detail.get("reason")
        or detail.get("notes")
        or (f"to the {detail['position']}" if detail.get("position") else "")
        or (f"revision {detail['revision']}" if detail.get("revision") else "")
    )
    return Intervention(event.plan_id, event.kind, event.actor, event.created_at, str(reason))


def interventions(session_name: str) -> list[Intervention]:
    """What others did to the session's plans since an agent last acted in it, newest first
    (a few at most): what resume tells an agent coming back."""
    last_agent = (
        Event.objects.filter(session_id=session_name)
        .filter(AGENT_ACTORS)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    found = Event.objects.filter(session_id=session_name, kind__in=INTERVENTION_KINDS, id__gt=last_agent or 0)
    found = found.exclude(AGENT_ACTORS).order_by("-id")
    return [_intervention(e) for e in found[:INTERVENTIONS_SHOWN]]


def _latest_intervention(plan: Plan) -> Intervention | None:
    event = (
        Event.objects.filter(plan_id=plan.id, kind__in=INTERVENTION_KINDS)
        .exclude(AGENT_ACTORS)
        .order_by("-id")
        .first()
    )
    return None if event is None else _intervention(event)


def fate_of_last_pulled(session_name: str, actor: str | None = None) -> Intervention | None:
    """Why the plan an agent (``actor``, which names its worker) last pulled in the session
    is no longer active, when someone else took it away (discarded or returned it to the
    queue); None otherwise."""
    pulled = Event.objects.filter(session_id=session_name, kind="plan_pulled")
    if actor is not None:
        pulled = pulled.filter(actor=actor)
    pulled = pulled.order_by("-id").only("id", "plan_id").first()
    if pulled is None:
        return None
    after = (
        Event.objects.filter(
            session_id=session_name, plan_id=pulled.plan_id, id__gt=pulled.id, kind__in=INTERVENTION_KINDS[:2]
        )
        .exclude(AGENT_ACTORS)
        .order_by("-id")
        .first()
    )
    return None if after is None else _intervention(after)
