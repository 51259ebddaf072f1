"""The tables of sessions_app/models.py: every CHECK and UNIQUE constraint refuses a bad row
and leaves the table as it was, a session saved back keeps the counts its triggers wrote,
a project with sessions cannot be deleted, and what each row says of itself (``__str__``,
``file_stem``, ``is_open``, ``sections``, ``type_list``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from sessions_app import services
from sessions_app.models import (
    DEFAULT_PROJECT,
    LEASE_SECONDS,
    MAX_ATTEMPTS,
    SECTIONS,
    Event,
    LostClaim,
    Membership,
    Plan,
    PlanDependency,
    Project,
    Revision,
    Session,
    WebhookDelivery,
    WebhookSubscription,
    WriteRequest,
)
from tests.conftest import plan_fields

pytestmark = pytest.mark.django_db


def refused(model, constraint: str, **fields) -> None:
    """Inserting ``fields`` into ``model``'s table fails on ``constraint`` and adds no row.
    SQLite names a failed UNIQUE index by its columns, PostgreSQL by its name; a failed
    CHECK is named on both."""
    before = model.objects.count()
    with pytest.raises(IntegrityError) as info, transaction.atomic():
        model.objects.create(**fields)
    if connection.vendor == "postgresql" or "CHECK" in str(info.value):
        assert constraint in str(info.value)
    assert model.objects.count() == before


def row(session: Session, plan_id: str, **fields) -> dict:
    """The fields of a plan row inserted directly, queued at the end unless told."""
    return {"id": plan_id, "session": session, "goal": "Model invoices", "sort_key": 10_000, **fields}


# --- Plan: its CHECK constraints --------------------------------------------------------


@pytest.mark.parametrize(
    ("constraint", "fields"),
    [
        ("plan_status_valid", {"status": "paused", "sort_key": None}),
        ("plan_position_only_while_queued", {"status": "queued", "sort_key": None}),
        ("plan_position_only_while_queued", {"status": "completed", "sort_key": 5}),
        ("plan_active_has_claim", {"status": "active", "sort_key": None, "worker": "w1"}),
        ("plan_lease_only_while_active", {"status": "completed", "sort_key": None, "lease_expires_at": timezone.now()}),
        ("plan_waits_only_while_queued", {"status": "held", "sort_key": None, "waiting_for_person": True}),
    ],
)
def test_each_check_on_a_plan_refuses_a_row_breaking_it(session, constraint, fields):
    refused(Plan, constraint, **row(session, "bad01", **fields))


def test_an_active_plan_with_its_whole_claim_is_accepted(session):
    now = timezone.now()
    claim = {"worker": "w1", "claimed_at": now, "lease_expires_at": now + timedelta(seconds=LEASE_SECONDS)}
    Plan.objects.create(**row(session, "good1", status="active", sort_key=None, **claim))
    assert Plan.objects.get(id="good1").is_open


# --- Plan: its UNIQUE constraints -------------------------------------------------------


def test_one_worker_holds_at_most_one_plan_of_a_session(session, make_plan):
    make_plan(session)
    held = services.plan_pull(session_name=session.name)
    now = timezone.now()
    claim = {"claimant": held.claimant, "claimed_at": now, "lease_expires_at": now + timedelta(hours=1)}
    refused(
        Plan,
        "plan_one_active_per_worker",
        **row(session, "bad02", status="active", sort_key=None, worker=held.worker, **claim),
    )
    # Another worker of the same claimant, or the same worker name under another claimant, may.
    Plan.objects.create(**row(session, "ok001", status="active", sort_key=None, worker="w2", **claim))
    Plan.objects.create(
        **row(session, "ok002", status="active", sort_key=None, worker=held.worker, **{**claim, "claimant": "token:7"})
    )
    assert Plan.objects.filter(session=session, status="active").count() == 3


def test_two_queued_plans_of_a_session_never_share_a_position(session, make_plan):
    first = make_plan(session)
    refused(Plan, "plan_unique_sort_key", **row(session, "bad03", sort_key=first.sort_key))
    # The same position in another session, or kept by a plan no longer queued, is free.
    other = services.session_create()
    Plan.objects.create(**row(other, "ok003", sort_key=first.sort_key))
    assert Plan.objects.filter(sort_key=first.sort_key).count() == 2


# --- The other tables' constraints ------------------------------------------------------


def test_a_dependency_is_on_another_plan_and_recorded_once(session, make_plan):
    first, second = make_plan(session), make_plan(session, goal="Write the API")
    refused(PlanDependency, "plan_dependency_not_self", plan=first, depends_on=first)
    PlanDependency.objects.create(plan=second, depends_on=first)
    refused(PlanDependency, "plan_dependency_unique", plan=second, depends_on=first)
    assert list(second.depends_on.all()) == [first] and list(first.dependents.all()) == [second]


def test_a_membership_is_one_known_role_per_user_and_project(db):
    user = get_user_model().objects.create_user("mia")
    refused(Membership, "membership_role_valid", project_id=DEFAULT_PROJECT, user=user, role="owner")
    Membership.objects.create(project_id=DEFAULT_PROJECT, user=user, role="reader")
    refused(Membership, "membership_one_role_per_project", project_id=DEFAULT_PROJECT, user=user, role="manager")
    # The same user may hold a role in another project.
    Project.objects.create(name="billing")
    Membership.objects.create(project_id="billing", user=user, role="manager")
    assert Membership.objects.filter(user=user).count() == 2


def test_a_worker_has_one_lost_claim_per_session(session, make_plan):
    plan = make_plan(session)
    LostClaim.objects.create(session=session, worker="w1", plan=plan)
    refused(LostClaim, "lost_claim_one_per_worker", session=session, worker="w1", plan=plan)
    LostClaim.objects.create(session=session, claimant="token:3", worker="w1", plan=plan)
    assert LostClaim.objects.count() == 2


def test_a_revision_number_is_given_once_per_plan(session, make_plan):
    plan = make_plan(session)
    taken = Revision.objects.filter(plan=plan).values_list("number", flat=True).get()
    refused(Revision, "revision_plan_number", plan=plan, number=taken, kind="note", actor="agent")
    Revision.objects.create(plan=plan, number=taken + 1, kind="note", actor="agent")
    assert Revision.objects.filter(plan=plan).count() == 2


def test_a_write_request_id_is_kept_once_per_caller(db):
    WriteRequest.objects.create(caller="local", request_id="r-1", fingerprint="f" * 64, answer={})
    refused(WriteRequest, "write_request_unique", caller="local", request_id="r-1", fingerprint="0" * 64, answer={})
    WriteRequest.objects.create(caller="token:1", request_id="r-1", fingerprint="f" * 64, answer={})
    assert WriteRequest.objects.count() == 2


def test_a_webhook_message_has_a_known_status(session):
    subscription = WebhookSubscription.objects.create(
        project_id=DEFAULT_PROJECT, url="https://hooks.example.com/9plan", event_types="*", secret="whsec_x"
    )
    event = Event.objects.filter(session=session).first()
    refused(
        WebhookDelivery,
        "delivery_status_valid",
        subscription=subscription,
        event=event,
        event_type="session.created",
        status="lost",
    )
    message = WebhookDelivery.objects.create(subscription=subscription, event=event, event_type="session.created")
    assert message.status == "pending" and str(message) == f"msg_{message.id} session.created"


# --- Session and Project ----------------------------------------------------------------


def test_a_stale_session_saved_back_keeps_the_current_counts(session, make_plan):
    stale = Session.objects.get(name=session.name)
    make_plan(session), make_plan(session, goal="Write the API")
    stale.task_description = "Port billing and invoicing"
    stale.save()
    fresh = Session.objects.get(name=session.name)
    assert fresh.task_description == "Port billing and invoicing"
    assert (fresh.count_queued, fresh.count_completed) == (2, 0)


def test_a_new_session_takes_the_defaults_of_its_table(db):
    made = Session.objects.create(name="quiet-green-heron")
    stored = Session.objects.get(name="quiet-green-heron")
    assert str(made) == "quiet-green-heron"
    assert (stored.project_id, stored.review, stored.lease_seconds, stored.max_attempts) == (
        DEFAULT_PROJECT,
        "none",
        LEASE_SECONDS,
        MAX_ATTEMPTS,
    )
    assert (stored.count_queued, stored.count_completed, stored.count_discarded) == (0, 0, 0)


def test_a_project_with_sessions_cannot_be_deleted(session):
    project = Project.objects.get(name=DEFAULT_PROJECT)
    with pytest.raises(ProtectedError), transaction.atomic():
        project.delete()
    assert Project.objects.filter(name=DEFAULT_PROJECT).exists() and Session.objects.filter(name=session.name).exists()
    empty = Project.objects.create(name="billing", title="Billing")
    empty.delete()
    assert not Project.objects.filter(name="billing").exists()


# --- What a row says of itself ----------------------------------------------------------


def test_a_plan_file_stem_counts_the_claims_taken_back():
    assert Plan(id="k3x9q").file_stem == "k3x9q"
    assert Plan(id="k3x9q", reclaims=2).file_stem == "k3x9q-2"


@pytest.mark.parametrize(
    ("status", "open_"),
    [
        ("queued", True),
        ("active", True),
        ("completed", False),
        ("discarded", False),
        ("in_review", False),
        ("held", False),
    ],
)
def test_only_queued_and_active_plans_are_open(status, open_):
    assert Plan(id="k3x9q", status=status).is_open is open_


def test_a_plans_sections_are_its_seven_texts_in_order(session, make_plan):
    plan = make_plan(session, inputs="billing/schema.sql")
    sections = plan.sections()
    assert tuple(sections) == SECTIONS
    assert sections == {name: plan_fields(inputs="billing/schema.sql").get(name, "") for name in SECTIONS}


def test_each_row_names_itself(session, make_plan):
    plan = make_plan(session, goal="Model invoices " + "and line items " * 10)
    assert str(plan) == f"{plan.id}: " + plan.goal[:60] and len(str(plan)) == len(plan.id) + 2 + 60
    other = make_plan(session, goal="Write the API")
    assert str(PlanDependency(plan=other, depends_on=plan)) == f"{other.id} after {plan.id}"
    assert str(LostClaim(session=session, worker="w1", plan=plan)) == f"w1 lost {plan.id}"
    revision = Revision.objects.filter(plan=plan).get()
    assert str(revision) == f"{plan.id} r{revision.number} add"
    event = Event.objects.filter(plan=plan).get()
    assert str(event) == f"{event.created_at:%Y-%m-%d %H:%M:%S} {event.actor} plan_created"
    assert str(Project(name="billing")) == "billing"
    assert str(Membership(project_id="billing", user_id=4, role="agent")) == "4 agent in billing"
    subscription = WebhookSubscription(project_id="billing", url="https://hooks.example.com/9plan")
    assert str(subscription) == "billing → https://hooks.example.com/9plan"
    assert str(WriteRequest(caller="local", request_id="r-1")) == "local: r-1"


def test_a_subscriptions_types_are_listed_without_their_commas():
    assert WebhookSubscription(event_types="*").type_list() == ["all"]
    assert WebhookSubscription(event_types=",plan.held,lease.lost,").type_list() == ["plan.held", "lease.lost"]
