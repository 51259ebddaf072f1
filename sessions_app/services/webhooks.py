"""Webhooks: a project's managers subscribe a URL to event types and remove it; a delivery
is sent again on request; the messages of an event, written with it (the outbox); and the
delivery loops claim the messages that are due and record each attempt (docs/design.md,
"Webhooks")."""

from __future__ import annotations

import base64
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Min, Q

from sessions_app import access, clock, inputs
from sessions_app.errors import NotPermitted, ValidationFailed
from sessions_app.models import DeliveryStatus, Event, Plan, Project, WebhookDelivery, WebhookSubscription
from sessions_app.store import transactions
from sessions_app.webhooks import addresses
from sessions_app.webhooks import event_types as webhook_types

log = logging.getLogger("nineplan.webhooks")

SECRET_PREFIX = "whsec_"
MAX_ERROR_CHARS = 500


DEFAULT_OVERLAP_HOURS = 24
MAX_OVERLAP_HOURS = 24 * 30


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


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
    secret = new_secret()
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


def _subscription(subscription_id: object, project: str | None = None) -> WebhookSubscription:
    """The subscription (of ``project``, when named), for a manager of its project; one the
    caller may not manage, or of another project, is not found, as a missing one."""
    if not isinstance(subscription_id, int) or isinstance(subscription_id, bool) or subscription_id < 1:
        raise ValidationFailed("id: give a subscription's number.", field="id")
    found = WebhookSubscription.objects.filter(id=subscription_id).first()
    if (
        found is None
        or (project is not None and found.project_id != project)
        or not access.current().allows(access.MANAGE, found.project_id)
    ):
        raise ValidationFailed(f"id: no webhook subscription {subscription_id}.", field="id")
    return found


def webhook_unsubscribe(*, subscription_id: int, project: str | None = None) -> WebhookSubscription:
    """Removes the subscription (of ``project``, when named) and its messages, sent or not
    (for its project's managers)."""
    found = _subscription(subscription_id, project)
    with transactions.write():
        found.delete()
    found.id = subscription_id  # delete() forgets it; the caller reports which one went
    log.info(
        "webhook removed",
        extra={"project": found.project_id, "subscription": subscription_id},
    )
    return found


@dataclass(frozen=True)
class Rotated:
    """A subscription's new secret, shown this once, and until when the old one signs too."""

    subscription: WebhookSubscription
    secret: str
    previous_until: datetime | None


def webhook_secret_rotate(
    *, subscription_id: int, overlap_hours: object = DEFAULT_OVERLAP_HOURS, actor: str, project: str | None = None
) -> Rotated:
    """A new secret for the subscription (for its project's managers); the old one goes on
    signing every message beside it for ``overlap_hours`` (0: dropped at once). Messages
    not yet delivered stay, and are signed as they are sent."""
    if (
        not isinstance(overlap_hours, int)
        or isinstance(overlap_hours, bool)
        or not 0 <= overlap_hours <= MAX_OVERLAP_HOURS
    ):
        raise ValidationFailed(
            f"overlap_hours: give a whole number of hours from 0 to {MAX_OVERLAP_HOURS}.", field="overlap_hours"
        )
    found = _subscription(subscription_id, project)
    secret = new_secret()
    until = clock.now() + timedelta(hours=overlap_hours) if overlap_hours else None
    with transactions.write():
        # Compare-and-set on the secret read above: of two rotations at once, the second
        # would otherwise keep as "previous" a secret no receiver was ever shown.
        changed = WebhookSubscription.objects.filter(id=found.id, secret=found.secret).update(
            secret=secret, previous_secret=found.secret if until else "", previous_secret_until=until
        )
    if not changed:
        raise ValidationFailed(
            f"id: subscription {found.id}'s secret was rotated meanwhile; nothing was changed.", field="id"
        )
    found.refresh_from_db()
    log.info(
        "webhook secret rotated",
        extra={"project": found.project_id, "subscription": found.id, "actor": actor, "overlap_hours": overlap_hours},
    )
    return Rotated(found, secret, until)


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
    written. session.queue_emptied is one of them only when the event leaves nothing to do in
    the session (_empties_queue)."""
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


# The kinds whose event is written before its plan's status changes (the others' after).
_EVENT_BEFORE_CHANGE = frozenset({Event.Kind.PLAN_COMPLETED, Event.Kind.PLAN_DISCARDED})


def _empties_queue(event: Event) -> bool:
    """Whether nothing is left to do in the session once the change the event records is
    made: no other plan of it may be pulled (queued and not waiting for a person), is active
    or is in review, and the event's own plan was one of those until this change."""
    in_work = Q(status__in=(Plan.Status.ACTIVE, Plan.Status.IN_REVIEW)) | Q(
        status=Plan.Status.QUEUED, waiting_for_person=False
    )
    plans = Plan.objects.filter(session_id=event.session_id)
    if plans.filter(in_work).exclude(id=event.plan_id).exists():
        return False
    its_plan_in_work = plans.filter(in_work, id=event.plan_id).exists()
    if event.kind in _EVENT_BEFORE_CHANGE:
        # Not changed yet: a discard of a plan already out of work (held, waiting) empties nothing.
        return its_plan_in_work
    # Changed already: approved or held (it was in review), or left waiting by a reclaim (it
    # was active); it must be out of work now.
    return not its_plan_in_work


# --- the delivery loops ---------------------------------------------------------------------


def _require_server() -> None:
    caller = access.current()
    if not (caller.everything and caller.within is None):
        raise NotPermitted("Only the server's own delivery loop sends webhooks. Nothing was changed.")


def deliveries_claim(*, limit: int, due_by: datetime | None = None) -> list[WebhookDelivery]:
    """Up to ``limit`` messages that are due (by ``due_by``, default now), at most one per
    subscription and none of a subscription whose message another attempt holds, each
    claimed for NINEPLAN_WEBHOOKS_CLAIM_SECONDS by this loop: no other loop takes one before
    its claim passes (or it is recorded), and a loop that died mid-attempt leaves it to the
    next once it has (at least once). A subscription's messages go oldest first; messages
    of a subscription made inactive are left alone."""
    _require_server()
    now = clock.now()
    due_by = now if due_by is None or due_by > now else due_by
    until = now + timedelta(seconds=settings.NINEPLAN_WEBHOOKS_CLAIM_SECONDS)
    pending = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING).order_by()
    held = pending.filter(claimed_until__gt=now)
    due = (
        pending.filter(next_attempt_at__lte=due_by, subscription__active=True)
        .exclude(claimed_until__gt=now)
        .exclude(subscription_id__in=held.values("subscription_id"))
    )
    # A plain read first: most rounds find nothing, and on SQLite a write transaction
    # would take the database's write lock from the agents every round of every loop.
    _drop_overlapped_secrets(now)
    if not due.exists():
        return []
    # One per subscription, so that a slow receiver's backlog never fills a round that
    # other receivers' messages are waiting for.
    firsts = list(
        due.values("subscription_id")
        .annotate(first=Min("id"))
        .order_by("first")
        .values_list("first", flat=True)[:limit]
    )
    with transactions.write():
        # Compare-and-set: a message another loop claimed (or recorded) since the read
        # above is left to it.
        WebhookDelivery.objects.filter(
            id__in=firsts, status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
        ).exclude(claimed_until__gt=now).update(claimed_until=until)
        return list(
            WebhookDelivery.objects.filter(id__in=firsts, claimed_until=until)
            .select_related("subscription", "event", "event__session", "event__plan")
            .order_by("id")
        )


def _drop_overlapped_secrets(now: datetime) -> None:
    """Forgets the previous secrets whose overlap has ended (they sign nothing any more)."""
    over = WebhookSubscription.objects.filter(previous_secret_until__lte=now)
    if over.exists():
        with transactions.write():
            over.update(previous_secret="", previous_secret_until=None)


def delivery_record(*, delivery: WebhookDelivery, code: int | None, error: str = "") -> DeliveryStatus | None:
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
