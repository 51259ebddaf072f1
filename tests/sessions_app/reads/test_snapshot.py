"""Reads that belong together (sessions_app/reads/snapshot.py): on SQLite one read transaction,
one snapshot, never the write lock; inside a transaction already, nothing more."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from sessions_app import access
from sessions_app.reads.snapshot import snapshot


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads are grouped on SQLite only")
def test_reads_grouped_on_sqlite_see_one_snapshot_while_another_writer_commits(session, make_plan):
    """Inside ``snapshot`` the reads share one SQLite read transaction: a plan another connection
    adds meanwhile is not seen until the group ends, and that writer is not held up."""
    from sessions_app.reads import queries

    make_plan(session)

    def add_elsewhere():
        # A thread of its own does not inherit the test's caller (access.acting_as).
        try:
            with access.acting_as(access.LOCAL):
                make_plan(session, goal="Added meanwhile")
        finally:
            connection.close()

    with snapshot():
        assert connection.connection.in_transaction
        before = queries.queue_length(session.name)
        writer = threading.Thread(target=add_elsewhere)
        writer.start()
        writer.join(timeout=30)
        assert not writer.is_alive()  # the writer committed while the reads were open
        assert queries.queue_length(session.name) == before == 1
    assert not connection.connection.in_transaction
    assert queries.queue_length(session.name) == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads are grouped on SQLite only")
def test_a_session_state_is_read_in_one_transaction_and_a_failed_read_leaves_none_open(session, make_plan):
    from django.test.utils import CaptureQueriesContext

    from sessions_app.errors import SessionNotFound
    from sessions_app.reads import queries

    make_plan(session)
    with CaptureQueriesContext(connection) as captured:
        state = queries.session_state(session.name)
    sql = [q["sql"] for q in captured.captured_queries]
    assert sql[0] == "BEGIN DEFERRED" and sql[-1] == "COMMIT" and len(sql) > 3
    assert state.queue_length == 1
    with pytest.raises(SessionNotFound):
        queries.session_state("no-such-session")
    assert not connection.connection.in_transaction


def test_inside_a_transaction_reads_are_not_grouped_again(session, make_plan):
    from django.test.utils import CaptureQueriesContext

    from sessions_app.reads import queries

    with CaptureQueriesContext(connection) as captured:
        queries.session_state(session.name)
    assert not any(q["sql"].startswith(("BEGIN", "COMMIT")) for q in captured.captured_queries)
