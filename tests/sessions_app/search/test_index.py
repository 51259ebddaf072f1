"""The SQLite search index (sessions_app/search/sqlite.py): its triggers, what it holds, its
migrations, and which index a session is searched in."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app import search, services
from sessions_app.errors import SessionNotFound
from sessions_app.models import Plan
from sessions_app.reads import queries
from sessions_app.search import FTS_TABLE, SQLITE_TRIGGERS
from sessions_app.search import sqlite as search_sqlite
from tests.sessions_app.search.helpers import found, on_both_sqlite_paths, sqlite_only

# --- the index --------------------------------------------------------------------------


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_the_triggers_exist_after_migrations():
    assert search.sqlite_triggers_present() == sorted(SQLITE_TRIGGERS)


def fts_rows(plan_id: str) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(f"SELECT goal, outcome FROM {FTS_TABLE} WHERE plan_id = %s", [plan_id])
        return cur.fetchall()


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_a_completed_plan_updated_again_stays_indexed_once(session, complete_plan):
    plan = complete_plan(session, goal="Index me", outcome="first outcome")
    assert fts_rows(plan.id) == [("Index me", "first outcome")]

    plan.refresh_from_db()
    plan.outcome = "second outcome"
    plan.save()
    Plan.objects.filter(id=plan.id).update(goal="Index me again")

    assert fts_rows(plan.id) == [("Index me again", "second outcome")]
    assert found("second", session) == [plan.id]
    assert found("first", session) == []


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_only_completed_plans_reach_the_index(session, make_plan, complete_plan):
    queued = make_plan(session)
    done = complete_plan(session)
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="x")

    with connection.cursor() as cur:
        cur.execute(f"SELECT plan_id FROM {FTS_TABLE}")
        assert [row[0] for row in cur.fetchall()] == [done.id]
    assert Plan.objects.get(id=queued.id).status == "discarded"


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_deleting_a_session_drops_its_plans_from_the_index(session, complete_plan):
    plan = complete_plan(session)
    session.delete()
    assert fts_rows(plan.id) == []


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_rebuild_refills_the_index_from_completed_plans(session, complete_plan, make_plan):
    done = complete_plan(session, goal="Rebuilt")
    make_plan(session)
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {FTS_TABLE}")

    assert search.rebuild_index() == 1
    assert fts_rows(done.id) == [("Rebuilt", "Done.")]


@on_both_sqlite_paths
@pytest.mark.django_db
def test_a_search_returns_whole_plans_in_the_statement_that_matches(session, corpus):
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        hits = queries.history_search("sqlite", session_name=None)
    # One statement: the matches and their plan rows together (on PostgreSQL, beside the
    # setting of its transaction: planned for each call).
    reads = [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"] and "SET LOCAL" not in q["sql"]]
    assert len(reads) == 1, reads
    assert {h.plan.id for h in hits} == {corpus["dense"], corpus["sparse"]}
    # The searched sections come with the hit; the rest loads only if asked for.
    assert hits[0].plan.get_deferred_fields() == {
        "sort_key",
        "approach",
        "success_criteria",
        "notes",
        "discard_reason",
        "version",
        "review",
        "rejections",
        "created_at",
        "updated_at",
        "discarded_at",
        "claimant",
        "worker",
        "claimed_at",
        "lease_expires_at",
        "attempts",
        "reclaims",
        "waiting_for_person",
    }
    stored = {p.id: p for p in Plan.objects.filter(id__in=[h.plan.id for h in hits])}
    for hit in hits:
        row = stored[hit.plan.id]
        # Every field as the ORM would load it, timestamps included (SQLite returns text).
        for field in Plan._meta.concrete_fields:
            assert getattr(hit.plan, field.attname) == getattr(row, field.attname), field.name
        assert hit.plan.completed_at.tzinfo is not None


# --- migration 0006 -----------------------------------------------------------------------


def _migrate(target):
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes() if target is None else [("sessions_app", target)])


def stored_words(plan_id: str) -> set[str]:
    """The words the index holds for a plan, as the engine stored them."""
    with connection.cursor() as cur:
        if connection.vendor == "sqlite":
            cur.execute(f"SELECT rowid FROM {FTS_TABLE} WHERE plan_id = %s", [plan_id])
            (rowid,) = cur.fetchone()
            cur.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_words USING fts5vocab(main, {FTS_TABLE}, 'instance')"
            )
            cur.execute("SELECT term FROM temp.fts_words WHERE doc = %s", [rowid])
            return {row[0] for row in cur.fetchall()}
        cur.execute(f"SELECT {search.PG_VECTOR_COLUMN}::text FROM sessions_app_plan WHERE id = %s", [plan_id])
        return {lexeme.split("'")[1] for lexeme in cur.fetchone()[0].split(" ") if "'" in lexeme}


@on_both_sqlite_paths
@pytest.mark.django_db(transaction=True)
def test_migration_0006_rebuilds_the_index_for_word_forms_and_back():
    session = services.session_create()
    plans = []
    for goal in ["Model invoices", "Cached rendering"]:
        services.plan_enqueue(session_name=session.name, goal=goal, context="c", approach="a", success_criteria="s")
        services.plan_pull(session_name=session.name)
        plans.append(services.plan_complete(session_name=session.name, outcome="done").plan.id)
    _migrate("0005_sort_key")
    try:
        # Before 0006 words are stored as spelled.
        assert "invoices" in stored_words(plans[0]) and "invoic" not in stored_words(plans[0])
        if connection.vendor == "sqlite":
            # What runs after every migrate must leave the old index alone, not give it
            # triggers for columns it lacks.
            search.ensure_index()
            assert search.sqlite_triggers_present() == sorted(SQLITE_TRIGGERS)
            # A plan completed on the old schema (the services need the later migrations'
            # columns, so it is written as the services of that time wrote it).
            now = connection.ops.adapt_datetimefield_value(timezone.now())
            with connection.cursor() as cur:
                cur.execute(
                    "INSERT INTO sessions_app_plan (id, session_name, status, sort_key, context, goal, inputs, "
                    "outputs, approach, success_criteria, notes, outcome, discard_reason, version, created_at, "
                    "updated_at, completed_at, discarded_at) VALUES (%s, %s, 'completed', NULL, 'c', 'Old shapes', "
                    "'', '', 'a', 's', '', 'done', '', 1, %s, %s, %s, NULL)",
                    ["oldsh", session.name, now, now, now],
                )
            plans.append("oldsh")
            assert "shapes" in stored_words(plans[2])
    finally:
        _migrate(None)
    # The plans completed before, and the one completed on the old index, are all found
    # by their word forms.
    assert "invoic" in stored_words(plans[0]) and "invoices" not in stored_words(plans[0])
    assert set(found("invoice caching", session)) == set(plans[:2])
    if connection.vendor == "sqlite":
        assert found("old shape", session) == [plans[2]]
        assert search.sqlite_triggers_present() == sorted(SQLITE_TRIGGERS)
        assert search.indexed_count(session.name) == 3


@on_both_sqlite_paths
def test_migration_0006_folds_the_accents_fts5_folds():
    import importlib

    migration = importlib.import_module("sessions_app.migrations.0006_search_word_forms")
    assert dict(zip(migration.ACCENTED, migration.UNACCENTED, strict=True)) == search.ACCENTS
    assert search.fold("Crème Brûlée, Ångström, Łódź") == "Creme Brulee, Angstrom, Łodz"


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_a_small_session_is_searched_in_an_index_of_its_own(session, corpus, complete_plan, monkeypatch):
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setattr(search_sqlite, "SMALL_SESSION", 64)
    other = services.session_create()
    complete_plan(other, goal="SQLite elsewhere", outcome="sqlite sqlite sqlite")
    with CaptureQueriesContext(connection) as captured:
        hits = queries.history_search("sqlite", session_name=session.name)
    assert {h.plan.id for h in hits} == {corpus["dense"], corpus["sparse"]}
    sqls = [q["sql"] for q in captured.captured_queries]
    # The shared index is never searched: its cost grows with every other session's plans.
    assert not [sql for sql in sqls if f"{FTS_TABLE} MATCH" in sql]
    assert search.SCOPE_TABLE in sqls[-1]

    # Past SMALL_SESSION completed plans, the shared index is searched, with the same hits.
    monkeypatch.setattr(search_sqlite, "SMALL_SESSION", 1)
    assert [h.plan.id for h in in_the_shared_index("sqlite", session)] == [h.plan.id for h in hits]


def in_the_shared_index(query: str, session) -> list:
    """The session's hits for ``query``, found in the shared index and not in a small
    session's own."""
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        hits = queries.history_search(query, session_name=session.name)
    assert FTS_TABLE in captured.captured_queries[-1]["sql"]
    assert not [q for q in captured.captured_queries if search.SCOPE_TABLE in q["sql"]]
    return hits


@pytest.mark.django_db
@sqlite_only
def test_a_large_session_matches_on_its_key_only_while_it_holds_a_small_share_of_the_index(
    session, corpus, complete_plan, monkeypatch
):
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setattr(search_sqlite, "SMALL_SESSION", 1)  # every session searched in the shared index

    def match_text(target) -> str:
        with CaptureQueriesContext(connection) as captured:
            hits = queries.history_search("sqlite", session_name=target.name)
        matches = [q["sql"] for q in captured.captured_queries if f"{FTS_TABLE} MATCH" in q["sql"]]
        assert len(matches) == 1 and "CASE" not in matches[0]  # the way was decided before the search
        return matches[0], {h.plan.id for h in hits}

    # The session holds the whole index: its rows are kept by name, not through its key.
    sql, hits = match_text(session)
    assert "session_key" not in sql and hits == {corpus["dense"], corpus["sparse"]}

    # Beside a session holding most of the index, it matches on its key, with the same hits.
    other = services.session_create()
    for i in range(4 * len(corpus)):
        complete_plan(other, goal=f"Elsewhere {i}", outcome="sqlite elsewhere")
    sql, hits = match_text(session)
    assert "session_key" in sql and hits == {corpus["dense"], corpus["sparse"]}
    sql, theirs = match_text(other)
    assert "session_key" not in sql and len(theirs) == 5 and not theirs & hits

    # A session that does not exist is searched by name, and finds nothing.
    with pytest.raises(SessionNotFound):
        queries.history_search("sqlite", session_name="no-such-session")


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_a_session_with_much_text_is_searched_in_the_shared_index(session, corpus, complete_plan, monkeypatch):
    monkeypatch.setattr(search_sqlite, "SMALL_SESSION", 64)
    monkeypatch.setattr(search_sqlite, "SMALL_SESSION_CHARS", 100)
    hits = in_the_shared_index("sqlite", session)
    assert {h.plan.id for h in hits} == {corpus["dense"], corpus["sparse"]}


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_a_small_sessions_index_follows_every_change_between_searches(session, corpus, complete_plan, monkeypatch):
    """The index of a small session is kept between searches and brought up to date by
    each: a plan completed since, a completed plan's text changed in place (as a raw
    write would, without the services), a plan no longer completed, a search in another
    session in between, and changes a rolled-back transaction took back."""
    from django.db import transaction

    monkeypatch.setattr(search_sqlite, "SMALL_SESSION", 64)
    assert found("sqlite", session) == [corpus["dense"], corpus["sparse"]]
    newer = complete_plan(session, goal="sqlite sqlite sqlite", context="sqlite")
    assert found("sqlite", session)[0] == newer.id
    Plan.objects.filter(id=corpus["dense"]).update(goal="Tune postgres", context="pragmas", outcome="faster")
    assert found("sqlite", session) == [newer.id, corpus["sparse"]]
    assert found("postgres", session) == [corpus["dense"]]
    Plan.objects.filter(id=newer.id).update(status=Plan.Status.DISCARDED)
    assert found("sqlite", session) == [corpus["sparse"]]

    other = services.session_create()
    elsewhere = complete_plan(other, goal="sqlite in another session")
    assert found("sqlite", other) == [elsewhere.id]
    assert found("sqlite", session) == [corpus["sparse"]]

    with transaction.atomic():
        Plan.objects.filter(id=corpus["unrelated"]).update(goal="sqlite fence")
        assert found("sqlite", session) == [corpus["unrelated"], corpus["sparse"]]
        transaction.set_rollback(True)
    assert found("sqlite", session) == [corpus["sparse"]]
    assert found("fence", session) == [corpus["unrelated"]]
