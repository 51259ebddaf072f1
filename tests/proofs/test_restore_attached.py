"""Proves that a restore never throws away what it replaces: with a real `manage.py mcp`
server attached (the SDK's client over stdio), `nineplan_restore` run as a process is
refused and changes nothing; with --force it first backs up what it replaces, and restoring
that backup gives the session back. Without a terminal and without --yes it refuses; on a
terminal it asks, and anything but yes changes nothing. Both databases."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from django.db import connections
from mcp import Client, StdioServerParameters

from sessions_app.maintenance import backup
from tests.conftest import MANAGE, PYTHON, REPO, postgres_url
from tests.mcp_bridge.helpers import ok, plan_args
from tests.proofs.test_stdio_e2e import server_env
from tests.sessions_app.conftest import files_below

pytestmark = [pytest.mark.slow, pytest.mark.serial]

WAIT = 180


def run(env: dict[str, str], *args: str, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, MANAGE, *args], env=env, cwd=str(REPO), stdin=stdin, capture_output=True, text=True, timeout=WAIT
    )


def server(env: dict[str, str]) -> Client:
    return Client(StdioServerParameters(command=PYTHON, args=[MANAGE, "mcp"], env=env, cwd=str(REPO)))


def backups_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith("9plan-")) if folder.is_dir() else []


async def start_work(client: Client) -> tuple[str, str]:
    """A session created a minute before the restore, with a plan pulled: its name and plan id."""
    r = await client.call_tool("9plan_session_create", {"task_description": "Work done since the backup"})
    name = r.structured_content["session_name"]
    ok(await client.call_tool("9plan_queue_add", plan_args(goal="Keep this work")), name)
    return name, ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"]


async def resumed(client: Client, name: str):
    return await client.call_tool("9plan_session_resume", {"session_name": name})


@pytest.mark.anyio
async def test_on_sqlite_a_restore_under_a_server_is_refused_and_forced_it_keeps_a_backup_that_undoes_it(tmp_path):
    data = tmp_path / "data"
    env = server_env(data)
    database = data / "db.sqlite3"
    done = run(env, "nineplan_backup")
    assert done.returncode == 0, done.stderr
    [early] = backups_in(data / "backups")  # an empty 9plan, before any work

    with anyio.fail_after(WAIT):
        async with server(env) as client:
            name, plan_id = await start_work(client)
            files = files_below(data / "sessions")
            size = database.stat().st_size

            refused = await anyio.to_thread.run_sync(lambda: run(env, "nineplan_restore", str(early), "--yes"))

            assert refused.returncode == 1 and refused.stdout == ""
            assert "other 9plan process(es) have the database open: process " in refused.stderr
            assert "manage.py mcp" in refused.stderr and "Nothing was restored." in refused.stderr
            # Nothing changed: no backup made, the files and the server's session as they were.
            assert backups_in(data / "backups") == [early]
            assert files_below(data / "sessions") == files and database.stat().st_size == size
            ok(await resumed(client, name), name)

            forced = await anyio.to_thread.run_sync(
                lambda: run(env, "nineplan_restore", str(early), "--yes", "--force")
            )
            assert forced.returncode == 0, forced.stderr
            assert "--force: restoring while 1 other 9plan process(es) have the database open" in forced.stderr
            [before] = [p for p in backups_in(data / "backups") if p != early]
            assert f"What the restore replaces was backed up to {before}; to undo it" in forced.stdout
            assert backup.backup_verify(before)["database"] == backup.DB_FILE
            assert not (data / "sessions" / name).exists()

    undone = run(env, "nineplan_restore", str(before), "--yes")
    assert undone.returncode == 0, undone.stderr
    with anyio.fail_after(WAIT):
        async with server(env) as client:
            state = ok(await resumed(client, name), name)
            assert plan_id in str(state) and "Keep this work" in str(state)
    assert (data / "sessions" / name / "plans" / f"{plan_id}.txt").is_file()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_restore_under_a_server_is_refused_and_forced_it_keeps_a_backup_that_undoes_it(
    tmp_path, sessions_dir, settings
):
    env = {**server_env(tmp_path / "unused"), "NINEPLAN_SESSIONS_PATH": str(sessions_dir)}
    env["DATABASE_URL"] = postgres_url(settings.DATABASES["default"])
    # This test's own connections would count as a 9plan process's: only the server's and the
    # restore's are left open.
    for conn in connections.all():
        conn.close()
        conn.close_pool()
    anyio.run(postgres_restores, tmp_path, sessions_dir, env)


async def postgres_restores(tmp_path: Path, sessions_dir: Path, env: dict[str, str]) -> None:
    done = run(env, "nineplan_backup")
    assert done.returncode == 0, done.stderr
    [early] = backups_in(tmp_path / "backups")

    with anyio.fail_after(WAIT):
        async with server(env) as client:
            name, plan_id = await start_work(client)
            files = files_below(sessions_dir)

            refused = await anyio.to_thread.run_sync(lambda: run(env, "nineplan_restore", str(early), "--yes"))

            assert refused.returncode == 1 and refused.stdout == ""
            assert "other 9plan process(es) have the database open: connection " in refused.stderr
            assert backups_in(tmp_path / "backups") == [early]
            assert files_below(sessions_dir) == files
            ok(await resumed(client, name), name)

            forced = await anyio.to_thread.run_sync(
                lambda: run(env, "nineplan_restore", str(early), "--yes", "--force")
            )
            assert forced.returncode == 0, forced.stderr
            [before] = [p for p in backups_in(tmp_path / "backups") if p != early]
            assert f"What the restore replaces was backed up to {before}" in forced.stdout
            # The plan files it replaced are in that backup (the database is pg_dump's).
            assert files_below(before / backup.SESSIONS_DIR) == files

    undone = run_once_alone(env, "nineplan_restore", str(before), "--yes")
    assert undone.returncode == 0, undone.stderr
    assert files_below(sessions_dir) == files
    with anyio.fail_after(WAIT):
        async with server(env) as client:
            assert plan_id in str(ok(await resumed(client, name), name))


def run_once_alone(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """The command, run again while PostgreSQL still lists the stopped server's connection:
    a backend ends a moment after its client does."""
    for _ in range(60):
        done = run(env, *args)
        if "have the database open" not in done.stderr:
            return done
        time.sleep(0.5)
    return done


def test_without_a_terminal_and_without_yes_a_restore_refuses_and_on_a_terminal_it_asks(tmp_path):
    data = tmp_path / "data"
    env = server_env(data)
    done = run(env, "nineplan_backup")
    assert done.returncode == 0, done.stderr
    [early] = backups_in(data / "backups")
    (data / "sessions" / "mine.txt").write_text("kept", encoding="utf-8")

    refused = run(env, "nineplan_restore", str(early))
    assert refused.returncode == 1
    assert "its input is not a terminal to ask on: run it again with --yes" in refused.stderr
    assert backups_in(data / "backups") == [early] and (data / "sessions" / "mine.txt").exists()

    # A real terminal answering no.
    leader, follower = os.openpty()
    try:
        os.write(leader, b"n\n")
        asked = run(env, "nineplan_restore", str(early), stdin=follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert asked.returncode == 1
    assert f"This replaces the database {data / 'db.sqlite3'} and the plan files in" in asked.stderr
    assert "Restore? [y/N] " in asked.stderr and "Not confirmed. Nothing was changed." in asked.stderr
    assert backups_in(data / "backups") == [early] and (data / "sessions" / "mine.txt").exists()
