"""Reads (sessions_app/reads/queries.py): history_get, the plan's text, and the state reads' rows.
check_invariants has its tests in test_invariants.py."""

from __future__ import annotations

import pytest

from sessions_app import access, planfiles, services
from sessions_app.errors import SessionNotFound
from sessions_app.models import Plan, Role
from sessions_app.reads import queries
from tests.conftest import plan_fields
from tests.sessions_app.conftest import plan_file


@pytest.mark.django_db
def test_history_get_returns_the_completed_plan_in_full(session, complete_plan):
    done = complete_plan(session, outcome="Invoice model added", inputs="schema.sql")

    plan = queries.history_get(session_name=session.name, plan_id=done.id)

    assert plan.id == done.id
    assert (plan.goal, plan.inputs, plan.outcome, plan.status) == (
        "Model invoices",
        "schema.sql",
        "Invoice model added",
        "completed",
    )


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["queued", "active"])
def test_history_get_of_an_open_plan_is_not_found(session, make_plan, rejects, status):
    plan = make_plan(session)
    if status == "active":
        services.plan_pull(session_name=session.name)
    with rejects("PLAN_NOT_FOUND", match=f"is {status}, not completed"):
        queries.history_get(session_name=session.name, plan_id=plan.id)


@pytest.mark.django_db
def test_history_get_does_not_cross_sessions(session, complete_plan, rejects):
    other = services.session_create()
    theirs = complete_plan(other)
    with rejects("PLAN_NOT_FOUND"):
        queries.history_get(session_name=session.name, plan_id=theirs.id)


@pytest.mark.django_db
def test_plan_file_text_falls_back_to_the_database(session, active, sessions_dir):
    path = plan_file(sessions_dir, active)
    path.write_text(path.read_text() + "agent text\n")
    assert queries.plan_file_text(active)[0].endswith("agent text\n")

    path.unlink()
    assert queries.plan_file_text(active) == (planfiles.render(Plan.objects.get(id=active.id).sections()), "")


def test_the_state_reads_load_rows_as_the_orm_does(session, make_plan):
    """get_session, queue and active_plan read with hand-written SQL: what they return
    must equal the ORM's rows, field for field, with aware timestamps."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sessions_app.models import Plan, Session

    for i in range(3):
        make_plan(session, goal=f"goal {i}")
    services.plan_pull(session_name=session.name)
    with CaptureQueriesContext(connection) as captured:
        state = queries.session_state(session.name)
    # The session, the first of the queue, the workers' plans, and what blocked plans wait for.
    assert len(captured.captured_queries) == 4
    orm_session = Session.objects.get(name=session.name)
    for field in Session._meta.concrete_fields:
        assert getattr(state.session, field.attname) == getattr(orm_session, field.attname), field.name
    assert state.session.created_at.tzinfo is not None
    orm_active = Plan.objects.get(session=session, status="active")
    for field in Plan._meta.concrete_fields:
        assert getattr(state.active, field.attname) == getattr(orm_active, field.attname), field.name
    assert state.active.updated_at.tzinfo is not None
    queued = list(Plan.objects.filter(session=session, status="queued").order_by("sort_key"))
    assert [(p.id, p.goal, p.sort_key) for p in state.queue] == [(p.id, p.goal, p.sort_key) for p in queued]
    whole, total = queries.queue(orm_session, limit=None)
    assert total == 2
    assert [p.updated_at for p in whole] == [p.updated_at for p in queued]


def test_a_plan_waiting_for_a_person_counts_its_claims_in_words():
    from sessions_app.reads.queries import Blocked

    one = Blocked(plan_id="abcde", goal="g", waiting_for_person=True, attempts=1, waits_for=())
    three = Blocked(plan_id="abcde", goal="g", waiting_for_person=True, attempts=3, waits_for=())
    assert one.describe().endswith("(1 claim ran out)") and three.describe().endswith("(3 claims ran out)")


def _finished(session_name: str, goal: str) -> str:
    services.plan_enqueue(session_name=session_name, **plan_fields(goal=goal))
    services.plan_pull(session_name=session_name)
    return services.plan_complete(session_name=session_name, outcome="Done.").plan.id


@pytest.mark.django_db
def test_a_search_of_the_whole_project_stays_in_the_project_the_caller_may_see():
    for name in ("alpha", "beta"):
        services.project_create(name=name)
    one = services.session_create(project="alpha").name
    two = services.session_create(project="alpha").name
    theirs = services.session_create(project="beta").name
    ids = {_finished(one, "Cache the header row"), _finished(two, "Header parser")}
    _finished(theirs, "Header of the beta report")

    reader = access.Caller(label="user:rita", roles={"alpha": Role.READER})
    with access.acting_as(reader):
        hits = queries.history_search("header", session_name=two, whole_project=True, max_results=10)
        assert {h.plan.id for h in hits} == ids
        assert {h.plan.session_id for h in hits} == {one, two}
        # A session of a project the caller cannot see is not found, and nothing of it is searched.
        with pytest.raises(SessionNotFound):
            queries.history_search("header", session_name=theirs, whole_project=True)
    # Even for a caller who sees everything, the scope is the named session's project.
    everywhere = queries.history_search("header", session_name=theirs, whole_project=True, max_results=10)
    assert {h.plan.session_id for h in everywhere} == {theirs}
