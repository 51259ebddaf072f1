"""Webhook subscriptions and the outbox: who may subscribe what, which events write which
messages (in the event's own transaction), how attempts are recorded and retried, and
sending one again (docs/design.md, "Webhooks")."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from sessions_app import access, errors, services
from sessions_app.errors import NineplanError
from sessions_app.models import Event, Project, Role, WebhookDelivery, WebhookSubscription
from sessions_app.services import write_kit
from tests.conftest import plan_fields

pytestmark = pytest.mark.django_db

HOOK = "http://127.0.0.1:9/hook"


@pytest.fixture(autouse=True)
def private_allowed(settings):
    # The receivers of these tests are on loopback; the refusal has tests of its own.
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True


# The ``now`` fixture (a clock the test moves) is tests/sessions_app/conftest.py's.


def subscribe(events="all", project="default", url=HOOK) -> WebhookSubscription:
    return services.webhook_subscribe(project=project, url=url, events=events, actor="agent").subscription


def messages() -> list[tuple[int, str, str]]:
    """(subscription, type, event kind) of every message, oldest first."""
    return list(WebhookDelivery.objects.order_by("id").values_list("subscription_id", "event_type", "event__kind"))


def add(session, goal="g", **kwargs):
    return services.plan_enqueue(session_name=session.name, **plan_fields(goal=goal, **kwargs)).plan


def member(username: str, role: str, project: str = "default") -> access.Caller:
    services.project_grant(project=project, username=username, role=role)
    user = get_user_model().objects.get(username=username)
    return access.caller_for_user(user)


# --- subscribing ------------------------------------------------------------------------------


def test_a_subscription_gets_a_secret_of_32_random_bytes_shown_once(db):
    made = services.webhook_subscribe(project="default", url=HOOK, events="plan.held, lease.lost", actor="agent")
    assert made.secret.startswith("whsec_") and len(base64.b64decode(made.secret[6:])) == 32
    row = WebhookSubscription.objects.get()
    assert row.secret == made.secret and row.event_types == ",plan.held,lease.lost," and row.active
    assert row.type_list() == ["plan.held", "lease.lost"]
    other = services.webhook_subscribe(project="default", url=HOOK, events="all", actor="agent")
    assert other.secret != made.secret and other.subscription.event_types == "*"


@pytest.mark.parametrize(
    ("url", "events", "field", "said"),
    [
        ("ftp://example.org/x", "all", "url", "scheme 'ftp'"),
        ("http://user:pw@example.org/", "all", "url", "without a user name"),
        ("http:///nohost", "all", "url", "name a host"),
        ("http://example.org:99999/", "all", "url", "port"),
        ("http://example.org/in\x00", "all", "url", "a control character or whitespace"),
        ("http://example.org/in\r\nX-Injected: 1", "all", "url", "a control character or whitespace"),
        (HOOK, "plan.eaten", "events", "'plan.eaten' is not an event type"),
        (HOOK, " , ", "events", "at least one"),
    ],
)
def test_a_bad_url_or_type_is_refused_and_writes_nothing(db, rejects, url, events, field, said):
    with rejects("VALIDATION_ERROR", field=field, match=said):
        services.webhook_subscribe(project="default", url=url, events=events, actor="agent")
    assert not WebhookSubscription.objects.exists()


def test_a_private_url_is_refused_unless_allowed(db, settings, rejects):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False
    for url in (
        "http://127.0.0.1:8080/",
        "http://localhost/",
        "http://[::1]/",
        "http://10.1.2.3/",
        "http://169.254.169.254/",
        "http://[2002:7f00:1::]/",
        "http://[2002:a9fe:a9fe::]/",
    ):
        with rejects("VALIDATION_ERROR", field="url", match="NINEPLAN_WEBHOOKS_ALLOW_PRIVATE=true") as info:
            services.webhook_subscribe(project="default", url=url, events="all", actor="agent")
        assert info.value.reason == errors.PRIVATE_ADDRESS
    assert not WebhookSubscription.objects.exists()


def test_only_the_projects_managers_subscribe_and_remove(db, rejects):
    Project.objects.create(name="beta")
    with access.acting_as(member("rob", Role.REVIEWER)):
        with rejects("PERMISSION_DENIED", match="'manager' role"):
            subscribe()
    with access.acting_as(member("mia", Role.MANAGER, project="beta")):
        # Another project's subscriptions are not there at all.
        with rejects("VALIDATION_ERROR", field="project", match="no project named 'default'"):
            subscribe()
        beta = subscribe(project="beta")
    mine = subscribe()
    with access.acting_as(member("max", Role.MANAGER)):
        with rejects("VALIDATION_ERROR", field="id", match=f"no webhook subscription {beta.id}"):
            services.webhook_unsubscribe(subscription_id=beta.id)
        assert services.webhook_unsubscribe(subscription_id=mine.id).id == mine.id
    assert list(WebhookSubscription.objects.values_list("id", flat=True)) == [beta.id]


def test_a_manager_rotates_a_secret_and_the_old_one_signs_until_the_overlap_ends(db, now, rejects):
    made = services.webhook_subscribe(project="default", url=HOOK, events="all", actor="agent")
    sub_id = made.subscription.id
    with access.acting_as(member("rob", Role.REVIEWER)):
        with rejects("VALIDATION_ERROR", field="id", match=f"no webhook subscription {sub_id}"):
            services.webhook_secret_rotate(subscription_id=sub_id, actor="rob")
    for overlap in (-1, 24 * 30 + 1, "24", True):
        with rejects("VALIDATION_ERROR", field="overlap_hours"):
            services.webhook_secret_rotate(subscription_id=sub_id, overlap_hours=overlap, actor="x")
    with access.acting_as(member("mia", Role.MANAGER)):
        rotated = services.webhook_secret_rotate(subscription_id=sub_id, overlap_hours=2, actor="mia")
    row = WebhookSubscription.objects.get()
    assert rotated.secret.startswith("whsec_") and rotated.secret != made.secret == row.previous_secret
    assert row.secret == rotated.secret and row.previous_secret_until == now.at + timedelta(hours=2)
    assert rotated.previous_until == row.previous_secret_until
    assert row.signing_secrets(now.at) == [rotated.secret, made.secret]
    assert row.signing_secrets(now.at + timedelta(hours=2)) == [rotated.secret]
    # The overlap over, a delivery round drops the old secret.
    now.advance(2 * 3600)
    assert services.deliveries_claim(limit=10) == []
    row.refresh_from_db()
    assert (row.previous_secret, row.previous_secret_until) == ("", None)
    # No overlap: the old secret stops signing at once.
    again = services.webhook_secret_rotate(subscription_id=sub_id, overlap_hours=0, actor="x")
    row.refresh_from_db()
    assert (row.secret, row.previous_secret, row.previous_secret_until, again.previous_until) == (
        again.secret,
        "",
        None,
        None,
    )


def test_a_rotation_keeps_every_message_not_yet_delivered(session):
    subscribe("plan.held")
    plan = add(session)
    with transaction.atomic():
        write_kit.record_event(session.name, Event.Kind.PLAN_HELD, "x", plan.id)
    before = list(WebhookDelivery.objects.values_list("id", "status", "attempts", "next_attempt_at"))
    services.webhook_secret_rotate(subscription_id=WebhookSubscription.objects.get().id, actor="x")
    assert list(WebhookDelivery.objects.values_list("id", "status", "attempts", "next_attempt_at")) == before
    assert len(before) == 1 and before[0][1] == "pending"


# --- the outbox ---------------------------------------------------------------------------------


def test_each_type_is_written_with_its_event(session, now):
    services.session_set_review(session_name=session.name, review="required", actor="x")
    everything = subscribe("all")
    review_only = subscribe("plan.in_review")
    add(session)
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="n")
    services.plan_complete(session_name=session.name, outcome="done")
    submitted = Event.objects.get(kind=Event.Kind.PLAN_SUBMITTED)
    # In review is not done: a reviewer may send it back, so the queue has not emptied.
    assert messages() == [
        (everything.id, "plan.in_review", "plan_submitted"),
        (review_only.id, "plan.in_review", "plan_submitted"),
    ]
    assert set(WebhookDelivery.objects.values_list("event_id", flat=True)) == {submitted.id}
    assert set(WebhookDelivery.objects.values_list("status", "attempts", "next_attempt_at")) == {
        ("pending", 0, submitted.created_at)
    }


def test_a_held_plan_a_lost_lease_a_waiting_plan_and_a_late_write(session, now, settings):
    settings.NINEPLAN_MAX_REJECTIONS = 1
    sub = subscribe("plan.held,lease.lost,plan.waiting_for_person,late_write.kept")
    short = services.session_create(task_description="short", lease_seconds=60, max_attempts=1)
    add(short, "lost")
    services.plan_pull(session_name=short.name)
    now.advance(61)
    services.reclaim_expired()
    with pytest.raises(NineplanError):
        services.plan_note(session_name=short.name, text="too late")
    services.session_set_review(session_name=session.name, review="required", actor="x")
    held = add(session, "held")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="o")
    services.plan_review(session_name=session.name, plan_id=held.id, decision="reject", notes="No.", actor="x")
    assert messages() == [
        (sub.id, "lease.lost", "plan_reclaimed"),
        (sub.id, "plan.waiting_for_person", "plan_reclaimed"),
        (sub.id, "late_write.kept", "late_write_kept"),
        (sub.id, "plan.held", "plan_held"),
    ]


def test_the_queue_empties_when_the_last_plan_in_review_is_approved_not_when_it_enters_review(session):
    services.session_set_review(session_name=session.name, review="required", actor="x")
    subscribe("session.queue_emptied")
    first, second = add(session, "one"), add(session, "two")
    for _ in range(2):
        services.plan_pull(session_name=session.name)
        services.plan_complete(session_name=session.name, outcome="o")
    assert messages() == []  # both in review: nothing to pull, but a reviewer's work is left
    services.plan_review(session_name=session.name, plan_id=first.id, decision="approve", notes="", actor="x")
    assert messages() == []  # the second is still in review
    services.plan_review(session_name=session.name, plan_id=second.id, decision="approve", notes="", actor="x")
    assert [m[1:] for m in messages()] == [("session.queue_emptied", "plan_approved")]
    assert WebhookDelivery.objects.get().event.plan_id == second.id


def test_a_rejection_empties_nothing_and_a_hold_or_a_plan_left_waiting_empties_the_queue(session, now, settings):
    settings.NINEPLAN_MAX_REJECTIONS = 2
    services.session_set_review(session_name=session.name, review="required", actor="x")
    subscribe("session.queue_emptied")
    plan = add(session)
    for decision_round in range(2):
        services.plan_pull(session_name=session.name)
        services.plan_complete(session_name=session.name, outcome="o")
        services.plan_review(session_name=session.name, plan_id=plan.id, decision="reject", notes="No.", actor="x")
        if decision_round == 0:
            assert messages() == []  # back in the queue: there is work to pull
    assert [m[1:] for m in messages()] == [("session.queue_emptied", "plan_held")]
    # A discard of the held plan, already out of work, empties nothing again.
    services.plan_discard_any(session_name=session.name, plan_id=plan.id, reason="gone", actor="x")
    assert len(messages()) == 1
    # A reclaim that leaves the session's one plan waiting for a person empties it too.
    short = services.session_create(task_description="short", lease_seconds=60, max_attempts=1)
    add(short, "lost")
    services.plan_pull(session_name=short.name)
    now.advance(61)
    services.reclaim_expired()
    assert [m[1:] for m in messages()][1:] == [("session.queue_emptied", "plan_reclaimed")]


def test_a_queue_empties_only_when_its_last_open_plan_leaves(session):
    subscribe("session.queue_emptied")
    first, second = add(session, "one"), add(session, "two")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="o")  # "two" is still queued
    assert messages() == []
    services.plan_discard_any(session_name=session.name, plan_id=second.id, reason="not needed", actor="x")
    assert [m[1:] for m in messages()] == [("session.queue_emptied", "plan_discarded")]
    assert WebhookDelivery.objects.get().event.plan_id == second.id
    # A plan added and discarded again empties it again; discarding what was not open does not.
    third = add(session, "three")
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="no")
    assert len(messages()) == 2 and WebhookDelivery.objects.order_by("id").last().event.plan_id == third.id
    assert first.id != third.id


def test_another_projects_inactive_or_unsubscribed_types_get_nothing(session):
    Project.objects.create(name="beta")
    subscribe("all", project="beta")
    off = subscribe("all")
    WebhookSubscription.objects.filter(id=off.id).update(active=False)
    subscribe("plan.held")
    add(session)
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="o")
    assert messages() == []


def test_an_event_no_active_subscription_takes_writes_nothing_but_itself(session):
    """Without an active subscription of the session's project (another project's, or an
    inactive one, do not count) the event is the one row written; with one, its message is
    written with the event."""
    Project.objects.create(name="beta")
    every = WebhookSubscription.ALL
    WebhookSubscription.objects.create(project_id="beta", url="https://hooks.example/a", secret="s", event_types=every)
    WebhookSubscription.objects.create(
        project_id=session.project_id, url="https://hooks.example/b", secret="s", event_types=every, active=False
    )
    plan = add(session)
    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        write_kit.record_event(session.name, Event.Kind.PLAN_HELD, "test", plan.id)
    written = [q["sql"] for q in captured.captured_queries if q["sql"].startswith(("INSERT", "UPDATE", "DELETE"))]
    assert len(written) == 1 and "sessions_app_event" in written[0], written
    assert messages() == []

    live = WebhookSubscription.objects.create(
        project_id=session.project_id, url="https://hooks.example/c", secret="s", event_types=every
    )
    with transaction.atomic():
        write_kit.record_event(session.name, Event.Kind.PLAN_HELD, "test", plan.id)
    assert messages() == [(live.id, "plan.held", "plan_held")]


def test_the_messages_are_rolled_back_with_their_event(session):
    subscribe("all")
    plan = add(session)
    with pytest.raises(RuntimeError), transaction.atomic():
        write_kit.record_event(session.name, Event.Kind.PLAN_HELD, "x", plan.id)
        assert len(messages()) == 1
        raise RuntimeError("the write fails after its event")
    assert messages() == [] and not Event.objects.filter(kind=Event.Kind.PLAN_HELD).exists()


# --- attempts -----------------------------------------------------------------------------------


def one_message(session) -> WebhookDelivery:
    subscribe("plan.held")
    plan = add(session)
    with transaction.atomic():
        write_kit.record_event(session.name, Event.Kind.PLAN_HELD, "x", plan.id)
    return WebhookDelivery.objects.get()


def test_a_claimed_message_is_not_claimed_again_until_its_claim_passes(session, now, settings):
    message = one_message(session)
    claimed = services.deliveries_claim(limit=10)
    assert [d.id for d in claimed] == [message.id]
    assert services.deliveries_claim(limit=10) == []
    now.advance(settings.NINEPLAN_WEBHOOKS_CLAIM_SECONDS + 1)
    again = services.deliveries_claim(limit=10)
    assert [d.id for d in again] == [message.id]
    # The first loop's claim has passed: what it records is dropped, the second's is kept.
    assert services.delivery_record(delivery=claimed[0], code=200) is None
    assert WebhookDelivery.objects.get().status == "pending"
    assert services.delivery_record(delivery=again[0], code=204) == "delivered"
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.last_response_code, row.claimed_until) == ("delivered", 1, 204, None)


def test_a_round_claims_one_message_per_subscription_and_none_of_one_being_sent(session, now, settings):
    first, second = (
        subscribe("plan.held", url="http://127.0.0.1:9/a"),
        subscribe("plan.held", url="http://127.0.0.1:9/b"),
    )
    plan = add(session)
    for _ in range(3):
        with transaction.atomic():
            write_kit.record_event(session.name, Event.Kind.PLAN_HELD, "x", plan.id)
    oldest = {
        sub.id: WebhookDelivery.objects.filter(subscription=sub).order_by("id").first().id for sub in (first, second)
    }
    claimed = services.deliveries_claim(limit=10)
    assert {d.subscription_id: d.id for d in claimed} == oldest
    # Both subscriptions have a message being sent: nothing more of theirs is claimed.
    assert services.deliveries_claim(limit=10) == []
    services.delivery_record(delivery=claimed[0], code=200)
    (following,) = services.deliveries_claim(limit=10)
    assert following.subscription_id == claimed[0].subscription_id and following.id > claimed[0].id
    # A limit of one claims one, the oldest first.
    now.advance(settings.NINEPLAN_WEBHOOKS_CLAIM_SECONDS + 1)
    (only,) = services.deliveries_claim(limit=1)
    assert only.id == min(following.id, claimed[1].id)


def test_failures_back_off_then_mark_the_message_failed(session, now, settings):
    settings.NINEPLAN_WEBHOOKS_RETRY_DELAYS = (5, 30)
    one_message(session)
    for attempt, (code, error, wait) in enumerate([(500, "", 5), (None, "timed out", 30)], start=1):
        (claimed,) = services.deliveries_claim(limit=10)
        assert services.delivery_record(delivery=claimed, code=code, error=error) == "pending"
        row = WebhookDelivery.objects.get()
        assert row.attempts == attempt and row.next_attempt_at == now.at + timedelta(seconds=wait)
        assert row.last_error == (error or "the receiver answered 500")
        assert services.deliveries_claim(limit=10) == []  # not due yet
        now.advance(wait)
    (claimed,) = services.deliveries_claim(limit=10)
    assert services.delivery_record(delivery=claimed, code=302, error="a redirect") == "failed"
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.last_response_code, row.next_attempt_at) == ("failed", 3, 302, None)
    now.advance(10**6)
    assert services.deliveries_claim(limit=10) == []


def test_the_default_retries_last_more_than_a_day(settings):
    assert sum(settings.NINEPLAN_WEBHOOKS_RETRY_DELAYS) > 24 * 3600
    assert settings.NINEPLAN_WEBHOOKS_RETRY_DELAYS[0] <= 5


def test_a_resend_starts_over_with_the_same_message(session, now, settings, rejects):
    settings.NINEPLAN_WEBHOOKS_RETRY_DELAYS = (5,)
    message = one_message(session)
    for _ in range(2):
        (claimed,) = services.deliveries_claim(limit=10)
        services.delivery_record(delivery=claimed, code=500)
        now.advance(5)
    assert WebhookDelivery.objects.get().status == "failed"
    with access.acting_as(member("rob", Role.REVIEWER)):
        with rejects("VALIDATION_ERROR", field="id"):
            services.delivery_resend(delivery_id=message.id, actor="rob")
    resent = services.delivery_resend(delivery_id=message.id, actor="x")
    assert (resent.id, resent.status, resent.attempts, resent.next_attempt_at) == (message.id, "pending", 0, now.at)
    assert [d.id for d in services.deliveries_claim(limit=10)] == [message.id]


def test_only_the_server_claims_and_records(session, rejects):
    one_message(session)
    with access.acting_as(member("mia", Role.MANAGER)):
        with rejects("PERMISSION_DENIED"):
            services.deliveries_claim(limit=10)


def test_removing_a_subscription_removes_its_messages_and_an_orphan_is_never_sent(session):
    message = one_message(session)
    services.webhook_unsubscribe(subscription_id=message.subscription_id)
    assert not WebhookDelivery.objects.exists()
    # A write in flight may copy a subscription that is being removed (the outbox keeps no
    # database key to it, so the write does not fail): what it left is never claimed.
    again = one_message(session)
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {WebhookSubscription._meta.db_table} WHERE id = %s", [again.subscription_id])
    assert services.deliveries_claim(limit=10) == []
