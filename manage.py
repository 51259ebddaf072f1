#!/usr/bin/env python
"""9plan's command-line entry point (Django's manage.py)."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nineplan.settings")
    from django.core.exceptions import ImproperlyConfigured

    try:
        if sys.argv[1:2] == ["mcp"]:
            # An MCP client waits for the server's first answer: the `mcp` command runs
            # before Django loads its apps and loads them itself, after answering.
            from mcp_bridge.management.commands.mcp import Command

            Command().run_from_argv(sys.argv)
            return
        from django.core.management import execute_from_command_line

        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A bad setting is the user's to fix: say which and how, without a traceback,
        # and on stderr so that an MCP client reading stdout sees nothing but protocol.
        sys.stderr.write(f"9plan: configuration error: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
