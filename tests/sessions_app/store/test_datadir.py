"""A data directory made ready (sessions_app/store/datadir.py): its folders made, the owner's
alone, and the database migrated only when it lacks migrations."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from sessions_app.store import datadir
from tests.conftest import MANAGE, PYTHON, REPO
from tests.mcp_bridge.helpers import plan_args
from validation.replay import server_environment


@pytest.mark.django_db
def test_an_up_to_date_database_lacks_no_migration_and_is_left_as_it_is(settings, tmp_path):
    settings.NINEPLAN_SESSIONS_PATH = tmp_path / "data" / "sessions"
    assert datadir.unapplied() == 0
    datadir.make_if_missing()
    assert datadir.unapplied() == 0
    # The folders are made all the same.
    assert settings.NINEPLAN_SESSIONS_PATH.is_dir()


@pytest.mark.django_db
def test_the_quick_check_agrees_with_the_migration_graph():
    from django.db.migrations.recorder import MigrationRecorder

    assert datadir.every_migration_recorded() and datadir.unapplied() == 0
    latest = MigrationRecorder.Migration.objects.filter(app="sessions_app").order_by("-name").first()
    assert latest is not None
    latest.delete()  # as if the database predated the newest migration (rolled back after the test)
    assert not datadir.every_migration_recorded()
    assert datadir.unapplied() == 1


@pytest.mark.django_db
def test_make_folders_makes_the_sessions_folder_and_keeps_what_is_in_it(settings, tmp_path):
    settings.NINEPLAN_SESSIONS_PATH = tmp_path / "a" / "b" / "sessions"
    datadir.make_folders()
    kept = settings.NINEPLAN_SESSIONS_PATH / "kept.txt"
    kept.write_text("mine", encoding="utf-8")
    datadir.make_folders()
    assert kept.read_text(encoding="utf-8") == "mine"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def fresh_env(data_dir: Path) -> dict[str, str]:
    """A user's shell with 9plan pointed at ``data_dir`` and every default taken: the
    database in it, the secret key generated beside it."""
    env = server_environment(data_dir)
    del env["DATABASE_URL"]
    return env


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_fresh_data_directory_and_its_database_are_the_owners_alone(tmp_path):
    data = tmp_path / "data"
    env = fresh_env(data)
    done = subprocess.run(
        [PYTHON, MANAGE, "migrate"], env=env, cwd=str(REPO), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert mode(data) == 0o700 and mode(data / "secret_key") == 0o600
    assert mode(data / "9plan.sqlite3") == 0o600

    # A server attached: SQLite's -wal and -shm beside the database, written by its writes.
    params = StdioServerParameters(command=PYTHON, args=[MANAGE, "mcp"], env=env, cwd=str(REPO))
    with anyio.fail_after(180):
        async with Client(params) as client:
            created = await client.call_tool("9plan_session_create", {"task_description": "private work"})
            assert not created.is_error
            name = created.structured_content["session_name"]
            added = await client.call_tool("9plan_queue_add", plan_args(goal="Keep it private"))
            assert not added.is_error
            for end in ("-wal", "-shm"):
                assert mode(data / f"9plan.sqlite3{end}") == 0o600, end
            assert mode(data / "sessions") == 0o700

    done = subprocess.run(
        [PYTHON, MANAGE, "nineplan_backup"], env=env, cwd=str(REPO), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    backup = Path(done.stdout.strip().rsplit(" ", 1)[1])
    assert mode(data / "backups") == 0o700 and mode(backup) == 0o700
    copies = [p for p in backup.rglob("*") if p.is_file()]
    assert backup / "9plan.sqlite3" in copies and any(name in p.parts and p.suffix == ".txt" for p in copies)
    for path in copies:
        assert mode(path) & 0o077 == 0, path
    for path in [p for p in data.rglob("*") if p.is_file() and not p.is_symlink()]:
        assert mode(path) & 0o077 == 0, path


def test_a_database_left_open_to_others_is_narrowed_and_a_link_is_left_alone(tmp_path):
    database = tmp_path / "data" / "9plan.sqlite3"
    database.parent.mkdir()
    os.chmod(database.parent, 0o755)
    elsewhere = tmp_path / "not-ours.txt"
    elsewhere.write_text("x", encoding="utf-8")
    os.chmod(elsewhere, 0o644)
    for path in (database, database.with_name("9plan.sqlite3-wal")):
        path.write_bytes(b"")
        os.chmod(path, 0o644)
    database.with_name("9plan.sqlite3-shm").symlink_to(elsewhere)

    datadir.private_database(database)

    assert mode(database) == 0o600 and mode(database.with_name("9plan.sqlite3-wal")) == 0o600
    assert mode(elsewhere) == 0o644
    # A folder that was there is the person's choice: left as it was.
    assert mode(database.parent) == 0o755


def test_a_missing_database_is_made_empty_and_private_in_a_private_folder(tmp_path):
    database = tmp_path / "new" / "db.sqlite3"
    datadir.private_database(database)
    assert database.read_bytes() == b"" and mode(database) == 0o600 and mode(database.parent) == 0o700
