"""Plan files are a local copy: an agent's edit is applied as a change against the text the
file was written from (its base), so text written since by anyone else (another server,
another worker, a reviewer) is never overwritten by a stale copy; a section changed on both
sides keeps both texts and says so; a reclaimed worker's file edits are fenced off."""

from __future__ import annotations

import pytest
from django.test import override_settings

from sessions_app import planfiles, services
from sessions_app.errors import LeaseLost
from sessions_app.maintenance import invariants, repair
from sessions_app.models import Event, Plan, Revision
from sessions_app.planfiles import bases
from sessions_app.planfiles import text as plan_text
from sessions_app.reads import queries
from tests.conftest import plan_fields
from tests.sessions_app.conftest import plan_file

pytestmark = pytest.mark.django_db


def edit_notes(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def notes_of(plan_id: str) -> str:
    return Plan.objects.get(id=plan_id).notes


def stale_copy_elsewhere(session, plan, note: str) -> str:
    """A note written where this machine's file does not see it (another server with its own
    folder): the database moves on, this file and its base stay as they were."""
    path = plan_file(planfiles.sessions_root(), plan)
    before = path.read_text(), planfiles.read_base(session.name, plan.file_stem)
    services.plan_note(session_name=session.name, text=note)
    path.write_text(before[0])
    planfiles.write_base(session.name, plan.file_stem, before[1])
    return before[0]


def test_a_file_and_its_base_are_written_together_and_removed_together(session, make_plan, sessions_dir):
    plan = make_plan(session)
    path = plan_file(sessions_dir, plan)
    # A first file's base is its text; a later write's is a record of the write.
    assert planfiles.read_base(session.name, plan.id) == path.read_text() == planfiles.render(plan.sections())
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="A note")
    base, plan = bases.load(planfiles.read_base(session.name, plan.id)), Plan.objects.get(id=plan.id)
    assert base.written == path.read_text() == planfiles.render(plan.sections())
    assert (base.version, base.inode) == (plan.version, path.stat().st_ino)
    services.plan_complete(session_name=session.name, outcome="Done.")
    assert not path.exists() and planfiles.read_base(session.name, plan.id) is None


def test_a_stale_copy_nobody_edited_is_never_taken_in(session, make_plan, sessions_dir):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name)
    stale_copy_elsewhere(session, plan, "Written on the other server")

    services.plan_note(session_name=session.name, text="Written here")

    assert notes_of(plan.id) == "Written on the other server\n\nWritten here"
    assert not Event.objects.filter(plan_id=plan.id, kind=Event.Kind.FILE_EDITS_KEPT).exists()
    # The copy is rewritten from the database with the write.
    assert planfiles.parse(plan_file(sessions_dir, plan).read_text()).sections["notes"] == notes_of(plan.id)


def test_an_edit_of_a_stale_copy_keeps_what_others_wrote_in_other_sections(session, make_plan, sessions_dir):
    make_plan(session, approach="1. Read the schema")
    plan = services.plan_pull(session_name=session.name)
    stale_copy_elsewhere(session, plan, "A note from elsewhere")
    path = plan_file(sessions_dir, plan)
    edit_notes(path, "1. Read the schema", "1. Read the schema\n2. Write the models")

    written = services.plan_complete(session_name=session.name, outcome="Done.")

    stored = Plan.objects.get(id=plan.id)
    assert stored.approach == "1. Read the schema\n2. Write the models"
    assert stored.notes == "A note from elsewhere"  # not rolled back by the stale file
    assert written.file_notice == ""
    kept = Event.objects.get(plan_id=plan.id, kind=Event.Kind.FILE_EDITS_KEPT)
    assert kept.detail == {"sections": ["approach"]}


def test_notes_appended_on_both_sides_are_both_kept_and_reported(session, make_plan, sessions_dir):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="First finding")
    stale_copy_elsewhere(session, plan, "Second finding, on the other server")
    path = plan_file(sessions_dir, plan)
    edit_notes(path, "First finding", "First finding\n\nThird finding, in the file")

    written = services.plan_note(session_name=session.name, text="Fourth finding")

    assert notes_of(plan.id) == (
        "First finding\n\nSecond finding, on the other server\n\nThird finding, in the file\n\nFourth finding"
    )
    assert "Notes changed both in the plan file and elsewhere" in written.file_notice
    kept = Event.objects.get(plan_id=plan.id, kind=Event.Kind.FILE_EDITS_KEPT)
    assert kept.detail == {"sections": ["notes"], "both_changed": ["notes"]}
    assert Revision.objects.filter(plan_id=plan.id, kind=Revision.Kind.FILE_EDIT).count() == 1


def test_a_section_rewritten_on_both_sides_keeps_both_texts(session, make_plan, sessions_dir):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Draft")
    path = plan_file(sessions_dir, plan)
    copy, base = path.read_text(), planfiles.read_base(session.name, plan.id)
    services.plan_note(session_name=session.name, text="Rewritten elsewhere", mode="replace")
    path.write_text(copy.replace("Draft", "Rewritten in the file"))
    planfiles.write_base(session.name, plan.id, base)

    written = services.plan_defer(session_name=session.name, reason="later")

    notes = notes_of(plan.id)
    assert notes.startswith(f"Rewritten elsewhere\n\n{plan_text.BOTH_KEPT}\nRewritten in the file")
    assert "both texts are kept" in written.file_notice


def test_a_restore_is_not_undone_by_the_file(session, make_plan, sessions_dir):
    """A reviewer's restore is text written since the file, like anyone's."""
    make_plan(session, goal="Original goal")
    plan = services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="v1 notes")
    services.plan_note(session_name=session.name, text="v2 notes", mode="replace")
    path = plan_file(sessions_dir, plan)
    copy, base = path.read_text(), planfiles.read_base(session.name, plan.id)
    first = Revision.objects.filter(plan_id=plan.id).order_by("number").first()
    services.plan_restore(session_name=session.name, plan_id=plan.id, number=first.number, actor="staff/admin")
    restored = notes_of(plan.id)
    path.write_text(copy)  # this machine's copy, from before the restore
    planfiles.write_base(session.name, plan.id, base)

    services.plan_note(session_name=session.name, text="after the restore")

    assert notes_of(plan.id) == f"{restored}\n\nafter the restore".lstrip()


@override_settings(NINEPLAN_PLAN_FILES="off")
def test_with_files_off_nothing_is_written_and_everything_works(db, sessions_dir):
    session = services.session_create(task_description="Remote only")
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="First"))
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Second"))
    plan = services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="A finding")
    services.plan_defer(session_name=session.name, reason="later")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="Done.")
    again = services.plan_pull(session_name=session.name)
    assert again.id == plan.id and "A finding" in again.notes
    assert again.pull_result.file_text is None  # no file: the answer renders the database's text
    assert not (sessions_dir / session.name).exists()
    assert invariants.check_invariants(session.name).valid
    assert queries.plan_file_text(again) == (planfiles.render(again.sections()), "")
    assert repair.repair_all(apply=True) == []
    assert not sessions_dir.exists() or list(sessions_dir.iterdir()) == []


# --- fencing -------------------------------------------------------------------------------


def test_a_reclaimed_workers_file_edits_are_a_late_write_not_the_next_holders(session, make_plan, sessions_dir, now):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name, worker="w1")
    services.plan_note(session_name=session.name, worker="w1", text="w1's note")
    old_path = plan_file(sessions_dir, plan)
    edit_notes(old_path, "w1's note", "w1's note\n\nw1 edited the file before losing it")
    now.advance(session.lease_seconds + 1)

    again = services.plan_pull(session_name=session.name, worker="w2")

    assert again.id == plan.id and again.file_stem == f"{plan.id}-1"
    new_path = plan_file(sessions_dir, again)
    assert new_path.name == f"{plan.id}-1.txt" and new_path != old_path
    assert "w1 edited the file" not in notes_of(plan.id)
    assert "w1 edited the file" not in new_path.read_text()
    [late] = queries.late_writes(plan.id)
    assert late.worker == "w1" and late.op == "file" and "w1 edited the file before losing it" in late.text
    # Later edits to the old path are never read as w2's.
    edit_notes(old_path, "w1's note", "w1's note\n\nstill typing after the reclaim")
    services.plan_note(session_name=session.name, worker="w2", text="w2's note")
    services.plan_complete(session_name=session.name, worker="w2", outcome="Done by w2.")
    done = Plan.objects.get(id=plan.id)
    assert "still typing" not in done.notes and "w2's note" in done.notes
    assert not Event.objects.filter(plan_id=plan.id, kind=Event.Kind.FILE_EDITS_KEPT).exists()
    # The edit after the reclaim is a late write of w1's too, kept once, where reviewers see it.
    newest, first = queries.late_writes(plan.id)
    assert (newest.worker, newest.op) == ("w1", "file") and "still typing after the reclaim" in newest.text
    assert first == late
    # Its text is kept: the old copy is no fault, and the repair removes it.
    assert invariants.check_invariants(session.name).valid
    actions = repair.repair_all(apply=True)
    assert [(a.kind, a.target) for a in actions] == [("delete_stale", f"{plan.id}.txt")]
    assert invariants.check_invariants(session.name).valid


def test_an_earlier_claims_file_nobody_edited_is_no_fault(session, make_plan, sessions_dir, now):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name, worker="w1")
    now.advance(session.lease_seconds + 1)
    services.plan_pull(session_name=session.name, worker="w2")
    assert plan_file(sessions_dir, plan).name == f"{plan.id}-1.txt"
    assert (sessions_dir / session.name / "plans" / f"{plan.id}.txt").exists()
    assert invariants.check_invariants(session.name).valid
    with pytest.raises(LeaseLost):
        services.plan_note(session_name=session.name, worker="w1", text="too late")
    assert [(a.kind, a.target) for a in repair.repair_all(apply=True)] == [("delete_stale", f"{plan.id}.txt")]


def test_a_workers_write_after_its_pull_reads_its_file_ahead_without_a_statement(session, make_plan, sessions_dir):
    """The pull tells this process which file the worker holds: the note reads it ahead of
    its transaction with no query of its own, and the edit in it is taken in."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    make_plan(session)
    plan = services.plan_pull(session_name=session.name)
    edit_notes(plan_file(sessions_dir, plan), "# Notes\n", "# Notes\nFound in the file\n")

    with CaptureQueriesContext(connection) as captured:
        services.plan_note(session_name=session.name, text="Said in the call")

    first = captured.captured_queries[0]["sql"]
    assert first.startswith(("BEGIN", "SAVEPOINT")), first  # the transaction (a savepoint in the test's)
    assert notes_of(plan.id) == "Found in the file\n\nSaid in the call"


def test_a_wrong_guess_of_the_workers_file_is_read_again_inside_the_write(session, make_plan, sessions_dir):
    """What this process remembers of the worker's file is only a guess: when it names
    another plan (the claim moved on elsewhere), the write reads the right file."""
    from sessions_app import access
    from sessions_app.services import file_edits

    plan = make_plan(session)
    other = make_plan(session, goal="Another plan")
    assert services.plan_pull(session_name=session.name).id == plan.id
    edit_notes(plan_file(sessions_dir, plan), "# Notes\n", "# Notes\nFound in the file\n")
    file_edits.remember_held_file(session.name, access.current().claimant, "default", other.id)

    services.plan_note(session_name=session.name, text="Said in the call")

    assert notes_of(plan.id) == "Found in the file\n\nSaid in the call"
    assert notes_of(other.id) == ""


# --- what the file gains while a call writes it ------------------------------------------
#
# Another process may write in the plan file after the call read it and before its new file
# takes the path (here: while the call writes the file's base, which comes in between).


@pytest.fixture
def meanwhile(monkeypatch):
    """``meanwhile(change)``: ``change()`` runs once, the next time a base is written or removed."""
    from sessions_app.planfiles import file_io

    real = file_io.write_base

    def arrange(change):
        def write_base(*args):
            monkeypatch.setattr(file_io, "write_base", real)
            change()
            real(*args)

        monkeypatch.setattr(file_io, "write_base", write_base)

    return arrange


def add_line(path, line: str) -> None:
    with open(path, "a") as file:
        file.write(f"{line}\n")


def test_a_line_added_while_a_note_is_written_is_taken_in_by_the_next_write(active, sessions_dir, meanwhile):
    path = plan_file(sessions_dir, active)
    meanwhile(lambda: add_line(path, "added while the note was written"))

    services.plan_note(session_name=active.session_id, text="First note")

    assert path.read_text().endswith("First note\nadded while the note was written\n")
    services.plan_note(session_name=active.session_id, text="Second note")
    assert notes_of(active.id) == "First note\nadded while the note was written\n\nSecond note"
    assert not (sessions_dir / active.session_id / planfiles.PRESERVED_DIR).exists()


def test_a_file_rewritten_while_a_note_is_written_is_kept_aside_and_reported(active, sessions_dir, meanwhile):
    path = plan_file(sessions_dir, active)
    rewritten = path.read_text().replace("Model invoices", "Model invoices and credit notes")
    meanwhile(lambda: path.write_text(rewritten))  # in place: the same file, truncated and written again

    services.plan_note(session_name=active.session_id, text="A note")

    assert notes_of(active.id) == "A note"
    event = Event.objects.get(plan_id=active.id, kind=Event.Kind.FILE_EDITS_KEPT)
    assert event.actor == "file" and event.detail["problem"] == planfiles.displaced.CHANGED
    assert (sessions_dir / active.session_id / event.detail["kept_as"]).read_text() == rewritten
    assert planfiles.parse(path.read_text()).sections["notes"] == "A note"


def test_an_undone_write_puts_the_file_back_with_the_lines_added_meanwhile(active, sessions_dir, meanwhile):
    from sessions_app.services import file_edits
    from sessions_app.services.write_kit import touch
    from sessions_app.store import transactions

    path = plan_file(sessions_dir, active)
    found = path.read_text()
    meanwhile(lambda: add_line(path, "added while the file was written"))
    with pytest.raises(RuntimeError), transactions.write() as undo:
        plan = Plan.objects.get(id=active.id)
        read = planfiles.read_plan_file(active.session_id, plan.file_stem)
        plan.notes = "Rolled back"
        touch(plan)
        file_edits.write_file(undo, plan, read)
        add_line(path, "added after the write")
        raise RuntimeError("the transaction fails after the file is written")

    assert path.read_text() == found + "added while the file was written\nadded after the write\n"
    services.plan_note(session_name=active.session_id, text="Next note")
    assert notes_of(active.id) == "added while the file was written\nadded after the write\n\nNext note"


def test_a_line_added_before_a_completed_plans_file_is_removed_is_kept_aside(active, sessions_dir, meanwhile):
    path = plan_file(sessions_dir, active)
    meanwhile(lambda: add_line(path, "added after the file was read"))  # the delete removes the base first

    written = services.plan_complete(session_name=active.session_id, outcome="Done.")

    assert not path.exists()
    event = Event.objects.get(plan_id=active.id, kind=Event.Kind.FILE_EDITS_KEPT)
    kept = sessions_dir / active.session_id / event.detail["kept_as"]
    assert kept.read_text().endswith("added after the file was read\n")
    assert str(kept) in written.file_notice
    assert "added after the file was read" not in notes_of(active.id)


# --- bases that lie, files without a base ---------------------------------------------------

UNREADABLE_BASES = {
    "a number past a float's range": '{"version": 1e999, "written": "x", "inode": 1}',
    "nesting deeper than the decoder goes": '{"version": ' + "[" * 100_000,
}


@pytest.mark.parametrize("stored", UNREADABLE_BASES.values(), ids=UNREADABLE_BASES.keys())
def test_an_unreadable_base_is_no_base_and_every_write_goes_through(session, make_plan, sessions_dir, stored):
    for goal in ("First", "Second", "Third"):
        make_plan(session, goal=goal)
    plan = services.plan_pull(session_name=session.name)

    def lie() -> None:
        planfiles.write_base(session.name, Plan.objects.get(id=plan.id).file_stem, stored)

    lie()
    path = plan_file(sessions_dir, plan)
    # The file, edited where the database's text is whole, adds to it.
    edit_notes(path, "# Notes\n", "# Notes\nThe agent's edit\n")
    services.plan_note(session_name=session.name, text="noted")
    assert "The agent's edit" in notes_of(plan.id) and "noted" in notes_of(plan.id)
    lie()
    services.plan_defer(session_name=session.name, reason="later", position="back")
    second = services.plan_pull(session_name=session.name)
    planfiles.write_base(session.name, second.file_stem, stored)
    services.plan_complete(session_name=session.name, outcome="Done.")
    assert Plan.objects.get(id=second.id).status == Plan.Status.COMPLETED
    third = services.plan_pull(session_name=session.name)
    planfiles.write_base(session.name, third.file_stem, stored)
    services.plan_discard(session_name=session.name, reason="not needed")
    assert Plan.objects.get(id=third.id).status == Plan.Status.DISCARDED


@pytest.mark.parametrize("stored", UNREADABLE_BASES.values(), ids=UNREADABLE_BASES.keys())
def test_validate_names_an_unreadable_base_and_repair_removes_it(session, make_plan, sessions_dir, stored):
    plan = make_plan(session)
    planfiles.write_base(session.name, plan.file_stem, stored)
    result = invariants.check_invariants(session.name)
    assert not result.valid
    assert any(str(planfiles.base_path(session.name, plan.file_stem)) in issue for issue in result.issues)
    # The start-up repair passes over a session whose files are all there; one repaired removes it.
    repaired = repair.session_repair(session_name=session.name, apply=True)
    assert [(a.kind, a.target) for a in repaired] == [("forget_base", f".bases/{plan.id}.txt")]
    assert planfiles.read_base(session.name, plan.file_stem) is None
    assert invariants.check_invariants(session.name).valid


def newer_text_with_files_off(session, note: str) -> None:
    """A server with plan files off writes the plan: the database moves on, the file does not."""
    with override_settings(NINEPLAN_PLAN_FILES="off"):
        services.plan_note(session_name=session.name, text=note)


def test_a_file_without_a_base_never_overwrites_newer_database_text(session, make_plan, sessions_dir):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name)
    path = plan_file(sessions_dir, plan)
    planfiles.write_base(session.name, plan.file_stem, None)
    newer_text_with_files_off(session, "Written by the server with files off")
    # The agent rewrites the Notes of its old copy.
    edit_notes(path, "# Notes\n", "# Notes\nRewritten by the agent\n")
    services.plan_note(session_name=session.name, text="next")
    notes = notes_of(plan.id)
    assert "Written by the server with files off" in notes and "Rewritten by the agent" in notes
    assert notes.index("Written by the server") < notes.index(plan_text.BOTH_KEPT) < notes.index("Rewritten by")
    event = Event.objects.filter(plan_id=plan.id, kind=Event.Kind.FILE_EDITS_KEPT).last()
    assert event.detail["both_changed"] == ["notes"]


def test_an_old_copy_without_a_base_is_not_taken_in_and_an_append_to_a_full_copy_is(session, make_plan, sessions_dir):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name)
    path = plan_file(sessions_dir, plan)
    old = path.read_text()
    planfiles.write_base(session.name, plan.file_stem, None)
    newer_text_with_files_off(session, "Written elsewhere")
    services.plan_note(session_name=session.name, text="after")  # the untouched old copy adds nothing
    assert notes_of(plan.id).count("Written elsewhere") == 1 and plan_text.BOTH_KEPT not in notes_of(plan.id)
    assert path.read_text() != old
    planfiles.write_base(session.name, plan.file_stem, None)
    path.write_text(path.read_text().rstrip("\n") + "\n\nAdded at the end by the agent\n")
    services.plan_note(session_name=session.name, text="last")
    notes = notes_of(plan.id)
    assert "Added at the end by the agent" in notes and plan_text.BOTH_KEPT not in notes


def test_a_late_edit_of_a_fenced_file_is_a_late_write_on_the_plans_next_write(session, make_plan, sessions_dir, now):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name, worker="w1")
    old_path = plan_file(sessions_dir, plan)
    now.advance(session.lease_seconds + 1)
    services.plan_pull(session_name=session.name, worker="w2")
    assert queries.late_writes(plan.id) == []  # nothing edited before the reclaim
    edit_notes(old_path, "# Notes\n", "# Notes\nw1, after losing the plan\n")
    services.plan_note(session_name=session.name, worker="w2", text="w2's note")
    [late] = queries.late_writes(plan.id)
    assert (late.worker, late.op) == ("w1", "file") and "w1, after losing the plan" in late.text
    assert "w1, after losing the plan" not in notes_of(plan.id)
    # Kept once: the next write finds nothing new in the old file.
    services.plan_note(session_name=session.name, worker="w2", text="again")
    assert len(queries.late_writes(plan.id)) == 1
