"""`nineplan_webhook` (sessions_app/management/commands/nineplan_webhook.py): subscribing a
URL (its secret shown once, alone on stdout), listing the subscriptions with their
deliveries' counts and why the last attempt failed, rotating a secret, removing one; a
refused call changes nothing."""

from __future__ import annotations

from functools import partial

import pytest
from django.core.management import CommandError

from sessions_app import clock, services
from sessions_app.models import WebhookDelivery, WebhookSubscription
from sessions_app.webhooks import sender as webhook_sender
from tests.conftest import manage

pytestmark = pytest.mark.django_db

HOOK = "http://127.0.0.1:9/hook"
run = partial(manage, "nineplan_webhook")


@pytest.fixture(autouse=True)
def private_allowed(settings):
    # The URLs are on loopback; the refusal of private addresses has tests of its own.
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True


def test_the_command_adds_lists_and_removes(db):
    out, err = run("add", "default", HOOK, "--events", "plan.in_review,plan.held")
    sub = WebhookSubscription.objects.get()
    # The secret alone on stdout, shown this once.
    assert out == sub.secret + "\n" and sub.secret not in err
    assert f"Subscribed {HOOK} to plan.in_review, plan.held of project 'default' (id {sub.id})" in err
    out, _ = run("list")
    assert out.splitlines() == [
        f"{sub.id}  default  {HOOK}  plan.in_review,plan.held  active",
        "    deliveries: 0 pending, 0 delivered, 0 failed",
    ]
    assert sub.secret not in out
    _, err = run("remove", str(sub.id))
    assert err.strip() == f"Removed subscription {sub.id} ({HOOK}) and its deliveries."
    assert not WebhookSubscription.objects.exists()
    _, err = run("list")
    assert "No webhook subscriptions" in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("add", "default", HOOK, "--events", "plan.nope"), "'plan.nope' is not an event type"),
        (("add", "nowhere", HOOK, "--events", "all"), "no project named 'nowhere'"),
        (("add", "default", "file:///etc/passwd", "--events", "all"), "scheme 'file'"),
        (("remove", "99"), "no webhook subscription 99"),
    ],
)
def test_the_command_refuses_bad_input_and_changes_nothing(db, args, said):
    with pytest.raises(CommandError, match=said):
        run(*args)
    assert not WebhookSubscription.objects.exists()


def test_the_list_counts_each_subscriptions_deliveries(session, complete_plan):
    services.webhook_subscribe(project="default", url=HOOK, events="session.queue_emptied", actor="agent")
    complete_plan(session)
    complete_plan(session)
    sub = WebhookSubscription.objects.get()
    delivered = WebhookDelivery.objects.order_by("id").first()
    WebhookDelivery.objects.filter(id=delivered.id).update(status=WebhookDelivery.Status.DELIVERED)
    out, _ = run("list")
    assert out.splitlines() == [
        f"{sub.id}  default  {HOOK}  session.queue_emptied  active",
        "    deliveries: 1 pending, 1 delivered, 0 failed",
    ]


def test_events_all_subscribes_to_every_type_now_and_later(db):
    out, err = run("add", "default", HOOK, "--events", "all")
    sub = WebhookSubscription.objects.get()
    assert sub.event_types == "*" and out.strip() == sub.secret
    assert f"Subscribed {HOOK} to all of project 'default' (id {sub.id})." in err


def test_a_private_address_is_refused_unless_allowed(db, settings):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False
    with pytest.raises(CommandError, match="loopback"):
        run("add", "default", HOOK, "--events", "all")
    assert not WebhookSubscription.objects.exists()


def test_rotate_prints_the_new_secret_once_and_list_says_until_when_the_old_signs(db, settings):
    run("add", "default", HOOK, "--events", "all")
    sub = WebhookSubscription.objects.get()
    old = sub.secret
    out, err = run("rotate", str(sub.id), "--overlap", "6")
    sub.refresh_from_db()
    assert out == sub.secret + "\n" and sub.secret != old and sub.previous_secret == old
    until = clock.utc_text(sub.previous_secret_until)
    assert f"New secret for subscription {sub.id} (the old one signs beside it until {until}), shown only now:" in err
    listed, _ = run("list")
    assert f"    previous secret signs too until {until}" in listed.splitlines()
    assert sub.secret not in listed and old not in listed
    out, err = run("rotate", str(sub.id), "--overlap", "0")
    assert "(the old one no longer signs)" in err
    assert WebhookSubscription.objects.filter(previous_secret="").count() == 1
    with pytest.raises(CommandError, match="overlap_hours: give a whole number of hours from 0 to 720"):
        run("rotate", str(sub.id), "--overlap", "1000")
    with pytest.raises(CommandError, match="no webhook subscription 99"):
        run("rotate", "99")


def test_add_says_when_messages_carry_no_link(db, settings):
    settings.NINEPLAN_PUBLIC_URL = None
    _, err = run("add", "default", HOOK, "--events", "all")
    assert "Messages carry no link to the plan's page until NINEPLAN_PUBLIC_URL is set" in err
    settings.NINEPLAN_PUBLIC_URL = "https://9plan.example.com"
    _, err = run("add", "default", HOOK, "--events", "all")
    assert "NINEPLAN_PUBLIC_URL" not in err


def test_the_list_says_why_a_delivery_to_a_private_address_does_not_go_out(session, complete_plan, settings):
    services.webhook_subscribe(project="default", url=HOOK, events="session.queue_emptied", actor="agent")
    complete_plan(session)
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = False
    assert webhook_sender.deliver_due() == 1
    row = WebhookDelivery.objects.get()
    out, _ = run("list")
    assert out.splitlines()[1:] == [
        "    deliveries: 1 pending, 0 delivered, 0 failed",
        (
            f"    last error (msg_{row.id}): refused: url: it resolves to 127.0.0.1, a loopback address; "
            "such URLs are refused unless NINEPLAN_WEBHOOKS_ALLOW_PRIVATE=true."
        ),
    ]
    # Delivered at last, it is no longer said.
    WebhookDelivery.objects.update(status=WebhookDelivery.Status.DELIVERED)
    out, _ = run("list")
    assert "last error" not in out
