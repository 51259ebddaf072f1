"""What a reviewer sees of parallel work, and what staff can do about it: the session page
lists each worker's plan, claim, lease and attempt, the plans waiting for a person and
the blocked plans; staff reclaim a claim or requeue a waiting plan; the plan page shows
its dependencies both ways and any late writes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app import clock, services
from sessions_app.models import Event, Plan
from tests.conftest import plan_fields
from tests.sessions_app.admin_fixtures import session_url, plan_url, act_url, reviewer, reviewer_client, staff, staff_client  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db





@pytest.fixture
def team(db):
    """Two workers holding a plan each; a merge step that waits for both."""
    session = services.session_create(task_description="parallel", lease_seconds=60, max_attempts=1)
    created = services.plan_enqueue_many(
        session_name=session.name,
        plans=[plan_fields(goal="Part A"), plan_fields(goal="Part B"), plan_fields(goal="Merge", depends_on=[0, 1])],
    )
    a, b, merge = (w.plan for w in created)
    services.plan_pull(session_name=session.name, worker="alice")
    services.plan_pull(session_name=session.name, worker="bob")
    return {"session": session, "a": a, "b": b, "merge": merge}


def test_the_session_page_lists_each_worker_and_what_the_merge_waits_for(team, reviewer_client):
    page = reviewer_client.get(session_url(team["session"].name)).content.decode()
    assert 'data-worker="alice"' in page and 'data-worker="bob"' in page
    assert team["a"].id in page and "1 of 1" in page
    blocked = page[page.index('id="np-blocked"'):]
    assert team["merge"].id in blocked and "worker <code>alice</code>" in blocked
    # A reviewer may look, not act.
    assert act_url(team["a"].id, "reclaim") not in page


def test_staff_reclaim_a_claim_and_the_worker_is_fenced_off(team, staff_client):
    name, a = team["session"].name, team["a"]
    page = staff_client.get(session_url(name)).content.decode()
    assert act_url(a.id, "reclaim") in page
    response = staff_client.post(act_url(a.id, "reclaim"), {"next": session_url(name)})
    assert response.status_code == 302
    plan = Plan.objects.get(id=a.id)
    assert plan.status == Plan.Status.QUEUED and plan.attempts == 1 and plan.waiting_for_person
    event = Event.objects.get(plan_id=a.id, kind=Event.Kind.PLAN_RECLAIMED)
    assert event.actor.startswith("user:") and event.detail["worker"] == "alice"
    with pytest.raises(Exception) as info:
        services.plan_note(session_name=name, worker="alice", text="late")
    assert getattr(info.value, "category", "") == "LEASE_LOST"

    # With max_attempts 1 it now waits for a person: listed, and requeued from the page.
    page = staff_client.get(session_url(name)).content.decode()
    waiting = page[page.index('id="np-waiting"'):]
    assert f'data-plan="{a.id}"' in waiting
    staff_client.post(act_url(a.id, "requeue"), {"position": "front", "next": session_url(name)})
    plan = Plan.objects.get(id=a.id)
    assert not plan.waiting_for_person and plan.attempts == 0
    assert services.plan_pull(session_name=name, worker="carol").id == a.id


def test_an_expired_lease_is_flagged_as_still_held(team, reviewer_client, monkeypatch):
    page = reviewer_client.get(plan_url(team["a"].id)).content.decode()
    assert "lease until" in page and 'id="np-lease-expired"' not in page
    later = timezone.now() + timedelta(seconds=120)
    monkeypatch.setattr(clock, "now", lambda: later)
    page = reviewer_client.get(session_url(team["session"].name)).content.decode()
    assert page.count("np-badge np-fail\">expired") == 2
    assert page.count("still held until another worker pulls") == 2
    page = reviewer_client.get(plan_url(team["a"].id)).content.decode()
    worker = page[page.index('id="np-worker"'):][:600]
    assert 'id="np-lease-expired"' in worker and "(still held until another worker pulls)" in worker
    # Looking moved nothing.
    assert Plan.objects.get(id=team["a"].id).worker == "alice"


def test_the_plan_page_shows_dependencies_both_ways_and_late_writes(team, reviewer_client, monkeypatch):
    a, merge = team["a"], team["merge"]
    page = reviewer_client.get(plan_url(merge.id)).content.decode()
    depends = page[page.index('id="np-depends-on"'):page.index('id="np-dependents"')]
    assert a.id in depends and team["b"].id in depends and "blocked" in depends
    page = reviewer_client.get(plan_url(a.id)).content.decode()
    needed = page[page.index('id="np-dependents"'):]
    assert merge.id in needed[:400]
    assert "<code>alice</code>" in page[page.index('id="np-worker"'):][:200]

    services.plan_reclaim(session_name=team["session"].name, plan_id=a.id, actor="user:sam")
    with pytest.raises(Exception):
        services.plan_note(session_name=team["session"].name, worker="alice", text="my <b>late</b> finding")
    page = reviewer_client.get(plan_url(a.id)).content.decode()
    late = page[page.index('id="np-late-writes"'):]
    assert "alice" in late and "my &lt;b&gt;late&lt;/b&gt; finding" in late
