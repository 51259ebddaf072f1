"""session_create and the session reads."""

from __future__ import annotations

import itertools

import pytest

from sessions_app import services
from sessions_app.identifiers import SESSION_NAME_RE
from sessions_app.models import Event, Plan, Session
from sessions_app.reads import queries


@pytest.mark.django_db
def test_it_creates_a_session_with_a_three_word_name_and_its_plans_folder(sessions_dir):
    session = services.session_create(task_description="Port billing to Django", actor="tester")

    assert SESSION_NAME_RE.fullmatch(session.name)
    stored = Session.objects.get(name=session.name)
    assert stored.task_description == "Port billing to Django"
    assert (sessions_dir / session.name / "plans").is_dir()
    assert list((sessions_dir / session.name / "plans").iterdir()) == []
    event = Event.objects.get(session=session)
    assert (event.kind, event.actor, event.plan_id) == ("session_created", "tester", None)
    assert event.detail == {"task_description": "Port billing to Django", "review": "none", "project": "default"}


@pytest.mark.django_db
def test_it_stores_no_task_description_as_null():
    assert Session.objects.get(name=services.session_create().name).task_description is None
    # Empty text carries nothing either; it is stored as "no description", not "".
    assert Session.objects.get(name=services.session_create(task_description="").name).task_description is None


@pytest.mark.django_db
def test_it_gives_every_session_a_new_name():
    names = {services.session_create().name for _ in range(5)}
    assert len(names) == 5
    assert Session.objects.count() == 5


@pytest.mark.django_db
def test_it_draws_another_name_when_the_first_is_taken(monkeypatch, sessions_dir):
    taken = services.session_create()
    drawn = iter([taken.name, taken.name, "fresh-green-heron"])
    monkeypatch.setattr(services.sessions, "new_session_name", lambda: next(drawn))

    session = services.session_create()

    assert session.name == "fresh-green-heron"
    assert Session.objects.count() == 2
    assert (sessions_dir / "fresh-green-heron" / "plans").is_dir()


@pytest.mark.django_db
def test_it_gives_database_error_when_no_free_name_is_found(monkeypatch, rejects):
    taken = services.session_create()
    monkeypatch.setattr(services.sessions, "new_session_name", itertools.repeat(taken.name).__next__)

    with rejects("DATABASE_ERROR", match="free session name"):
        services.session_create()


@pytest.mark.django_db
def test_it_gives_file_system_error_when_the_sessions_folder_cannot_be_made(sessions_dir, rejects):
    # Root ignores permission bits, so the folder is replaced by a regular file instead.
    sessions_dir.rmdir()
    sessions_dir.write_text("not a folder")

    with rejects("FILE_SYSTEM_ERROR"):
        services.session_create(task_description="never stored")

    assert not Session.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("bad", [5, ["x"], "a\x00b", "\ud800"])
def test_it_rejects_a_bad_task_description(bad, rejects):
    with rejects("VALIDATION_ERROR", field="task_description"):
        services.session_create(task_description=bad)


@pytest.mark.django_db
def test_session_state_shows_queue_active_plan_and_counts(session, make_plan, complete_plan):
    complete_plan(session, goal="First")
    a = make_plan(session, goal="A")
    b = make_plan(session, goal="B")
    c = make_plan(session, goal="C")
    services.plan_pull(session_name=session.name)

    state = queries.session_state(session.name)

    assert state.session.name == session.name
    assert [p.id for p in state.queue] == [b.id, c.id]
    assert state.queue_length == 2
    assert state.active.id == a.id
    assert (state.completed_count, state.discarded_count) == (1, 0)


@pytest.mark.django_db
def test_session_state_caps_the_queue_and_counts_all_of_it(session, make_plan):
    plans = [make_plan(session, goal=f"Plan {i}") for i in range(5)]

    state = queries.session_state(session.name, limit=2)

    assert [p.id for p in state.queue] == [plans[0].id, plans[1].id]
    assert state.queue_length == 5


@pytest.mark.django_db
def test_session_list_counts_each_session(make_plan, complete_plan):
    busy = services.session_create(task_description="busy")
    idle = services.session_create(task_description="idle")
    complete_plan(busy)
    make_plan(busy)
    make_plan(busy)
    services.plan_pull(session_name=busy.name)

    rows, total = queries.session_list()

    assert total == 2
    by_name = {s.name: s for s in rows}
    assert (by_name[busy.name].queue_length, by_name[busy.name].completed_count) == (1, 1)
    assert by_name[busy.name].has_active_plan is True
    assert (by_name[idle.name].queue_length, by_name[idle.name].has_active_plan) == (0, False)
    assert Plan.objects.filter(session=idle).count() == 0


@pytest.mark.django_db
def test_reading_an_unknown_session_gives_session_not_found(rejects):
    with rejects("SESSION_NOT_FOUND", match="calm-blue-heron"):
        queries.session_state("calm-blue-heron")
