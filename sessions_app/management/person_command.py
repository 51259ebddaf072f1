"""The base of the management commands a person runs (not the MCP server)."""

from __future__ import annotations

import argparse
import logging

from django.core.management.base import BaseCommand

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

    def progress(self) -> Progress:
        """Progress lines on this command's stderr, shown only when it is a terminal."""
        if self._progress is None:
            # The raw stream: Django's wrapper would colour every progress line as an error.
            self._progress = Progress(getattr(self.stderr, "_out", self.stderr))
        return self._progress


def session_name(value: str) -> str:
    """An argparse type: a session's three-word name, refused before the command runs."""
    if not is_session_name(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a session name (three lowercase words joined by '-')")
    return value


def add_session_option(parser) -> None:
    parser.add_argument("--session", type=session_name, help="only this session (three-word name)")
