"""`restore` (sessions_app/management/commands/restore.py): a backup's
database (SQLite) and plan files put back, what they replaced kept aside and the repair run
after; a backup with a part missing, or naming another database file, is refused and
changes nothing. (A restore killed midway is proved in tests/sessions_app/maintenance/test_backup.py.)"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app import services
from sessions_app.maintenance import backup
from sessions_app.models import Plan
from tests.sessions_app.conftest import files_below, plan_file, run_repair, sqlite_only

pytestmark = pytest.mark.django_db(transaction=True)


@sqlite_only
def test_a_restore_puts_back_the_database_and_the_plan_files_the_backup_holds(
    session, make_plan, sessions_dir, tmp_path
):
    done = make_plan(session, goal="Done at the backup")
    kept = make_plan(session, goal="Queued at the backup")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="finished")
    folder = backup.backup_create(destination=tmp_path / "backups")
    files_then = files_below(sessions_dir)

    # After the backup: a plan added, the kept one's file edited, a stray file.
    later = make_plan(session, goal="Added after the backup")
    plan_file(sessions_dir, kept).write_text("edited after the backup\n", encoding="utf-8")
    (sessions_dir / session.name / "stray.txt").write_text("stray", encoding="utf-8")
    replaced_then = files_below(sessions_dir)

    out = io.StringIO()
    call_command("restore", str(folder), yes=True, stdout=out)

    assert list(Plan.objects.order_by("goal").values_list("goal", "status")) == [
        ("Done at the backup", "completed"), ("Queued at the backup", "queued"),
    ]  # fmt: skip
    assert not Plan.objects.filter(id=later.id).exists() and Plan.objects.get(id=done.id).outcome == "finished"
    assert files_below(sessions_dir) == files_then
    # What it replaced is kept beside it, whole, for a person to delete.
    [aside] = tmp_path.glob("sessions.before-restore-*")
    assert files_below(aside) == replaced_then
    assert f"Restored {folder}." in out.getvalue() and str(aside) in out.getvalue()
    assert not list(tmp_path.glob("sessions.restoring-*"))
    assert "Nothing to repair." in run_repair()
    services.plan_pull(session_name=session.name)  # the restored database is the one in use


def test_a_restore_refuses_a_backup_with_a_part_missing_and_changes_nothing(session, make_plan, sessions_dir, tmp_path):
    make_plan(session, goal="Queued at the backup")
    folder = backup.backup_create(destination=tmp_path / "backups")
    later = make_plan(session, goal="Added after the backup")
    next((folder / backup.SESSIONS_DIR).rglob("*.txt")).unlink()
    before = files_below(sessions_dir)
    # The plan's file and its base were backed up; one of them is gone.
    with pytest.raises(CommandError, match=r"holds 1 files where the backup wrote 2; do not restore this backup\."):
        call_command("restore", str(folder), yes=True, stdout=io.StringIO())
    assert files_below(sessions_dir) == before and Plan.objects.filter(id=later.id).exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("sessions")) == ["sessions"]


def test_a_manifest_naming_another_database_file_is_refused(session, tmp_path):
    folder = backup.backup_create(destination=tmp_path / "backups")
    manifest = json.loads((folder / backup.MANIFEST).read_text(encoding="utf-8"))
    (folder / backup.MANIFEST).write_text(
        json.dumps({**manifest, "database": "../../elsewhere.sqlite3"}), encoding="utf-8"
    )
    with pytest.raises(CommandError, match="names the database '../../elsewhere.sqlite3', not 9plan.sqlite3"):
        call_command("restore", str(folder), yes=True, stdout=io.StringIO())


@pytest.mark.postgres
def test_on_postgresql_the_restore_puts_back_the_plan_files_and_leaves_the_database_to_pg_restore(
    session, make_plan, sessions_dir, tmp_path
):
    kept = make_plan(session, goal="Queued at the backup")
    folder = backup.backup_create(destination=tmp_path / "backups")
    files_then = files_below(sessions_dir)
    plan_file(sessions_dir, kept).write_text("edited after the backup\n", encoding="utf-8")
    later = make_plan(session, goal="Added after the backup")

    call_command("restore", str(folder), yes=True, stdout=io.StringIO())

    # The database is pg_restore's to put back: the plan added since is still there, and
    # the repair gave it its file again.
    assert Plan.objects.filter(id=later.id, status="queued").exists()
    assert files_below(sessions_dir) == {
        **files_then,
        **{k: v for k, v in files_below(sessions_dir).items() if later.id in k},
    }
    assert plan_file(sessions_dir, kept).read_bytes() == files_then[f"{session.name}/plans/{kept.id}.txt"]
    assert len(list(tmp_path.glob("sessions.before-restore-*"))) == 1


def test_a_folder_that_is_no_backup_is_refused_and_changes_nothing(session, make_plan, sessions_dir, tmp_path):
    plan = make_plan(session)
    stranger = tmp_path / "not-a-backup"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine", encoding="utf-8")
    before = files_below(sessions_dir)
    with pytest.raises(CommandError, match="is not a finished 9plan backup"):
        call_command("restore", str(stranger), yes=True, stdout=io.StringIO())
    assert files_below(sessions_dir) == before and Plan.objects.filter(id=plan.id).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-backup", "sessions"]
