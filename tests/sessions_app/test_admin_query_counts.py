"""The sessions list and the session page cost the same number of queries with 5 plans
as with 500 (and with 1 session as with 30): no per-row or per-plan queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessions_app import services
from sessions_app.identifiers import new_plan_id
from sessions_app.models import Event, Plan, Session
from tests.sessions_app.admin_fixtures import reviewer, reviewer_client  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

_used_ids: set[str] = set()


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
