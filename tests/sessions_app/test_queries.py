"""Reads: history_get, the plan's text, and check_invariants."""

from __future__ import annotations

import os
import time

import pytest

from sessions_app import invariants, planfiles, queries, services
from sessions_app.models import Plan
from sessions_app.invariants import INVARIANTS
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


# --- check_invariants ---------------------------------------------------------------------


def age(path) -> None:
    """Make a temporary file look abandoned rather than a write in progress."""
    old = time.time() - 3600
    os.utime(path, (old, old))


@pytest.mark.django_db
def test_a_clean_session_is_valid(session, make_plan, complete_plan):
    complete_plan(session)
    make_plan(session)
    make_plan(session, position="front")
    services.plan_pull(session_name=session.name)

    result = invariants.check_invariants(session.name)

    assert result.valid is True
    assert result.invariants == dict.fromkeys(INVARIANTS, True)
    assert result.issues == []


@pytest.mark.django_db
def test_an_empty_session_is_valid(session):
    assert invariants.check_invariants(session.name).valid is True


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["queued", "active"])
def test_it_reports_a_missing_plan_file(session, make_plan, sessions_dir, status):
    plan = make_plan(session)
    other = make_plan(session)
    if status == "active":
        services.plan_pull(session_name=session.name)
    plan_file(sessions_dir, plan).unlink()

    result = invariants.check_invariants(session.name)

    assert result.valid is False
    assert result.invariants == {**dict.fromkeys(INVARIANTS, True), "files_match_database": False}
    assert len(result.issues) == 1
    assert plan.id in result.issues[0] and status in result.issues[0]
    assert other.id not in result.issues[0]
    assert not plan_file(sessions_dir, plan).exists()  # a check never repairs


@pytest.mark.django_db
def test_it_reports_an_orphan_file(session, make_plan, complete_plan, sessions_dir):
    make_plan(session)
    done = complete_plan(session)
    orphan = plan_file(sessions_dir, done)
    orphan.write_text("# Context\nleft behind\n")

    result = invariants.check_invariants(session.name)

    assert result.invariants == {**dict.fromkeys(INVARIANTS, True), "no_orphaned_files": False}
    assert len(result.issues) == 1
    assert f"{done.id}.txt" in result.issues[0]
    assert orphan.read_text() == "# Context\nleft behind\n"


@pytest.mark.django_db
def test_it_reports_a_file_for_a_plan_that_never_existed(session, sessions_dir):
    (sessions_dir / session.name / "plans" / "zzzzz.txt").write_text("stray")

    result = invariants.check_invariants(session.name)

    assert result.invariants["no_orphaned_files"] is False
    assert result.issues == [result.issues[0]] and "zzzzz.txt" in result.issues[0]


@pytest.mark.django_db
def test_it_reports_a_leftover_temp_file(session, make_plan, sessions_dir):
    plan = make_plan(session)
    leftover = sessions_dir / session.name / "plans" / f"{planfiles.TEMP_PREFIX}{plan.id}.txt"
    leftover.write_text("torn")
    age(leftover)

    result = invariants.check_invariants(session.name)

    assert result.invariants == {**dict.fromkeys(INVARIANTS, True), "no_orphaned_files": False}
    assert len(result.issues) == 1
    assert f"{planfiles.TEMP_PREFIX}{plan.id}.txt" in result.issues[0]


@pytest.mark.django_db
def test_a_fresh_temp_file_may_be_a_write_in_progress_and_is_not_reported(session, make_plan, sessions_dir):
    plan = make_plan(session)
    (sessions_dir / session.name / "plans" / f"{planfiles.TEMP_PREFIX}{plan.id}.txt").write_text("being written")
    assert invariants.check_invariants(session.name).valid is True


@pytest.mark.django_db
def test_unrelated_files_are_not_reported(session, make_plan, sessions_dir):
    make_plan(session)
    (sessions_dir / session.name / "plans" / "README.md").write_text("notes for humans")
    assert invariants.check_invariants(session.name).valid is True


@pytest.mark.django_db
def test_it_reports_every_problem_at_once(session, make_plan, sessions_dir):
    missing = make_plan(session)
    make_plan(session)
    plan_file(sessions_dir, missing).unlink()
    (sessions_dir / session.name / "plans" / "zzzzz.txt").write_text("stray")
    (sessions_dir / session.name / "plans" / ".tmp-x.txt").write_text("torn")
    age(sessions_dir / session.name / "plans" / ".tmp-x.txt")

    result = invariants.check_invariants(session.name)

    assert result.invariants == {
        **dict.fromkeys(INVARIANTS, True),
        "files_match_database": False,
        "no_orphaned_files": False,
    }
    assert len(result.issues) == 3


@pytest.mark.django_db
def test_validating_an_unknown_session_gives_session_not_found(rejects):
    with rejects("SESSION_NOT_FOUND"):
        invariants.check_invariants("calm-blue-heron")


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


def test_no_init_signal_listens_to_the_models_store_builds():
    """statements.load builds instances without __init__, as unpickling does, so it would skip
    pre_init/post_init receivers: if one is ever added for these models, load must change."""
    from django.db.models import signals

    from sessions_app.models import Plan, Session

    for model in (Plan, Session):
        assert not signals.pre_init.has_listeners(model)
        assert not signals.post_init.has_listeners(model)
