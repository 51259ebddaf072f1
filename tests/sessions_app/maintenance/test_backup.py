"""Backups: a consistent copy of the database and the plan files, taken while another
process keeps writing, and one taken before a migration that changes data; one killed
midway (a real process, SIGKILL) never passes for finished, and `--verify` and the restore
refuse it; a restore killed midway changes nothing."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations import Migration
from django.db.migrations.operations import AddField, RunPython

from sessions_app import planfiles, search, services
from sessions_app.maintenance import backup
from sessions_app.models import Plan
from tests.conftest import MANAGE, PYTHON, REPO, plan_fields
from tests.sessions_app.conftest import files_below, plan_file, sqlite_only

pytestmark = pytest.mark.django_db(transaction=True)

# Runs in `manage.py shell`: adds, pulls and completes plans until told to stop.
WRITER = """
import os, pathlib
from sessions_app import services
name = os.environ["WRITER_SESSION"]
started = pathlib.Path(os.environ["WRITER_STARTED"])
stop = pathlib.Path(os.environ["WRITER_STOP"])
fields = dict(context="c", goal="written during the backup", approach="a", success_criteria="s")
for i in range(20000):
    services.plan_enqueue(session_name=name, **fields)
    services.plan_pull(session_name=name)
    services.plan_complete(session_name=name, outcome=f"done {i}")
    if i == 5:
        started.touch()
    if stop.exists():
        break
"""


def the_backup(output: Path) -> Path:
    [folder] = output.iterdir()
    assert folder.name.startswith("9plan-")
    return folder


def open_copy(folder: Path) -> sqlite3.Connection:
    path = folder / backup.DB_FILE
    assert path.exists()
    # Self-contained: nothing beside it that a move could leave behind.
    assert not (folder / (backup.DB_FILE + "-wal")).exists()
    return sqlite3.connect(path)


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    while not path.exists():
        assert proc.poll() is None, "the writer stopped before it started writing"
        time.sleep(0.05)


@sqlite_only
@pytest.mark.slow
@pytest.mark.serial
def test_backup_while_another_process_writes_is_consistent(make_plan, sessions_dir, subprocess_env, tmp_path):
    session = services.session_create(task_description="Backed up")
    idle = services.session_create()
    kept = make_plan(idle, goal="Queued before the backup")
    writer_env = {
        **subprocess_env,
        "WRITER_SESSION": session.name,
        "WRITER_STARTED": str(tmp_path / "started"),
        "WRITER_STOP": str(tmp_path / "stop"),
    }
    writer = subprocess.Popen(
        [PYTHON, MANAGE, "shell", "-c", WRITER], env=writer_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_for(tmp_path / "started", writer)
        output = tmp_path / "backups"
        done = subprocess.run(
            [PYTHON, MANAGE, "backup", "--output", str(output)],
            env=subprocess_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        (tmp_path / "stop").touch()
        _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    assert done.returncode == 0, done.stderr
    folder = the_backup(output)
    assert done.stdout.strip() == f"Backup written to {folder}"

    db = open_copy(folder)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        # The search index is part of the snapshot, and in step with it.
        db.execute(f"INSERT INTO {search.FTS_TABLE}({search.FTS_TABLE}) VALUES ('integrity-check')")
        described = db.execute("SELECT task_description FROM sessions_app_session WHERE name = ?", (session.name,))
        assert described.fetchall() == [("Backed up",)]
        completed = db.execute(
            "SELECT count(*) FROM sessions_app_plan WHERE session_name = ? AND status = 'completed'", (session.name,)
        ).fetchone()[0]
        indexed = db.execute(
            f"SELECT count(*) FROM {search.FTS_TABLE} WHERE session_name = ?", (session.name,)
        ).fetchone()[0]
        queued = db.execute("SELECT status, goal FROM sessions_app_plan WHERE id = ?", (kept.id,)).fetchall()
    finally:
        db.close()
    assert completed >= 6  # what the writer had done before the backup began
    assert indexed == completed
    assert queued == [("queued", "Queued before the backup")]
    copied = folder / backup.SESSIONS_DIR / idle.name / "plans" / f"{kept.id}.txt"
    assert copied.read_bytes() == plan_file(sessions_dir, kept).read_bytes()
    assert not list((folder / backup.SESSIONS_DIR).rglob(f"{planfiles.TEMP_PREFIX}*"))


def test_backup_copies_plan_files_and_leaves_out_temp_files(session, make_plan, sessions_dir, tmp_path):
    plan = make_plan(session, goal="Keep me")
    plans = sessions_dir / session.name / "plans"
    (plans / f"{planfiles.TEMP_PREFIX}half.txt").write_text("half a write")
    preserved = sessions_dir / session.name / planfiles.PRESERVED_DIR
    preserved.mkdir()
    (preserved / "zz9zz-1.txt").write_text("kept aside earlier")

    folder = backup.backup_create(destination=tmp_path / "out")

    copy = folder / backup.SESSIONS_DIR / session.name
    assert sorted(p.name for p in (copy / "plans").iterdir()) == [f"{plan.id}.txt"]
    assert (copy / "plans" / f"{plan.id}.txt").read_bytes() == plan_file(sessions_dir, plan).read_bytes()
    assert (copy / planfiles.PRESERVED_DIR / "zz9zz-1.txt").read_text() == "kept aside earlier"
    if connection.vendor == "sqlite":
        db = open_copy(folder)
        try:
            assert db.execute("SELECT id, status FROM sessions_app_plan").fetchall() == [(plan.id, "queued")]
        finally:
            db.close()
    else:
        assert not (folder / backup.DB_FILE).exists()


def test_two_backups_never_share_a_folder(session, tmp_path):
    first = backup.backup_create(destination=tmp_path / "out")
    second = backup.backup_create(destination=tmp_path / "out")
    assert first != second
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([first.name, second.name])


def _migration(*operations) -> Migration:
    migration = Migration("9999_test", "sessions_app")
    migration.operations = list(operations)
    return migration


def _noop(apps, schema_editor):
    pass


def test_a_data_migration_is_preceded_by_a_backup(session, make_plan, settings, tmp_path):
    settings.NINEPLAN_DATA_DIR = tmp_path / "data"
    make_plan(session)

    backup.backup_before_data_migration(sender=None, plan=[(_migration(RunPython(_noop)), False)])

    [folder] = (tmp_path / "data" / "backups").iterdir()
    assert (folder / backup.SESSIONS_DIR / session.name / "plans").is_dir()
    if connection.vendor == "sqlite":
        db = open_copy(folder)
        try:
            assert db.execute("SELECT count(*) FROM sessions_app_plan").fetchone()[0] == Plan.objects.count()
        finally:
            db.close()


@pytest.mark.parametrize(
    "plan",
    [
        [],
        [(_migration(AddField("plan", "extra", None)), False)],  # schema only
        [(_migration(RunPython(_noop)), True)],  # unapplying
    ],
    ids=["nothing", "schema-only", "backwards"],
)
def test_no_backup_without_a_data_migration(session, settings, tmp_path, plan):
    settings.NINEPLAN_DATA_DIR = tmp_path / "data"
    backup.backup_before_data_migration(sender=None, plan=plan)
    assert not (tmp_path / "data").exists()


def test_no_backup_of_an_empty_database(db, settings, tmp_path):
    settings.NINEPLAN_DATA_DIR = tmp_path / "data"
    backup.backup_before_data_migration(sender=None, plan=[(_migration(RunPython(_noop)), False)])
    assert not (tmp_path / "data").exists()


def kill_when(proc: subprocess.Popen, ready, what: str) -> None:
    """SIGKILL ``proc`` as soon as ``ready()``; fails if it ended first."""
    deadline = time.monotonic() + 300
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"it ended before {what}: {proc.stderr.read()}")
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def kill_while_it_copies(subprocess_env, command: list[str], root, copies: str) -> None:
    """Runs ``manage.py`` with ``command`` and SIGKILLs it once 200 files have arrived in the
    first folder below ``root`` that matches the pattern ``copies``."""
    proc = subprocess.Popen(
        [PYTHON, MANAGE, *command], cwd=REPO, env=subprocess_env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def copying() -> bool:
        found = list(root.glob(copies))
        return bool(found) and len(os.listdir(found[0])) >= 200

    kill_when(proc, copying, "it copied plan files")


def many_files_to_copy(session, sessions_dir, *, plans: int) -> None:
    """Queues ``plans`` plans and keeps 8,000 preserved files in the session's folder."""
    services.plan_enqueue_many(session_name=session.name, plans=[plan_fields(goal=f"Plan {i}") for i in range(plans)])
    extra = sessions_dir / session.name / "preserved"
    extra.mkdir()
    for i in range(8000):
        (extra / f"k{i:04d}-20260101T000000.txt").write_text(f"kept text {i}\n")


@pytest.mark.slow
@pytest.mark.serial
def test_a_backup_killed_midway_never_has_a_backups_name_and_is_refused(
    session, sessions_dir, subprocess_env, tmp_path
):
    # Many files to copy: the kill lands while the sessions folder is being copied.
    many_files_to_copy(session, sessions_dir, plans=50)
    output = tmp_path / "backups"
    copies = f"*{backup.INCOMPLETE}/{backup.SESSIONS_DIR}/{session.name}/preserved"
    kill_while_it_copies(subprocess_env, ["backup", "--output", str(output)], output, copies)
    [left] = output.iterdir()
    # Its name says what it is; no folder has a finished backup's name.
    assert left.name.startswith("9plan-") and left.name.endswith(backup.INCOMPLETE)
    assert not (left / backup.MANIFEST).exists()
    with pytest.raises(CommandError, match="never finished"):
        call_command("backup", verify=left, stdout=open(os.devnull, "w"))
    # The restore refuses it, and changes nothing.
    before = files_below(sessions_dir), list(Plan.objects.order_by("id").values_list("id", "status"))
    restoring = subprocess.run(
        [PYTHON, MANAGE, "restore", str(left), "--yes", "--force"], cwd=REPO, env=subprocess_env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert restoring.returncode == 1 and restoring.stdout == ""
    assert (
        restoring.stderr
        == f"CommandError: {left} is a backup that never finished (it was stopped midway); do not restore it.\n"
    )
    assert (files_below(sessions_dir), list(Plan.objects.order_by("id").values_list("id", "status"))) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("sessions")) == ["sessions"]
    # Renamed by hand, it is still refused: it has no manifest.
    renamed = left.with_name(left.name.removesuffix(backup.INCOMPLETE))
    left.rename(renamed)
    with pytest.raises(CommandError, match="is not a finished 9plan backup"):
        call_command("backup", verify=renamed, stdout=open(os.devnull, "w"))
    with pytest.raises(CommandError, match="is not a finished 9plan backup"):
        call_command("restore", str(renamed), yes=True, stdout=open(os.devnull, "w"))
    assert (files_below(sessions_dir), list(Plan.objects.order_by("id").values_list("id", "status"))) == before

    done = subprocess.run(
        [PYTHON, MANAGE, "backup", "--output", str(tmp_path / "again")], cwd=REPO, env=subprocess_env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [whole] = (tmp_path / "again").iterdir()
    assert not whole.name.endswith(backup.INCOMPLETE)
    checked = subprocess.run(
        [PYTHON, MANAGE, "backup", "--verify", str(whole)], cwd=REPO, env=subprocess_env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    # 8,000 kept files, 50 plan files and their 50 bases.
    assert f"{whole} is a whole backup of" in checked.stdout and "8,100 files" in checked.stdout
    assert f"run 9plan restore {whole}." in checked.stdout


@pytest.mark.slow
@pytest.mark.serial
def test_a_restore_killed_while_it_copies_changes_nothing_and_can_run_again(
    session, sessions_dir, subprocess_env, tmp_path
):
    many_files_to_copy(session, sessions_dir, plans=5)
    folder = backup.backup_create(destination=tmp_path / "backups")
    later = services.plan_enqueue(session_name=session.name, **plan_fields(goal="Added after the backup")).plan
    before = files_below(sessions_dir)
    staged = f"sessions.restoring-*/{session.name}/preserved"
    kill_while_it_copies(subprocess_env, ["restore", str(folder), "--yes", "--force"], tmp_path, staged)
    # Only its copy aside is left: the plan files and the database are as they were.
    assert files_below(sessions_dir) == before and Plan.objects.filter(id=later.id).exists()
    [staged] = tmp_path.glob("sessions.restoring-*")

    done = subprocess.run(
        [PYTHON, MANAGE, "restore", str(folder), "--yes", "--force"], cwd=REPO, env=subprocess_env, capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The backup's database, without the plan added since (on PostgreSQL, pg_restore's to put back).
    restored = connection.vendor == "sqlite"
    assert Plan.objects.filter(id=later.id).exists() is not restored
    # Plan files are a local copy: the plan added since has none in the restored folder until
    # a pull writes it (on PostgreSQL, where the plan stays).
    assert not (sessions_dir / session.name / "plans" / f"{later.id}.txt").exists()
    assert len(os.listdir(sessions_dir / session.name / "preserved")) == 8000
    assert staged.exists()  # the killed run's, for a person to delete (README, Maintenance)
