"""The sessions list and the session page cost the same number of queries with 5 plans
as with 500 (and with 1 session as with 30): no per-row or per-plan queries."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessions_app import clock, services
from sessions_app.identifiers import new_plan_id
from sessions_app.models import Event, Plan, PlanDependency, Revision, Session
from sessions_app.reads import needs_you
from tests.sessions_app.admin_fixtures import (  # noqa: F401 - fixtures
    reviewer,
    reviewer_client,
    staff,
    staff_client,
)

pytestmark = pytest.mark.django_db

_used_ids: set[str] = set()
_workers = itertools.count()


def fresh_id() -> str:
    while True:
        candidate = new_plan_id()
        if candidate not in _used_ids and not Plan.objects.filter(id=candidate).exists():
            _used_ids.add(candidate)
            return candidate


def add_plans(session: Session, count: int) -> None:
    """``count`` plans in every state, each with its events, written in bulk.

    The data only sets the scene (what is measured is the admin reading it), so it is
    inserted directly rather than through hundreds of service calls and file writes.
    """
    start = timezone.now() - timedelta(hours=3)
    low = Plan.objects.filter(session=session, status="queued").order_by("-sort_key").first()
    next_position = (low.sort_key + 1) if low else 0
    has_active = Plan.objects.filter(session=session, status="active").exists()
    plans, events = [], []
    for i in range(count):
        at = start + timedelta(seconds=i)
        status = ("queued", "completed", "discarded", "completed")[i % 4]
        if not has_active and i == 0:
            status, has_active = "active", True
        plan = Plan(
            id=fresh_id(),
            session=session,
            status=status,
            sort_key=next_position + i if status == "queued" else None,
            goal=f"Goal number {i} for {session.name}",
            context="Context",
            approach="Approach",
            success_criteria="Criteria",
            outcome="Done" if status == "completed" else "",
            discard_reason="Dropped" if status == "discarded" else "",
            created_at=at,
            updated_at=at,
            completed_at=at if status == "completed" else None,
            discarded_at=at if status == "discarded" else None,
            worker="default" if status == "active" else None,
            claimed_at=at if status == "active" else None,
            lease_expires_at=at + timedelta(hours=1) if status == "active" else None,
        )
        plans.append(plan)
        events.append(Event(session=session, plan=plan, kind="plan_created", actor="agent", created_at=at))
        if status != "queued":
            events.append(Event(session=session, plan=plan, kind="plan_pulled", actor="agent", created_at=at))
        if status in ("completed", "discarded"):
            kind = "plan_completed" if status == "completed" else "plan_discarded"
            events.append(Event(session=session, plan=plan, kind=kind, actor="user:sam", created_at=at))
    Plan.objects.bulk_create(plans)
    Event.objects.bulk_create(events)


def count_queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_sessions_list_query_count_does_not_grow(reviewer_client):
    first = services.session_create(task_description="small")
    add_plans(first, 5)
    url = reverse("admin:sessions_app_session_changelist")
    small = count_queries(reviewer_client, url)

    for i in range(29):
        add_plans(services.session_create(task_description=f"session {i}"), 17)
    add_plans(first, 2)
    assert Plan.objects.count() >= 500
    large = count_queries(reviewer_client, url)
    assert large == small
    response = reviewer_client.get(url)
    assert len(response.context["cl"].result_list) == 30
    row = next(s for s in response.context["cl"].result_list if s.name == first.name)
    assert row.queue_length == Plan.objects.filter(session=first, status="queued").count()


def test_session_page_query_count_does_not_grow(reviewer_client):
    session = services.session_create(task_description="growing")
    add_plans(session, 5)
    url = reverse("admin:sessions_app_session_change", args=[session.name])
    small = count_queries(reviewer_client, url)

    add_plans(session, 495)
    assert Plan.objects.filter(session=session).count() == 500
    large = count_queries(reviewer_client, url)
    assert large == small
    response = reviewer_client.get(url)
    assert response.context["queue_length"] == Plan.objects.filter(session=session, status="queued").count()
    assert response.context["completed_count"] == Plan.objects.filter(session=session, status="completed").count()
    assert response.context["completed_count"] > 200


def test_plan_page_and_search_query_counts_do_not_grow(reviewer_client):
    session = services.session_create(task_description="growing")
    add_plans(session, 5)
    plan = Plan.objects.filter(session=session, status="queued").first()
    plan_url = reverse("admin:sessions_app_plan_change", args=[plan.id])
    # One word that no plan has: the search falls back to partial matches at both sizes,
    # so both runs take the same path through it.
    search_url = reverse("admin:sessions_app_history_search") + "?q=number+qqqzzz"
    small = (count_queries(reviewer_client, plan_url), count_queries(reviewer_client, search_url))
    add_plans(session, 495)
    large = (count_queries(reviewer_client, plan_url), count_queries(reviewer_client, search_url))
    assert large == small


# --- what waits for a person: the home, the inbox and the live updates --------------------


def add_waiting_work(session: Session, count: int) -> None:
    """``count`` plans of each kind a person decides or watches: in review (each pulled,
    with a revision since), held, waiting after its attempts, active with its own worker, a
    queued plan behind each held one, and a late write and a lost lease for each."""
    now = timezone.now()
    low = Plan.objects.filter(session=session, status="queued").order_by("-sort_key").first()
    key = (low.sort_key + 1) if low else 0
    plans, events, revisions, links = [], [], [], []

    def plan(status: str, i: int, **fields) -> Plan:
        made = Plan(
            id=fresh_id(), session=session, status=status, goal=f"{status} {i} of {session.name}",
            context="Context", approach="Approach", success_criteria="Criteria", notes="Notes so far",
            outcome="**Done**" if status == "in_review" else "", created_at=now, updated_at=now, **fields,
        )  # fmt: skip
        plans.append(made)
        return made

    for i in range(count):
        reviewed = plan("in_review", i)
        events.append(Event(session=session, plan=reviewed, kind="plan_pulled", actor="agent", created_at=now))
        revisions.append(
            Revision(
                plan=reviewed,
                number=1,
                kind="add",
                actor="agent",
                sections=["goal"],
                undo={},
                created_at=now - timedelta(minutes=1),
            )
        )
        revisions.append(
            Revision(
                plan=reviewed,
                number=2,
                kind="note",
                actor="agent",
                sections=["notes"],
                undo={"notes": [5, ""]},
                created_at=now + timedelta(seconds=1),
            )
        )
        held = plan("held", i, rejections=3)
        waiting = plan("queued", i, sort_key=key, waiting_for_person=True, attempts=3)
        behind = plan("queued", i, sort_key=key + 1)
        key += 2
        links.append(PlanDependency(plan=behind, depends_on=held))
        links.append(PlanDependency(plan=behind, depends_on=waiting))
        worker = f"w{next(_workers)}"
        active = plan("active", i, worker=worker, claimed_at=now, lease_expires_at=now + timedelta(minutes=20))
        for kind in ("plan_reclaimed", "late_write_kept"):
            events.append(
                Event(session=session, plan=active, kind=kind, actor="agent", detail={"worker": worker}, created_at=now)
            )
    Plan.objects.bulk_create(plans)
    Event.objects.bulk_create(events)
    Revision.objects.bulk_create(revisions)
    PlanDependency.objects.bulk_create(links)


def grow(first: Session, sessions: int, per_session: int) -> None:
    add_waiting_work(first, per_session)
    for i in range(sessions):
        add_waiting_work(services.session_create(task_description=f"more {i}"), per_session)


WAITING_PAGES = {
    "home": lambda session: reverse("admin:index"),
    "inbox": lambda session: reverse("admin:sessions_app_plan_review_inbox"),
    "live home": lambda session: reverse("nineplan_live") + "?view=home",
    "live inbox": lambda session: reverse("nineplan_live") + "?view=inbox",
    "live session": lambda session: reverse("nineplan_live") + f"?view=session&session={session.name}",
}


@pytest.mark.parametrize("page", list(WAITING_PAGES))
def test_what_waits_for_a_person_costs_the_same_queries_at_two_sizes(staff_client, page):
    first = services.session_create(task_description="watched", review="required")
    add_waiting_work(first, 2)
    url = WAITING_PAGES[page](first)
    small = count_queries(staff_client, url)

    grow(first, sessions=6, per_session=12)
    assert Plan.objects.filter(status="in_review").count() == 86
    large = count_queries(staff_client, url)
    assert large == small
    response = staff_client.get(url)
    if page == "home":
        assert response.context["needs"].counts.in_review == 86
        assert len(response.context["needs"].blocked) == needs_you.SHOWN
    if page == "inbox":
        rows = response.context["rows"]
        assert len(rows) == 86 and all(row["changed"] == ["r2 note by agent: Notes"] for row in rows)
        assert rows[0]["diffs"] == [("Notes", [("hunk", "@@ -1 +1 @@"), ("del", "-Notes"), ("add", "+Notes so far")])]
        assert "<strong>Done</strong>" in rows[0]["outcome"]
    if page.startswith("live"):
        assert response.status_code == 200 and response.json()["parts"]


@pytest.mark.parametrize("page", ["live home", "live inbox", "live session"])
def test_an_update_with_nothing_new_is_a_304_after_the_same_few_queries(staff_client, page, monkeypatch):
    # The tag holds the minute: the clock stands still, so it cannot turn between two requests.
    still = timezone.now()
    monkeypatch.setattr(clock, "now", lambda: still)
    first = services.session_create(task_description="watched", review="required")
    add_waiting_work(first, 2)
    url = WAITING_PAGES[page](first)

    def unchanged() -> int:
        tag = staff_client.get(url)["ETag"]
        with CaptureQueriesContext(connection) as ctx:
            response = staff_client.get(url, HTTP_IF_NONE_MATCH=tag)
        assert response.status_code == 304 and response.content == b""
        return len(ctx.captured_queries)

    small = unchanged()
    grow(first, sessions=4, per_session=10)
    assert unchanged() == small
