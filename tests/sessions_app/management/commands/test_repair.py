"""`repair` (sessions_app/management/commands/repair.py): a dry run lists
each repair and changes nothing, --apply carries them out and says how many, one session
only with --session, and a failed repair or an entry left alone fails the command loudly.
(What each repair does is in tests/sessions_app/maintenance/test_repair.py.)"""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from sessions_app import services
from sessions_app.models import Event
from tests.conftest import break_plans_folder
from tests.sessions_app.conftest import assert_valid, completed_with_file, plan_file, repaired_events, run_repair

pytestmark = pytest.mark.django_db


def test_the_command_fails_loudly_when_a_repair_fails(session, complete_plan, sessions_dir):
    stale, _ = completed_with_file(session, complete_plan)
    plan_file(sessions_dir, stale).write_text("text the database lacks")
    (sessions_dir / session.name / "preserved").write_text("a file where the folder should be")
    out = io.StringIO()

    with pytest.raises(CommandError, match="1 repair\\(s\\) failed"):
        call_command("repair", "--apply", stdout=out)

    assert f"could not repair: {session.name}: preserve {stale.id}.txt" in out.getvalue()
    assert "0 repair(s) done." in out.getvalue()


def test_a_plans_folder_that_is_not_a_folder_is_left_alone(session, make_plan, sessions_dir):
    make_plan(session)
    plans = break_plans_folder(sessions_dir, session.name)
    out = io.StringIO()

    with pytest.raises(CommandError, match="1 entr\\(ies\\) in the sessions folder were left alone"):
        call_command("repair", "--apply", stdout=out)

    assert f"left alone: {session.name}: left_alone {session.name} ({plans} is a regular file" in out.getvalue()
    assert plans.read_text() == "a file where the folder should be"
    assert repaired_events(session) == []


def test_command_dry_run_lists_every_repair_and_changes_nothing(
    session, make_plan, complete_plan, sessions_dir, snapshot
):
    missing = make_plan(session)
    plan_file(sessions_dir, missing).unlink()
    stale, text = completed_with_file(session, complete_plan)
    plan_file(sessions_dir, stale).write_text(text + "\nextra\n")
    before = snapshot()

    out = run_repair()

    assert f"would repair: {session.name}: rerender {missing.id}.txt" in out
    assert f"would repair: {session.name}: preserve {stale.id}.txt" in out
    assert "2 repair(s) found; run again with --apply" in out
    assert snapshot() == before

    out = run_repair("--apply")

    assert f"repaired: {session.name}: rerender {missing.id}.txt" in out
    assert "2 repair(s) done." in out
    assert sorted(e["action"] for e in repaired_events(session)) == ["preserve", "rerender"]
    assert_valid(session)
    assert run_repair("--apply").strip() == "Nothing to repair."


def test_command_repairs_only_the_named_session(make_plan, sessions_dir):
    first, second = services.session_create(), services.session_create()
    a, b = make_plan(first), make_plan(second)
    plan_file(sessions_dir, a).unlink()
    plan_file(sessions_dir, b).unlink()

    out = run_repair("--apply", "--session", first.name)

    assert f"{first.name}: rerender {a.id}.txt" in out and second.name not in out
    assert plan_file(sessions_dir, a).exists() and not plan_file(sessions_dir, b).exists()


def test_command_rejects_a_malformed_session_name(db, sessions_dir):
    with pytest.raises(CommandError, match="not a session name"):
        run_repair("--session", "../../etc")
    assert list(sessions_dir.iterdir()) == []


def test_nothing_to_repair_is_said_and_changes_nothing(session, make_plan, snapshot):
    make_plan(session)
    before = snapshot()
    assert run_repair().strip() == "Nothing to repair."
    assert run_repair("--apply").strip() == "Nothing to repair."
    assert snapshot() == before
    assert not Event.objects.filter(kind=Event.Kind.REPAIRED).exists()
