"""The base of the management commands a person runs (not the MCP server)."""

from __future__ import annotations

import argparse
import logging
import sys

from django.core.management.base import BaseCommand, CommandError, OutputWrapper

from sessions_app.identifiers import is_session_name
from sessions_app.maintenance.progress import Progress
from sessions_app.store import datadir

# -v 0 and 1 (the default): warnings and errors only; -v 2: info; -v 3: debug.
VERBOSITY_LEVELS = {0: logging.WARNING, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}


class PersonCommand(BaseCommand):
    """A command run by a person: its own output says what it did in a line or two.

    9plan's services log every step at info as a JSON line on stderr, which is what an
    operator wants from a server but buries a command's answer; those lines appear only
    when asked for with -v 2 (or -v 3 for debug). Warnings and errors always do.
    """

    # Whether the command reads or writes 9plan's tables, which a fresh database lacks.
    needs_tables = True

    def execute(self, *args, **options):
        root = logging.getLogger()
        configured = root.level
        wanted = VERBOSITY_LEVELS.get(int(options.get("verbosity", 1)), logging.DEBUG)
        # Asking for more (-v 2) shows info even under NINEPLAN_LOG_LEVEL=warn; -v 1
        # never shows more than the configured level would.
        root.setLevel(max(configured, wanted) if wanted >= logging.WARNING else min(configured, wanted))
        from sessions_app import access

        try:
            if self.needs_tables:
                # As `mcp` and `serve` do: a first command on a fresh data directory works,
                # and says nothing of it (its info line shows with -v 2).
                datadir.make_if_missing()
            # A person at the server's own command line is its local user, who may see
            # and do everything (docs/design.md, "Projects and access").
            with access.acting_as(access.LOCAL):
                return super().execute(*args, **options)
        finally:
            root.setLevel(configured)
            # A command that fails mid-stage ends its progress line, so that the error
            # that follows starts a line of its own.
            if self._progress is not None:
                self._progress.finish()

    _progress: Progress | None = None

    def confirm(self, question: str, *, yes: bool) -> None:
        """Asks ``question`` on the terminal and goes on only on a yes; raises CommandError,
        having changed nothing, on any other answer. ``yes`` (--yes) goes on without asking.
        Without a terminal to ask on, and without --yes, it refuses: a script that forgot the
        flag must not replace data unasked, nor hang waiting for an answer nobody sees."""
        if yes:
            return
        if not sys.stdin.isatty():
            raise CommandError(
                "This command asks before it replaces anything, and its input is not a terminal to ask on: "
                "run it again with --yes to go on without asking. Nothing was changed."
            )
        self.stderr.write(f"{question} [y/N] ", ending="")
        self.stderr.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            raise CommandError("Not confirmed. Nothing was changed.")

    def progress(self) -> Progress:
        """Progress lines on this command's stderr, shown only when it is a terminal."""
        if self._progress is None:
            self._progress = Progress(PlainLines(self.stderr))
        return self._progress


class PlainLines:
    """A command's stderr as progress writes to it: the text as given, without the error
    colour and the line ending Django's wrapper adds to each write by default."""

    def __init__(self, wrapper: OutputWrapper):
        self.wrapper = wrapper

    def write(self, text: str, /) -> None:
        self.wrapper.write(text, style_func=str, ending="")

    def flush(self) -> None:
        self.wrapper.flush()

    def isatty(self) -> bool:
        return self.wrapper.isatty()


def session_name(value: str) -> str:
    """An argparse type: a session's three-word name, refused before the command runs."""
    if not is_session_name(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a session name (three lowercase words joined by '-')")
    return value


def add_session_option(parser) -> None:
    parser.add_argument("--session", type=session_name, help="only this session (three-word name)")


def add_confirm_options(parser, *, replaces: str) -> None:
    """--yes (also --no-input) and --force, for a command that replaces ``replaces``."""
    parser.add_argument(
        "--yes",
        "--no-input",
        "--noinput",
        dest="yes",
        action="store_true",
        help=f"replace {replaces} without asking (needed when the input is not a terminal)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="go on while other 9plan processes have the database open (restart them afterwards)",
    )
