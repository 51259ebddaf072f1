"""A session's board: its open plans sorted into columns (ready, blocked, active, in review,
held, waiting for a person), the last completed ones, and the dependencies between them
for the picture beside it. A fixed number of queries however many plans there are."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sessions_app import clock
from sessions_app.models import Plan, PlanDependency, Session
from sessions_app.reads import queries

# How many queued plans the board shows (in queue order), and how many completed ones.
QUEUED_SHOWN = 300
COMPLETED_SHOWN = 30
# The picture shows at most this many plans: the open ones first, then the newest completed.
GRAPH_SHOWN = 400
CARD_FIELDS = (
    "id",
    "session_id",
    "status",
    "goal",
    "created_at",
    "updated_at",
    "sort_key",
    "worker",
    "lease_expires_at",
    "waiting_for_person",
    "completed_at",
)
OPEN = (Plan.Status.QUEUED, Plan.Status.ACTIVE, Plan.Status.IN_REVIEW, Plan.Status.HELD)


@dataclass
class Card:
    plan: Plan
    # The plans it waits for that are not completed yet (ids), for a blocked plan.
    waits_for: list[str] = field(default_factory=list)


@dataclass
class Board:
    session: Session
    now: datetime
    ready: list[Card]
    blocked: list[Card]
    active: list[Card]
    in_review: list[Card]
    held: list[Card]
    waiting: list[Card]
    completed: list[Card]
    queue_length: int
    # The picture: the plans shown (id -> status, goal) and the edges (plan, depends on).
    nodes: dict[str, Plan]
    edges: list[tuple[str, str]]
    graph_hidden: int

    @property
    def queued_hidden(self) -> int:
        return self.queue_length - len(self.ready) - len(self.blocked) - len(self.waiting)


def board(name: object) -> Board:
    """The board of the session ``name`` (for a caller who may see it)."""
    session = queries.get_session(name)
    now = clock.now()
    plans = Plan.objects.filter(session_id=session.name).only(*CARD_FIELDS)
    queued = list(plans.filter(status=Plan.Status.QUEUED).order_by("sort_key")[:QUEUED_SHOWN])
    others = list(plans.filter(status__in=OPEN[1:]).order_by("updated_at", "id")[:GRAPH_SHOWN])
    completed = list(plans.filter(status=Plan.Status.COMPLETED).order_by("-completed_at", "-id")[:GRAPH_SHOWN])
    shown = {p.id: p for p in (*queued, *others, *completed)}
    # Every dependency of the session's plans that are not done, and of those shown.
    pairs = list(
        PlanDependency.objects.filter(plan__session_id=session.name)
        .exclude(plan__status=Plan.Status.DISCARDED)
        .values_list("plan_id", "depends_on_id")
    )
    waits: dict[str, list[str]] = {}
    for plan_id, dep in pairs:
        found = shown.get(dep)
        # A dependency not shown is an older completed plan (a discarded one is dropped).
        if found is not None and found.status != Plan.Status.COMPLETED:
            waits.setdefault(plan_id, []).append(dep)
    ready, blocked, waiting = [], [], []
    for plan in queued:
        card = Card(plan, waits.get(plan.id, []))
        if plan.waiting_for_person:
            waiting.append(card)
        elif card.waits_for:
            blocked.append(card)
        else:
            ready.append(card)
    by_status: dict[str, list[Card]] = {}
    for plan in others:
        by_status.setdefault(plan.status, []).append(Card(plan))
    nodes: dict[str, Plan] = {}
    for plan in (*queued, *others, *completed):
        if len(nodes) >= GRAPH_SHOWN:
            break
        nodes[plan.id] = plan
    edges = [(p, d) for p, d in pairs if p in nodes and d in nodes]
    total = session.count_queued + len(others) + session.count_completed
    return Board(
        session=session,
        now=now,
        ready=ready,
        blocked=blocked,
        active=by_status.get(Plan.Status.ACTIVE, []),
        in_review=by_status.get(Plan.Status.IN_REVIEW, []),
        held=by_status.get(Plan.Status.HELD, []),
        waiting=waiting,
        completed=[Card(p) for p in completed[:COMPLETED_SHOWN]],
        queue_length=session.count_queued,
        nodes=nodes,
        edges=edges,
        graph_hidden=max(0, total - len(nodes)),
    )
