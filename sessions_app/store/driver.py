"""9plan's own statements, run on the database driver's cursor.

Django's cursor wraps every statement in several layers (a wrapper object per cursor, the
thread and broken-transaction checks, on SQLite a regular expression turning each ``%s``
into ``?``): about 9 µs of Python a statement, against 5 µs for the statement itself, and
a queue operation runs five to eight (docs/benchmarks.md). The statements in
``statements``, ``search`` and the other hot paths are fixed texts, so here they go
straight to the driver, with what of Django's layers they need kept:

- errors become Django's (``IntegrityError``, ``OperationalError`` ...), fetching as well
  as executing, so the write transactions handle them as before;
- a connection due for its health check is checked first, and one not open (or closed by
  the check) is opened, as Django's cursor does it;
- while Django records queries (``DEBUG``, or a test counting them), or when an execute
  wrapper is installed, or when the transaction is already broken, the statement goes
  through Django's own cursor instead, so that it is recorded, wrapped and refused as
  anything else would be;
- on SQLite the ``%s`` placeholders become ``?`` once per statement text, not on each run.

Statements are written in Django's placeholder style (``%s``, ``%%`` for a literal
percent sign) either way.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Sequence

from django.db import DEFAULT_DB_ALIAS, connections

_FORMAT_MARK = re.compile(r"(?<!%)%s")


@lru_cache(maxsize=1024)
def _qmarks(text: str) -> str:
    """``text`` with SQLite's placeholders, as Django's SQLite cursor writes it."""
    return _FORMAT_MARK.sub("?", text).replace("%%", "%")


def _run(text: str, params: Sequence[Any] | None, fetch: Callable[[Any], Any], many: bool = False) -> Any:
    conn = connections[DEFAULT_DB_ALIAS]
    if conn.health_check_enabled and not conn.health_check_done:
        conn.close_if_health_check_failed()  # what Django's cursor does first (a pool checks its own)
    if conn.connection is None or conn.needs_rollback or conn.execute_wrappers or conn.queries_logged:
        with conn.cursor() as cur:
            return _execute(cur, text, params, fetch, many)
    with conn.wrap_database_errors:
        if conn.vendor == "sqlite":
            cur = conn.connection.cursor()
            if params is not None:
                text = _qmarks(text)
        else:
            cur = conn.create_cursor()
        try:
            return _execute(cur, text, params, fetch, many)
        finally:
            cur.close()


def _execute(cur, text: str, params: Sequence[Any] | None, fetch: Callable[[Any], Any], many: bool) -> Any:
    """Runs the statement on ``cur`` (Django's cursor or the driver's) and fetches from it."""
    if many:
        cur.executemany(text, params)
    elif params is None:
        cur.execute(text)
    else:
        cur.execute(text, params)
    return fetch(cur)


def _all(cur) -> list[tuple]:
    return cur.fetchall()


def _one(cur) -> tuple | None:
    return cur.fetchone()


def _count(cur) -> int:
    return cur.rowcount


def _inserted(cur) -> int:
    return cur.lastrowid


def rows(text: str, params: Sequence[Any] | None = None) -> list[tuple]:
    """Every row the statement returns."""
    return _run(text, params, _all)


def first(text: str, params: Sequence[Any] | None = None) -> tuple | None:
    """The statement's first row, or None."""
    return _run(text, params, _one)


def run(text: str, params: Sequence[Any] | None = None) -> int:
    """Runs a statement that returns no rows; how many rows it changed."""
    return _run(text, params, _count)


def last_id(text: str, params: Sequence[Any] | None = None) -> int:
    """Runs an INSERT; the id of the row it inserted (SQLite's ``lastrowid``)."""
    return _run(text, params, _inserted)


def run_many(text: str, params: Sequence[Sequence[Any]]) -> int:
    """Runs the statement once for each set of parameters."""
    return _run(text, list(params), _count, many=True)
