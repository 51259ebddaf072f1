"""The `9plan` command (nineplan/cli.py), in this process: `--version`, and `help` listing
9plan's own commands first. (A fresh data directory, through real processes, is in
tests/nineplan/test_commands.py.)"""

from __future__ import annotations

import os

from nineplan import cli
from sessions_app.version import version


def test_version_is_answered_before_django_is_set_up(capsys, monkeypatch):
    # main points the process at 9plan's settings; the test's are put back after.
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", os.environ["DJANGO_SETTINGS_MODULE"])
    cli.main(["9plan", "--version"])
    assert capsys.readouterr().out == f"9plan {version()}\n"


def test_help_lists_9plans_own_commands_a_line_each_then_the_others():
    text = cli.commands_help("9plan")
    lines = text.splitlines()
    assert lines[0] == "Usage: 9plan COMMAND [options]; '9plan help COMMAND' describes one."
    others = lines.index("Other commands, Django's and its apps' (for developers and maintenance):")
    own = lines[lines.index("9plan's commands:") + 1 : others]
    named = [line.split()[0] for line in own if line.startswith("  ")]
    assert named == sorted(named)
    assert {"serve", "mcp", "backup", "restore", "webhook", "ls", "show", "add"} <= set(named)
    assert not any(name.startswith("nineplan_") and name[9:] in named for name in named)
    former = next(line for line in lines if line.startswith("Former names, still accepted: "))
    assert "nineplan_backup" in former and former.endswith("nineplan_webhook")
    assert "Your first login (a superuser, who sees and may do everything): 9plan createsuperuser" in lines
    assert "migrate" not in named and any(line.startswith("  [django]") and "migrate" in line for line in lines)


def test_the_former_names_run_the_same_commands():
    from django.core.management import get_commands, load_command_class

    found = get_commands()
    for name in ("backup", "restore", "export", "import", "repair", "project", "token", "webhook"):
        now, before = (
            load_command_class(found[name], name),
            load_command_class(found[f"nineplan_{name}"], f"nineplan_{name}"),
        )
        assert type(now) is type(before) and type(now).__module__ == f"sessions_app.management.commands.{name}"


def test_the_login_commands_are_other_apps_commands():
    from django.core.management import get_commands

    found = get_commands()
    assert set(cli.LOGIN_COMMANDS) <= set(found)
    assert not {found[name] for name in cli.LOGIN_COMMANDS} & set(cli.OWN_APPS)
