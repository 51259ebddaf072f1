"""The delivery loop (sessions_app/webhooks/sender.py) against a real receiver on loopback:
what a message carries, how it is signed, what each attempt records, and the loop's thread.
(Delivering processes, killed and run together, are proved in tests/proofs/test_webhooks.py.)"""

from __future__ import annotations

import json
import logging
import socket
from datetime import timedelta

import pytest
from django.db import transaction
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from sessions_app import clock, services
from sessions_app.models import Event, WebhookDelivery, WebhookSubscription
from sessions_app.services import write_kit
from sessions_app.webhooks import sender as webhook_sender

pytestmark = pytest.mark.django_db

# The receivers fixture (a real HTTP server on loopback) is tests/conftest.py's.


@pytest.fixture(autouse=True)
def private_allowed(settings):
    # The receivers are on loopback; the refusal has a test below.
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True


def subscribed(url: str, events: str = "session.queue_emptied") -> str:
    """Subscribes ``url`` to the default project's ``events``; returns the secret."""
    return services.webhook_subscribe(project="default", url=url, events=events, actor="agent").secret


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def the_message() -> WebhookDelivery:
    return WebhookDelivery.objects.select_related("event__session", "subscription").get()


def test_a_message_carries_the_event_and_clips_a_long_late_write(session, make_plan):
    subscribed("http://127.0.0.1:9/hook", events="late_write.kept")
    plan = make_plan(session)
    with transaction.atomic():
        write_kit.record_event(
            session.name, Event.Kind.LATE_WRITE_KEPT, "agent/w1", plan.id, op="note", text="x" * 9000
        )

    body = json.loads(webhook_sender.payload(the_message()))
    event = Event.objects.get(kind=Event.Kind.LATE_WRITE_KEPT)
    assert body["type"] == "late_write.kept" and body["timestamp"].startswith(str(event.created_at.year))
    data = body["data"]
    assert (data["event_id"], data["kind"], data["project"], data["session"], data["plan"], data["actor"]) == (
        event.id,
        "late_write_kept",
        "default",
        session.name,
        plan.id,
        "agent/w1",
    )
    assert data["detail"] == {"op": "note", "text": "x" * webhook_sender.MAX_DETAIL_TEXT} and data["detail_clipped"]


def test_a_short_detail_is_sent_whole_and_not_marked_clipped(session, complete_plan):
    subscribed("http://127.0.0.1:9/hook")
    complete_plan(session, outcome="Done.")
    data = json.loads(webhook_sender.payload(the_message()))["data"]
    assert data["kind"] == "plan_completed" and "detail_clipped" not in data
    assert data["detail"] == Event.objects.get(kind="plan_completed").detail


def test_deliver_due_sends_a_signed_message_once_and_records_it_delivered(session, complete_plan, receivers):
    receiver = receivers(200)
    secret = subscribed(receiver.url)
    complete_plan(session)
    message = the_message()

    assert webhook_sender.deliver_due() == 1

    receiver.wait_for(1)
    headers, body = receiver.got[0]
    assert headers["webhook-id"] == webhook_sender.message_id(message) == f"msg_{message.id}"
    assert headers["user-agent"] == webhook_sender.USER_AGENT and headers["content-type"] == "application/json"
    # The Standard Webhooks library, given the secret, accepts it as it arrived.
    verified = Webhook(secret).verify(body, headers)
    assert verified == json.loads(webhook_sender.payload(message))
    assert verified["type"] == "session.queue_emptied" and verified["data"]["session"] == session.name
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.last_response_code, row.last_error) == ("delivered", 1, 200, "")
    # Nothing is due any more: the next round sends nothing.
    assert webhook_sender.deliver_due() == 0
    assert len(receiver.got) == 1


def test_a_receiver_that_fails_leaves_the_message_pending_with_its_answer(session, complete_plan, receivers):
    receiver = receivers(500)
    subscribed(receiver.url)
    complete_plan(session)

    assert webhook_sender.deliver_due() == 1

    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.last_response_code) == ("pending", 1, 500)
    assert row.last_error == "the receiver answered 500"
    assert row.next_attempt_at > clock.now()


def test_an_attempt_with_no_answer_says_why(session, complete_plan):
    subscribed(f"http://127.0.0.1:{closed_port()}/hook")
    complete_plan(session)
    code, error = webhook_sender.attempt(the_message())
    assert code is None and error.startswith("ConnectionRefusedError")


def test_an_attempt_to_a_private_address_is_refused_unless_allowed(session, complete_plan, receivers, settings):
    receiver = receivers(200)
    subscribed(receiver.url)
    complete_plan(session)
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False

    code, error = webhook_sender.attempt(the_message())

    assert code is None and error.startswith("refused: ") and "loopback" in error
    assert receiver.got == []


def test_the_loop_is_off_when_its_interval_is_0(settings):
    settings.NINEPLAN_WEBHOOKS_INTERVAL = 0
    assert webhook_sender.start() is None
    assert webhook_sender.start(interval=0) is None


@pytest.mark.django_db(transaction=True)
def test_the_loops_thread_sends_what_is_due_until_stopped(session, complete_plan, receivers):
    receiver = receivers(200)
    subscribed(receiver.url)
    complete_plan(session)

    thread = webhook_sender.start(interval=0.05)
    try:
        assert thread is not None and thread.name == "nineplan-webhooks" and thread.daemon
        # Started once per process: a second start answers the same thread.
        assert webhook_sender.start(interval=0.05) is thread
        receiver.wait_for(1)
    finally:
        webhook_sender.stop()
        thread.join(10)
    assert not thread.is_alive()
    assert WebhookDelivery.objects.get().status == "delivered"


@pytest.mark.django_db(transaction=True)
def test_the_loop_does_not_start_when_its_preparation_fails(session, complete_plan, receivers):
    receiver = receivers(200)
    subscribed(receiver.url)
    complete_plan(session)

    def not_prepared():
        raise RuntimeError("the database was not prepared")

    thread = webhook_sender.start(interval=0.05, wait_for=not_prepared)
    thread.join(10)
    assert not thread.is_alive()
    assert receiver.got == []
    assert WebhookDelivery.objects.get().status == "pending"


def test_a_receiver_that_trickles_its_answer_is_cut_at_the_attempts_deadline(
    session, complete_plan, trickler, settings
):
    settings.NINEPLAN_WEBHOOKS_TIMEOUT = 1
    subscribed(trickler.url)
    complete_plan(session)

    code, error = webhook_sender.attempt(the_message())

    # Each byte came long before a per-read timeout of 1 s would fire; the deadline of the
    # whole attempt ended it, and the receiver saw its answer cut off.
    assert (
        code is None and error == "no answer by the attempt's deadline (1.0 s; NINEPLAN_WEBHOOKS_TIMEOUT=1); it was cut"
    )
    assert len(trickler.requests) == 1 and trickler.trickling.is_set()
    assert trickler.cut.wait(30)


def test_an_attempt_ends_before_its_claim_does(session, complete_plan, trickler, settings):
    settings.NINEPLAN_WEBHOOKS_TIMEOUT = 60
    subscribed(trickler.url)
    complete_plan(session)
    message = the_message()
    # A claim with less left than the margin: nothing is sent, another loop may have it soon.
    message.claimed_until = clock.now() + timedelta(seconds=settings.NINEPLAN_WEBHOOKS_CLAIM_MARGIN - 1)
    assert webhook_sender.attempt(message) == (None, "not sent: too little of its claim was left for an attempt")
    assert trickler.requests == []
    # With the margin and one second more, the attempt is cut after that second, not the timeout's 60.
    message.claimed_until = clock.now() + timedelta(seconds=settings.NINEPLAN_WEBHOOKS_CLAIM_MARGIN + 1)
    code, error = webhook_sender.attempt(message)
    assert code is None and "deadline" in error and len(trickler.requests) == 1


def test_the_message_carries_the_plans_goal_and_a_link_to_its_admin_page(session, complete_plan, settings):
    subscribed("http://127.0.0.1:9/hook")
    plan = complete_plan(session, goal="Cache the header row")
    settings.NINEPLAN_PUBLIC_URL = "https://9plan.example.com/team"
    data = json.loads(webhook_sender.payload(the_message()))["data"]
    assert data["goal"] == "Cache the header row"
    assert data["admin_url"] == f"https://9plan.example.com/team/admin/sessions_app/plan/{plan.id}/change/"
    # Without a public address the server cannot know how people reach it: no link.
    settings.NINEPLAN_PUBLIC_URL = None
    data = json.loads(webhook_sender.payload(the_message()))["data"]
    assert data["admin_url"] is None and data["goal"] == "Cache the header row"


def test_a_long_goal_is_clipped_and_marked(session, complete_plan):
    subscribed("http://127.0.0.1:9/hook")
    complete_plan(session, goal="g" * 9000)
    data = json.loads(webhook_sender.payload(the_message()))["data"]
    assert data["goal"] == "g" * webhook_sender.MAX_DETAIL_TEXT and data["goal_clipped"] is True


def test_during_a_rotations_overlap_both_secrets_sign_then_only_the_new_one(session, complete_plan, receivers):
    receiver = receivers(500, 200)
    old = subscribed(receiver.url)
    complete_plan(session)  # a message waiting when the secret is rotated
    sub = the_message().subscription
    new = services.webhook_secret_rotate(subscription_id=sub.id, overlap_hours=24, actor="x").secret

    assert webhook_sender.deliver_due() == 1
    headers, body = receiver.got[0]
    assert len(headers["webhook-signature"].split(" ")) == 2
    assert Webhook(new).verify(body, headers) == Webhook(old).verify(body, headers)

    # The overlap over, the old secret signs nothing and is dropped at the next round.
    WebhookSubscription.objects.filter(id=sub.id).update(previous_secret_until=clock.now())
    WebhookDelivery.objects.update(next_attempt_at=clock.now())
    assert webhook_sender.deliver_due() == 1
    headers, body = receiver.got[1]
    assert Webhook(new).verify(body, headers)["type"] == "session.queue_emptied"
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(body, headers)
    assert WebhookSubscription.objects.filter(id=sub.id, previous_secret="", previous_secret_until=None).exists()
    assert WebhookDelivery.objects.get().status == "delivered"


def test_a_6to4_address_carrying_loopback_is_refused_at_delivery_and_logged(session, complete_plan, settings, caplog):
    subscribed("http://[2002:7f00:1::]:9/hook")  # subscribed while private addresses were allowed
    complete_plan(session)
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False

    with caplog.at_level(logging.WARNING, logger="nineplan.webhooks"):
        assert webhook_sender.deliver_due() == 1

    row = WebhookDelivery.objects.get()
    said = "refused: url: it resolves to 2002:7f00:1::, a 6to4 address carrying 127.0.0.1, a loopback address"
    assert row.last_error.startswith(said) and row.attempts == 1 and row.status == "pending"
    (logged,) = [r for r in caplog.records if r.getMessage() == "webhook not sent: its URL is refused"]
    assert logged.url == "http://[2002:7f00:1::]:9/hook" and logged.error.startswith(said)
    assert logged.delivery == row.id and logged.project == "default"


def test_messages_to_different_subscriptions_go_side_by_side_and_one_at_a_time_to_each(
    session, complete_plan, receivers, trickler, settings
):
    settings.NINEPLAN_WEBHOOKS_TIMEOUT = 2
    fast = receivers()
    subscribed(trickler.url)
    subscribed(fast.url)
    complete_plan(session)
    complete_plan(session)
    # Two messages for each: a round sends one to each subscription at once, then the next.
    assert WebhookDelivery.objects.count() == 4

    assert webhook_sender.deliver_due() == 4

    assert len(fast.got) == 2 and len(trickler.requests) == 2
    by_sub = {
        sub: sorted(WebhookDelivery.objects.filter(subscription__url=sub).values_list("attempts", "status"))
        for sub in (trickler.url, fast.url)
    }
    assert by_sub == {trickler.url: [(1, "pending")] * 2, fast.url: [(1, "delivered")] * 2}
