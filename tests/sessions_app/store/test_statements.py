"""The statements the services run on every queue operation (sessions_app/store/statements.py), on
the real database: each read gives what the ORM would, and a compare-and-set write changes a
plan only while it still has the status it was read with."""

from __future__ import annotations

import pytest

from sessions_app import access, clock, services

from sessions_app.store import statements
from sessions_app.models import Event, Plan
from tests.conftest import plan_fields

pytestmark = pytest.mark.django_db


def queued(session, *goals: str) -> list[Plan]:
    return [services.plan_enqueue(session_name=session.name, **plan_fields(goal=goal)).plan for goal in goals]


def ready(session) -> Plan | None:
    """The plan a pull by another worker would claim."""
    return statements.pull_candidate(session.name, access.current().claimant, "other")[0]


def test_the_session_row_comes_back_with_its_counts_and_a_missing_one_as_none(session):
    queued(session, "A", "B")
    row = statements.session_for_write(session.name)
    assert (row.name, row.count_queued, row.lease_seconds) == (session.name, 2, session.lease_seconds)
    assert statements.session_for_write("no-such-session") is None


def test_the_queue_reads_follow_the_queue_order(session):
    a, b, c = queued(session, "A", "B", "C")
    keys = dict(Plan.objects.filter(session=session).values_list("id", "sort_key"))
    assert ready(session).id == a.id
    assert statements.plan_in(session.name, Plan.Status.QUEUED, first_in_queue=True).id == a.id
    assert statements.end_of_queue(session.name, front=True) == keys[a.id]
    assert statements.end_of_queue(session.name, front=False) == keys[c.id]
    assert statements.active_plan_id(session.name) is None

    services.plan_pull(session_name=session.name)
    assert statements.active_plan_id(session.name) == a.id
    assert ready(session).id == b.id
    assert statements.plan_in(session.name, Plan.Status.ACTIVE).id == a.id


def test_an_empty_queue_has_no_ends_and_nothing_ready(session):
    assert ready(session) is None
    assert statements.end_of_queue(session.name, front=True) is None
    assert statements.plan_in(session.name, Plan.Status.QUEUED) is None


def test_a_plan_waiting_for_another_is_not_ready(session):
    first, later = (
        written.plan
        for written in services.plan_enqueue_many(
            session_name=session.name, plans=[plan_fields(goal="First"), plan_fields(goal="Later", depends_on=[0])]
        )
    )
    assert ready(session).id == first.id
    assert statements.pull_candidate(session.name, access.current().claimant, "other")[3] is False
    services.plan_pull(session_name=session.name)
    assert ready(session) is None
    assert Plan.objects.get(id=later.id).status == Plan.Status.QUEUED
    services.plan_complete(session_name=session.name, outcome="done")
    # Ready now, and it says it depends on others (its answer shows what they produced).
    candidate = statements.pull_candidate(session.name, access.current().claimant, "other")
    assert (candidate[0].id, candidate[3]) == (later.id, True)


def test_a_pull_reads_the_worker_s_plan_and_lost_claim_with_the_first_ready_one(session):
    a, b = queued(session, "A", "B")
    claimant = access.current().claimant
    assert statements.pull_candidate(session.name, claimant, "w1") == (a, None, False, False)
    services.plan_pull(session_name=session.name, worker="w1")
    # The worker holds a plan: nothing is handed to it, whatever is ready.
    assert statements.pull_candidate(session.name, claimant, "w1") == (None, a.id, False, False)
    services.plan_pull(session_name=session.name, worker="w2")
    # Nothing is ready: the worker's own state is still read.
    assert statements.pull_candidate(session.name, claimant, "w1") == (None, a.id, False, False)
    assert statements.pull_candidate(session.name, claimant, "w3") == (None, None, False, False)
    services.plan_reclaim(session_name=session.name, plan_id=a.id, actor="alice")
    assert statements.pull_candidate(session.name, claimant, "w1") == (a, None, True, False)


def test_a_taken_plan_id_is_known(session):
    plan = queued(session, "A")[0]
    assert statements.plan_id_taken(plan.id)
    assert not statements.plan_id_taken("zzzzz" if plan.id != "zzzzz" else "yyyyy")


def test_an_update_writes_only_the_named_fields(session):
    plan = queued(session, "A")[0]
    plan.goal, plan.context = "Changed goal", "Not written"
    assert statements.update_plan(plan, ("goal",)) == 1
    stored = Plan.objects.get(id=plan.id)
    assert (stored.goal, stored.context) == ("Changed goal", plan_fields()["context"])


def test_each_field_s_parameter_is_what_django_makes_of_it(session):
    from datetime import datetime, timezone

    from django.db import connection

    plan = services.plan_pull(session_name=queued(session, "A")[0].session_id)
    plan = Plan.objects.get(id=plan.id)  # every field loaded, timestamps and lease set
    assert plan.lease_expires_at is not None and plan.claimed_at is not None
    for name, adapt in statements._INSERT_PARAMETERS:
        field = Plan._meta.get_field(name.removesuffix("_id"))
        value = getattr(plan, name)
        assert adapt(value, connection) == field.get_db_prep_save(value, connection), name
    # A value of another type than the field's own goes through Django.
    by_name = dict(statements._INSERT_PARAMETERS)
    odd = {
        "goal": 42,
        "attempts": "3",
        "waiting_for_person": 0,
        "created_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc).isoformat(),
    }
    for name, value in odd.items():
        field = Plan._meta.get_field(name)
        assert by_name[name](value, connection) == field.get_db_prep_save(value, connection), name
    assert by_name["goal"](42, connection) == "42"


def test_an_update_of_other_fields_uses_its_own_statement(session):
    plan = queued(session, "A")[0]
    plan.goal, plan.context = "Goal two", "Context two"
    assert statements.update_plan(plan, ("goal",)) == 1
    assert statements.update_plan(plan, ("context",)) == 1
    assert statements.update_plan(plan, ("goal",)) == 1
    stored = Plan.objects.get(id=plan.id)
    assert (stored.goal, stored.context) == ("Goal two", "Context two")


def test_a_compare_and_set_on_a_status_the_plan_no_longer_has_changes_nothing(session):
    plan = queued(session, "A")[0]
    before = Plan.objects.filter(id=plan.id).values().get()
    plan.goal = "Too late"
    assert statements.update_plan(plan, ("goal",), only_if_status=Plan.Status.ACTIVE) == 0
    assert Plan.objects.filter(id=plan.id).values().get() == before
    assert statements.update_plan(plan, ("goal",), only_if_status=Plan.Status.QUEUED) == 1
    assert Plan.objects.get(id=plan.id).goal == "Too late"


def test_an_event_is_written_as_given(session):
    plan = queued(session, "A")[0]
    at = clock.now()
    statements.insert_event(session.name, Event.Kind.REPAIRED, "test", plan.id, {"why": "checked"}, at)
    event = Event.objects.filter(session=session, kind=Event.Kind.REPAIRED).get()
    assert (event.plan_id, event.actor, event.detail, event.created_at) == (plan.id, "test", {"why": "checked"}, at)


def test_an_event_no_active_subscription_takes_is_one_statement_and_writes_no_message(session):
    """Without an active subscription of the session's project (another project's, or an
    inactive one, do not count) the event is written in one statement, with no message; with
    one, its message is written with the event."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sessions_app.models import Project, WebhookDelivery, WebhookSubscription

    Project.objects.create(name="beta")
    WebhookSubscription.objects.create(project_id="beta", url="https://hooks.example/a", secret="s", event_types=WebhookSubscription.ALL)
    WebhookSubscription.objects.create(project_id=session.project_id, url="https://hooks.example/b", secret="s", event_types=WebhookSubscription.ALL, active=False)
    plan = queued(session, "A")[0]
    with CaptureQueriesContext(connection) as captured:
        statements.insert_event(session.name, Event.Kind.PLAN_HELD, "test", plan.id, {}, clock.now())
    assert len(captured.captured_queries) == 1
    assert not WebhookDelivery.objects.exists()
    assert Event.objects.filter(session=session, kind=Event.Kind.PLAN_HELD).count() == 1

    WebhookSubscription.objects.create(project_id=session.project_id, url="https://hooks.example/c", secret="s", event_types=WebhookSubscription.ALL)
    statements.insert_event(session.name, Event.Kind.PLAN_HELD, "test", plan.id, {}, clock.now())
    assert list(WebhookDelivery.objects.values_list("subscription__url", "event_type")) == [
        ("https://hooks.example/c", "plan.held")
    ]


def test_no_init_signal_listens_to_the_models_store_builds():
    """statements.load builds instances without __init__, as unpickling does, so it would skip
    pre_init/post_init receivers: if one is ever added for these models, load must change."""
    from django.db.models import signals

    from sessions_app.models import Plan, Session

    for model in (Plan, Session):
        assert not signals.pre_init.has_listeners(model)
        assert not signals.post_init.has_listeners(model)

