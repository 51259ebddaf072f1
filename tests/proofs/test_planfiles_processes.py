"""Plan files met by real processes. A FIFO in place of a plan file never stalls another
session's writer, and a new server still starts, repairs around it and answers. Lines
another process appends to a plan's file while 9plan writes it are never lost.

Outcomes are asserted, never times. The reply timeouts of the worker and the stdio server
are only a safety net: before plan files were opened without blocking, the note below
hung while holding the write lock until someone wrote to the FIFO, and every other
writer of the database waited with it.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess

import pytest

from sessions_app import planfiles, services
from sessions_app.models import Event, Plan
from tests.conftest import PYTHON, REPO, plan_fields
from tests.proofs.test_concurrency import op, start_workers  # noqa: F401 (start_workers: a fixture)
from tests.sessions_app.conftest import plan_file
from tests.sessions_app.stdio_server import StdioServer

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]


def stuck_session(sessions_dir):
    """A session whose active plan's file is a FIFO nobody writes to."""
    session = services.session_create()
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Stuck"))
    plan = services.plan_pull(session_name=session.name)
    path = plan_file(sessions_dir, plan)
    path.unlink()
    os.mkfifo(path)
    return session, plan, path


def test_a_fifo_plan_file_never_stalls_another_sessions_writer(start_workers, sessions_dir):
    stuck, plan, fifo = stuck_session(sessions_dir)
    other = services.session_create()
    pool = start_workers(2)

    notes, adds = pool.race(
        [
            [op("plan_note", session_name=stuck.name, text=f"finding {i}") for i in range(5)],
            [op("plan_enqueue", session_name=other.name, **plan_fields(goal=f"Other {i}")) for i in range(5)],
        ]
    )

    assert [r["category"] for r in notes] == ["FILE_SYSTEM_ERROR"] * 5
    assert all("FIFO" in r["message"] for r in notes)
    assert all(r["ok"] for r in adds), adds
    assert Plan.objects.filter(session=other, status="queued").count() == 5
    assert Plan.objects.get(id=plan.id).notes == ""
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_server_starts_and_answers_beside_a_fifo_and_a_linked_folder(sessions_dir, subprocess_env, tmp_path):
    stuck, plan, fifo = stuck_session(sessions_dir)
    linked = services.session_create()
    user_folder = tmp_path / "users-documents"
    user_folder.mkdir()
    (user_folder / "abcde.txt").write_text("a user's file named like a plan file")
    plans = sessions_dir / linked.name / "plans"
    plans.rmdir()
    os.symlink(user_folder, plans)
    other = services.session_create()

    server = StdioServer(subprocess_env, tmp_path / "mcp.stderr")
    try:
        server.initialize()
        added = server.call("9plan_queue_add", {"session_name": other.name, **plan_fields()})
        validated = server.call("9plan_admin_validate", {"session_name": stuck.name})
        noted = server.call("9plan_plan_note", {"session_name": stuck.name, "text": "a finding"})
        refused = server.call("9plan_queue_add", {"session_name": linked.name, **plan_fields()})
    finally:
        server.close()

    assert added["isError"] is False, added
    assert validated["structuredContent"]["valid"] is False
    assert any("FIFO" in issue for issue in validated["structuredContent"]["issues"])
    assert noted["isError"] is True and noted["structuredContent"]["error"] == "FILE_SYSTEM_ERROR"
    assert refused["isError"] is True and "symbolic link" in refused["structuredContent"]["message"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(os.listdir(user_folder)) == ["abcde.txt"]
    assert (user_folder / "abcde.txt").read_text() == "a user's file named like a plan file"
    assert not (sessions_dir / linked.name / planfiles.PRESERVED_DIR).exists()
    log = (tmp_path / "mcp.stderr").read_text()
    assert "start-up repair left this alone" in log


APPENDER = REPO / "tests" / "proofs" / "file_appender.py"
# The appender's pause between lines, and the number of notes written while it runs: every
# note reads the file, then puts a new one in its place, so many appends land in between.
APPEND_INTERVAL = 0.002
NOTES = 150


def kept_aside_lines(session_name: str, plan: Plan, sessions_dir) -> set[str]:
    """The lines of every copy of the plan's file 9plan reported keeping aside."""
    lines = set()
    for event in Event.objects.filter(session_id=session_name, plan_id=plan.id, kind="file_edits_kept"):
        if "kept_as" in event.detail:
            lines |= set((sessions_dir / session_name / event.detail["kept_as"]).read_text().splitlines())
    return lines


def test_lines_another_process_appends_while_notes_are_written_are_all_kept(active, sessions_dir):
    path = plan_file(sessions_dir, active)
    appender = subprocess.Popen(
        [PYTHON, str(APPENDER), str(path), str(APPEND_INTERVAL), "appended line"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert appender.stdout.readline() == "ready\n", appender.stderr.read()
        for n in range(NOTES):
            services.plan_note(session_name=active.session_id, text=f"note {n}")
    finally:
        appender.send_signal(signal.SIGTERM)
        out, err = appender.communicate(timeout=30)
    assert appender.returncode == 0, err  # it never found the path missing
    appended = int(out)
    # The lines appended after the last note's write are in the file: the next write takes them in.
    services.plan_note(session_name=active.session_id, text="last note")

    notes = Plan.objects.get(id=active.id).notes
    found = set(notes.splitlines()) | kept_aside_lines(active.session_id, active, sessions_dir)
    lost = [n for n in range(appended) if f"appended line {n}" not in found]
    assert lost == [], f"{len(lost)} of {appended} appended lines lost: {lost[:20]}"
    assert [n for n in range(NOTES) if f"note {n}" not in notes.splitlines()] == []
    assert planfiles.parse(path.read_text()).sections["notes"] == notes
