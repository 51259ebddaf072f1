"""The active plan's way out: defer, complete and discard."""

from __future__ import annotations

import re

import pytest

from sessions_app import planfiles, queries, services
from sessions_app.models import Event, Plan
from tests.conftest import break_plans_folder
from tests.sessions_app.conftest import events, plan_file

STAMP = r"Deferred \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: "


def queue_ids(session) -> list[str]:
    return list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("id", flat=True)
    )


# --- defer ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_defer_returns_the_plan_to_the_back_with_a_stamped_reason(session, make_plan, sessions_dir):
    first = make_plan(session, goal="First")
    second = make_plan(session, goal="Second")
    services.plan_pull(session_name=session.name)

    deferred = services.plan_defer(session_name=session.name, reason="Waiting on the schema", actor="tester").plan

    stored = Plan.objects.get(id=first.id)
    assert deferred.id == first.id
    assert (stored.status, stored.version) == ("queued", 2)
    assert re.fullmatch(STAMP + "Waiting on the schema", stored.notes)
    assert queue_ids(session) == [second.id, first.id]
    assert events(first)[-1] == ("plan_deferred", "tester")
    assert Event.objects.get(plan=first, kind="plan_deferred").detail == {
        "reason": "Waiting on the schema",
        "position": "back",
    }
    assert plan_file(sessions_dir, first).read_text() == planfiles.render(stored.sections())


@pytest.mark.django_db
def test_defer_to_the_front_makes_it_the_next_pull(session, make_plan):
    first = make_plan(session, goal="First")
    make_plan(session, goal="Second")
    services.plan_pull(session_name=session.name)

    services.plan_defer(session_name=session.name, reason="Blocking", position="front")

    assert queue_ids(session)[0] == first.id
    assert services.plan_pull(session_name=session.name).id == first.id


@pytest.mark.django_db
def test_defer_into_an_empty_queue_takes_position_zero(session, active):
    services.plan_defer(session_name=session.name, reason="Later", position="front")
    assert Plan.objects.get(id=active.id).sort_key == 0


@pytest.mark.django_db
def test_each_defer_appends_its_own_reason(session, active):
    services.plan_defer(session_name=session.name, reason="one")
    services.plan_pull(session_name=session.name)
    services.plan_defer(session_name=session.name, reason="two")

    notes = Plan.objects.get(id=active.id).notes
    assert re.fullmatch(STAMP + "one\n\n" + STAMP + "two", notes)


@pytest.mark.django_db
def test_defer_that_would_exceed_the_plan_size_changes_nothing(session, active, settings, rejects):
    size = sum(len(v) for v in Plan.objects.get(id=active.id).sections().values())
    settings.NINEPLAN_MAX_PLAN_CHARS = size + 10
    with rejects("VALIDATION_ERROR", field="reason", match="at most"):
        services.plan_defer(session_name=session.name, reason="a reason longer than ten characters")


# --- complete ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_complete_stores_the_outcome_and_deletes_the_file(session, active, make_plan, sessions_dir):
    waiting = make_plan(session)

    done = services.plan_complete(session_name=session.name, outcome="Invoice model added", actor="tester").plan

    stored = Plan.objects.get(id=active.id)
    assert done.id == active.id
    assert (stored.status, stored.outcome, stored.sort_key) == ("completed", "Invoice model added", None)
    assert stored.completed_at is not None
    assert not plan_file(sessions_dir, active).exists()
    assert plan_file(sessions_dir, waiting).exists()
    assert events(active)[-1] == ("plan_completed", "tester")
    assert [h.plan.id for h in queries.history_search("invoice", session_name=session.name)] == [active.id]
    assert queries.history_get(session_name=session.name, plan_id=active.id).outcome == "Invoice model added"


@pytest.mark.django_db
def test_complete_that_would_exceed_the_plan_size_changes_nothing(session, active, settings, rejects):
    size = sum(len(v) for v in Plan.objects.get(id=active.id).sections().values())
    settings.NINEPLAN_MAX_PLAN_CHARS = size + 5
    with rejects("VALIDATION_ERROR", field="outcome", match=f"would be {size + 6} characters"):
        services.plan_complete(session_name=session.name, outcome="sixchr")


@pytest.mark.django_db
def test_complete_then_pull_moves_on_to_the_next_plan(session, make_plan):
    make_plan(session, goal="First")
    second = make_plan(session, goal="Second")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="done")

    assert services.plan_pull(session_name=session.name).id == second.id


# --- discard ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_discard_marks_the_plan_discarded_and_deletes_the_file(session, active, sessions_dir):
    services.plan_discard(session_name=session.name, reason="Superseded by k3x9q", actor="tester")

    stored = Plan.objects.get(id=active.id)
    assert (stored.status, stored.discard_reason, stored.sort_key) == ("discarded", "Superseded by k3x9q", None)
    assert stored.discarded_at is not None and stored.completed_at is None
    assert not plan_file(sessions_dir, active).exists()
    assert events(active)[-1] == ("plan_discarded", "tester")
    assert Event.objects.get(plan=active, kind="plan_discarded").detail == {"reason": "Superseded by k3x9q"}
    assert queries.history_search("invoices", session_name=session.name) == []


@pytest.mark.django_db
def test_a_discarded_plan_is_not_in_history(session, active, rejects):
    services.plan_discard(session_name=session.name, reason="x")
    with rejects("PLAN_NOT_FOUND", match="discarded"):
        queries.history_get(session_name=session.name, plan_id=active.id)


# --- errors shared by every step ----------------------------------------------------------


def step(name: str, session_name: str):
    calls = {
        "defer": lambda: services.plan_defer(session_name=session_name, reason="r"),
        "complete": lambda: services.plan_complete(session_name=session_name, outcome="o"),
        "discard": lambda: services.plan_discard(session_name=session_name, reason="r"),
        "note": lambda: services.plan_note(session_name=session_name, text="t"),
    }
    return calls[name]


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["defer", "complete", "discard", "note"])
def test_without_an_active_plan_it_gives_no_active_plan(session, make_plan, rejects, name):
    make_plan(session)
    with rejects("NO_ACTIVE_PLAN", match=session.name):
        step(name, session.name)()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["defer", "complete", "discard", "note"])
def test_an_unknown_session_gives_session_not_found(rejects, name):
    with rejects("SESSION_NOT_FOUND", match="calm-blue-heron"):
        step(name, "calm-blue-heron")()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["defer", "complete", "discard", "note"])
def test_one_sessions_active_plan_is_not_anothers(session, active, rejects, name):
    other = services.session_create()
    with rejects("NO_ACTIVE_PLAN"):
        step(name, other.name)()


@pytest.mark.django_db
@pytest.mark.parametrize("name, field", [("defer", "reason"), ("complete", "outcome"), ("discard", "reason")])
@pytest.mark.parametrize("blank", ["", "   ", "\u00a0\u0085\u3000", "\n\t\r"])
def test_blank_reason_or_outcome_is_rejected(session, active, rejects, name, field, blank):
    call = {
        "defer": lambda: services.plan_defer(session_name=session.name, reason=blank),
        "complete": lambda: services.plan_complete(session_name=session.name, outcome=blank),
        "discard": lambda: services.plan_discard(session_name=session.name, reason=blank),
    }[name]
    with rejects("VALIDATION_ERROR", field=field, match="empty or only whitespace"):
        call()


# --- file system failures -------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["defer", "note"])
def test_a_plans_folder_that_is_a_file_gives_file_system_error(session, active, sessions_dir, rejects, name):
    break_plans_folder(sessions_dir, session.name)
    with rejects("FILE_SYSTEM_ERROR"):
        step(name, session.name)()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["defer", "note"])
def test_an_unwritable_plan_file_gives_file_system_error_and_leaves_no_temp_file(
    session, active, sessions_dir, rejects, name
):
    # A directory standing where the file should be: the rename onto it fails, even for root.
    path = plan_file(sessions_dir, active)
    path.unlink()
    path.mkdir()
    with rejects("FILE_SYSTEM_ERROR", match=str(path)):
        step(name, session.name)()
    assert [p.name for p in path.parent.iterdir()] == [path.name]


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["complete", "discard"])
def test_complete_and_discard_succeed_when_the_file_cannot_be_deleted(session, active, sessions_dir, name):
    # The database is authoritative; a file left behind is reported by check_invariants.
    break_plans_folder(sessions_dir, session.name)

    step(name, session.name)()

    assert Plan.objects.get(id=active.id).status == ("completed" if name == "complete" else "discarded")
    assert (sessions_dir / session.name / "plans").read_text() == "a file where the folder should be"
