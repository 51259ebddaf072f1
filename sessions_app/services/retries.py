"""Retry-safe writes: a write named with a ``request_id`` is applied once per caller; the
same call sent again (after a timeout, a dropped connection, a crash between the commit and
the answer) gets the first call's answer and changes nothing (docs/design.md, "Plan files": retries).

The write, its answer and the record of both commit in one transaction, so there is no
moment at which the write is done but its answer is not kept.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import connection

from sessions_app import access, clock, errors, inputs
from sessions_app.errors import SessionNotFound, ValidationFailed
from sessions_app.models import Session, WriteRequest
from sessions_app.store import transactions

log = logging.getLogger("nineplan.services")

# Answers are kept at least this long; the periodic sweep forgets older ones.
KEPT_FOR = timedelta(hours=48)


def fingerprint(call: dict[str, Any]) -> str:
    """What tells one call from another: the tool, its session and its arguments."""
    # ASCII escapes: any text an argument can carry (a lone surrogate too) has a fingerprint.
    return hashlib.sha256(json.dumps(call, sort_keys=True, default=str).encode()).hexdigest()


def write_once(
    *,
    request_id: object,
    call: dict[str, Any],
    write: Callable[[], tuple[dict, bool]],
    scope: str | None = None,
    field: str = "request_id",
    session_of: Callable[[dict], str | None] = lambda answer: None,
) -> dict:
    """The answer to ``call``: ``write()`` run inside one transaction with the record of its
    answer, or, when the caller sent this ``request_id`` before with the same call, the
    answer it got then, if the caller may still write in the session that answer is about
    (``session_of`` names it). ``write`` returns the answer and whether to keep it (an
    answer that reports a refusal is not kept: the call changed nothing, and may be sent
    again). The same id with a different call is refused, with nothing changed. ``scope``:
    whose ids these are, when the caller's claimant does not tell callers apart (REST
    users); ``field``: the name the caller gave the id under (an HTTP header)."""
    request_id = inputs.request_id(request_id, field=field)
    caller = scope or access.current().claimant or "local"
    printed = fingerprint(call)
    with transactions.write():
        _take_turn(caller, request_id)
        found = WriteRequest.objects.filter(caller=caller, request_id=request_id).first()
        if found is not None:
            if found.fingerprint != printed:
                raise ValidationFailed(
                    f"{field} '{request_id}' was already used for a different call (at "
                    f"{clock.utc_text(found.created_at)}); use a new {field} for a new call. Nothing was changed.",
                    field=field,
                    reason=errors.REQUEST_ID_REUSED,
                )
            # A kept answer carries the plan's text: a caller removed from the project since
            # must not read it back by replaying the id for the next 48 hours.
            _require_still_allowed(session_of(found.answer))
            log.info("write replayed", extra={"request_id": request_id})
            return found.answer
        answer, keep = write()
        if keep:
            WriteRequest.objects.create(
                caller=caller,
                request_id=request_id,
                fingerprint=printed,
                answer=answer,
                created_at=clock.now(),
            )
    return answer


def _require_still_allowed(session_name: str | None) -> None:
    if session_name is None:
        return
    project = Session.objects.filter(name=session_name).values_list("project_id", flat=True).first()
    if project is None:
        raise SessionNotFound.named(session_name)
    # Agents and managers write; a caller who is neither there any more reads nothing back.
    access.require(access.ADD, project=project, session_name=session_name)


def _take_turn(caller: str, request_id: str) -> None:
    """Two copies of one call racing wait for each other, so the second finds the first's
    answer. SQLite's writers already take turns; PostgreSQL takes a lock on the key."""
    if connection.vendor == "postgresql":
        key = int.from_bytes(
            hashlib.sha256(f"{caller}\0{request_id}".encode()).digest()[:8],
            "big",
            signed=True,
        )
        # Raw: an advisory lock, which the ORM cannot take.
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def forget_old_requests() -> int:
    """Forgets the answers older than KEPT_FOR; returns how many."""
    with transactions.write():
        deleted, _ = WriteRequest.objects.filter(created_at__lt=clock.now() - KEPT_FOR).delete()
    return deleted
