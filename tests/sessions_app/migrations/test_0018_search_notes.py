"""Migration 0018 puts the plan's Notes into the search index on both databases
(sessions_app/migrations/0018), for the plans completed before it ran as well, and going back
restores the index without them."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.db import connection

from sessions_app import services
from sessions_app.reads import queries
from sessions_app.search import sqlite as search_sqlite
from tests.conftest import plan_fields

pytestmark = pytest.mark.django_db(transaction=True)

migration = import_module("sessions_app.migrations.0018_search_notes")


class Editor:
    """What the migration's functions use of a schema editor: the connection, and a way to run
    a statement (on a plain cursor, as a data migration's RunPython does)."""

    connection = connection

    def execute(self, sql: str) -> None:
        with connection.cursor() as cur:
            cur.execute(sql)


def found(query: str, session) -> list[str]:
    return [h.plan.id for h in queries.history_search(query, session_name=session.name)]


def test_plans_completed_before_it_are_found_by_their_notes_after_it(session, monkeypatch):
    # On SQLite, through the shared index the migration rebuilds (a small session's own
    # index is made from the plan rows at search time).
    monkeypatch.setattr(search_sqlite, "SMALL_SESSION", -1)
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Parse the CSV export"))
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="caching the header row")
    plan = services.plan_complete(session_name=session.name, outcome="Parser done").plan
    try:
        migration.backward(None, Editor())
        # The index as it was before: the Notes are not searched, the other sections are.
        assert found("cache header", session) == []
        assert found("parser", session) == [plan.id]
    finally:
        migration.forward(None, Editor())
    assert found("cache header", session) == [plan.id]
    assert found("parser", session) == [plan.id]
    # The triggers are the new ones: a plan completed now is indexed with its Notes.
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Write the README"))
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="a zeppelin of a paragraph")
    later = services.plan_complete(session_name=session.name, outcome="Done").plan
    assert found("zeppelin", session) == [later.id]
