"""Progress lines of the long commands: on a terminal only, never in a pipe or a log."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError, OutputWrapper
from django.core.management.color import color_style

from sessions_app.maintenance.progress import Progress
from sessions_app.management.person_command import PlainLines
from sessions_app.models import Session
from tests.sessions_app.api_fixtures import full_session  # noqa: F401  (fixture)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_each_stage_end_at_its_total():
    screen = Terminal()
    progress = Progress(screen)
    progress.stage("Exporting plans", 3)
    for _ in range(3):
        progress.advance()
    progress.stage("Rebuilding the search index")
    progress.finish()
    lines = screen.getvalue().split("\n")
    assert lines[0].startswith("\rExporting plans: 0/3 (0%)")
    assert lines[0].endswith("\rExporting plans: 3/3 (100%)")
    assert lines[1].startswith("\rRebuilding the search index...")
    assert lines[2] == ""


def test_a_stream_that_is_not_a_terminal_gets_nothing():
    for stream in (io.StringIO(), None):
        progress = Progress(stream)
        progress.stage("Exporting plans", 3)
        progress.advance(3)
        progress.finish()
    assert stream is None or stream.getvalue() == ""


@pytest.mark.django_db
def test_export_and_import_show_their_stages_on_a_terminal(full_session, tmp_path, sessions_dir):
    target = tmp_path / "export.json"
    screen = Terminal()
    call_command("export", full_session.name, output=str(target), stderr=screen)
    assert "Exporting plans: 5/5 (100%)" in screen.getvalue()
    assert "Exporting events:" in screen.getvalue()
    assert screen.getvalue().endswith(f"Exported session {full_session.name} to {target}.\n")

    piped = io.StringIO()
    call_command("export", full_session.name, output=str(tmp_path / "again.json"), stderr=piped)
    assert piped.getvalue() == f"Exported session {full_session.name} to {tmp_path / 'again.json'}.\n"

    Session.objects.all().delete()
    import shutil

    shutil.rmtree(sessions_dir / full_session.name)
    screen = Terminal()
    call_command("import", str(target), stdout=io.StringIO(), stderr=screen)
    # The first read counts what it checks; the second knows the totals.
    for stage in ("Checking plans: 5\n", "Checking events: 12\n", "Writing plans: 5/5 (100%)", "Writing events: 12/12"):
        assert stage in screen.getvalue()
    assert json.loads(target.read_text())["session"]["name"] == full_session.name


@pytest.mark.django_db
def test_a_commands_progress_rewrites_one_line_per_stage(full_session, tmp_path):
    screen = Terminal()
    call_command("export", full_session.name, output=str(tmp_path / "out.json"), stderr=screen)
    plans = next(line for line in screen.getvalue().split("\n") if "Exporting plans" in line)
    assert plans.startswith("\rExporting plans: 0/5 (0%)") and plans.endswith("\rExporting plans: 5/5 (100%)")


def test_progress_on_a_commands_stderr_is_neither_coloured_nor_broken_into_lines():
    screen = Terminal()
    stderr = OutputWrapper(screen)
    stderr.style_func = color_style(force_color=True).ERROR  # as a command's stderr on a terminal
    stderr.write("an error")
    assert screen.getvalue() == "\x1b[31;1man error\n\x1b[0m"
    screen.seek(0), screen.truncate()
    progress = Progress(PlainLines(stderr))
    progress.stage("Exporting plans", 2)
    progress.advance(2)
    assert screen.getvalue().startswith("\rExporting plans: 0/2 (0%)")
    assert "\x1b[" not in screen.getvalue() and "\n" not in screen.getvalue()


@pytest.mark.django_db
def test_backup_and_repair_show_their_stages_on_a_terminal(full_session, tmp_path):
    screen = Terminal()
    call_command("backup", output=tmp_path / "backups", stdout=io.StringIO(), stderr=screen)
    from django.db import connection

    if connection.vendor == "sqlite":
        assert "Copying the database" in screen.getvalue()
    else:  # said whether or not on a terminal: the database needs pg_dump
        assert screen.getvalue().startswith("PostgreSQL: back up the database with pg_dump")
    assert "Copying plan files from" in screen.getvalue()
    screen = Terminal()
    call_command("repair", stdout=io.StringIO(), stderr=screen)
    assert "Checking plan files: 1/1 (100%)" in screen.getvalue()
    assert "Checking the search index..." in screen.getvalue()
    piped = io.StringIO()
    call_command("repair", stdout=io.StringIO(), stderr=piped)
    assert piped.getvalue() == ""


@pytest.mark.django_db
def test_a_failing_command_ends_its_progress_line_before_the_error(tmp_path):
    screen = Terminal()
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "format": "9plan-session-export",
                "version": 2,
                "exported_at": None,
                "session": {
                    "name": "calm-green-heron",
                    "task_description": None,
                    "created_at": "2025-01-01T00:00:00+00:00",
                },
                "plans": [{"id": "x"}],
                "events": [],
            }
        )
    )
    with pytest.raises(CommandError):
        call_command("import", str(bad), stdout=io.StringIO(), stderr=screen)
    assert screen.getvalue().startswith("\rChecking plans...")
    assert screen.getvalue().endswith("\n")
