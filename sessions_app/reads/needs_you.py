"""What waits for a person, across the sessions the caller may see: the reads behind the
admin's home ("Needs you"), the counts in its navigation, the review inbox's lists and the
marker the live pages poll (docs/design.md, "The edges").

Like sessions_app.reads.queries these never write, and each costs a fixed number of queries
however many sessions, plans and events there are: every list is one query with a limit,
every count one aggregate. Every read is narrowed to the projects the caller may see
(``queries.visible_plans``, ``visible_events``: sessions_app/access.py decides which).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypedDict

from django.db.models import Count, F, Max, OuterRef, Q, Subquery

from sessions_app import access, clock
from sessions_app.models import (
    SECTION_TITLES,
    SECTIONS,
    Event,
    Plan,
    PlanDependency,
    Revision,
)
from sessions_app.reads import queries
from sessions_app.store import revisions

SHOWN = 50
WORKERS_SHOWN = 200
RECENT = timedelta(hours=24)
# What a person decides: in review (approve or reject), held after its rejections (release
# or discard), queued but waiting after its attempts ran out (requeue or discard).
IN_REVIEW = Q(status=Plan.Status.IN_REVIEW)
HELD = Q(status=Plan.Status.HELD)
WAITING = Q(status=Plan.Status.QUEUED, waiting_for_person=True)
TROUBLE_KINDS = (Event.Kind.LATE_WRITE_KEPT, Event.Kind.PLAN_RECLAIMED)
PLAN_FIELDS = (
    "id", "session_id", "goal", "status", "updated_at", "rejections", "attempts", "outcome", "success_criteria",
)  # fmt: skip


@dataclass(frozen=True)
class Counts:
    """How many plans wait for a person, by why."""

    in_review: int = 0
    held: int = 0
    waiting: int = 0

    @property
    def total(self) -> int:
        return self.in_review + self.held + self.waiting


def counts() -> Counts:
    """One aggregate over the visible plans."""
    found = queries.visible_plans().aggregate(
        in_review=Count("id", filter=IN_REVIEW), held=Count("id", filter=HELD), waiting=Count("id", filter=WAITING)
    )
    return Counts(**{k: v or 0 for k, v in found.items()})


class ProjectOf(TypedDict):
    """What a plan is annotated with for a page that checks the caller's role in its project."""

    project: str


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    PlanInProject = WithAnnotations[Plan, ProjectOf]


def oldest_first(which: Q, *, limit: int = SHOWN, whole: bool = False) -> list[PlanInProject]:
    """The visible plans ``which`` selects, the one waiting longest first (``whole``: with
    their whole text, else the fields the lists show). A held plan carries the reviewer's
    notes of its last rejection (``rejected_by``, ``rejection_notes``): why it is held."""
    rows = queries.visible_plans().filter(which).order_by("updated_at", "id").annotate(project=F("session__project_id"))
    if which is HELD:
        last = Event.objects.filter(plan_id=OuterRef("id"), kind=Event.Kind.PLAN_REJECTED).order_by("-id")
        rows = rows.annotate(
            rejected_by=Subquery(last.values("actor")[:1]), rejection_notes=Subquery(last.values("detail__notes")[:1])
        )
    return list((rows if whole else rows.only(*PLAN_FIELDS))[:limit])


@dataclass(frozen=True)
class Trouble:
    """A late write kept or a lease lost (reclaimed) in the last 24 hours."""

    event: Event
    worker: str

    @property
    def is_late_write(self) -> bool:
        return self.event.kind == Event.Kind.LATE_WRITE_KEPT


def recent_trouble(now: datetime, *, limit: int = SHOWN) -> list[Trouble]:
    rows = queries.visible_events().filter(kind__in=TROUBLE_KINDS, created_at__gte=now - RECENT).order_by("-id")
    found = []
    for event in rows[:limit]:
        detail = event.detail if isinstance(event.detail, dict) else {}
        found.append(Trouble(event, str(detail.get("worker", ""))))
    return found


@dataclass(frozen=True)
class StuckBehind:
    """A queued plan that waits for a plan only a person can move on (held, or waiting)."""

    plan_id: str
    session_id: str
    goal: str
    blocker_id: str
    blocker_status: str


def blocked_on_person(*, limit: int = SHOWN) -> list[StuckBehind]:
    rows = (
        PlanDependency.objects.filter(plan__in=queries.visible_plans().filter(status=Plan.Status.QUEUED))
        .filter(Q(depends_on__status=Plan.Status.HELD) | Q(depends_on__waiting_for_person=True))
        .order_by("plan__session_id", "plan__sort_key", "depends_on_id")
        .values_list("plan_id", "plan__session_id", "plan__goal", "depends_on_id", "depends_on__status")
    )
    return [
        StuckBehind(plan_id, session_id, goal, blocker, "held" if status == Plan.Status.HELD else "waiting")
        for plan_id, session_id, goal, blocker, status in rows[:limit]
    ]


@dataclass
class Busy:
    """A session with active workers: each worker's plan and when its lease runs out."""

    session_id: str
    plans: list[Plan] = field(default_factory=list)


def busy_sessions(*, limit: int = WORKERS_SHOWN) -> list[Busy]:
    rows = (
        queries.visible_plans()
        .filter(status=Plan.Status.ACTIVE)
        .order_by("session_id", "claimed_at", "id")
        .only("id", "session_id", "goal", "worker", "claimed_at", "lease_expires_at")
    )
    found: dict[str, Busy] = {}
    for plan in rows[:limit]:
        found.setdefault(plan.session_id, Busy(plan.session_id)).plans.append(plan)
    return list(found.values())


@dataclass
class Home:
    now: datetime
    counts: Counts
    in_review: list[PlanInProject]
    held: list[PlanInProject]
    waiting: list[PlanInProject]
    trouble: list[Trouble]
    blocked: list[StuckBehind]
    busy: list[Busy]


def home() -> Home:
    """Every panel of the home, in seven queries."""
    now = clock.now()
    return Home(
        now=now,
        counts=counts(),
        in_review=oldest_first(IN_REVIEW),
        held=oldest_first(HELD),
        waiting=oldest_first(WAITING),
        trouble=recent_trouble(now),
        blocked=blocked_on_person(),
        busy=busy_sessions(),
    )


def latest_event_id(session_name: str | None = None) -> int:
    """The newest event the caller may see (of one session, when named): what the live
    pages' ETag is made of, since every change writes one. Each is a step down an index
    (the events' key, or (session, id) per visible session), never a scan of the events."""
    if session_name is not None:
        newest = queries.visible_events().filter(session_id=session_name).order_by("-id").values_list("id", flat=True)
        return newest.first() or 0
    if access.current().visible_projects() is None:
        return Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    newest = Event.objects.filter(session=OuterRef("pk")).order_by("-id").values("id")[:1]
    found = queries.visible_sessions().annotate(newest=Subquery(newest)).aggregate(latest=Max("newest"))
    return found["latest"] or 0


# --- what changed since the pull, for the inbox ---------------------------------------------


@dataclass(frozen=True)
class SincePull:
    """What the agent changed in a plan's text since its last pull: one line per revision,
    and per changed section the text at the pull and now (for a diff)."""

    lines: list[str]
    sections: list[tuple[str, str, str]]


def since_pull(plans: Sequence[Plan]) -> dict[str, SincePull]:
    """For every plan (whose full text is loaded), in two queries whatever their number."""
    ids = [p.id for p in plans]
    pulled = dict(
        Event.objects.filter(plan_id__in=ids, kind=Event.Kind.PLAN_PULLED)
        .values("plan_id")
        .annotate(at=Max("created_at"))
        .values_list("plan_id", "at")
    )
    after = Q()
    for plan_id in ids:
        after |= Q(plan_id=plan_id, created_at__gt=pulled[plan_id]) if plan_id in pulled else Q(plan_id=plan_id)
    rows: dict[str, list[Revision]] = {}
    if ids:
        for rev in Revision.objects.filter(after).order_by("plan_id", "-number"):
            rows.setdefault(rev.plan_id, []).append(rev)
    found = {}
    for plan in plans:
        newest_first = rows.get(plan.id, [])
        now = plan.sections()
        then = now
        for rev in newest_first:
            then = revisions.apply_undo(then, rev.undo) if rev.undo else dict.fromkeys(SECTIONS, "")
        lines = [
            f"r{r.number} {r.kind} by {r.actor}: {', '.join(SECTION_TITLES.get(s, s) for s in r.sections) or '—'}"
            for r in reversed(newest_first)
        ]
        changed = [(name, then.get(name, ""), now[name]) for name in SECTIONS if then.get(name, "") != now[name]]
        found[plan.id] = SincePull(lines, changed)
    return found
