"""A FIFO in place of a plan file, met by real processes: it never stalls another
session's writer, and a new server still starts, repairs around it and answers.

Outcomes are asserted, never times. The reply timeouts of the worker and the stdio server
are only a safety net: before plan files were opened without blocking, the note below
hung while holding the write lock until someone wrote to the FIFO, and every other
writer of the database waited with it.
"""

from __future__ import annotations

import os
import stat

import pytest

from sessions_app import planfiles, services
from sessions_app.models import Plan
from tests.conftest import plan_fields
from tests.sessions_app.conftest import plan_file
from tests.sessions_app.stdio_server import StdioServer
from tests.proofs.test_concurrency import op, start_workers  # noqa: F401 (start_workers: a fixture)

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
