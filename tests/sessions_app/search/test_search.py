"""History search over completed plans (sessions_app/search/, queries.history_search): the
ranking, the words a query is read as, and what is refused."""

from __future__ import annotations

import pytest
from django.db import connection

from sessions_app import search, services
from sessions_app.models import Plan
from sessions_app.reads import queries
from sessions_app.search import FTS_TABLE
from tests.sessions_app.search.helpers import found, on_both_sqlite_paths, sqlite_only


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
