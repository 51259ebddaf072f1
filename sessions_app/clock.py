"""The time leases are measured by: one function, so tests can move time forward instead
of waiting for a lease to run out (docs/design.md, "Model and invariants")."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def now() -> datetime:
    return timezone.now()
