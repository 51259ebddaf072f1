"""A worker's writes to its plan (services/worker_writes.py): the way out (defer, complete and
discard) and writing the Notes (docs/design.md, "Plan files"): append, replace, and limits."""

from __future__ import annotations

import re

import pytest

from sessions_app import planfiles, services
from sessions_app.models import Event, Plan
from sessions_app.reads import queries
from tests.conftest import break_plans_folder
from tests.sessions_app.conftest import events, plan_file, queue_ids

STAMP = r"Deferred \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: "


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


# --- plan_note --------------------------------------------------------------------------


@pytest.mark.django_db
def test_append_is_the_default_and_writes_database_file_and_event(session, active, sessions_dir):
    first = services.plan_note(session_name=session.name, text="  \nFound the schema", actor="tester").plan
    second = services.plan_note(session_name=session.name, text="Invoices use cents\n").plan

    stored = Plan.objects.get(id=active.id)
    assert stored.notes == second.notes == "Found the schema\n\nInvoices use cents\n"
    assert first.notes == "Found the schema"
    assert stored.version == 3
    assert plan_file(sessions_dir, active).read_text() == planfiles.render(stored.sections())
    assert events(active)[-2:] == [("plan_note", "tester"), ("plan_note", "agent")]
    assert Event.objects.filter(plan=active, kind="plan_note").first().detail == {"mode": "append", "chars": 19}


@pytest.mark.django_db
def test_appending_twice_appends_twice(session, active):
    services.plan_note(session_name=session.name, text="same", mode="append")
    services.plan_note(session_name=session.name, text="same", mode="append")
    assert Plan.objects.get(id=active.id).notes == "same\n\nsame"


@pytest.mark.django_db
def test_replace_sets_the_notes_exactly(session, active, sessions_dir):
    services.plan_note(session_name=session.name, text="old")

    services.plan_note(session_name=session.name, text="\n  new\ttext  \n", mode="replace")

    assert Plan.objects.get(id=active.id).notes == "\n  new\ttext  \n"
    assert "  new\ttext" in plan_file(sessions_dir, active).read_text()
    assert Event.objects.filter(plan=active, kind="plan_note").last().detail == {"mode": "replace", "chars": 14}


@pytest.mark.django_db
def test_append_builds_on_notes_the_agent_wrote_in_the_file(session, active, sessions_dir):
    path = plan_file(sessions_dir, active)
    path.write_text(path.read_text().replace("# Notes\n", "# Notes\nwritten in the file  \n"))

    services.plan_note(session_name=session.name, text="written by the tool")

    assert Plan.objects.get(id=active.id).notes == "written in the file\n\nwritten by the tool"


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["Append", "REPLACE", "add", "", " append", 1, True])
def test_mode_is_exact_and_names_both_values(session, active, rejects, mode):
    with rejects("VALIDATION_ERROR", field="mode") as info:
        services.plan_note(session_name=session.name, text="fragment", mode=mode)
    assert "'append'" in info.value.message and "'replace'" in info.value.message


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["append", "replace"])
@pytest.mark.parametrize("blank", ["", " ", "\n\n", "\u00a0\u0085\u3000", "\u2028\u2029\u1680\u202f\u205f"])
def test_an_empty_or_whitespace_fragment_is_rejected(session, active, rejects, mode, blank):
    services.plan_note(session_name=session.name, text="kept")
    with rejects("VALIDATION_ERROR", field="text", match="empty or only whitespace"):
        services.plan_note(session_name=session.name, text=blank, mode=mode)


@pytest.mark.django_db
def test_the_field_limit_is_checked_on_the_composed_notes(session, active, settings, rejects):
    settings.NINEPLAN_MAX_FIELD_CHARS = 50
    services.plan_note(session_name=session.name, text="x" * 30)

    # 30 + 2 + 30 = 62: each part fits, the composed result does not.
    with rejects("VALIDATION_ERROR", field="notes", match="notes is 62 characters; at most 50"):
        services.plan_note(session_name=session.name, text="y" * 30)

    services.plan_note(session_name=session.name, text="y" * 18)
    assert len(Plan.objects.get(id=active.id).notes) == 50


@pytest.mark.django_db
def test_the_plan_limit_is_checked_on_the_composed_plan(session, active, settings, rejects):
    others = sum(len(v) for v in Plan.objects.get(id=active.id).sections().values())
    settings.NINEPLAN_MAX_PLAN_CHARS = others + 40
    services.plan_note(session_name=session.name, text="a" * 20)

    with rejects("VALIDATION_ERROR", field="notes", match=f"would be {others + 42} characters; at most {others + 40}"):
        services.plan_note(session_name=session.name, text="b" * 20)


@pytest.mark.django_db
def test_a_replace_over_the_limit_is_rejected(session, active, settings, rejects):
    settings.NINEPLAN_MAX_FIELD_CHARS = 50
    with rejects("VALIDATION_ERROR", field="notes", match="notes is 51 characters"):
        services.plan_note(session_name=session.name, text="z" * 51, mode="replace")


@pytest.mark.django_db
@pytest.mark.parametrize("bad", [None, 42, ["text"], "nul\x00byte", "lone \udc00 surrogate"])
def test_a_bad_fragment_is_rejected(session, active, rejects, bad):
    with rejects("VALIDATION_ERROR", field="text"):
        services.plan_note(session_name=session.name, text=bad)
