"""The `9plan` command (and manage.py): any management command, from any directory.

`9plan mcp` serves agents, `9plan serve` the admin and the REST API, and every other
management command (`9plan migrate`, `9plan create_reviewer ...`) runs as it would
through manage.py. The data goes where the settings put it (the user data directory by
default), whatever the current directory.
"""

from __future__ import annotations

import os
import sys

OWN_APPS = ("sessions_app", "mcp_bridge")
# Other apps' commands that a person runs on 9plan's data: the first login, unlocking a
# login (the lockout page names axes_reset_username), tokens and stale sign-ins. Like
# 9plan's own commands, they find the tables made on a fresh database.
LOGIN_COMMANDS = (
    "createsuperuser",
    "changepassword",
    "drf_create_token",
    "clearsessions",
    "axes_list_attempts",
    "axes_reset",
    "axes_reset_failure_logs",
    "axes_reset_ip",
    "axes_reset_ip_username",
    "axes_reset_logs",
    "axes_reset_username",
)
HELP = ("help", "--help", "-h")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    # Always 9plan's settings: a DJANGO_SETTINGS_MODULE left in the shell by another
    # project would otherwise make every command fail. manage.py keeps Django's usual
    # override (the test suite points it at its own settings).
    if os.path.basename(argv[0]) == "manage.py":
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nineplan.settings")
    else:
        os.environ["DJANGO_SETTINGS_MODULE"] = "nineplan.settings"
    if argv[1:2] == ["--version"]:
        from sessions_app.version import version

        sys.stdout.write(f"9plan {version()}\n")
        return
    from django.core.exceptions import ImproperlyConfigured

    try:
        if argv[1:2] == ["mcp"]:
            # An MCP client waits for the server's first answer: the `mcp` command runs
            # before Django loads its apps and loads them itself, after answering.
            from mcp_bridge.management.commands.mcp import Command

            Command().run_from_argv(argv)
            return
        import django

        if len(argv) < 2 or (argv[1] in HELP and len(argv) == 2):
            django.setup()
            sys.stdout.write(commands_help(os.path.basename(argv[0])))
            return
        if argv[1] in LOGIN_COMMANDS:
            from sessions_app.store import datadir

            django.setup()
            datadir.make_if_missing()
        from django.core.management import execute_from_command_line

        execute_from_command_line(argv)
    except ImproperlyConfigured as exc:
        # A bad setting is the user's to fix: say which and how, without a traceback,
        # and on stderr so that an MCP client reading stdout sees nothing but protocol.
        sys.stderr.write(f"9plan: configuration error: {exc}\n")
        sys.exit(2)


def commands_help(prog: str) -> str:
    """`9plan help`: 9plan's own commands first, a line each, then everything else."""
    from django.core.management import BaseCommand, get_commands, load_command_class

    found = get_commands()
    own: list[tuple[str, BaseCommand]] = []
    former: list[tuple[str, BaseCommand]] = []
    for name in sorted(n for n, app in found.items() if app in OWN_APPS):
        command = load_command_class(found[name], name)
        # A former name's module hands on the command of the module named as it is now.
        (own if type(command).__module__.rpartition(".")[2] == name else former).append((name, command))
    width = max(len(name) for name, _ in own) + 2
    lines = [f"Usage: {prog} COMMAND [options]; '{prog} help COMMAND' describes one.", "", "9plan's commands:"]
    for name, command in own:
        text = " ".join(command.help.split())
        lines.append(f"  {name.ljust(width)}{text.split('. ')[0].rstrip('.')}")
    if former:
        lines += ["", f"Former names, still accepted: {', '.join(name for name, _ in former)}"]
    lines += ["", f"Your first login (a superuser, who sees and may do everything): {prog} createsuperuser", ""]
    lines.append("Other commands, Django's and its apps' (for developers and maintenance):")
    by_app: dict[str, list[str]] = {}
    for name, app in found.items():
        if app not in OWN_APPS:
            by_app.setdefault("django" if app == "django.core" else app.rpartition(".")[2], []).append(name)
    for app in sorted(by_app):
        lines.append(f"  [{app}] {', '.join(sorted(by_app[app]))}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
