"""History search over completed plans (sessions_app/search/, queries.history_search): the
ranking, the index and its migrations, and the same known answers on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app import search, services
from sessions_app.errors import SessionNotFound
from sessions_app.models import Plan
from sessions_app.reads import queries
from sessions_app.search import FTS_TABLE, SQLITE_TRIGGERS
from sessions_app.search import postgres as search_postgres
from sessions_app.search import sqlite as search_sqlite
from tests.conftest import plan_fields

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="FTS5 is the SQLite backend")
# Each test down to the section on the two databases runs on both SQLite paths: a small
# session's own temporary index, and the shared one.
on_both_sqlite_paths = pytest.mark.usefixtures("search_path")

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


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_better_matches_rank_first(session, corpus):
    assert found("sqlite", session) == [corpus["dense"], corpus["sparse"]]


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_the_order_is_fts5_bm25(session, corpus):
    with connection.cursor() as cur:
        cur.execute(f"SELECT plan_id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH 'sqlite' ORDER BY bm25({FTS_TABLE})")
        by_hand = [row[0] for row in cur.fetchall()]
    hits = queries.history_search("sqlite", session_name=session.name)

    assert [h.plan.id for h in hits] == by_hand
    assert [h.rank for h in hits] == [1, 2]
    assert [h.every_word for h in hits] == [True, True]


@on_both_sqlite_paths
@pytest.mark.django_db
def test_plans_matching_every_word_rank_before_partial_matches(session, corpus):
    hits = found("invoice rounding", session)
    assert hits == [corpus["both"], corpus["one"]]


@on_both_sqlite_paths
@pytest.mark.django_db
def test_words_that_never_appear_together_still_find_partial_matches(session, corpus):
    hits = found("sqlite fence unicorn", session)
    assert set(hits) == {corpus["dense"], corpus["sparse"], corpus["unrelated"]}


@on_both_sqlite_paths
@pytest.mark.django_db
def test_the_last_word_is_a_prefix(session, corpus):
    assert found("configura", session) == [corpus["configuration"]]
    assert found("load configura", session) == [corpus["configuration"]]


@on_both_sqlite_paths
@pytest.mark.django_db
@sqlite_only
def test_only_the_last_word_is_a_prefix(session, corpus):
    assert found("configura unicorn", session) == []
    assert found("unicorn configura", session) == [corpus["configuration"]]


@on_both_sqlite_paths
@pytest.mark.django_db
def test_it_searches_the_outcome_and_is_case_insensitive(session, corpus):
    assert found("PAINTED", session) == [corpus["unrelated"]]


@on_both_sqlite_paths
@pytest.mark.django_db
def test_max_results_caps_the_list(session, corpus):
    assert found("invoice rounding", session, max_results=1) == [corpus["both"]]
    assert len(found("sqlite invoice fence", session, max_results=3)) == 3


@on_both_sqlite_paths
@pytest.mark.django_db
@pytest.mark.parametrize("bad", [0, 51, -1, True, "5", 2.5])
def test_max_results_out_of_range_is_rejected(session, complete_plan, rejects, bad):
    complete_plan(session, goal="sqlite")
    with rejects("VALIDATION_ERROR", field="max_results"):
        queries.history_search("sqlite", session_name=session.name, max_results=bad)


@on_both_sqlite_paths
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


@on_both_sqlite_paths
@pytest.mark.django_db
def test_search_stays_inside_the_session_unless_told_otherwise(session, complete_plan):
    other = services.session_create()
    mine = complete_plan(session, goal="Migrate the ledger")
    theirs = complete_plan(other, goal="Migrate the ledger too")

    assert found("ledger", session) == [mine.id]
    assert found("ledger", other) == [theirs.id]
    everywhere = [h.plan.id for h in queries.history_search("ledger", session_name=None)]
    assert sorted(everywhere) == sorted([mine.id, theirs.id])


@on_both_sqlite_paths
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


@on_both_sqlite_paths
@pytest.mark.django_db
def test_hostile_queries_return_a_list_and_never_another_error(session, corpus):
    # One corpus for every query: building it is the slow part.
    for query in HOSTILE:
        hits = queries.history_search(query, session_name=session.name)
        assert isinstance(hits, list), query
        assert {h.plan.id for h in hits} <= set(corpus.values()), query
    assert Plan.objects.filter(session=session, status="completed").count() == len(corpus)
    assert found("sqlite", session)


@on_both_sqlite_paths
@pytest.mark.django_db
def test_operators_are_read_as_words(session, corpus):
    for query in ["goal:sqlite", "sqlite*", "NOT sqlite", "{goal context}: sqlite", "^sqlite", '"sqlite']:
        assert corpus["dense"] in found(query, session), query


@on_both_sqlite_paths
@pytest.mark.django_db
@pytest.mark.parametrize("query", ["", " ", "\u00a0\u3000", None, 5])
def test_an_empty_or_non_text_query_is_a_validation_error(session, complete_plan, rejects, query):
    complete_plan(session)
    with rejects("VALIDATION_ERROR", field="query"):
        queries.history_search(query, session_name=session.name)


@on_both_sqlite_paths
@pytest.mark.django_db
def test_an_oversized_query_is_a_validation_error(session, settings, rejects):
    settings.NINEPLAN_MAX_QUERY_CHARS = 10
    with rejects("VALIDATION_ERROR", field="query", match="at most 10"):
        queries.history_search("x" * 11, session_name=session.name)


@on_both_sqlite_paths
def test_words_splits_user_text_and_drops_operators():
    assert search.words('"Foo AND  bar*" -baz (qux) col:val') == ["foo", "and", "bar", "baz", "qux", "col", "val"]
    assert search.words("* 🎉 ( -") == []


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


# --- the same answers on SQLite (FTS5) and PostgreSQL (tsvector + GIN) ---------------------
#
# History search behaves the same on SQLite (FTS5) and PostgreSQL (tsvector + GIN).
#
# The suite runs once per database (CI runs it on both), so every test here without a vendor
# mark checks the same known answers on both backends. The `postgres` tests also compare
# PostgreSQL's answers with FTS5's, computed side by side in an in-memory SQLite database.


on_postgres = pytest.mark.postgres

# The plans the tests search, by (corpus, key): the "basics" hold code names, numbers, accents
# and emoji; the "forms" hold words agents search for in another form (plural for singular,
# -ing, -ed, -ion, accents left off, a word typed in part).
PLANS = {
    ("basics", "invoices"): dict(
        goal="Model invoices in Django",
        context="Porting the billing service",
        outputs="billing/models.py",
        outcome="Added Invoice and LineItem models in billing/models.py; migration 0003.",
    ),
    ("basics", "pooling"): dict(
        goal="Configure PostgreSQL connection pooling",
        context="Deployment on the team server",
        outcome="PgBouncer in transaction mode; DATABASE_URL points at it.",
    ),
    ("basics", "api"): dict(
        goal="Write the REST API for invoices",
        context="Integrations read invoices over HTTP",
        outcome="DRF viewsets under /api/invoices/ with pagination by cursor.",
    ),
    ("basics", "cpp"): dict(
        goal="Fix the C++ build of the renderer",
        context="Linker errors on CI",
        outcome="It's linked with -lstdc++ now; cmake 3.28.",
    ),
    ("basics", "cafe"): dict(
        goal="Café menu translation",
        context="A naïve first pass",
        outcome="Translated the menu into French: crème brûlée.",
    ),
    ("basics", "lint"): dict(
        goal="Set up snake_case linting",
        context="Style rules for the codebase",
        outcome="ruff rule N815 flags mixedCase; plan_enqueue renamed.",
    ),
    ("basics", "emoji"): dict(
        goal="Emoji handling 😀 in notes",
        context="Agents write emoji",
        outcome="Stored as UTF-8; emoji ✅ survive the round trip.",
    ),
    ("forms", "invoices"): dict(
        goal="Model invoices and their line items",
        context="Billing keeps invoices per customer",
        outcome="Cached the invoice totals; rendering reads the cache.",
    ),
    ("forms", "config"): dict(
        goal="Configure the connection pool",
        context="Settings come from the environment",
        outcome="The configuration is validated at startup.",
    ),
    ("forms", "migrate"): dict(
        goal="Migrations for the ledger",
        context="Moving balances between accounts",
        outcome="Migrated 12 tables; the ledger is consistent.",
    ),
    ("forms", "cafe"): dict(
        goal="Café menu translated",
        context="Crème brûlée and naïve descriptions",
        outcome="Menus translated into English.",
    ),
    ("forms", "configs"): dict(
        goal="Tidy the config files",
        context="Old files in etc",
        outcome="Removed three of them.",
    ),
}

# corpus -> query -> the expected results in tiers: every id of a tier comes before the next
# tier, in any order inside it (the two engines weigh columns differently, so only orders that
# any sensible ranking agrees on are fixed).
KNOWN = {
    "basics": [
        ("billing models", [{"invoices"}]),
        ("invoice", [{"invoices", "api"}]),
        ("INVOICE pagination cursor", [{"api"}, {"invoices"}]),
        ("models billing pagination", [{"invoices"}, {"api"}]),
        ("postgres", [{"pooling"}]),
        ("pgbouncer TRANSACTION", [{"pooling"}]),
        ("billing/models.py", [{"invoices"}]),
        ("models.py", [{"invoices"}]),
        ("0003", [{"invoices"}]),
        ("3.28", [{"cpp"}]),
        ("lstdc", [{"cpp"}]),
        ("crème brûlée", [{"cafe"}]),
        ("naïve", [{"cafe"}]),
        ("snake_case", [{"lint"}]),
        ("plan_enqueue", [{"lint"}]),
        ("n815", [{"lint"}]),
        ("emoji 😀", [{"emoji"}]),
        ("utf 8", [{"emoji"}]),
        ("zebra", []),
        ("zebra invoice", [{"invoices", "api"}]),
        ("unicorn configu", [{"pooling"}]),
        ("configu unicorn", []),
    ],
    # Every query names what a plan holds in another form.
    "forms": [
        # The README's example: "invoice" for "invoices", "cache" for "Cached"/"cache".
        ("invoice cache", [{"invoices"}]),
        ("invoice caching", [{"invoices"}]),
        ("invoices cached", [{"invoices"}]),
        ("invoicing", [{"invoices"}]),
        ("customers", [{"invoices"}]),
        ("configuring pools", [{"config"}]),
        ("configured", [{"config"}]),
        ("validation", [{"config"}]),
        ("migrating ledgers", [{"migrate"}]),
        ("migration", [{"migrate"}]),
        ("translating menus", [{"cafe"}]),
        ("cafe", [{"cafe"}]),
        ("creme brulee", [{"cafe"}]),
        ("naive", [{"cafe"}]),
        # The last word typed in part, past its stem: "configura" is stored as "configur".
        ("configura", [{"config"}]),
        ("connection configurat", [{"config"}]),
        ("confi", [{"config", "configs"}]),
        # A word no plan holds beside one they have: the plans with the one still come.
        ("invoice unicorns", [{"invoices"}]),
        ("zebras caching", [{"invoices"}]),
        # Plans holding every word first, then those holding some.
        ("ledger invoices", [{"invoices", "migrate"}]),
        ("migrated ledger balances invoice", [{"migrate"}, {"invoices"}]),
        ("invoice caches pools", [{"invoices"}, {"config"}]),
    ],
}
KNOWN_CASES = [(corpus, query, expected) for corpus, cases in KNOWN.items() for query, expected in cases]

HOSTILE = [
    '"foo',
    "foo AND",
    "NEAR(",
    "NEAR(invoice models, 2)",
    "*",
    "col:x",
    "goal:invoice",
    "-x",
    "-invoice",
    "(",
    ")",
    "it's",
    "c++",
    "😀",
    "🎉 ✅",
    "'; DROP TABLE sessions_app_plan; --",
    "invoice') OR 1=1 --",
    "invoice & models | !x <-> y:*",
    "invoice:* & !",
    "'invoice'",
    "NOT invoice",
    "invoice OR",
    "^invoice",
    "{goal context}: invoice",
    '""',
    "\\",
    "%_",
    "___",
    "_ invoice _",
    "a" * 1000,
]


def plans_of(corpus: str) -> dict[str, dict]:
    return {key: fields for (of, key), fields in PLANS.items() if of == corpus}


def plant(complete_plan, session, corpus: str) -> dict[str, str]:
    """Completes the plans of a corpus in ``session``: their ids by key."""
    return {key: complete_plan(session, **fields).id for key, fields in plans_of(corpus).items()}


@pytest.fixture
def basics(session, complete_plan, make_plan):
    """The completed plans of the basics, plus plans search must never return: a discarded
    and a queued one in the session, and a completed one in another session."""
    ids = plant(complete_plan, session, "basics")
    make_plan(session, goal="zebra discarded")
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="zebra")
    make_plan(session, goal="zebra queued")
    complete_plan(services.session_create(), goal="zebra elsewhere invoices")
    return ids


@pytest.fixture
def forms(session, complete_plan):
    return plant(complete_plan, session, "forms")


def tiers_of(hits: list[str], expected: list[set[str]], ids: dict[str, str]) -> list[set[str]]:
    """Cut ``hits`` into groups as long as the expected tiers, named by corpus key."""
    names = {plan_id: key for key, plan_id in ids.items()}
    got, start = [], 0
    for tier in expected:
        got.append({names.get(plan_id, plan_id) for plan_id in hits[start : start + len(tier)]})
        start += len(tier)
    return got


def assert_found_in_tiers(query: str, session, expected: list[set[str]], ids: dict[str, str]) -> None:
    hits = found(query, session, max_results=10)
    assert len(hits) == sum(len(t) for t in expected), (query, hits)
    assert tiers_of(hits, expected, ids) == expected, query


@pytest.mark.django_db
@pytest.mark.usefixtures("search_path")
@pytest.mark.parametrize("corpus,query,expected", KNOWN_CASES, ids=[f"{c}-{q}" for c, q, _ in KNOWN_CASES])
def test_known_answers(request, session, corpus, query, expected):
    assert_found_in_tiers(query, session, expected, request.getfixturevalue(corpus))


@pytest.mark.django_db
@pytest.mark.usefixtures("search_path")
def test_hostile_queries_return_plans_of_the_session_and_change_nothing(session, basics):
    before = list(Plan.objects.order_by("id").values_list("id", "status", "goal", "outcome"))
    for query in HOSTILE:
        hits = queries.history_search(query, session_name=session.name, max_results=10)
        assert {h.plan.id for h in hits} <= set(basics.values()), query
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1)), query
    assert list(Plan.objects.order_by("id").values_list("id", "status", "goal", "outcome")) == before
    # The operators are read as words: "goal:invoice" finds what "goal invoice" finds.
    assert set(found("goal:invoice", session, max_results=10)) == {basics["invoices"], basics["api"]}
    assert set(found("-invoice", session, max_results=10)) == {basics["invoices"], basics["api"]}
    assert basics["cpp"] in found("it's", session, max_results=10)


@pytest.mark.django_db
def test_search_without_a_session_searches_every_session(session, basics):
    everywhere = [h.plan.id for h in queries.history_search("zebra", session_name=None)]
    assert len(everywhere) == 1
    assert Plan.objects.get(id=everywhere[0]).session_id != session.name


@pytest.mark.django_db
@pytest.mark.usefixtures("search_path")
def test_a_hit_says_whether_it_holds_every_word(session, basics):
    hits = search.search("invoice pagination cursor", session_name=session.name, limit=10)
    assert [h.plan_id for h in hits] == [basics["api"], basics["invoices"]]
    # "api" holds every word, "invoices" only one.
    assert [(h.rank, h.every_word) for h in hits] == [(1, True), (2, False)]


def test_words_drop_runs_of_underscores_but_keep_snake_case():
    assert search.words("___ _ snake_case _x_ 😀") == ["snake_case", "_x_"]


# --- per vendor --------------------------------------------------------------------------


@pytest.mark.django_db
@sqlite_only
def test_migration_0003_leaves_sqlite_alone():
    with connection.cursor() as cur:
        cur.execute("SELECT name FROM pragma_table_info('sessions_app_plan')")
        columns = {row[0] for row in cur.fetchall()}
    assert "goal" in columns
    assert search.PG_VECTOR_COLUMN not in columns


@pytest.mark.django_db
@on_postgres
def test_the_vector_column_and_its_partial_gin_index_exist():
    with connection.cursor() as cur:
        cur.execute(
            "SELECT data_type, is_generated FROM information_schema.columns "
            "WHERE table_name = 'sessions_app_plan' AND column_name = %s",
            [search.PG_VECTOR_COLUMN],
        )
        assert cur.fetchall() == [("tsvector", "ALWAYS")]
        cur.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [search.PG_INDEX])
        (indexdef,) = cur.fetchone()
    assert "USING gin (search_vector)" in indexdef
    assert "WHERE ((status)::text = 'completed'::text)" in indexdef
    assert search.PG_VECTOR_COLUMN not in {f.column for f in Plan._meta.get_fields() if hasattr(f, "column")}


@pytest.mark.django_db
@on_postgres
def test_the_search_uses_the_index(session, basics):
    # Enough completed plans that the status index is no help for a rare word.
    now = timezone.now()
    Plan.objects.bulk_create(
        Plan(id=f"f{i:04d}", session=session, status="completed", completed_at=now, goal=f"filler {i}", outcome="x")
        for i in range(3000)
    )
    with connection.cursor() as cur:
        cur.execute("ANALYZE sessions_app_plan")
        # Tiny rows make a sequential scan cheap at any size a test can afford; with it
        # off the planner still has the status index to choose, and must prefer GIN.
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute(
            f"EXPLAIN SELECT id FROM sessions_app_plan WHERE status = 'completed' "
            f"AND {search.PG_VECTOR_COLUMN} @@ to_tsquery('{search.PG_CONFIG}', %s)",
            [search_postgres._ts_query(["pgbouncer"], "&")],
        )
        plan = "\n".join(row[0] for row in cur.fetchall())
    assert search.PG_INDEX in plan, plan
    assert found("pgbouncer", session, max_results=10) == [basics["pooling"]]


@pytest.mark.django_db
@on_postgres
def test_a_small_sessions_search_beside_a_large_one_is_planned_for_its_session(session, basics):
    # A large session searched again and again, as agents do: a statement prepared from its
    # searches would keep one plan for every session, the word index's, which reads all of
    # the large session's matches to keep the small session's few.
    now = timezone.now()
    large = services.session_create(task_description="Large")
    Plan.objects.bulk_create(
        Plan(id=f"g{i:04d}", session=large, status="completed", completed_at=now, goal=f"pgbouncer {i}", outcome="x")
        for i in range(3000)
    )
    with connection.cursor() as cur:
        cur.execute("ANALYZE sessions_app_plan")
    for _ in range(12):
        assert len(found("pgbouncer", large, max_results=5)) == 5
    assert found("pgbouncer", session, max_results=10) == [basics["pooling"]]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s", ["%ts_rank%"]
        )
        plans = cur.fetchall()
    # The connection prepared the search, as it prepares every statement it runs often, and
    # planned it for each search's own parameters all the same: never the one generic plan.
    assert plans and all(generic == 0 and custom > 0 for generic, custom in plans), plans


@pytest.mark.django_db
@on_postgres
def test_the_vector_weighs_goal_a_outcome_b_context_c(session, complete_plan):
    plan = complete_plan(session, goal="alpha", outputs="beta", outcome="gamma", context="delta", inputs="epsilon")
    with connection.cursor() as cur:
        cur.execute(f"SELECT {search.PG_VECTOR_COLUMN}::text FROM sessions_app_plan WHERE id = %s", [plan.id])
        (vector,) = cur.fetchone()
    for lexeme, weight in [("alpha", "A"), ("beta", "B"), ("gamma", "B"), ("delta", "C"), ("epsilon", "C")]:
        assert f"'{lexeme}':" in vector and weight in vector.split(f"'{lexeme}':")[1].split(" ")[0], vector


def fts5_oracle(rows: dict[str, dict]) -> sqlite3.Connection:
    """An in-memory FTS5 table like the SQLite backend's, holding ``rows``."""
    db = sqlite3.connect(":memory:")
    db.execute(search.SQLITE_SCHEMA[0])
    for plan_id, fields in rows.items():
        full = {**plan_fields(**fields), **fields}
        db.execute(
            f"INSERT INTO {search.FTS_TABLE}(plan_id, session_name, goal, context, inputs, outputs, outcome) "
            "VALUES (?, 's', ?, ?, ?, ?, ?)",
            [plan_id, full["goal"], full["context"], full.get("inputs", ""), full.get("outputs", ""), full["outcome"]],
        )
    return db


def fts5_answer(db: sqlite3.Connection, query: str) -> tuple[set[str], set[str]]:
    """What the SQLite backend finds: the plans matching every word, and those matching
    only some."""
    terms = search.terms(query)
    if not terms:
        return set(), set()
    tiers = []
    for joiner in ["AND", "OR"]:
        rows = db.execute(
            f"SELECT plan_id FROM {search.FTS_TABLE} WHERE {search.FTS_TABLE} MATCH ?",
            [search_sqlite._fts_query(terms, joiner)],
        ).fetchall()
        tiers.append({r[0] for r in rows})
    return tiers[0], tiers[1] - tiers[0]


# Beside the known answers, queries whose answers only the two engines' agreement fixes.
UNFIXED = {"basics": HOSTILE, "forms": ["configurations", "translations menu", "consistently"]}


@pytest.mark.django_db
@on_postgres
@pytest.mark.parametrize("corpus", KNOWN)
def test_postgres_answers_like_fts5(request, session, corpus):
    ids = request.getfixturevalue(corpus)
    oracle = fts5_oracle({plan_id: plans_of(corpus)[key] for key, plan_id in ids.items()})
    for query in [q for q, _ in KNOWN[corpus]] + UNFIXED[corpus]:
        every_word, some_words = fts5_answer(oracle, query)
        got = found(query, session, max_results=50)
        assert set(got[: len(every_word)]) == every_word, query
        assert set(got[len(every_word) :]) == some_words, query


# --- word forms ----------------------------------------------------------------------------


def crowd(complete_plan, copies: int = 5) -> None:
    """Another session holding many times the forms plans: a search in the small session
    then matches on its key inside the index (sessions holding a good share don't)."""
    other = services.session_create()
    for _ in range(copies):
        for fields in plans_of("forms").values():
            complete_plan(other, **fields)


@pytest.mark.django_db
@pytest.mark.usefixtures("search_path")
def test_word_forms_are_found_the_same_beside_a_bigger_session(session, forms, complete_plan):
    crowd(complete_plan)
    for query, expected in KNOWN["forms"]:
        assert_found_in_tiers(query, session, expected, forms)


@pytest.mark.django_db
@pytest.mark.usefixtures("search_path")
def test_a_word_typed_in_part_is_a_prefix_but_whole_words_are_not(session, forms):
    # Only the last word is a prefix: "configura" in the middle is a word of its own.
    assert found("configura zebra", session, max_results=10) == []
    # "configura" finds "configuration" and "configure", never "config": nothing it
    # could be the start of is stored as "config".
    assert found("configura", session, max_results=10) == [forms["config"]]
    assert set(found("config", session, max_results=10)) == {forms["config"], forms["configs"]}


@pytest.mark.django_db
@pytest.mark.usefixtures("search_path")
def test_plans_holding_every_word_rank_before_the_others(session, forms):
    hits = queries.history_search("migrated ledger balances invoice caches", session_name=session.name, max_results=10)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert hits[0].plan.id == forms["migrate"] and not any(h.every_word for h in hits)  # no plan holds every word
    every = queries.history_search("ledger", session_name=session.name)
    assert every and all(h.every_word for h in every)


@pytest.mark.django_db
def test_repeated_words_count_once(session, forms):
    once = queries.history_search("ledger invoices", session_name=session.name)
    many = queries.history_search("ledger " * 70 + "invoices " * 50 + "ledger invoices", session_name=session.name)
    assert [(h.plan.id, h.every_word) for h in many] == [(h.plan.id, h.every_word) for h in once]


def test_terms_are_distinct_capped_and_end_with_the_last_word_typed():
    assert search.terms("a b a c b a") == ["b", "c", "a"]
    assert search.terms("x " * 500) == ["x"]
    many = search.terms(" ".join(f"w{i}" for i in range(40)) + " last")
    assert len(many) == search.MAX_TERMS and many[-1] == "last" and many[:3] == ["w0", "w1", "w2"]


@pytest.mark.django_db
def test_words_past_the_cap_are_ignored(session, forms):
    filler = " ".join(f"zz{i}" for i in range(search.MAX_TERMS))
    # The ledger is the 17th word: not looked for; "invoice" is the last word and always is.
    assert found(f"{filler} ledger invoice", session, max_results=10) == [forms["invoices"]]


@pytest.mark.django_db
def test_sessions_whose_names_stem_alike_stay_apart(complete_plan, monkeypatch):
    crowd(complete_plan, copies=2)
    # Stemmed, both names are one word: the search must still keep them apart.
    names = iter(["quiet-grey-heron", "quiet-grey-herons"])
    monkeypatch.setattr(services.sessions, "new_session_name", lambda: next(names))
    heron, herons = services.session_create(), services.session_create()
    mine = complete_plan(heron, goal="Ledger migration")
    theirs = complete_plan(herons, goal="Ledger migration")
    assert found("ledger", heron, max_results=10) == [mine.id]
    assert found("ledger", herons, max_results=10) == [theirs.id]
    # The words of a session's name are not words of its plans, whole or in part.
    for query in ["quiet", "heron", "qui", "quiet0grey0heron", "0"]:
        assert found(query, heron, max_results=10) == [] and queries.history_search(query, session_name=None) == [], (
            query
        )
    herons.delete()
    assert found("ledger", heron, max_results=10) == [mine.id]
    if connection.vendor == "sqlite":
        assert search.indexed_count(heron.name) == 1 and search.indexed_count() == 1 + 2 * len(plans_of("forms"))
