"""How PostgreSQL plans 9plan's statements, which its pooled connections prepare
(docs/design.md, "Transactions and writer turns": prepared statements): a status a
statement filters on is written into its text, so that one plan serves every call, and a
statement whose best plan depends on its parameters is kept from being prepared."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from django.db.models import Choices

from sessions_app.models import Plan


def fixed(value: Choices) -> str:
    """A value the code fixes (a plan's status), written into a statement as a literal
    rather than sent as a parameter. PostgreSQL plans a prepared statement once for all its
    calls only when that plan suits every call; given the status as a parameter, it could
    not tell how many rows the one plan would meet, and planned the statement anew at every
    call (docs/design.md, "Transactions and writer turns": prepared statements). Only a
    choice of the code's own is accepted: no caller's text is ever written into a statement."""
    if not isinstance(value, Choices) or not value.value.replace("_", "").isalpha():
        raise TypeError(f"not a fixed choice: {value!r}")
    return f"'{value.value}'"


@contextmanager
def planned_for_each_call() -> Iterator[None]:
    """On PostgreSQL, the statements inside are not prepared: each is planned for its own
    parameters. For a statement whose best plan depends on them, as a search's does on how
    many plans its session holds (the session's own rows for a small one, the word index
    for a large one): one plan for every session, made after a run of large ones, took a
    small session's search from half a millisecond to a hundred (docs/design.md,
    "Transactions and writer turns": prepared statements)."""
    if connection.vendor != "postgresql":
        yield
        return
    connection.ensure_connection()
    driver = connection.connection
    was = driver.prepare_threshold
    driver.prepare_threshold = None
    try:
        yield
    finally:
        driver.prepare_threshold = was


# The statuses the services' statements filter on most, as they are written into them.
SQL_ACTIVE, SQL_QUEUED, SQL_COMPLETED = (fixed(s) for s in (Plan.Status.ACTIVE, Plan.Status.QUEUED, Plan.Status.COMPLETED))
