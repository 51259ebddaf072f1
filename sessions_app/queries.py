"""Every read of 9plan. Queries never write; their query count does not grow with the data."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from django.db import connection
from django.db.models import Exists, F, OuterRef, Q

from sessions_app import plan_counts, planfiles, search, statements, inputs
from sessions_app.errors import NOT_COMPLETED, PlanNotFound, SessionNotFound
from sessions_app.models import SECTIONS, Event, Plan, Session

LIST_CAP = 20
_PLANS = Plan._meta.db_table
_SESSIONS = Session._meta.db_table
_SESSION = Plan._meta.get_field("session").column
# The reads behind every 9plan_session_resume and state call go through statements.load: the
# ORM took several times longer to build each of their three queries than they take to
# run, and the state read was the costliest operation of the throughput mix
# (docs/benchmarks.md).
_SESSION_FIELDS = tuple(Session._meta.concrete_fields)
_QUEUE_FIELDS = tuple(f for f in Plan._meta.concrete_fields if f.attname in ("id", "session_id", "sort_key", "goal"))


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


def active_plan(session: Session) -> Plan | None:
    fields = statements.ALL_PLAN_FIELDS
    rows = statements.load(
        Plan,
        fields,
        f"SELECT {_columns(fields)} FROM {_PLANS} t WHERE t.{_SESSION} = %s AND t.status = %s LIMIT 1",
        [session.name, Plan.Status.ACTIVE],
    )
    return rows[0] if rows else None


@dataclass
class SessionState:
    session: Session
    queue: list[Plan]
    queue_length: int
    active: Plan | None
    completed_count: int
    discarded_count: int


def session_state(name: object, *, limit: int | None = LIST_CAP) -> SessionState:
    session = get_session(name)
    rows, total = queue(session, limit=limit)
    return SessionState(session, rows, total, active_plan(session), session.count_completed, session.count_discarded)


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


def queue_status(name: str) -> QueueStatus:
    """The queue's length, its next plan and the completed count of a session known to
    exist: what an agent needs after finishing a plan, in one statement."""
    with connection.cursor() as cur:
        cur.execute(
            f"""SELECT s.count_queued, s.count_completed, front.id, front.goal
            FROM {_SESSIONS} AS s LEFT JOIN (
                SELECT id, goal FROM {_PLANS} WHERE {_SESSION} = %s AND status = %s
                ORDER BY sort_key LIMIT 1
            ) AS front ON 1 = 1
            WHERE s.name = %s""",
            [name, Plan.Status.QUEUED, name],
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
            "id", "status", "sort_key", "session_id", *SECTIONS
        )
    )
    active = [p for p in plans if p.status == Plan.Status.ACTIVE]
    if len(active) > 1:
        result.fail(
            "single_active_plan",
            f"{len(active)} plans are active ({', '.join(p.id for p in active)}); "
            "fix: requeue all but one with the admin or nineplan_repair.",
        )
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
    """Agents act as "agent" (stdio, or HTTP without a token) or "agent:<token name>"."""
    return actor == "agent" or actor.startswith("agent:")


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
        .filter(Q(actor="agent") | Q(actor__startswith="agent:"))
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    found = Event.objects.filter(session_id=session_name, kind__in=INTERVENTION_KINDS, id__gt=last_agent or 0)
    found = found.exclude(Q(actor="agent") | Q(actor__startswith="agent:")).order_by("-id")
    return [_intervention(e) for e in found[:INTERVENTIONS_SHOWN]]


def _latest_intervention(plan: Plan) -> Intervention | None:
    event = (
        Event.objects.filter(plan_id=plan.id, kind__in=INTERVENTION_KINDS)
        .exclude(Q(actor="agent") | Q(actor__startswith="agent:"))
        .order_by("-id")
        .first()
    )
    return None if event is None else _intervention(event)


def fate_of_last_pulled(session_name: str) -> Intervention | None:
    """Why the plan an agent last pulled in the session is no longer active, when someone
    else took it away (discarded or returned it to the queue); None otherwise."""
    pulled = (
        Event.objects.filter(session_id=session_name, kind="plan_pulled").order_by("-id").only("id", "plan_id").first()
    )
    if pulled is None:
        return None
    after = (
        Event.objects.filter(
            session_id=session_name, plan_id=pulled.plan_id, id__gt=pulled.id, kind__in=INTERVENTION_KINDS[:2]
        )
        .exclude(Q(actor="agent") | Q(actor__startswith="agent:"))
        .order_by("-id")
        .first()
    )
    return None if after is None else _intervention(after)
