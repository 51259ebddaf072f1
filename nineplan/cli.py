"""The `9plan` command (and manage.py): any management command, from any directory.

`9plan mcp` serves agents, `9plan serve` the admin and the REST API, and every other
management command (`9plan migrate`, `9plan create_reviewer ...`) runs as it would
through manage.py. The data goes where the settings put it (the user data directory by
default), whatever the current directory.
"""

from __future__ import annotations

import os
import sys


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
        from nineplan.version import version

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
        from django.core.management import execute_from_command_line

        execute_from_command_line(argv)
    except ImproperlyConfigured as exc:
        # A bad setting is the user's to fix: say which and how, without a traceback,
        # and on stderr so that an MCP client reading stdout sees nothing but protocol.
        sys.stderr.write(f"9plan: configuration error: {exc}\n")
        sys.exit(2)
