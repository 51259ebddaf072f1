"""The same known answers on SQLite (FTS5) and PostgreSQL (tsvector + GIN), and what each
engine's own index promises."""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app import search, services
from sessions_app.models import Plan
from sessions_app.reads import queries
from sessions_app.search import postgres as search_postgres
from sessions_app.search import sqlite as search_sqlite
from tests.conftest import plan_fields
from tests.sessions_app.search.helpers import found, sqlite_only

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
