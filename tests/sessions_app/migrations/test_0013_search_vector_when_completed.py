"""Migration 0013: on PostgreSQL the search vector is computed for completed plans only
(sessions_app/migrations/0013), so adding, pulling and noting a plan never pay for it, and
a search finds what it found before."""

from __future__ import annotations

import pytest
from django.db import connection

from sessions_app import services
from sessions_app.reads import queries
from tests.conftest import plan_fields

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the generated column is PostgreSQL's"),
]


def _vector(plan_id: str) -> str | None:
    with connection.cursor() as cur:
        cur.execute("SELECT search_vector::text FROM sessions_app_plan WHERE id = %s", [plan_id])
        return cur.fetchone()[0]


def test_only_a_completed_plan_holds_a_vector_and_it_is_found_by_its_words(session):
    plan = services.plan_enqueue(session_name=session.name, **plan_fields(goal="Model invoices")).plan
    assert _vector(plan.id) is None
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Invoices need a currency")
    assert _vector(plan.id) is None
    services.plan_complete(session_name=session.name, outcome="Added Invoice in billing/models.py")

    vector = _vector(plan.id)
    # The goal weighs A, the outcome B, as before the migration; words are stemmed.
    assert "'invoic':2A,4B" in vector and "'bill':6B" in vector
    assert [h.plan_id for h in queries.history_search("invoices billing", session_name=session.name)] == [plan.id]


def test_a_plan_in_review_has_none_until_it_is_approved(session):
    plan = services.plan_enqueue(session_name=session.name, review=True, **plan_fields(goal="Model invoices")).plan
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="Done")
    assert _vector(plan.id) is None
    assert queries.history_search("invoices", session_name=session.name) == []

    services.plan_review(session_name=session.name, plan_id=plan.id, decision="approve", actor="alice")
    assert "'invoic':2A" in _vector(plan.id)
    assert [h.plan_id for h in queries.history_search("invoices", session_name=session.name)] == [plan.id]
