"""The time leases are measured by: one function, so tests can move time forward instead
of waiting for a lease to run out (docs/design.md, "Model and invariants"); and the one way
a time is written as text for people and agents."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone as django_timezone


def now() -> datetime:
    return django_timezone.now()


def utc_text(at: datetime | None) -> str:
    """A time as every answer, note and page writes it: ``2026-12-01 20:13:15 UTC``."""
    if at is None:
        return "?"
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
