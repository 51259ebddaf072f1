"""Migration 0011 drops, on PostgreSQL, the indexes no query reads (sessions_app/migrations/0011)."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the indexes are PostgreSQL's"),
]


def _indexes(table: str) -> dict[str, str]:
    with connection.cursor() as cur:
        cur.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        return dict(cur.fetchall())


def test_no_prefix_index_is_left_on_the_tables_every_step_writes():
    for table in ("sessions_app_event", "sessions_app_plan", "sessions_app_revision"):
        assert not [name for name, d in _indexes(table).items() if "varchar_pattern_ops" in d], table


def test_every_lookup_by_session_still_has_an_index_that_begins_with_it():
    event, plan = _indexes("sessions_app_event"), _indexes("sessions_app_plan")
    assert "(session_name, id)" in event["event_session_id"]
    assert "(session_name, status, sort_key)" in plan["plan_session_status_pos"]
    assert not [d for d in event.values() if d.endswith("(session_name)")]
    # An event's plan (the cascade when a plan is deleted) keeps its plain index.
    assert [d for d in event.values() if d.endswith("(plan_id)")]


def test_the_cycle_still_reads_a_session_by_index(session):
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("EXPLAIN SELECT id FROM sessions_app_event WHERE session_name = %s", [session.name])
        plan = " ".join(row[0] for row in cur.fetchall())
    assert "event_session_id" in plan
