"""A write killed before its commit, at each step of writing its plan file (a real process,
killed with SIGKILL exactly there by ``tests.proofs.killed_write``): the next write takes in
what the agent wrote in the file and nothing the killed write wrote. Nothing it was told had
been done is lost, nothing it was never told of appears, and the session stays valid."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from sessions_app import planfiles, services
from sessions_app.maintenance import invariants
from sessions_app.models import Event, Plan
from sessions_app.services import file_edits
from sessions_app.services.write_kit import touch
from sessions_app.store import transactions
from tests.conftest import PYTHON, REPO
from tests.sessions_app.conftest import plan_file

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]

STEPS = ["base", "file"]


def killed(env: dict[str, str], step: str, service: str, **kwargs) -> None:
    """Runs ``service`` in its own process, killed at ``step`` of its plan file write."""
    done = subprocess.run(
        [PYTHON, "-m", "tests.proofs.killed_write", step, service, json.dumps(kwargs)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, f"not killed at the {step} step (rc {done.returncode}):\n{done.stderr}"


def append_in_file(path, text: str) -> None:
    path.write_text(path.read_text().rstrip("\n") + f"\n\n{text}\n")


def notes_of(plan: Plan) -> str:
    return Plan.objects.get(id=plan.id).notes


def valid(session) -> None:
    result = invariants.check_invariants(session.name)
    assert result.valid, result.issues


@pytest.fixture
def pulled(session, make_plan, sessions_dir):
    make_plan(session)
    plan = services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Acknowledged note")
    return Plan.objects.get(id=plan.id)


@pytest.mark.parametrize("step", STEPS)
def test_a_killed_replace_is_not_taken_for_the_agent_s_edit(step, session, pulled, sessions_dir, subprocess_env):
    path = plan_file(sessions_dir, pulled)
    killed(subprocess_env, step, "plan_note", session_name=session.name, text="Never committed", mode="replace")
    assert notes_of(pulled) == "Acknowledged note"  # the kill came before the commit
    # The agent adds a line to the file (in place), then writes a note.
    append_in_file(path, "Added in the file")
    services.plan_note(session_name=session.name, text="Next note")

    assert notes_of(pulled) == "Acknowledged note\n\nAdded in the file\n\nNext note"
    assert planfiles.parse(path.read_text()).sections["notes"] == notes_of(pulled)
    valid(session)


@pytest.mark.parametrize("step", STEPS)
def test_an_edit_the_killed_write_took_in_is_taken_in_by_the_next(step, session, pulled, sessions_dir, subprocess_env):
    path = plan_file(sessions_dir, pulled)
    append_in_file(path, "Edited before the kill")
    killed(subprocess_env, step, "plan_note", session_name=session.name, text="Killed note")
    assert notes_of(pulled) == "Acknowledged note"

    services.plan_note(session_name=session.name, text="Next note")

    assert notes_of(pulled) == "Acknowledged note\n\nEdited before the kill\n\nNext note"
    kept = Event.objects.filter(plan_id=pulled.id, kind=Event.Kind.FILE_EDITS_KEPT)
    assert [e.detail for e in kept] == [{"sections": ["notes"]}]
    valid(session)


@pytest.mark.parametrize("step", STEPS)
def test_a_file_left_as_the_killed_write_made_it_is_no_edit(step, session, pulled, sessions_dir, subprocess_env):
    path = plan_file(sessions_dir, pulled)
    killed(subprocess_env, step, "plan_defer", session_name=session.name, reason="Killed defer")
    valid(session)  # the file is a copy nobody edited

    written = services.plan_complete(session_name=session.name, outcome="Done.")

    stored = Plan.objects.get(id=pulled.id)
    assert (stored.status, stored.notes, written.file_notice) == (Plan.Status.COMPLETED, "Acknowledged note", "")
    assert not Event.objects.filter(plan_id=pulled.id, kind=Event.Kind.FILE_EDITS_KEPT).exists()
    assert not path.exists()


def test_a_line_added_while_the_killed_write_wrote_is_taken_in_by_the_next(
    session, pulled, sessions_dir, subprocess_env
):
    # Added after the killed write read the file and before it put its own in place: the
    # line joined the end of the killed write's file, which is read as the file it found.
    path = plan_file(sessions_dir, pulled)
    killed(subprocess_env, "appended", "plan_note", session_name=session.name, text="Killed note")
    assert notes_of(pulled) == "Acknowledged note"
    assert path.read_text().endswith("Killed note\nAdded while the killed write wrote\n")

    services.plan_note(session_name=session.name, text="Next note")

    assert notes_of(pulled) == "Acknowledged note\n\nAdded while the killed write wrote\n\nNext note"
    valid(session)


def test_writes_killed_in_turn_lose_no_edit_and_bring_back_no_text(session, pulled, sessions_dir, subprocess_env):
    path = plan_file(sessions_dir, pulled)
    append_in_file(path, "First edit")
    killed(subprocess_env, "file", "plan_note", session_name=session.name, text="First killed note")
    append_in_file(path, "Second edit")
    killed(subprocess_env, "file", "plan_note", session_name=session.name, text="Second killed note")
    append_in_file(path, "Third edit")
    killed(subprocess_env, "base", "plan_note", session_name=session.name, text="Third killed note")

    services.plan_note(session_name=session.name, text="Next note")

    assert notes_of(pulled) == "Acknowledged note\n\nFirst edit\n\nSecond edit\n\nThird edit\n\nNext note"
    valid(session)


def test_a_killed_write_s_file_edited_in_another_section_keeps_both(session, pulled, sessions_dir, subprocess_env):
    path = plan_file(sessions_dir, pulled)
    killed(subprocess_env, "file", "plan_note", session_name=session.name, text="Killed note")
    path.write_text(path.read_text().replace("2. Write the models", "2. Write the models\n3. Add the views"))

    services.plan_note(session_name=session.name, text="Next note")

    stored = Plan.objects.get(id=pulled.id)
    assert stored.approach == "1. Read the schema\n2. Write the models\n3. Add the views"
    assert stored.notes == "Acknowledged note\n\nNext note"


def test_a_write_undone_after_a_killed_one_leaves_the_file_read_as_before(
    session, pulled, sessions_dir, subprocess_env
):
    path = plan_file(sessions_dir, pulled)
    append_in_file(path, "Edited before the kill")
    killed(subprocess_env, "file", "plan_note", session_name=session.name, text="Killed note")
    append_in_file(path, "Edited after the kill")
    # Held open, the killed write's file keeps its inode from being handed to the file the
    # undo puts back (a file system may reuse a freed one at once).
    held = os.open(path, os.O_RDONLY)
    # A write that puts its file in place and then fails: its undo puts the file back.
    with pytest.raises(RuntimeError), transactions.write() as undo:
        plan = Plan.objects.get(id=pulled.id)
        read = planfiles.read_plan_file(session.name, plan.file_stem)
        plan.notes = "Rolled back"
        touch(plan)
        file_edits.write_file(undo, plan, read)
        raise RuntimeError("the transaction fails after the file is written")
    assert "Rolled back" not in path.read_text()
    assert path.stat().st_ino != os.fstat(held).st_ino
    os.close(held)

    services.plan_note(session_name=session.name, text="Next note")

    assert notes_of(pulled) == "Acknowledged note\n\nEdited before the kill\n\nEdited after the kill\n\nNext note"
    valid(session)
