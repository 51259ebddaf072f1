"""Reads that belong together, seeing one snapshot of the database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


@contextmanager
def snapshot() -> Iterator[None]:
    """Reads that belong together, on SQLite in one read transaction: they see one snapshot,
    and SQLite checks once, not at every statement, whether another process committed since
    (when one did, it drops every page it had cached and reads them again). Outside SQLite,
    or inside a transaction already, the reads run as they are. Only reads go inside: the
    write lock is never taken here, so nothing waits for writers and no writer waits."""
    if connection.vendor != "sqlite" or connection.in_atomic_block or not connection.get_autocommit():
        yield
        return
    # Raw: Django's transactions begin as the connection's transaction_mode says, IMMEDIATE
    # (the write lock) on SQLite, and a read must never take it.
    with connection.cursor() as cur:
        cur.execute("BEGIN DEFERRED")
    try:
        yield
    finally:
        with connection.cursor() as cur:
            cur.execute("COMMIT")  # a read transaction: nothing to keep or undo either way
