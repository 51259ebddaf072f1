"""Webhooks: a project's managers subscribe a URL to event types and remove it; a delivery
is sent again on request; the messages of an event, written with it (the outbox); and the
delivery loops claim the messages that are due and record each attempt (docs/design.md,
"Webhooks")."""

from __future__ import annotations

import base64
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings

from sessions_app import access, clock, inputs
from sessions_app.errors import NotPermitted, ValidationFailed
from sessions_app.models import Event, Plan, Project, WebhookDelivery, WebhookSubscription
from sessions_app.store import transactions
from sessions_app.webhooks import addresses
from sessions_app.webhooks import event_types as webhook_types

log = logging.getLogger("nineplan.webhooks")

SECRET_PREFIX = "whsec_"
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class Subscribed:
    """A new subscription and its secret, which is shown this once."""

    subscription: WebhookSubscription
    secret: str


def event_types(value: object) -> str:
    """The stored form of a list of types ("plan.held,lease.lost", a list, or "all")."""
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise ValidationFailed("events: give event types separated by commas, or 'all'.", field="events")
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise ValidationFailed("events: name at least one event type, or 'all'.", field="events")
    if webhook_types.ALL in names:
        return WebhookSubscription.ALL
    unknown = [n for n in names if n not in webhook_types.TYPES]
    if unknown:
        raise ValidationFailed(
            f"events: {', '.join(map(inputs.shown, unknown))} is not an event type; use some of "
            f"{', '.join(webhook_types.TYPES)}, or 'all'.",
            field="events",
        )
    return "," + ",".join(dict.fromkeys(names)) + ","


def webhook_subscribe(*, project: str, url: str, events: object, actor: str) -> Subscribed:
    """A new active subscription of ``url`` to ``events`` in ``project``, for the project's
    managers; refused (nothing written) for a URL that is not http(s) or that resolves to a
    private address."""
    name = inputs.project_name(project)
    if Project.objects.filter(name=name).first() is None or not access.current().allows(access.VIEW, name):
        raise ValidationFailed(f"project: no project named '{name}'.", field="project")
    access.require_in_project(access.MANAGE, name)
    stored = event_types(events)
    addresses.resolve(url)
    secret = SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")
    with transactions.write():
        subscription = WebhookSubscription.objects.create(
            project_id=name,
            url=url,
            event_types=stored,
            secret=secret,
            created_by=actor[:150],
        )
    log.info(
        "webhook subscribed",
        extra={"project": name, "subscription": subscription.id, "url": url},
    )
    return Subscribed(subscription, secret)


def _subscription(subscription_id: object) -> WebhookSubscription:
    """The subscription, for a manager of its project; one the caller may not manage is not
    found, as a missing one."""
    if not isinstance(subscription_id, int) or isinstance(subscription_id, bool) or subscription_id < 1:
        raise ValidationFailed("id: give a subscription's number.", field="id")
    found = WebhookSubscription.objects.filter(id=subscription_id).first()
    if found is None or not access.current().allows(access.MANAGE, found.project_id):
        raise ValidationFailed(f"id: no webhook subscription {subscription_id}.", field="id")
    return found


def webhook_unsubscribe(*, subscription_id: int) -> WebhookSubscription:
    """Removes the subscription and its messages, sent or not (for its project's managers)."""
    found = _subscription(subscription_id)
    with transactions.write():
        found.delete()
    found.id = subscription_id  # delete() forgets it; the caller reports which one went
    log.info(
        "webhook removed",
        extra={"project": found.project_id, "subscription": subscription_id},
    )
    return found


def delivery_resend(*, delivery_id: int, actor: str) -> WebhookDelivery:
    """Sends the message again, soon, with a new round of retries and the same webhook-id
    (so a receiver that has it already can tell); for the project's managers."""
    with transactions.write():
        delivery = WebhookDelivery.objects.select_related("subscription").filter(id=delivery_id).first()
        if delivery is None or not access.current().allows(access.MANAGE, delivery.subscription.project_id):
            raise ValidationFailed(f"id: no webhook delivery {delivery_id}.", field="id")
        now = clock.now()
        WebhookDelivery.objects.filter(id=delivery.id).update(
            status=WebhookDelivery.Status.PENDING,
            attempts=0,
            next_attempt_at=now,
            claimed_until=None,
        )
        delivery.refresh_from_db()
    log.info("webhook delivery resent", extra={"delivery": delivery.id, "actor": actor})
    return delivery


# --- the outbox ----------------------------------------------------------------------------


def write_messages(event: Event, types: tuple[str, ...]) -> None:
    """The outbox: one message per active subscription of the session's project to each of
    ``types`` (webhook_types.types_of the event), written in the event's own transaction, so
    an event is never recorded without its messages nor a message without its event. Without
    a subscription taking any of them (the common case) this is one read, and nothing is
    written. session.queue_emptied is one of them only when the event's plan, not yet changed
    (its event is written first), was queued or active and no other plan of the session is."""
    if event.plan_id is None:
        types = tuple(t for t in types if t != webhook_types.QUEUE_EMPTIED)
    if not types:
        return
    # Each takes every type, or the types between commas in its event_types
    # (models.WebhookSubscription); a project has few, so they are matched here.
    active = WebhookSubscription.objects.filter(project__sessions=event.session_id, active=True)
    subscribed = [
        (subscription_id, taken)
        for subscription_id, taken in active.order_by("id").values_list("id", "event_types")
        if taken == WebhookSubscription.ALL or any(f",{t}," in taken for t in types)
    ]
    if not subscribed:
        return
    if webhook_types.QUEUE_EMPTIED in types and not _empties_queue(event):
        types = tuple(t for t in types if t != webhook_types.QUEUE_EMPTIED)
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            subscription_id=subscription_id,
            event=event,
            event_type=event_type,
            status=WebhookDelivery.Status.PENDING,
            attempts=0,
            next_attempt_at=event.created_at,
            created_at=event.created_at,
        )
        for event_type in types
        for subscription_id, taken in subscribed
        if taken == WebhookSubscription.ALL or f",{event_type}," in taken
    )


def _empties_queue(event: Event) -> bool:
    """Whether the event's plan, as it was before the change the event records, was the
    session's last plan queued or active."""
    still_open = Plan.objects.filter(session_id=event.session_id, status__in=(Plan.Status.QUEUED, Plan.Status.ACTIVE))
    return still_open.filter(id=event.plan_id).exists() and not still_open.exclude(id=event.plan_id).exists()


# --- the delivery loops ---------------------------------------------------------------------


def _require_server() -> None:
    caller = access.current()
    if not (caller.everything and caller.within is None):
        raise NotPermitted("Only the server's own delivery loop sends webhooks. Nothing was changed.")


def deliveries_claim(*, limit: int) -> list[WebhookDelivery]:
    """Up to ``limit`` messages that are due, each claimed for NINEPLAN_WEBHOOKS_CLAIM_SECONDS
    by this loop: no other loop takes one before its claim passes (or it is recorded), and a
    loop that died mid-attempt leaves it to the next once it has (at least once). Messages
    of a subscription made inactive are left alone."""
    _require_server()
    now = clock.now()
    until = now + timedelta(seconds=settings.NINEPLAN_WEBHOOKS_CLAIM_SECONDS)
    due = (
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now, subscription__active=True
        )
        .exclude(claimed_until__gt=now)
        .order_by("next_attempt_at", "id")
    )
    # A plain read first: most rounds find nothing, and on SQLite a write transaction
    # would take the database's write lock from the agents every round of every loop.
    if not due.exists():
        return []
    with transactions.write():
        # PostgreSQL: rows another loop is claiming right now are passed over, never waited
        # for (SQLite's writers are serialised already; the update below re-checks).
        ids = list(due.select_for_update(skip_locked=True, of=("self",)).values_list("id", flat=True)[:limit])
        if not ids:
            return []
        WebhookDelivery.objects.filter(id__in=ids).exclude(claimed_until__gt=now).update(claimed_until=until)
        return list(
            WebhookDelivery.objects.filter(id__in=ids, claimed_until=until)
            .select_related("subscription", "event", "event__session")
            .order_by("next_attempt_at", "id")
        )


def delivery_record(*, delivery: WebhookDelivery, code: int | None, error: str = "") -> WebhookDelivery.Status | None:
    """What one attempt of a claimed message got: a 2xx marks it delivered; anything else
    (another status, a redirect, a refused address, a timeout) schedules the next attempt
    after the next of NINEPLAN_WEBHOOKS_RETRY_DELAYS, or marks it failed after the last.
    Written only while this loop's claim holds (a compare-and-set on it); returns the new
    status, or None when the claim had passed to another loop."""
    _require_server()
    now = clock.now()
    attempts = delivery.attempts + 1
    changes: dict = {
        "attempts": attempts,
        "last_response_code": code,
        "claimed_until": None,
    }
    if code is not None and 200 <= code < 300:
        changes.update(
            status=WebhookDelivery.Status.DELIVERED,
            delivered_at=now,
            last_error="",
            next_attempt_at=None,
        )
    else:
        delays = settings.NINEPLAN_WEBHOOKS_RETRY_DELAYS
        changes["last_error"] = (error or f"the receiver answered {code}")[:MAX_ERROR_CHARS]
        if attempts > len(delays):
            changes.update(status=WebhookDelivery.Status.FAILED, next_attempt_at=None)
        else:
            changes["next_attempt_at"] = now + timedelta(seconds=delays[attempts - 1])
    with transactions.write():
        changed = WebhookDelivery.objects.filter(
            id=delivery.id,
            claimed_until=delivery.claimed_until,
            status=WebhookDelivery.Status.PENDING,
        ).update(**changes)
    if not changed:
        log.warning(
            "webhook delivery claim passed to another loop",
            extra={"delivery": delivery.id},
        )
        return None
    status = changes.get("status", WebhookDelivery.Status.PENDING)
    if status == WebhookDelivery.Status.FAILED:
        log.warning(
            "webhook delivery failed for good",
            extra={"delivery": delivery.id, "attempts": attempts},
        )
    return status
