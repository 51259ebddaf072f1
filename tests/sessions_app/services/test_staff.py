"""What staff do to plans (services/staff.py): take an active plan back into the queue,
hand a plan waiting for a person back to the workers, and discard any open or held plan;
a refused call changes nothing."""

from __future__ import annotations

import pytest

from sessions_app import access, services
from sessions_app.models import Event, Plan, Role
from tests.conftest import plan_fields
from tests.sessions_app.conftest import events, plan_file, queue_ids, rejected_once

pytestmark = pytest.mark.django_db


# --- requeue ----------------------------------------------------------------------------


@pytest.mark.parametrize("position, expected", [("front", 0), ("back", 2)])
def test_requeue_returns_the_active_plan_to_the_queue(session, make_plan, sessions_dir, position, expected):
    for g in "ABC":
        make_plan(session, goal=g)
    pulled = services.plan_pull(session_name=session.name)
    edited = plan_file(sessions_dir, pulled).read_text().replace("# Notes\n", "# Notes\nhalf done\n")
    plan_file(sessions_dir, pulled).write_text(edited)

    services.plan_requeue(session_name=session.name, plan_id=pulled.id, position=position, actor="staff:ann")

    stored = Plan.objects.get(id=pulled.id)
    assert stored.status == "queued"
    assert queue_ids(session).index(pulled.id) == expected
    assert stored.notes == "half done"
    assert "half done" in plan_file(sessions_dir, pulled).read_text()
    assert events(pulled)[-2:] == [("file_edits_kept", "staff:ann"), ("plan_requeued", "staff:ann")]


def test_requeue_of_a_queued_plan_is_rejected(session, make_plan, rejects):
    plan = make_plan(session)
    with rejects("VALIDATION_ERROR", field="plan_id", match="only the active plan"):
        services.plan_requeue(session_name=session.name, plan_id=plan.id, actor="staff:ann")


def test_requeue_answers_the_plan_and_its_place_and_records_the_position(session, make_plan):
    make_plan(session, goal="A")
    make_plan(session, goal="B")
    pulled = services.plan_pull(session_name=session.name)

    written = services.plan_requeue(session_name=session.name, plan_id=pulled.id, position="back", actor="staff:ann")

    assert written.plan.id == pulled.id and written.plan.status == "queued"
    assert queue_ids(session)[-1] == pulled.id
    requeued = Event.objects.get(plan_id=pulled.id, kind=Event.Kind.PLAN_REQUEUED)
    assert requeued.detail == {"position": "back"}
    # Nothing was edited in the file, so nothing is said about edits kept.
    assert events(pulled)[-1] == ("plan_requeued", "staff:ann")


def test_requeue_hands_a_plan_waiting_for_a_person_back_with_its_attempts_counted_afresh(now):
    session = services.session_create(task_description="flaky", lease_seconds=60, max_attempts=1)
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Other"))
    first = services.plan_enqueue(session_name=session.name, position="front", **plan_fields(goal="First")).plan
    services.plan_pull(session_name=session.name)
    now.advance(61)
    services.reclaim_expired(session_name=session.name)
    waiting = Plan.objects.get(id=first.id)
    assert (waiting.status, waiting.waiting_for_person, waiting.attempts) == ("queued", True, 1)

    services.plan_requeue(session_name=session.name, plan_id=first.id, position="back", actor="user:sam")

    stored = Plan.objects.get(id=first.id)
    assert (stored.status, stored.waiting_for_person, stored.attempts) == ("queued", False, 0)
    assert queue_ids(session)[-1] == first.id
    requeued = Event.objects.get(plan_id=first.id, kind=Event.Kind.PLAN_REQUEUED)
    assert (requeued.actor, requeued.detail) == ("user:sam", {"position": "back", "was_waiting_for_person": True})


def test_requeue_of_a_held_plan_is_rejected(settings, rejects):
    settings.NINEPLAN_MAX_REJECTIONS = 1
    reviewed = services.session_create(task_description="reviewed", review="required")
    held = rejected_once(reviewed.name, "Held one", outcome="x", notes="no", actor="user:rita")
    assert Plan.objects.get(id=held.id).status == "held"
    with rejects("VALIDATION_ERROR", field="plan_id", match="is held"):
        services.plan_requeue(session_name=reviewed.name, plan_id=held.id, actor="user:sam")


def test_requeue_with_an_unknown_position_is_rejected(session, active, rejects):
    with rejects("VALIDATION_ERROR", field="position"):
        services.plan_requeue(session_name=session.name, plan_id=active.id, position="middle", actor="staff:ann")


# --- discard any ------------------------------------------------------------------------


@pytest.mark.parametrize("pull", [False, True])
def test_discard_any_discards_a_queued_or_active_plan(session, make_plan, sessions_dir, pull):
    plan = make_plan(session)
    keep = make_plan(session)
    if pull:
        services.plan_pull(session_name=session.name)

    services.plan_discard_any(session_name=session.name, plan_id=plan.id, reason="duplicate", actor="staff:ann")

    stored = Plan.objects.get(id=plan.id)
    assert (stored.status, stored.sort_key, stored.discard_reason) == ("discarded", None, "duplicate")
    assert stored.discarded_at is not None
    assert not plan_file(sessions_dir, plan).exists()
    assert plan_file(sessions_dir, keep).exists()
    assert events(plan)[-1] == ("plan_discarded", "staff:ann")
    assert Event.objects.filter(plan=plan, kind="plan_discarded").get().detail == {"reason": "duplicate"}


def test_discard_any_of_a_finished_plan_is_rejected(session, complete_plan, rejects):
    done = complete_plan(session)
    with rejects("VALIDATION_ERROR", field="plan_id", match="already completed"):
        services.plan_discard_any(session_name=session.name, plan_id=done.id, reason="x", actor="staff:ann")


def test_discard_any_discards_a_held_plan(settings):
    settings.NINEPLAN_MAX_REJECTIONS = 1
    reviewed = services.session_create(task_description="reviewed", review="required")
    held = rejected_once(reviewed.name, "Held one", outcome="x", notes="no", actor="user:rita")

    written = services.plan_discard_any(
        session_name=reviewed.name, plan_id=held.id, reason="Superseded", actor="user:sam"
    )

    assert written.plan.id == held.id
    stored = Plan.objects.get(id=held.id)
    assert (stored.status, stored.discard_reason) == ("discarded", "Superseded")
    assert events(held)[-1] == ("plan_discarded", "user:sam")


def test_discard_any_of_a_discarded_plan_is_rejected(session, make_plan, rejects):
    plan = make_plan(session)
    services.plan_discard_any(session_name=session.name, plan_id=plan.id, reason="once", actor="staff:ann")
    with rejects("VALIDATION_ERROR", field="plan_id", match="already discarded"):
        services.plan_discard_any(session_name=session.name, plan_id=plan.id, reason="twice", actor="staff:ann")


# --- who may ----------------------------------------------------------------------------


@pytest.mark.parametrize("role", [Role.READER, Role.AGENT, Role.REVIEWER])
def test_only_a_manager_takes_the_staff_actions(session, active, make_plan, rejects, role):
    queued = make_plan(session, goal="Queued")
    caller = access.Caller(label="user:pat", roles={session.project_id: role})
    with access.acting_as(caller):
        with rejects("PERMISSION_DENIED", field="project", match="'manager' role"):
            services.plan_requeue(session_name=session.name, plan_id=active.id, actor="user:pat")
        with rejects("PERMISSION_DENIED", field="project", match="'manager' role"):
            services.plan_discard_any(session_name=session.name, plan_id=queued.id, reason="no", actor="user:pat")

    manager = access.Caller(label="user:max", roles={session.project_id: Role.MANAGER})
    with access.acting_as(manager):
        services.plan_discard_any(session_name=session.name, plan_id=queued.id, reason="dup", actor="user:max")
    assert Plan.objects.get(id=queued.id).status == "discarded"
