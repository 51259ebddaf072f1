"""The REST API's view of parallel work: plan and queue answers carry the worker, the lease,
the attempts, the dependencies and whether a plan is ready (docs/design.md, "The edges")."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.errors import LeaseLost
from tests.conftest import plan_fields

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(db):
    session = services.session_create(lease_seconds=120, max_attempts=2)
    created = services.plan_enqueue_many(
        session_name=session.name,
        plans=[plan_fields(goal="A"), plan_fields(goal="B"), plan_fields(goal="Merge", depends_on=[0, 1])],
    )
    a, b, merge = (w.plan for w in created)
    services.plan_pull(session_name=session.name, worker="alice")
    return session, a, b, merge


def test_the_session_state_carries_workers_options_and_blocked_plans(api, team):
    session, a, b, merge = team
    body = api.get(f"/api/sessions/{session.name}/").json()
    assert (body["lease_seconds"], body["max_attempts"]) == (120, 2)
    assert [(w["id"], w["worker"], w["attempts"]) for w in body["workers"]] == [(a.id, "alice", 0)]
    assert body["workers"][0]["lease_expires_at"]
    assert [(x["id"], sorted(w["id"] for w in x["waits_for"])) for x in body["blocked"]] == [
        (merge.id, sorted([a.id, b.id]))
    ]
    assert {w["id"]: w["worker"] for w in body["blocked"][0]["waits_for"]} == {a.id: "alice", b.id: None}
    queue = {q["id"]: q for q in body["queue"]}
    assert queue[b.id]["ready"] is True and queue[merge.id]["ready"] is False
    assert sorted(queue[merge.id]["depends_on"]) == sorted([a.id, b.id])


def test_the_queue_says_which_plans_are_ready_and_what_they_depend_on(api, team):
    session, a, b, merge = team
    rows = {q["id"]: q for q in api.get(f"/api/sessions/{session.name}/queue/").json()["results"]}
    assert rows[b.id]["ready"] is True and rows[b.id]["depends_on"] == []
    assert rows[merge.id]["ready"] is False and sorted(rows[merge.id]["depends_on"]) == sorted([a.id, b.id])
    assert rows[merge.id]["attempts"] == 0 and rows[merge.id]["waiting_for_person"] is False


def test_a_plan_carries_its_claim_its_dependencies_both_ways_and_late_writes(api, team):
    session, a, b, merge = team
    held = api.get(f"/api/sessions/{session.name}/plans/{a.id}/").json()
    assert (held["worker"], held["attempts"], held["ready"]) == ("alice", 0, None)
    assert held["claimed_at"] and held["lease_expires_at"]
    assert [d["id"] for d in held["dependents"]] == [merge.id] and held["depends_on"] == []
    waiting = api.get(f"/api/sessions/{session.name}/plans/{merge.id}/").json()
    assert waiting["ready"] is False and waiting["worker"] is None
    assert sorted((d["id"], d["status"]) for d in waiting["depends_on"]) == sorted([(a.id, "active"), (b.id, "queued")])

    response = api.get(f"/api/sessions/{session.name}/plans/{a.id}/")
    etag = response["ETag"]
    services.plan_renew(session_name=session.name, worker="alice")
    # A renewed lease is a change: the old ETag no longer matches.
    assert api.get(f"/api/sessions/{session.name}/plans/{a.id}/", HTTP_IF_NONE_MATCH=etag).status_code == 200

    services.plan_reclaim(session_name=session.name, plan_id=a.id, actor="user:sam")
    with pytest.raises(LeaseLost):
        services.plan_complete(session_name=session.name, worker="alice", outcome="too late")
    body = api.get(f"/api/sessions/{session.name}/plans/{a.id}/").json()
    assert body["attempts"] == 1 and body["worker"] is None and body["ready"] is True
    assert [(w["worker"], w["op"], w["text"]) for w in body["late_writes"]] == [("alice", "complete", "too late")]
