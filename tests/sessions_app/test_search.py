"""History search over completed plans (sessions_app/search.py, queries.history_search)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app import queries, search, services
from sessions_app.models import Plan
from sessions_app.search import FTS_TABLE, SQLITE_TRIGGERS

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="FTS5 is the SQLite backend")
pytestmark = pytest.mark.usefixtures("search_path")

FILLER = " ".join(f"word{i}" for i in range(60))


def found(query, session, **kwargs) -> list[str]:
    return [h.plan.id for h in queries.history_search(query, session_name=session.name, **kwargs)]


@pytest.fixture
def corpus(session, complete_plan):
    """Completed plans whose ranking for a few queries is known in advance."""
    plans = {
        # "sqlite" three times in a short plan: the best single-word match.
        "dense": complete_plan(session, goal="Tune sqlite", context="sqlite pragmas", outcome="sqlite is faster"),
        # "sqlite" once, drowned in filler: a weaker match.
        "sparse": complete_plan(session, goal="Write the docs", context=f"mentions sqlite once {FILLER}"),
        # Both "invoice" and "rounding", once each, in a long plan.
        "both": complete_plan(session, goal="Fix invoice rounding", context=FILLER, outcome=FILLER),
        # "invoice" many times in a short plan, but never "rounding".
        "one": complete_plan(session, goal="invoice invoice invoice", context="invoice invoice"),
        "configuration": complete_plan(session, goal="Load the configuration from the environment"),
        "unrelated": complete_plan(session, goal="Paint the fence", outcome="Painted green"),
    }
    return {k: p.id for k, p in plans.items()}


@pytest.mark.django_db
@sqlite_only
def test_better_matches_rank_first(session, corpus):
    assert found("sqlite", session) == [corpus["dense"], corpus["sparse"]]


@pytest.mark.django_db
@sqlite_only
def test_the_order_is_fts5_bm25(session, corpus):
    with connection.cursor() as cur:
        cur.execute(f"SELECT plan_id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH 'sqlite' ORDER BY bm25({FTS_TABLE})")
        by_hand = [row[0] for row in cur.fetchall()]
    hits = queries.history_search("sqlite", session_name=session.name)

    assert [h.plan.id for h in hits] == by_hand
    assert [h.rank for h in hits] == [1, 2]
    assert 1 > hits[0].relevance > hits[1].relevance >= 0.5  # every word matched: the upper half


@pytest.mark.django_db
def test_plans_matching_every_word_rank_before_partial_matches(session, corpus):
    hits = found("invoice rounding", session)
    assert hits == [corpus["both"], corpus["one"]]


@pytest.mark.django_db
def test_words_that_never_appear_together_still_find_partial_matches(session, corpus):
    hits = found("sqlite fence unicorn", session)
    assert set(hits) == {corpus["dense"], corpus["sparse"], corpus["unrelated"]}


@pytest.mark.django_db
def test_the_last_word_is_a_prefix(session, corpus):
    assert found("configura", session) == [corpus["configuration"]]
    assert found("load configura", session) == [corpus["configuration"]]


@pytest.mark.django_db
@sqlite_only
def test_only_the_last_word_is_a_prefix(session, corpus):
    assert found("configura unicorn", session) == []
    assert found("unicorn configura", session) == [corpus["configuration"]]


@pytest.mark.django_db
def test_it_searches_the_outcome_and_is_case_insensitive(session, corpus):
    assert found("PAINTED", session) == [corpus["unrelated"]]


@pytest.mark.django_db
def test_max_results_caps_the_list(session, corpus):
    assert found("invoice rounding", session, max_results=1) == [corpus["both"]]
    assert len(found("sqlite invoice fence", session, max_results=3)) == 3


@pytest.mark.django_db
@pytest.mark.parametrize("bad", [0, 51, -1, True, "5", 2.5])
def test_max_results_out_of_range_is_rejected(session, complete_plan, rejects, bad):
    complete_plan(session, goal="sqlite")
    with rejects("VALIDATION_ERROR", field="max_results"):
        queries.history_search("sqlite", session_name=session.name, max_results=bad)


@pytest.mark.django_db
def test_queued_active_and_discarded_plans_never_appear(session, make_plan):
    make_plan(session, goal="zebra discarded", outputs="zebra")
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="zebra")
    make_plan(session, goal="zebra queued")
    make_plan(session, goal="zebra active", position="front")
    services.plan_pull(session_name=session.name)

    assert found("zebra", session) == []
    assert queries.history_search("zebra", session_name=None) == []
    statuses = Plan.objects.filter(session=session).values_list("status", flat=True)
    assert sorted(statuses) == ["active", "discarded", "queued"]


@pytest.mark.django_db
def test_search_stays_inside_the_session_unless_told_otherwise(session, complete_plan):
    other = services.session_create()
    mine = complete_plan(session, goal="Migrate the ledger")
    theirs = complete_plan(other, goal="Migrate the ledger too")

    assert found("ledger", session) == [mine.id]
    assert found("ledger", other) == [theirs.id]
    everywhere = [h.plan.id for h in queries.history_search("ledger", session_name=None)]
    assert sorted(everywhere) == sorted([mine.id, theirs.id])


@pytest.mark.django_db
def test_an_unknown_session_gives_session_not_found(rejects):
    with rejects("SESSION_NOT_FOUND"):
        queries.history_search("x", session_name="calm-blue-heron")


HOSTILE = [
    '"foo',
    "foo AND",
    "NEAR(",
    "*",
    "col:x",
    "goal:sqlite",
    "-x",
    "(",
    ")",
    "it's",
    "c++",
    "sqlite*",
    "🎉",
    "sqlite 🎉",
    "'; DROP TABLE x;--",
    "'; DROP TABLE sessions_app_plan;--",
    "NOT sqlite",
    "sqlite OR",
    "^sqlite",
    "{goal context}: sqlite",
    "sqlite AND OR NOT",
    '""',
    "\\",
    "%_",
    "x" * 1000,
]


@pytest.mark.django_db
def test_hostile_queries_return_a_list_and_never_another_error(session, corpus):
    # One corpus for every query: building it is the slow part.
    for query in HOSTILE:
        hits = queries.history_search(query, session_name=session.name)
        assert isinstance(hits, list), query
        assert {h.plan.id for h in hits} <= set(corpus.values()), query
    assert Plan.objects.filter(session=session, status="completed").count() == len(corpus)
    assert found("sqlite", session)


@pytest.mark.django_db
def test_operators_are_read_as_words(session, corpus):
    for query in ["goal:sqlite", "sqlite*", "NOT sqlite", "{goal context}: sqlite", "^sqlite", '"sqlite']:
        assert corpus["dense"] in found(query, session), query


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["", " ", "\u00a0\u3000", None, 5])
def test_an_empty_or_non_text_query_is_a_validation_error(session, complete_plan, rejects, query):
    complete_plan(session)
    with rejects("VALIDATION_ERROR", field="query"):
        queries.history_search(query, session_name=session.name)


@pytest.mark.django_db
def test_an_oversized_query_is_a_validation_error(session, settings, rejects):
    settings.NINEPLAN_MAX_QUERY_CHARS = 10
    with rejects("VALIDATION_ERROR", field="query", match="at most 10"):
        queries.history_search("x" * 11, session_name=session.name)


def test_words_splits_user_text_and_drops_operators():
    assert search.words('"Foo AND  bar*" -baz (qux) col:val') == ["foo", "and", "bar", "baz", "qux", "col", "val"]
    assert search.words("* 🎉 ( -") == []


# --- the index --------------------------------------------------------------------------


@pytest.mark.django_db
@sqlite_only
def test_the_triggers_exist_after_migrations():
    assert search.sqlite_triggers_present() == sorted(SQLITE_TRIGGERS)


def fts_rows(plan_id: str) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(f"SELECT goal, outcome FROM {FTS_TABLE} WHERE plan_id = %s", [plan_id])
        return cur.fetchall()


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


@pytest.mark.django_db
@sqlite_only
def test_deleting_a_session_drops_its_plans_from_the_index(session, complete_plan):
    plan = complete_plan(session)
    session.delete()
    assert fts_rows(plan.id) == []


@pytest.mark.django_db
@sqlite_only
def test_rebuild_refills_the_index_from_completed_plans(session, complete_plan, make_plan):
    done = complete_plan(session, goal="Rebuilt")
    make_plan(session)
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {FTS_TABLE}")

    assert search.rebuild_index() == 1
    assert fts_rows(done.id) == [("Rebuilt", "Done.")]


@pytest.mark.django_db
def test_a_search_returns_whole_plans_in_the_statement_that_matches(session, corpus):
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        hits = queries.history_search("sqlite", session_name=None)
    # One statement: the matches and their plan rows together.
    assert len(captured.captured_queries) == 1
    assert {h.plan.id for h in hits} == {corpus["dense"], corpus["sparse"]}
    # The searched sections come with the hit; the rest loads only if asked for.
    assert hits[0].plan.get_deferred_fields() == {
        "sort_key", "approach", "success_criteria", "notes", "discard_reason", "version", "review", "rejections",
        "created_at", "updated_at", "discarded_at", "claimant", "worker", "claimed_at", "lease_expires_at", "attempts", "reclaims",
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
            cur.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_words USING fts5vocab(main, {FTS_TABLE}, 'instance')")
            cur.execute("SELECT term FROM temp.fts_words WHERE doc = %s", [rowid])
            return {row[0] for row in cur.fetchall()}
        cur.execute(f"SELECT {search.PG_VECTOR_COLUMN}::text FROM sessions_app_plan WHERE id = %s", [plan_id])
        return {lexeme.split("'")[1] for lexeme in cur.fetchone()[0].split(" ") if "'" in lexeme}


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


def test_migration_0006_folds_the_accents_fts5_folds():
    import importlib

    migration = importlib.import_module("sessions_app.migrations.0006_search_word_forms")
    assert dict(zip(migration.ACCENTED, migration.UNACCENTED, strict=True)) == search.ACCENTS
    assert search.fold("Crème Brûlée, Ångström, Łódź") == "Creme Brulee, Angstrom, Łodz"


@pytest.mark.django_db
@sqlite_only
def test_a_small_session_is_searched_in_an_index_of_its_own(session, corpus, complete_plan, monkeypatch):
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setattr(search, "SMALL_SESSION", 64)
    other = services.session_create()
    complete_plan(other, goal="SQLite elsewhere", outcome="sqlite sqlite sqlite")
    with CaptureQueriesContext(connection) as captured:
        hits = queries.history_search("sqlite", session_name=session.name)
    assert {h.plan.id for h in hits} == {corpus["dense"], corpus["sparse"]}
    sqls = [q["sql"] for q in captured.captured_queries]
    # The shared index is never read: its cost grows with every other session's plans.
    assert not [sql for sql in sqls if FTS_TABLE in sql]
    assert search.SCOPE_TABLE in sqls[-1]

    # Past SMALL_SESSION completed plans, the shared index is searched, with the same hits.
    monkeypatch.setattr(search, "SMALL_SESSION", 1)
    with CaptureQueriesContext(connection) as captured:
        shared = queries.history_search("sqlite", session_name=session.name)
    assert [h.plan.id for h in shared] == [h.plan.id for h in hits]
    assert FTS_TABLE in captured.captured_queries[-1]["sql"]
    assert not [q for q in captured.captured_queries if search.SCOPE_TABLE in q["sql"]]


@pytest.mark.django_db
@sqlite_only
def test_a_session_with_much_text_is_searched_in_the_shared_index(session, corpus, complete_plan, monkeypatch):
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setattr(search, "SMALL_SESSION", 64)
    monkeypatch.setattr(search, "SMALL_SESSION_CHARS", 100)
    with CaptureQueriesContext(connection) as captured:
        hits = queries.history_search("sqlite", session_name=session.name)
    assert {h.plan.id for h in hits} == {corpus["dense"], corpus["sparse"]}
    assert FTS_TABLE in captured.captured_queries[-1]["sql"]
    assert not [q for q in captured.captured_queries if search.SCOPE_TABLE in q["sql"]]


@pytest.mark.django_db
@sqlite_only
def test_a_small_sessions_index_follows_every_change_between_searches(session, corpus, complete_plan, monkeypatch):
    """The index of a small session is kept between searches and brought up to date by
    each: a plan completed since, a completed plan's text changed in place (as a raw
    write would, without the services), a plan no longer completed, a search in another
    session in between, and changes a rolled-back transaction took back."""
    from django.db import transaction

    monkeypatch.setattr(search, "SMALL_SESSION", 64)
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
