"""`backup` (sessions_app/management/commands/backup.py): writes a backup
and names its folder; `--verify FOLDER` says whether a backup is whole and how to restore
it, and refuses one that is not. (What a backup holds, and one killed midway, are in
tests/sessions_app/maintenance/test_backup.py.)"""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError
from django.db import connection

from sessions_app.maintenance import backup
from tests.conftest import manage
from tests.sessions_app.conftest import files_below, plan_file

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_backup_is_written_into_the_output_folder_and_named(session, make_plan, sessions_dir, tmp_path):
    plan = make_plan(session)
    out, _ = manage("backup", output=tmp_path / "backups")

    [folder] = (tmp_path / "backups").iterdir()
    assert out == f"Backup written to {folder}\n" and folder.name.startswith("9plan-")
    copied = folder / backup.SESSIONS_DIR / session.name / "plans" / f"{plan.id}.txt"
    assert copied.read_bytes() == plan_file(sessions_dir, plan).read_bytes()
    assert (folder / backup.MANIFEST).exists()


def test_verify_says_a_whole_backup_may_be_restored_and_writes_nothing(session, make_plan, tmp_path):
    make_plan(session)
    folder = backup.backup_create(destination=tmp_path / "backups")
    before = files_below(tmp_path)

    out, _ = manage("backup", verify=folder)

    manifest = backup.backup_verify(folder)
    database = "the database and " if connection.vendor == "sqlite" else ""
    assert out == (
        f"{folder} is a whole backup of {manifest['created_at']}: {database}{manifest['files']:,} files of the "
        f"sessions folder. To restore it, stop the servers and run 9plan restore {folder}.\n"
    )
    assert files_below(tmp_path) == before


def test_verify_refuses_a_folder_that_is_no_backup(db, tmp_path):
    stranger = tmp_path / "not-a-backup"
    stranger.mkdir()
    with pytest.raises(CommandError, match="is not a finished 9plan backup"):
        manage("backup", verify=stranger)
    assert list(stranger.iterdir()) == []


def test_verify_refuses_a_backup_with_a_part_missing(session, make_plan, tmp_path):
    make_plan(session)
    folder = backup.backup_create(destination=tmp_path / "backups")
    next((folder / backup.SESSIONS_DIR).rglob("*.txt")).unlink()
    with pytest.raises(CommandError, match="do not restore this backup"):
        manage("backup", verify=folder)
