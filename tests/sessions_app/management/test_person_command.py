"""9plan's commands as a person meets them: on a fresh data directory they make the tables
they need, printing nothing that is not their answer; `9plan help` shows 9plan's own
commands first. (The `serve` banner is in tests/sessions_app/management/commands/test_serve.py.)"""

from __future__ import annotations

import json
import sqlite3
import subprocess

import pytest

from tests.conftest import MANAGE, PYTHON, REPO
from validation.replay import server_environment

EMPTY_EXPORT = {
    "format": "9plan-session-export",
    "version": 3,
    "exported_at": "2026-01-31T12:00:00+00:00",
    "session": {
        "name": "brave-amber-otter",
        "task_description": "Moved from another machine",
        "created_at": "2026-01-30T12:00:00+00:00",
        "review": "none",
        "lease_seconds": 1800,
        "max_attempts": 3,
    },
    "plans": [],
    "events": [],
}


def run(data_dir, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, MANAGE, *args],
        env=server_environment(data_dir, **env),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )


def tables(data_dir) -> set[str]:
    with sqlite3.connect(data_dir / "db.sqlite3") as db:
        return {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@pytest.mark.slow
def test_an_import_into_a_fresh_data_directory_makes_the_tables_first(tmp_path):
    document = tmp_path / "export.json"
    document.write_text(json.dumps(EMPTY_EXPORT), encoding="utf-8")
    data = tmp_path / "data"
    done = run(data, "import", str(document))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "brave-amber-otter\n" and "no such table" not in done.stderr
    assert {"sessions_app_session", "sessions_app_plan", "auth_user"} <= tables(data)
    # The next command finds them made, and reads the imported session.
    exported = run(data, "export", "brave-amber-otter")
    assert exported.returncode == 0, exported.stderr
    # A version 3 document names no project: the session went into "default".
    assert json.loads(exported.stdout)["session"] == {**EMPTY_EXPORT["session"], "project": "default"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "stdout"),
    [
        (["token", "dashboard", "--create"], r"[0-9a-f]{40}\n"),
        (["project", "list"], r"default  Default project\n  sessions: 0\n  members: none\n"),
        (["repair"], r"Nothing to repair\.\n"),
        (["nineplan_reclaim"], r"No claim has run out\.\n"),
    ],
    ids=["token", "project", "repair", "nineplan_reclaim"],
)
def test_a_first_command_on_a_fresh_database_prints_only_its_answer(tmp_path, args, stdout):
    import re

    data = tmp_path / "data"
    done = run(data, *args)
    assert done.returncode == 0, done.stderr
    # Token commands print the token alone: migrating must not add a line a script would read.
    assert re.fullmatch(stdout, done.stdout), done.stdout
    assert "Traceback" not in done.stderr and "Applying" not in done.stderr
    assert "sessions_app_session" in tables(data)


@pytest.mark.slow
def test_the_first_login_can_be_made_on_a_fresh_database(tmp_path):
    data = tmp_path / "data"
    done = run(
        data,
        "createsuperuser",
        "--noinput",
        "--username",
        "ada",
        "--email",
        "ada@example.com",
        DJANGO_SUPERUSER_PASSWORD="a long test passphrase 7",
    )
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(data / "db.sqlite3") as db:
        assert db.execute("SELECT username, is_superuser FROM auth_user").fetchall() == [("ada", 1)]


@pytest.mark.slow
def test_unlocking_a_login_on_a_fresh_database_finds_its_tables(tmp_path):
    data = tmp_path / "data"
    done = run(data, "axes_reset_username", "ada")
    assert done.returncode == 0, done.stderr
    assert "no such table" not in done.stderr and "axes_accessattempt" in tables(data)


@pytest.mark.slow
def test_a_refused_export_on_a_fresh_database_names_the_session_not_a_table(tmp_path):
    done = run(tmp_path / "data", "export", "brave-amber-otter")
    assert done.returncode != 0 and done.stdout == ""
    assert "SESSION_NOT_FOUND" in done.stderr and "no such table" not in done.stderr


@pytest.mark.slow
def test_help_lists_9plans_own_commands_first_with_a_line_each(tmp_path):
    done = run(tmp_path / "data", "help")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    own = lines.index("9plan's commands:")
    others = next(i for i, line in enumerate(lines) if line.startswith("Other commands"))
    listed = [line.split()[0] for line in lines[own + 1 : others] if line.startswith("  ")]
    assert {"mcp", "serve", "import", "backup", "create_reviewer"} <= set(listed)
    for line in lines[own + 1 : others]:
        if line.startswith("  "):
            assert len(line.split(None, 1)) == 2, f"no description: {line!r}"
    # Django's developer commands come after, under their heading, and only there.
    rest = "\n".join(lines[others:])
    for name in ("startapp", "makemigrations", "runserver", "test"):
        assert name in rest and name not in listed
    assert "createsuperuser" in "\n".join(lines[others - 2 : others])
    # `help COMMAND` is still Django's help of one command.
    one = run(tmp_path / "data", "help", "import")
    assert one.returncode == 0 and "usage:" in one.stdout and "file" in one.stdout
