"""The delivery loop: sends the outbox's messages that are due, signed as the Standard
Webhooks specification says, and records each attempt (docs/design.md, "Webhooks").

It runs as a daemon thread inside `serve` (in each gunicorn worker), inside the HTTP MCP
server, and on its own as `manage.py nineplan_webhooks`. Several loops may run against one
database: each message is claimed by one loop at a time (services.deliveries_claim), so it
is never sent by two at once, and a loop killed mid-attempt leaves it to the next. No write
of 9plan waits for a receiver: a write only inserts the message; the loop sends it later,
outside any transaction.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import ssl
import threading
from datetime import UTC, datetime

from django.conf import settings
from standardwebhooks import Webhook

from sessions_app import access, services
from sessions_app.errors import NineplanError
from sessions_app.models import WebhookDelivery
from sessions_app.webhooks import addresses

log = logging.getLogger("nineplan.webhooks")

BATCH = 20
# A receiver's answer is not read beyond this: only its status counts.
MAX_ANSWER_BYTES = 4096
USER_AGENT = "9plan-webhooks"
MAX_DETAIL_TEXT = 4000


def message_id(delivery: WebhookDelivery) -> str:
    """The webhook-id: one per message, the same on every attempt and resend, so a receiver
    can drop a message it has seen already."""
    return f"msg_{delivery.id}"


def payload(delivery: WebhookDelivery) -> str:
    """The body: the Standard Webhooks envelope (type, timestamp, data) around the event
    as the REST event feed shows it, with its project."""
    event = delivery.event
    # A late write keeps the agent's whole text; a message carries its start (the event
    # feed and the plan page have all of it).
    detail = {k: v[:MAX_DETAIL_TEXT] if isinstance(v, str) else v for k, v in (event.detail or {}).items()}
    clipped = detail != (event.detail or {})
    body = {
        "type": delivery.event_type,
        "timestamp": event.created_at.astimezone(UTC).isoformat(),
        "data": {
            "event_id": event.id,
            "kind": event.kind,
            "project": event.session.project_id,
            "session": event.session_id,
            "plan": event.plan_id,
            "actor": event.actor,
            "detail": detail,
        },
    }
    if clipped:
        body["data"]["detail_clipped"] = True
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def signed_headers(delivery: WebhookDelivery, body: str, at: datetime) -> dict[str, str]:
    msg_id = message_id(delivery)
    signature = Webhook(delivery.subscription.secret).sign(msg_id=msg_id, timestamp=at, data=body)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


class _PinnedHTTP(http.client.HTTPConnection):
    """Connects to the address that was checked, whatever a new lookup of the name says."""

    def __init__(self, target: addresses.Target, timeout: float):
        super().__init__(target.host, target.port, timeout=timeout)
        self.address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(_PinnedHTTP):
    def connect(self) -> None:
        super().connect()
        self.sock = ssl.create_default_context().wrap_socket(self.sock, server_hostname=self.host)


def attempt(delivery: WebhookDelivery) -> tuple[int | None, str]:
    """One POST of the message: the status the receiver answered (None when there was no
    answer) and, for a failure, why. A redirect is an answer like any other non-2xx: it is
    not followed, since its target was never checked."""
    try:
        target = addresses.resolve(delivery.subscription.url)
    except NineplanError as exc:
        return None, f"refused: {exc.message}"
    body = payload(delivery)
    headers = signed_headers(delivery, body, datetime.now(UTC))
    kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
    conn = kind(target, timeout=settings.NINEPLAN_WEBHOOKS_TIMEOUT)
    try:
        conn.request("POST", target.path, body=body.encode("utf-8"), headers=headers)
        answer = conn.getresponse()
        answer.read(MAX_ANSWER_BYTES)
        code = answer.status
    except (OSError, http.client.HTTPException) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    if 300 <= code < 400:
        return code, f"the receiver answered {code} (a redirect, not followed)"
    return code, "" if 200 <= code < 300 else f"the receiver answered {code}"


def deliver_due(limit: int = BATCH) -> int:
    """Claims the messages that are due and sends each once; returns how many it sent
    (whatever the receivers answered)."""
    with access.acting_as(access.LOCAL):
        claimed = services.deliveries_claim(limit=limit)
        for delivery in claimed:
            try:
                code, error = attempt(delivery)
            except Exception as exc:  # counted as a failed attempt, so it cannot come back forever
                log.exception("webhook attempt failed unexpectedly", extra={"delivery": delivery.id})
                code, error = None, f"{type(exc).__name__}: {exc}"
            status = services.delivery_record(delivery=delivery, code=code, error=error)
            log.info(
                "webhook attempt",
                extra={
                    "delivery": delivery.id,
                    "type": delivery.event_type,
                    "code": code,
                    "status": status,
                },
            )
    return len(claimed)


def run(stop: threading.Event, interval: float) -> None:
    """Sends what is due every ``interval`` seconds (at once again while a round found a
    full batch) until ``stop`` is set. Never raises: a database that is briefly unavailable
    is tried again on the next round."""
    from django.db import close_old_connections

    while not stop.is_set():
        sent = 0
        try:
            close_old_connections()
            sent = deliver_due()
        except Exception:
            log.exception("webhook delivery round failed; trying again on the next round")
        finally:
            close_old_connections()
        if sent < BATCH:
            stop.wait(interval)


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
