"""`nineplan_webhooks --once` (sessions_app/management/commands/nineplan_webhooks.py): sends
each message due now once, a subscription's one after another, and says how many it sent. (The loop until stopped runs
as a process in tests/proofs/test_webhooks.py.)"""

from __future__ import annotations

from functools import partial

import pytest

from sessions_app import services
from sessions_app.models import WebhookDelivery
from tests.conftest import manage

pytestmark = pytest.mark.django_db

run = partial(manage, "nineplan_webhooks")

# The receivers fixture (a real HTTP server on loopback) is tests/conftest.py's.


def test_the_delivery_command_once_sends_nothing_when_nothing_is_due(db):
    _, err = run("--once")
    assert err.strip() == "Sent 0 webhook deliveries."


def test_once_sends_every_message_due_one_after_another(session, complete_plan, receivers, settings):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    receiver = receivers()
    services.webhook_subscribe(project="default", url=receiver.url, events="session.queue_emptied", actor="agent")
    for _ in range(3):
        complete_plan(session)

    out, err = run("--once")

    assert out == "" and err.strip() == "Sent 3 webhook deliveries."
    # One subscription's messages go one at a time, oldest first.
    assert receiver.ids() == [f"msg_{d.id}" for d in WebhookDelivery.objects.order_by("id")]
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}
    # Sent, they are not due again.
    assert run("--once")[1].strip() == "Sent 0 webhook deliveries."


def test_once_counts_a_failed_attempt_as_sent_and_keeps_the_message_pending(
    session, complete_plan, receivers, settings
):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True
    receiver = receivers(503)
    services.webhook_subscribe(project="default", url=receiver.url, events="session.queue_emptied", actor="agent")
    complete_plan(session)

    _, err = run("--once")

    assert err.strip() == "Sent 1 webhook deliveries."
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.last_response_code) == ("pending", 1, 503)
