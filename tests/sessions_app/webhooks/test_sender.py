"""The delivery loop (sessions_app/webhooks/sender.py) against a real receiver on loopback:
what a message carries, how it is signed, what each attempt records, and the loop's thread.
(Delivering processes, killed and run together, are proved in tests/proofs/test_webhooks.py.)"""

from __future__ import annotations

import json
import socket

import pytest
from django.db import transaction
from standardwebhooks import Webhook

from sessions_app import clock, services
from sessions_app.models import Event, WebhookDelivery
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
