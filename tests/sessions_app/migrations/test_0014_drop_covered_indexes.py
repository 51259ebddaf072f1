"""Migration 0014 drops the single-column indexes a composite index already serves, on both
databases (sessions_app/migrations/0014), and every lookup by their column still reads an
index."""

from __future__ import annotations

from importlib import import_module
from types import SimpleNamespace

import pytest
from django.db import connection

from sessions_app import services
from tests.conftest import plan_fields

pytestmark = pytest.mark.django_db

migration = import_module("sessions_app.migrations.0014_drop_covered_indexes")
TABLES = ("sessions_app_event", "sessions_app_plan", "sessions_app_revision")
# The lookups the dropped indexes served, and the indexes that may serve each now (SQLite
# names a unique constraint's index sqlite_autoindex_<table>_N).
LOOKUPS = (
    ("SELECT id FROM sessions_app_event WHERE session_name = %s", ("event_session_id",)),
    (
        "SELECT id FROM sessions_app_plan WHERE session_name = %s",
        ("plan_session_status_pos", "plan_session_status_done"),
    ),
    (
        "SELECT id FROM sessions_app_revision WHERE plan_id = %s",
        ("revision_plan_number", "sqlite_autoindex_sessions_app_revision_1"),
    ),
)


def _indexes() -> dict[str, list[str]]:
    """Each index of the three tables: its columns."""
    found = {}
    with connection.cursor() as cur:
        for table in TABLES:
            for name, info in connection.introspection.get_constraints(cur, table).items():
                if info["index"] or info["unique"]:
                    found[name] = info["columns"]
    return found


def _single(column: str, table: str) -> list[str]:
    return [n for n, columns in _indexes().items() if columns == [column] and n.startswith(table)]


def _query_plan(sql: str, param: str) -> str:
    with connection.cursor() as cur:
        if connection.vendor == "postgresql":
            cur.execute("SET LOCAL enable_seqscan = off")
            cur.execute(f"EXPLAIN {sql}", [param])
        else:
            cur.execute(f"EXPLAIN QUERY PLAN {sql}", [param])
        return " ".join(str(part) for row in cur.fetchall() for part in row)


def test_no_write_keeps_an_index_of_a_column_alone_that_a_composite_index_begins_with():
    assert _single("session_name", "sessions_app_event") == []
    assert _single("session_name", "sessions_app_plan") == []
    assert _single("plan_id", "sessions_app_revision") == []
    indexes = _indexes()
    assert indexes["event_session_id"] == ["session_name", "id"]
    assert indexes["plan_session_status_pos"] == ["session_name", "status", "sort_key"]
    # The plain index of an event's plan stays: nothing else begins with plan_id there.
    assert _single("plan_id", "sessions_app_event")


def test_each_lookup_the_dropped_indexes_served_still_reads_an_index(session):
    plan = services.plan_enqueue(session_name=session.name, **plan_fields()).plan
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="a revision to find")
    for sql, indexes in LOOKUPS:
        shown = _query_plan(sql, plan.id if "plan_id" in sql else session.name)
        assert any(index in shown for index in indexes), shown


def test_going_back_makes_the_indexes_again_and_forward_drops_them_again():
    editor = SimpleNamespace(connection=connection)
    dropped = migration.COVERED[connection.vendor]
    migration.restore(None, editor)
    for table, column in dropped:
        assert len(_single(column, table)) == 1, (table, column)
    migration.drop(None, editor)
    for table, column in dropped:
        assert _single(column, table) == [], (table, column)
