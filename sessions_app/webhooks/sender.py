"""The delivery loop: sends the outbox's messages that are due, signed as the Standard
Webhooks specification says, and records each attempt (docs/design.md, "Webhooks").

It runs as a daemon thread inside `serve` (in each gunicorn worker), inside the HTTP MCP
server, and on its own as `manage.py nineplan_webhooks`. Several loops may run against one
database: each message is claimed by one loop at a time (services.deliveries_claim), so it
is never sent by two at once, and a loop killed mid-attempt leaves it to the next. No write
of 9plan waits for a receiver: a write only inserts the message; the loop sends it later,
outside any transaction.

One receiver never holds up another's messages: a loop sends side by side, on a pool of
threads, at most one message per subscription at a time, and each attempt ends by its
deadline (webhooks/exchange.py), which ends before the message's claim does. The loop's own
thread does every database read and write; the pool's threads only talk HTTP.
"""

from __future__ import annotations

import http.client
import json
import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from django.conf import settings
from django.urls import reverse
from standardwebhooks import Webhook

from sessions_app import access, clock, services
from sessions_app.errors import NineplanError
from sessions_app.models import WebhookDelivery
from sessions_app.webhooks import addresses, exchange

log = logging.getLogger("nineplan.webhooks")

USER_AGENT = "9plan-webhooks"
MAX_DETAIL_TEXT = 4000
REFUSED = "refused: "


def message_id(delivery: WebhookDelivery) -> str:
    """The webhook-id: one per message, the same on every attempt and resend, so a receiver
    can drop a message it has seen already."""
    return f"msg_{delivery.id}"


def admin_url(plan_id: str | None, session_name: str) -> str | None:
    """The absolute address of the plan's admin page (the session's, for an event of no
    plan), or None while NINEPLAN_PUBLIC_URL is unset: the server cannot know its own."""
    base = settings.NINEPLAN_PUBLIC_URL
    if not base:
        return None
    if plan_id:
        return base + reverse("admin:sessions_app_plan_change", args=[plan_id])
    return base + reverse("admin:sessions_app_session_change", args=[session_name])


def _clip(value):
    return value[:MAX_DETAIL_TEXT] if isinstance(value, str) else value


def payload(delivery: WebhookDelivery) -> str:
    """The body: the Standard Webhooks envelope (type, timestamp, data) around the event
    as the REST event feed shows it, with its project, the plan's goal and the address of
    its page in the admin."""
    event = delivery.event
    # A late write keeps the agent's whole text; a message carries its start (the event
    # feed and the plan page have all of it).
    detail = {k: _clip(v) for k, v in (event.detail or {}).items()}
    goal = event.plan.goal if event.plan_id and event.plan is not None else None
    clipped = detail != (event.detail or {})
    body: dict = {
        "type": delivery.event_type,
        "timestamp": event.created_at.astimezone(UTC).isoformat(),
        "data": {
            "event_id": event.id,
            "kind": event.kind,
            "project": event.session.project_id,
            "session": event.session_id,
            "plan": event.plan_id,
            "goal": _clip(goal),
            "admin_url": admin_url(event.plan_id, event.session_id),
            "actor": event.actor,
            "detail": detail,
        },
    }
    if clipped:
        body["data"]["detail_clipped"] = True
    if goal is not None and len(goal) > MAX_DETAIL_TEXT:
        body["data"]["goal_clipped"] = True
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def signed_headers(delivery: WebhookDelivery, body: str, at: datetime) -> dict[str, str]:
    """The Standard Webhooks headers; while a rotated secret's overlap lasts, the message is
    signed with both secrets (the new first), space-separated, so a receiver holding either
    verifies it."""
    msg_id = message_id(delivery)
    signatures = [
        Webhook(secret).sign(msg_id=msg_id, timestamp=at, data=body)
        for secret in delivery.subscription.signing_secrets(at)
    ]
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": " ".join(signatures),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


def attempt(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """One POST of the message: the status the receiver answered (None when there was no
    answer) and, for a failure, why. A redirect is an answer like any other non-2xx: it is
    not followed, since its target was never checked. The whole attempt, name lookup
    included, ends by NINEPLAN_WEBHOOKS_TIMEOUT, and always NINEPLAN_WEBHOOKS_CLAIM_MARGIN
    before the message's claim: no other loop can take it while this one may still send."""
    seconds = settings.NINEPLAN_WEBHOOKS_TIMEOUT
    budget = float(seconds)
    if delivery.claimed_until is not None:
        claim_left = (delivery.claimed_until - clock.now()).total_seconds()
        budget = min(budget, claim_left - settings.NINEPLAN_WEBHOOKS_CLAIM_MARGIN)
    if budget <= 0:
        return None, "not sent: too little of its claim was left for an attempt"
    deadline = time.monotonic() + budget
    try:
        target = addresses.resolve(delivery.subscription.url)
    except NineplanError as exc:
        return None, REFUSED + exc.message
    body = payload(delivery)
    headers = signed_headers(delivery, body, datetime.now(UTC))
    try:
        code = exchange.post(target, body.encode("utf-8"), headers, deadline)
    except TimeoutError:
        return (
            None,
            f"no answer by the attempt's deadline ({budget:.1f} s; NINEPLAN_WEBHOOKS_TIMEOUT={seconds}); it was cut",
        )
    except (OSError, http.client.HTTPException) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if 300 <= code < 400:
        return code, f"the receiver answered {code} (a redirect, not followed)"
    return code, "" if 200 <= code < 300 else f"the receiver answered {code}"


def _logged(delivery: WebhookDelivery, code: int | None, error: str, status) -> None:
    fields = {
        "delivery": delivery.id,
        "subscription": delivery.subscription_id,
        "project": delivery.subscription.project_id,
        "type": delivery.event_type,
        "code": code,
        "status": status,
    }
    if error.startswith(REFUSED):
        # Said where the people who run the server look, not only in the admin: nothing
        # will reach this URL until its address or NINEPLAN_WEBHOOKS_ALLOW_PRIVATE changes.
        log.warning(
            "webhook not sent: its URL is refused",
            extra={**fields, "url": delivery.subscription.url, "error": error},
        )
    elif error:
        log.info("webhook attempt failed", extra={**fields, "error": error})
    else:
        log.info("webhook attempt", extra=fields)


class Dispatcher:
    """Claims due messages for its free threads (one per subscription at a time), sends
    them side by side, and records each attempt as it ends. Only the thread that made it
    calls its methods."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nineplan-webhook")
        self.ended: queue.SimpleQueue = queue.SimpleQueue()
        self.in_flight = 0

    def start_due(self, *, due_by: datetime | None = None) -> int:
        """Starts the attempts of the messages it could claim; returns how many."""
        free = self.workers - self.in_flight
        if free <= 0:
            return 0
        claimed = services.deliveries_claim(limit=free, due_by=due_by)
        for delivery in claimed:
            self.in_flight += 1
            self.pool.submit(self._attempt, delivery)
        return len(claimed)

    def _attempt(self, delivery: WebhookDelivery) -> None:
        try:
            code, error = attempt(delivery)
        except Exception as exc:  # counted as a failed attempt, so it cannot come back forever
            log.exception("webhook attempt failed unexpectedly", extra={"delivery": delivery.id})
            code, error = None, f"{type(exc).__name__}: {exc}"
        self.ended.put((delivery, code, error))

    def record_ended(self, timeout: float | None) -> int:
        """Records the attempts that have ended, waiting up to ``timeout`` seconds (None:
        for as long as it takes) for the first; returns how many."""
        try:
            ended = [self.ended.get(timeout=timeout)]
        except queue.Empty:
            return 0
        while True:
            try:
                ended.append(self.ended.get_nowait())
            except queue.Empty:
                break
        self.in_flight -= len(ended)
        for delivery, code, error in ended:
            status = services.delivery_record(delivery=delivery, code=code, error=error)
            _logged(delivery, code, error, status)
        return len(ended)

    def close(self) -> None:
        """Waits for the attempts in flight (each ends by its deadline) and records them."""
        self.pool.shutdown(wait=True)
        while self.in_flight and self.record_ended(0):
            pass


def deliver_due(*, workers: int | None = None) -> int:
    """Sends each message that is due now once (side by side across subscriptions, one at
    a time for each), and returns when every attempt is recorded: how many were made,
    whatever the receivers answered. A message another loop is sending is left to it."""
    due_by = clock.now()
    dispatcher = Dispatcher(workers or settings.NINEPLAN_WEBHOOKS_CONCURRENCY)
    sent = 0
    with access.acting_as(access.LOCAL):
        try:
            while True:
                sent += dispatcher.start_due(due_by=due_by)
                if not dispatcher.in_flight:
                    break
                dispatcher.record_ended(None)
        finally:
            dispatcher.close()
    return sent


def run(stop: threading.Event, interval: float, *, workers: int | None = None) -> None:
    """Sends what is due until ``stop`` is set: looks every ``interval`` seconds, and at once
    when an attempt ends (its subscription's next message may be due). Never raises: a
    database that is briefly unavailable is tried again on the next round. Once stopped,
    it waits for the attempts in flight and records them."""
    from django.db import close_old_connections

    dispatcher = Dispatcher(workers or settings.NINEPLAN_WEBHOOKS_CONCURRENCY)
    with access.acting_as(access.LOCAL):
        try:
            while not stop.is_set():
                try:
                    close_old_connections()
                    dispatcher.start_due()
                    if dispatcher.in_flight:
                        dispatcher.record_ended(interval)
                    else:
                        stop.wait(interval)
                except Exception:
                    log.exception("webhook delivery round failed; trying again on the next round")
                    stop.wait(interval)
                finally:
                    close_old_connections()
        finally:
            try:
                dispatcher.close()
            except Exception:
                log.exception("webhook attempts in flight at the stop were not recorded")


_stop = threading.Event()
_thread: threading.Thread | None = None
_lock = threading.Lock()


def start(interval: float | None = None, *, wait_for=None) -> threading.Thread | None:
    """Starts the loop in a daemon thread (once per process); None when the interval is 0.
    ``wait_for``: a function to call first (the MCP server's start-up preparation)."""
    global _thread
    every = settings.NINEPLAN_WEBHOOKS_INTERVAL if interval is None else interval
    if not every:
        return None

    def body() -> None:
        if wait_for is not None:
            try:
                wait_for()
            except Exception:
                log.warning("webhook delivery loop not started: the database was not prepared")
                return
        run(_stop, every)

    with _lock:
        if _thread is None or not _thread.is_alive():
            _stop.clear()
            _thread = threading.Thread(target=body, name="nineplan-webhooks", daemon=True)
            _thread.start()
        return _thread


def stop() -> None:
    _stop.set()
