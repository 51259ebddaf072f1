"""History search reads the plan's Notes, on both databases and both SQLite paths: with the
word forms and accent folding of the other sections, ranked below the goal and the outcome,
and kept up to date when Notes are written as a plan becomes completed or after."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.models import Plan
from sessions_app.reads import queries
from tests.conftest import plan_fields

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("search_path")]


def finish(session, note: str = "", outcome: str = "Done.", **fields) -> Plan:
    """Add a plan, pull it, write ``note`` into its Notes with the agent's tool, complete it."""
    services.plan_enqueue(session_name=session.name, position="front", **plan_fields(**fields))
    services.plan_pull(session_name=session.name)
    if note:
        services.plan_note(session_name=session.name, text=note)
    return services.plan_complete(session_name=session.name, outcome=outcome).plan


def found(query: str, session) -> list[str]:
    return [h.plan.id for h in queries.history_search(query, session_name=session.name, max_results=10)]


def test_a_note_is_found_by_other_forms_of_its_words(session):
    plan = finish(session, note="Found while caching the header row: the parser re-reads it.")
    finish(session, goal="Write the README")
    assert found("cache header", session) == [plan.id]
    assert found("cached headers", session) == [plan.id]
    assert found("pars", session) == [plan.id]  # the last word as a prefix


def test_accents_in_notes_are_folded_both_ways(session):
    plan = finish(session, note="Le café ferme à 18 h; naïve parsing failed")
    assert found("cafe naive", session) == [plan.id]
    assert found("café", session) == [plan.id]


def test_notes_weigh_less_than_the_goal_and_the_outcome(session):
    # The same words in each plan, once: only the section they are in differs.
    in_notes = finish(session, goal="Tidy the repository", note="ledger rounding")
    in_goal = finish(session, goal="Fix ledger rounding")
    in_outcome = finish(session, goal="Tidy the settings", outcome="ledger rounding")
    ranked = found("ledger rounding", session)
    assert set(ranked) == {in_notes.id, in_goal.id, in_outcome.id}
    assert ranked[-1] == in_notes.id


def test_notes_given_with_an_approval_are_searchable(session):
    services.plan_enqueue(session_name=session.name, review=True, **plan_fields(goal="Model invoices"))
    plan = services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="Done.")
    assert found("zeppelin", session) == []

    services.plan_review(
        session_name=session.name, plan_id=plan.id, decision="approve", notes="Zeppelin naming kept", actor="user:sam"
    )
    assert found("zeppelin", session) == [plan.id]


def test_notes_changed_after_completion_are_what_is_found(session):
    plan = finish(session, note="first draft of the mapping")
    assert found("mapping", session) == [plan.id]
    # No tool writes a completed plan's Notes today; the index follows the row whatever writes it.
    Plan.objects.filter(id=plan.id).update(notes="rewrote the tokenizer")
    assert found("mapping", session) == []
    assert found("tokenizer", session) == [plan.id]


def test_discarded_and_open_plans_are_not_found_by_their_notes(session):
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Port exports"))
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="quokka in the notes")
    assert found("quokka", session) == []
    services.plan_discard(session_name=session.name, reason="not needed")
    assert found("quokka", session) == []
