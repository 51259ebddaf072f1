"""The crash repair: each thing a killed process can leave behind is reported by
check_invariants, listed by a dry run (which changes nothing), fixed by --apply without
losing text, and written to the event log."""

from __future__ import annotations

import os
import shutil
import time

import pytest
from django.db import connection

from sessions_app import planfiles, search, services
from sessions_app.maintenance import invariants, repair
from sessions_app.models import Event, Plan
from sessions_app.reads import queries
from tests.conftest import plan_fields
from tests.sessions_app.conftest import assert_valid, completed_with_file, plan_file, repaired_events, run_repair
from tests.sessions_app.stdio_server import StdioServer

OLD = time.time() - 2 * planfiles.TEMP_FILE_GRACE_SECONDS


def summary(actions) -> list[tuple[str, str, str]]:
    return [(a.session, a.kind, a.target) for a in actions]


def assert_invalid(session, invariant: str, *needles: str) -> None:
    result = invariants.check_invariants(session.name)
    assert not result.valid
    assert result.invariants[invariant] is False, result.issues
    assert any(all(n in issue for n in needles) for issue in result.issues), result.issues
    assert all("fix:" in issue for issue in result.issues)


# --- missing files ---------------------------------------------------------------------


def test_missing_file_of_a_queued_plan_is_rendered_from_the_database(session, make_plan, sessions_dir, snapshot):
    plan = make_plan(session, goal="Model invoices\nwith lines")
    path = plan_file(sessions_dir, plan)
    path.unlink()
    assert_invalid(session, "files_match_database", plan.id, "no plan file")

    before = snapshot()
    actions = repair.repair_all(apply=False)
    assert summary(actions) == [(session.name, "rerender", f"{plan.id}.txt")]
    assert snapshot() == before  # a dry run changes nothing

    actions = repair.repair_all(apply=True)
    assert summary(actions) == [(session.name, "rerender", f"{plan.id}.txt")]
    assert path.read_text() == planfiles.render(Plan.objects.get(id=plan.id).sections())
    assert repaired_events(session) == [
        {"plan": plan.id, "action": "rerender", "file": f"{plan.id}.txt", "reason": actions[0].detail}
    ]
    assert_valid(session)
    assert repair.repair_all(apply=True) == []


def test_missing_file_of_the_active_plan_is_rendered_with_its_notes(session, make_plan, sessions_dir):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Found the schema in db/schema.sql")
    path = plan_file(sessions_dir, plan)
    path.unlink()
    assert_invalid(session, "files_match_database", plan.id, "active")

    actions = repair.session_repair(session_name=session.name, apply=True)

    assert summary(actions) == [(session.name, "rerender", f"{plan.id}.txt")]
    assert planfiles.parse(path.read_text()).sections["notes"] == "Found the schema in db/schema.sql"
    assert [e["action"] for e in repaired_events(session)] == ["rerender"]
    assert_valid(session)
    # The re-rendered file is the agent's working copy again: completing keeps the notes.
    done = services.plan_complete(session_name=session.name, outcome="Done.").plan
    assert done.notes == "Found the schema in db/schema.sql"


def test_a_session_whose_whole_folder_is_gone_lost_nothing(session, make_plan, sessions_dir):
    """Plan files are a local copy: without the folder (and the files' bases) the plans are
    simply not copied to this machine, as on a second server; a pull writes its file."""
    plans = [make_plan(session, goal=f"Goal {i}") for i in range(3)]
    shutil.rmtree(sessions_dir / session.name)

    assert_valid(session)
    assert repair.repair_all(apply=True) == []
    pulled = services.plan_pull(session_name=session.name)
    assert pulled.id == plans[0].id
    assert plan_file(sessions_dir, pulled).read_text() == planfiles.render(pulled.sections())
    assert_valid(session)


# --- stale files -----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["complete", "discard"])
def test_stale_file_holding_nothing_new_is_deleted(session, make_plan, sessions_dir, how):
    make_plan(session)
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Halfway there")
    if how == "complete":
        plan = services.plan_complete(session_name=session.name, outcome="Done.").plan
    else:
        plan = services.plan_discard(session_name=session.name, reason="Obsolete").plan
    # Killed between the commit and the file's deletion: the file is the last one written,
    # and nobody edited it since. No text is at stake, so it is no fault (as a copy left on
    # a server the plan was completed elsewhere from); the repair still removes it.
    planfiles.write_plan(session.name, plan.id, plan.sections())
    path = plan_file(sessions_dir, plan)
    assert_valid(session)

    assert summary(repair.repair_all(apply=False)) == [(session.name, "delete_stale", f"{plan.id}.txt")]
    assert path.exists()

    repair.repair_all(apply=True)

    assert not path.exists()
    assert not (sessions_dir / session.name / planfiles.PRESERVED_DIR).exists()
    assert [(e["plan"], e["action"]) for e in repaired_events(session)] == [(plan.id, "delete_stale")]
    assert_valid(session)


def test_stale_file_with_text_the_database_lacks_is_kept_aside(session, complete_plan, sessions_dir):
    plan, text = completed_with_file(session, complete_plan)
    path = plan_file(sessions_dir, plan)
    edited = text + "\nA finding the agent wrote after completing\n"
    path.write_text(edited)
    assert_invalid(session, "no_orphaned_files", f"{plan.id}.txt")

    dry = repair.repair_all(apply=False)
    assert summary(dry) == [(session.name, "preserve", f"{plan.id}.txt")]
    assert "text the database lacks" in dry[0].detail
    assert path.read_text() == edited

    applied = repair.repair_all(apply=True)

    assert summary(applied) == [(session.name, "preserve", f"{plan.id}.txt")]
    assert not path.exists()
    kept = list((sessions_dir / session.name / planfiles.PRESERVED_DIR).iterdir())
    assert len(kept) == 1 and kept[0].name.startswith(plan.id)
    assert kept[0].read_text() == edited
    [event] = repaired_events(session)
    assert event["plan"] == plan.id and event["action"] == "preserve"
    assert event["kept_as"] == f"{planfiles.PRESERVED_DIR}/{kept[0].name}"
    assert_valid(session)
    assert Plan.objects.get(id=plan.id).notes == plan.notes  # the database copy is untouched


def test_text_above_the_first_heading_counts_as_new_text(session, complete_plan, sessions_dir):
    plan, text = completed_with_file(session, complete_plan)
    plan_file(sessions_dir, plan).write_text("TODO: tell the user\n" + text)

    assert summary(repair.repair_all(apply=True)) == [(session.name, "preserve", f"{plan.id}.txt")]


def test_two_preserved_copies_of_one_plan_do_not_overwrite_each_other(session, complete_plan, sessions_dir):
    plan, text = completed_with_file(session, complete_plan)
    path = plan_file(sessions_dir, plan)
    path.write_text(text + "\nfirst extra\n")
    repair.repair_all(apply=True)
    path.write_text(text + "\nsecond extra\n")
    repair.repair_all(apply=True)

    kept = sorted(p.read_text() for p in (sessions_dir / session.name / planfiles.PRESERVED_DIR).iterdir())
    assert kept == sorted([text + "\nfirst extra\n", text + "\nsecond extra\n"])


def test_file_of_an_unknown_plan_is_kept_aside(session, make_plan, sessions_dir):
    make_plan(session)
    # As a killed add leaves it: the file was written, the transaction never committed.
    orphan = sessions_dir / session.name / "plans" / "zz9zz.txt"
    orphan.write_text(planfiles.render(plan_fields(goal="A plan nobody was told about")))
    assert_invalid(session, "no_orphaned_files", "zz9zz.txt")

    actions = repair.repair_all(apply=True)

    assert summary(actions) == [(session.name, "preserve", "zz9zz.txt")]
    assert "no such plan" in actions[0].detail
    assert not orphan.exists()
    [kept] = (sessions_dir / session.name / planfiles.PRESERVED_DIR).iterdir()
    assert "A plan nobody was told about" in kept.read_text()
    assert [(e["plan"], e["action"]) for e in repaired_events(session)] == [(None, "preserve")]
    assert_valid(session)


def test_file_named_after_another_sessions_plan_is_not_judged_by_that_plan(session, make_plan, sessions_dir):
    other = services.session_create()
    foreign = make_plan(other, goal="Belongs to the other session")
    copy = sessions_dir / session.name / "plans" / f"{foreign.id}.txt"
    copy.write_text(planfiles.render(foreign.sections()))

    actions = repair.session_repair(session_name=session.name, apply=True)

    # Its text matches the other session's plan, but in this session it is an unknown plan.
    assert summary(actions) == [(session.name, "preserve", f"{foreign.id}.txt")]
    assert plan_file(sessions_dir, foreign).exists()
    assert [(e["plan"], e["action"]) for e in repaired_events(session)] == [(None, "preserve")]


# --- what an import left -----------------------------------------------------------------


def test_a_session_folder_whose_session_is_not_in_the_database_is_kept_aside(db, sessions_dir):
    """As an import killed by an earlier 9plan left it: its files, and no session."""
    plans = sessions_dir / "brave-amber-otter" / "plans"
    plans.mkdir(parents=True)
    (plans / "k3x9q.txt").write_text(planfiles.render(plan_fields(goal="Imported, never committed")))
    (plans / "k3x9r.txt").write_text("")
    listed = run_repair()
    assert "would repair: brave-amber-otter: preserve k3x9q.txt (no such session in the database;" in listed
    assert "delete_stale k3x9r.txt" in listed and "Nothing to repair" not in listed
    assert sorted(p.name for p in plans.iterdir()) == ["k3x9q.txt", "k3x9r.txt"]

    run_repair("--apply")

    assert list(plans.iterdir()) == []
    [kept] = (sessions_dir / "brave-amber-otter" / planfiles.PRESERVED_DIR).iterdir()
    assert "Imported, never committed" in kept.read_text()
    # No session, so no event log to write to: the repairs are only logged.
    assert not Event.objects.exists()
    assert "Nothing to repair." in run_repair()


def test_what_an_unfinished_import_of_a_committed_session_left_aside_goes_into_place(session, make_plan, sessions_dir):
    """As an import killed between its commit and moving its files leaves it."""
    from sessions_app.maintenance.export_import.staging import ImportFolder

    plan, kept = make_plan(session), make_plan(session)
    plans = sessions_dir / session.name / "plans"
    os.unlink(plans / f"{plan.id}.txt")
    (plans / f"{kept.id}.txt").write_text(planfiles.render({**kept.sections(), "notes": "the agent's since"}))
    aside = ImportFolder(session.name)
    aside.write(plan.id, planfiles.render({**plan.sections(), "notes": "edited before the export"}))
    aside.write(kept.id, planfiles.render(kept.sections()))
    aside.close()  # the lock goes, as when its process is killed

    actions = repair.repair_all(apply=True)

    assert summary(actions) == [(session.name, "clear_import", aside.name)]
    assert not aside.path.exists()
    assert "edited before the export" in (plans / f"{plan.id}.txt").read_text()
    # The file the session's work wrote since stays; the copy from the import is kept aside.
    assert "the agent's since" in (plans / f"{kept.id}.txt").read_text()
    [copy] = (sessions_dir / session.name / planfiles.PRESERVED_DIR).iterdir()
    assert copy.name.startswith(kept.id)
    assert [e["action"] for e in repaired_events(session)] == ["clear_import"]
    assert repaired_events(session)[0]["moved"] == 1 and repaired_events(session)[0]["kept_aside"] == 1
    assert_valid(session)


def test_an_import_still_running_is_left_to_finish(db, sessions_dir):
    from sessions_app.maintenance.export_import.staging import ImportFolder

    running = ImportFolder("brave-amber-otter")
    running.write("k3x9q", planfiles.render(plan_fields()))
    try:
        assert repair.repair_all(apply=True) == []
        assert running.path.exists()
    finally:
        running.close()
    assert summary(repair.repair_all(apply=True)) == [("brave-amber-otter", "clear_import", running.name)]
    assert not running.path.exists() and not (sessions_dir / "brave-amber-otter").exists()


# --- temporary files -------------------------------------------------------------------


def test_old_temp_file_is_removed_and_a_fresh_one_left_alone(session, make_plan, sessions_dir):
    make_plan(session)
    plans = sessions_dir / session.name / "plans"
    old = plans / f"{planfiles.TEMP_PREFIX}old123.txt"
    fresh = plans / f"{planfiles.TEMP_PREFIX}new456.txt"
    old.write_text("# Context\nhalf a wri")
    fresh.write_text("# Context\nbeing writ")
    os.utime(old, (OLD, OLD))
    assert_invalid(session, "no_orphaned_files", old.name)
    assert not any(fresh.name in issue for issue in invariants.check_invariants(session.name).issues)

    assert summary(repair.repair_all(apply=False)) == [(session.name, "remove_temp", old.name)]
    assert old.exists()

    repair.repair_all(apply=True)

    assert not old.exists()
    assert fresh.read_text() == "# Context\nbeing writ"
    assert [e["action"] for e in repaired_events(session)] == ["remove_temp"]
    assert_valid(session)


# --- search index ----------------------------------------------------------------------


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the FTS5 index exists on SQLite only")
def test_search_index_drift_is_reported_and_rebuilt(session, complete_plan):
    kept = complete_plan(session, goal="Invoice models", outcome="Added Invoice")
    lost = complete_plan(session, goal="Payment gateway", outcome="Stripe adapter")
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {search.FTS_TABLE} WHERE plan_id = %s", [lost.id])
    # A search of every session reads the shared index, which lost the plan; a search of
    # this small session reads its own plans and still finds it.
    assert queries.history_search("gateway", session_name=None) == []
    assert [h.plan.id for h in queries.history_search("gateway", session_name=session.name)] == [lost.id]
    assert_invalid(session, "search_index_in_sync", "1 entries", "2 completed")

    assert summary(repair.repair_all(apply=False)) == [("*", "reindex", search.FTS_TABLE)]

    repair.repair_all(apply=True)

    assert [h.plan.id for h in queries.history_search("gateway", session_name=None)] == [lost.id]
    assert [h.plan.id for h in queries.history_search("invoice", session_name=None)] == [kept.id]
    assert [(e["action"], e["indexed"], e["completed"]) for e in repaired_events(session)] == [("reindex", 1, 2)]
    assert_valid(session)


# --- robustness ------------------------------------------------------------------------


def test_a_file_that_cannot_be_fixed_does_not_stop_the_others(session, make_plan, complete_plan, sessions_dir):
    fine = services.session_create()
    stale, _ = completed_with_file(session, complete_plan, outputs="x")
    plan_file(sessions_dir, stale).write_text("text the database lacks")
    # preserved/ cannot be made (a file is in its place): the stale file cannot be kept aside.
    (sessions_dir / session.name / "preserved").write_text("a file where the folder should be")
    ok = make_plan(fine)
    plan_file(sessions_dir, ok).unlink()

    actions = repair.repair_all(apply=True)

    failed = [a for a in actions if a.failed]
    assert [(a.session, a.kind, a.target) for a in failed] == [(session.name, "preserve", f"{stale.id}.txt")]
    assert "FAILED" in str(failed[0])
    assert plan_file(sessions_dir, stale).read_text() == "text the database lacks"
    assert plan_file(sessions_dir, ok).exists()
    assert repaired_events(session) == []  # nothing is logged as repaired that was not
    assert [e["action"] for e in repaired_events(fine)] == ["rerender"]


# --- start-up -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_mcp_start_up_repairs_before_the_first_tool_call(make_plan, sessions_dir, subprocess_env, tmp_path):
    session = services.session_create()
    plan = make_plan(session, goal="Survive a crash")
    path = plan_file(sessions_dir, plan)
    path.unlink()
    leftover = sessions_dir / session.name / "plans" / f"{planfiles.TEMP_PREFIX}dead.txt"
    leftover.write_text("half")
    os.utime(leftover, (OLD, OLD))

    server = StdioServer(subprocess_env, tmp_path / "mcp.stderr")
    try:
        server.initialize()
        result = server.call("9plan_admin_validate", {"session_name": session.name})
    finally:
        server.close()

    assert result["isError"] is False, result
    assert result["structuredContent"]["valid"] is True, result
    assert path.read_text() == planfiles.render(plan.sections())
    assert not leftover.exists()
    assert sorted(e["action"] for e in repaired_events(session)) == ["remove_temp", "rerender"]
