"""The review gate: completing a plan that needs review, approving and rejecting it."""

from __future__ import annotations

import re

import pytest

from sessions_app import planfiles, services
from sessions_app.maintenance import invariants
from sessions_app.models import Event, Plan, Revision, Session
from sessions_app.reads import queries
from tests.conftest import plan_fields
from tests.sessions_app.conftest import events, plan_file

HEADING = r"### Rejected in review by user:rita, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"


def reviewed_session() -> Session:
    return services.session_create(task_description="Reviewed work", review="required")


def submit(session: Session, outcome: str = "Built the parser.", **overrides) -> Plan:
    services.plan_enqueue(session_name=session.name, position="front", **plan_fields(**overrides))
    services.plan_pull(session_name=session.name)
    return services.plan_complete(session_name=session.name, outcome=outcome).plan


def hits(session: Session, words: str) -> list[str]:
    return [h.plan.id for h in queries.history_search(words, session_name=session.name)]


@pytest.mark.django_db
def test_completing_in_a_reviewed_session_puts_the_plan_in_review_unsearchable(sessions_dir):
    session = reviewed_session()
    plan = submit(session, goal="Write the tokenizer", outcome="Tokenizer written")

    stored = Plan.objects.get(id=plan.id)
    assert (stored.status, stored.outcome, stored.completed_at) == ("in_review", "Tokenizer written", None)
    assert events(plan)[-1] == ("plan_submitted", "agent")
    assert not plan_file(sessions_dir, plan).exists()
    assert hits(session, "tokenizer") == []
    counts = Session.objects.get(name=session.name)
    assert (counts.count_queued, counts.count_completed) == (0, 0)
    # Its worker is free: the next plan can be pulled.
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Next"))
    assert services.plan_pull(session_name=session.name).goal == "Next"
    assert invariants.check_invariants(session.name).valid


@pytest.mark.django_db
def test_a_plan_added_with_review_waits_in_any_session(session):
    services.plan_enqueue(session_name=session.name, review=True, **plan_fields(goal="Careful"))
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Plain"))
    services.plan_pull(session_name=session.name)
    first = services.plan_complete(session_name=session.name, outcome="done").plan
    services.plan_pull(session_name=session.name)
    second = services.plan_complete(session_name=session.name, outcome="done").plan
    assert (first.status, second.status) == ("in_review", "completed")


@pytest.mark.django_db
def test_approve_completes_and_indexes_the_plan():
    session = reviewed_session()
    plan = submit(session, goal="Write the tokenizer", outcome="Tokenizer written")

    approved = services.plan_review(
        session_name=session.name, plan_id=plan.id, decision="approve", notes="Looks right", actor="user:rita"
    ).plan

    stored = Plan.objects.get(id=plan.id)
    assert approved.status == stored.status == "completed"
    assert stored.completed_at is not None
    assert hits(session, "tokenizer") == [plan.id]
    assert Session.objects.get(name=session.name).count_completed == 1
    assert Event.objects.filter(plan=plan).last().detail == {"decision": "approve", "notes": "Looks right"}
    # The notes are kept in the plan's history too, as a review revision by the reviewer.
    assert "### Approved in review by user:rita" in stored.notes and stored.notes.endswith("Looks right")
    assert list(Revision.objects.filter(plan=plan).values_list("number", "kind", "actor"))[-1] == (
        2,
        "review",
        "user:rita",
    )
    assert events(plan)[-1] == ("plan_approved", "user:rita")
    assert invariants.check_invariants(session.name).valid


@pytest.mark.django_db
def test_reject_returns_the_plan_to_the_front_with_the_notes(sessions_dir):
    session = reviewed_session()
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Waiting"))
    services.plan_enqueue(session_name=session.name, position="front", **plan_fields(goal="Write the tokenizer"))
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Started from the grammar.")
    plan = services.plan_complete(session_name=session.name, outcome="Built it").plan

    written = services.plan_review(
        session_name=session.name, plan_id=plan.id, decision="reject", notes="Unicode input fails.", actor="user:rita"
    )

    stored = Plan.objects.get(id=plan.id)
    assert written.place == 1
    assert (stored.status, stored.rejections) == ("queued", 1)
    assert re.fullmatch(r"Started from the grammar\.\n\n" + HEADING + r"\n\nUnicode input fails\.", stored.notes)
    assert plan_file(sessions_dir, plan).read_text() == planfiles.render(stored.sections())
    assert services.plan_pull(session_name=session.name).id == plan.id
    assert Event.objects.get(plan=plan, kind="plan_rejected").detail == {
        "decision": "reject",
        "notes": "Unicode input fails.",
        "rejections": 1,
    }
    assert Revision.objects.filter(plan=plan).last().kind == "review"
    assert hits(session, "tokenizer") == []
    assert invariants.check_invariants(session.name).valid


@pytest.mark.django_db
def test_after_the_last_allowed_rejection_the_plan_is_held(settings, sessions_dir):
    settings.NINEPLAN_MAX_REJECTIONS = 2
    session = reviewed_session()
    plan = submit(session)
    services.plan_review(session_name=session.name, plan_id=plan.id, decision="reject", notes="No.", actor="user:rita")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="Again")
    services.plan_review(
        session_name=session.name, plan_id=plan.id, decision="reject", notes="Still no.", actor="user:rita"
    )

    stored = Plan.objects.get(id=plan.id)
    assert (stored.status, stored.sort_key, stored.rejections) == ("held", None, 2)
    assert [k for k, _ in events(plan)][-2:] == ["plan_rejected", "plan_held"]
    assert not plan_file(sessions_dir, plan).exists()
    assert invariants.check_invariants(session.name).valid

    services.plan_release(session_name=session.name, plan_id=plan.id, actor="user:pat")
    stored = Plan.objects.get(id=plan.id)
    assert (stored.status, stored.rejections) == ("queued", 0)
    assert plan_file(sessions_dir, plan).exists()


@pytest.mark.django_db
def test_a_held_plan_can_be_discarded_by_staff(settings):
    settings.NINEPLAN_MAX_REJECTIONS = 1
    session = reviewed_session()
    plan = submit(session)
    services.plan_review(session_name=session.name, plan_id=plan.id, decision="reject", notes="No.", actor="user:rita")
    services.plan_discard_any(session_name=session.name, plan_id=plan.id, reason="Not worth it", actor="user:pat")
    assert Plan.objects.get(id=plan.id).status == "discarded"


@pytest.mark.django_db
def test_review_refuses_bad_calls_and_changes_nothing(rejects):
    session = reviewed_session()
    plan = submit(session)
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Queued"))
    queued = Plan.objects.get(session=session, status="queued")
    call = dict(session_name=session.name, actor="user:rita")
    with rejects("VALIDATION_ERROR", field="decision"):
        services.plan_review(plan_id=plan.id, decision="maybe", **call)
    with rejects("VALIDATION_ERROR", field="decision"):
        services.plan_review(plan_id=plan.id, decision=None, **call)
    with rejects("VALIDATION_ERROR", field="notes"):
        services.plan_review(plan_id=plan.id, decision="reject", notes="  ", **call)
    with rejects("VALIDATION_ERROR", field="plan_id") as info:
        services.plan_review(plan_id=queued.id, decision="approve", **call)
    assert info.value.reason == "not_in_review"
    with rejects("PLAN_NOT_FOUND"):
        services.plan_review(plan_id="zzzzz", decision="approve", **call)
    with rejects("SESSION_NOT_FOUND"):
        services.plan_review(session_name="no-such-name", plan_id=plan.id, decision="approve", actor="x")
    with rejects("VALIDATION_ERROR", field="review"):
        services.session_create(review="always")
    with rejects("VALIDATION_ERROR", field="review"):
        services.plan_enqueue(session_name=session.name, review="yes", **plan_fields())


@pytest.mark.django_db
def test_staff_change_the_session_policy_with_an_event(session):
    services.session_set_review(session_name=session.name, review="required", actor="user:pat")
    assert Session.objects.get(name=session.name).review == "required"
    assert Event.objects.filter(session=session).last().detail == {"review": "required"}
    plan = submit(session)
    assert plan.status == "in_review"


@pytest.mark.django_db
def test_a_pull_with_only_plans_in_review_left_says_the_task_waits_for_review(settings, rejects):
    from sessions_app import errors

    settings.NINEPLAN_MAX_REJECTIONS = 1
    session = reviewed_session()
    first = submit(session, goal="First")
    with rejects("QUEUE_BLOCKED", match=f"1 plan(s) await review ({first.id})") as info:
        services.plan_pull(session_name=session.name)
    assert info.value.reason == errors.AWAITING_REVIEW
    assert "Task complete" not in info.value.message

    second = submit(session, goal="Second")
    services.plan_review(session_name=session.name, plan_id=first.id, decision="reject", notes="No.", actor="user:rita")
    assert Plan.objects.get(id=first.id).status == "held"
    with rejects("QUEUE_BLOCKED") as info:
        services.plan_pull(session_name=session.name)
    assert info.value.message.startswith(
        f"No plan is queued or active, but the task is not done: 1 plan(s) await review ({second.id}) "
        f"and 1 plan(s) are held ({first.id}). A reviewer's approval completes a plan in review"
    )
    # What a held plan waits for, and who ends the wait, is said too; it is no plan in review.
    assert info.value.message.endswith(
        "A plan is held after too many rejections in review: not pulled or reviewed again until a person with "
        "the manager role releases it in the admin."
    )
    assert info.value.reason == errors.AWAITING_REVIEW

    # Once every plan is decided, the task is complete.
    services.plan_review(session_name=session.name, plan_id=second.id, decision="approve", actor="user:rita")
    services.plan_discard_any(session_name=session.name, plan_id=first.id, reason="Not needed", actor="user:pat")
    with rejects("QUEUE_EMPTY", match="Task complete"):
        services.plan_pull(session_name=session.name)
