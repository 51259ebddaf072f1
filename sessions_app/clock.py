"""The time leases are measured by: one function, so tests can move time forward instead
of waiting for a lease to run out (docs/design.md, "Model and invariants"); and the one way
a time is written as text for people and agents."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

from django.utils import timezone as django_timezone

# A time set by ``stopped_at`` for the code running inside it (this thread or task only).
_stopped: ContextVar[datetime | None] = ContextVar("nineplan_clock_stopped", default=None)


def now() -> datetime:
    stopped = _stopped.get()
    return stopped if stopped is not None else django_timezone.now()


@contextmanager
def stopped_at(at: datetime) -> Iterator[None]:
    """Within the block, ``now()`` is ``at``: for the demo, which tells a story of hours in a
    second through the same services, so that every time it writes (events, revisions,
    claims, leases, the stamps in Notes) agrees with every other."""
    token = _stopped.set(at)
    try:
        yield
    finally:
        _stopped.reset(token)


def utc_text(at: datetime | None) -> str:
    """A time as every answer, note and page writes it: ``2026-12-01 20:13:15 UTC``."""
    if at is None:
        return "?"
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
