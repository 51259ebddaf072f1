"""Sessions: creating one, and the staff's choice of its review policy."""

from __future__ import annotations

import logging

from sessions_app import inputs, planfiles, transactions
from sessions_app.errors import DatabaseFailed
from sessions_app.identifiers import new_session_name
from sessions_app.models import LEASE_SECONDS, MAX_ATTEMPTS, MAX_LEASE_SECONDS, Event, ReviewPolicy, Session
from sessions_app.services.writing import lock_session, record_event

log = logging.getLogger("nineplan.services")

# How many fresh names or ids are drawn before a write gives up on finding a free one.
ID_ATTEMPTS = 20


def session_create(
    *,
    task_description: str | None = None,
    lease_seconds: int | None = None,
    max_attempts: int | None = None,
    review: str | None = None,
    actor: str = "agent",
) -> Session:
    """Creates a session with a fresh three-word name and its plans folder. ``lease_seconds``:
    how long a pull's claim lasts without a write by its worker; ``max_attempts``: how many
    claims of a plan may run out before it waits for a person; ``review``: whether its
    completed plans wait for a reviewer (``required``) or only those added with ``review``."""
    if task_description is not None:
        task_description = inputs.text("task_description", task_description, required=False) or None
    lease_seconds = inputs.bounded_int(
        "lease_seconds", lease_seconds, default=LEASE_SECONDS, minimum=1, maximum=MAX_LEASE_SECONDS
    )
    max_attempts = inputs.bounded_int("max_attempts", max_attempts, default=MAX_ATTEMPTS, minimum=1, maximum=100)
    review = inputs.choice("review", review, ReviewPolicy.values, default=ReviewPolicy.NONE)
    with transactions.write():
        for _ in range(ID_ATTEMPTS):
            name = new_session_name()
            if not Session.objects.filter(name=name).exists():
                break
            log.warning("session name collision; drawing another", extra={"session": name})
        else:
            raise DatabaseFailed("Could not find a free session name after several attempts.")
        session = Session.objects.create(
            name=name,
            task_description=task_description,
            lease_seconds=lease_seconds,
            max_attempts=max_attempts,
            review=review,
        )
        planfiles.ensure_session_dir(name)
        detail = {"task_description": task_description, "review": review}
        if (lease_seconds, max_attempts) != (LEASE_SECONDS, MAX_ATTEMPTS):
            detail.update(lease_seconds=lease_seconds, max_attempts=max_attempts)
        record_event(name, Event.Kind.SESSION_CREATED, actor, **detail)
    log.info("session created", extra={"session": name})
    return session


def session_set_review(*, session_name: str, review: str, actor: str) -> Session:
    """Staff change whether a session's completed plans wait for review (from the next completion)."""
    review = inputs.choice("review", review, ReviewPolicy.values, default=ReviewPolicy.NONE)
    name = inputs.session_name(session_name)
    with transactions.write():
        session = lock_session(name)
        if session.review != review:
            Session.objects.filter(name=session.name).update(review=review)
            record_event(session.name, Event.Kind.SESSION_CHANGED, actor, review=review)
        session.review = review
    return session
