"""`manage.py export SESSION`: write a session as one JSON document (lossless)."""

from __future__ import annotations

import os
import sys

from django.core.management.base import CommandError

from sessions_app.errors import NineplanError
from sessions_app.maintenance import export_import
from sessions_app.management.person_command import PersonCommand


class Command(PersonCommand):
    help = (
        "Export a session as one JSON document. SESSION: the session, every plan in every state with all its "
        "fields, every event, and the open plans' files, as JSON on stdout (or into --output FILE). "
        "9plan import restores it."
    )

    def add_arguments(self, parser):
        parser.add_argument("session")
        parser.add_argument("-o", "--output", help="write to this file instead of stdout")

    def handle(self, *args, session: str, output: str | None, **options):
        try:
            # Written as it is read, so memory stays flat whatever the session's size.
            pieces = export_import.export_stream(session, progress=self.progress())
        except NineplanError as exc:
            raise CommandError(f"{exc.category}: {exc.message}") from exc
        if output is None:
            for piece in pieces:
                sys.stdout.write(piece)
            sys.stdout.flush()
            return
        try:
            # The owner's alone, like the database it comes from: it holds every plan's text.
            fh = open(os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8")
        except FileExistsError:
            raise CommandError(f"{output} already exists; nothing was written. Choose another file name.") from None
        except OSError as exc:
            raise CommandError(f"Could not write {output}: {exc.strerror or exc}.") from exc
        try:
            with fh:
                for piece in pieces:
                    fh.write(piece)
        except BaseException as exc:
            # A half-written export would only fail to import later: no file is better.
            os.unlink(output)
            if isinstance(exc, OSError):
                raise CommandError(f"Could not write {output}: {exc.strerror or exc}; nothing was kept.") from exc
            raise
        self.stderr.write(f"Exported session {session} to {output}.")
