"""What a search says of each hit depends on the plan and the query alone: its place
(``rank``) and whether it holds every word, never an engine's score, which moved with the
other plans indexed (BM25 weighs a word by how many plans hold it). Both databases, both
SQLite paths."""

from __future__ import annotations

import dataclasses

import pytest

from sessions_app import services
from sessions_app.reads import queries
from sessions_app.search import Hit

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("search_path")]


def described(query: str, session, plan_id: str) -> dict:
    """What the search says of the plan, but its place among the others."""
    hits = queries.history_search(query, session_name=session.name, max_results=50)
    hit = next(h for h in hits if h.plan.id == plan_id)
    return {f.name: getattr(hit, f.name) for f in dataclasses.fields(Hit) if f.name not in ("rank", "plan")}


def test_a_hit_carries_no_score():
    assert [f.name for f in dataclasses.fields(Hit)] == ["plan_id", "rank", "every_word", "plan"]


def test_the_same_plan_and_query_read_the_same_whatever_else_is_indexed(session, complete_plan):
    target = complete_plan(session, goal="Parse the header row", outcome="Header parsed")
    weak = complete_plan(session, goal="Tidy the header comments", outcome="Done")
    alone = {q: described(q, session, target.id) for q in ("header", "header parsing")}
    weak_alone = described("header parsing", session, weak.id)

    # The word becomes common (in every plan) and plans holding every word crowd in.
    for i in range(12):
        complete_plan(session, goal=f"Header fix {i}", outcome="parsed the header again")
    elsewhere = services.session_create(task_description="Other work")
    complete_plan(elsewhere, goal="Header everywhere", outcome="header header header")

    assert {q: described(q, session, target.id) for q in alone} == alone
    assert described("header parsing", session, weak.id) == weak_alone
    assert alone == {
        "header": {"plan_id": target.id, "every_word": True},
        "header parsing": {"plan_id": target.id, "every_word": True},
    }


def test_a_weak_match_is_still_a_match(session, complete_plan):
    # "header" is in every plan (on SQLite its BM25 weight is next to nothing) and the plan
    # holds only that word of the query: it is found, ranked, and said to hold some words.
    plans = [complete_plan(session, goal=f"Header step {i}", outcome="header") for i in range(4)]
    hits = queries.history_search("header zeppelin", session_name=session.name, max_results=10)
    assert sorted(h.plan.id for h in hits) == sorted(p.id for p in plans)
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert not any(h.every_word for h in hits)
