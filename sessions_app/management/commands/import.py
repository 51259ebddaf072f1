"""`manage.py import FILE [--project NAME]`: restore a session exported by export."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from django.core.management.base import CommandError

from sessions_app.errors import NineplanError
from sessions_app.maintenance import export_import
from sessions_app.management.person_command import PersonCommand

# Not for memory (the document is read as a stream): a bound on the time and the disk an
# import may take.
MAX_BYTES = 512 * 1024 * 1024


class Command(PersonCommand):
    help = (
        "Import a session that 9plan export wrote. FILE ('-' for stdin), as written by 9plan export or "
        "the API's export endpoint, goes into a database that does not hold it yet: plans, events and the open "
        "plans' files. The whole document is checked first; on any error nothing is changed."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument(
            "--project",
            default=None,
            help="the project the session goes into (default: the one the document names, or 'default')",
        )

    def handle(self, *args, file: str, project: str | None = None, **options):
        try:
            document = self._open(file)
        except OSError as exc:
            raise CommandError(f"Could not read {file}: {exc.strerror or exc}.") from exc
        with document:
            if os.fstat(document.fileno()).st_size > MAX_BYTES:
                raise CommandError(f"{file} is larger than {MAX_BYTES // (1024 * 1024)} MiB; nothing was imported.")
            try:
                session = export_import.import_file(document, actor="import", project=project, progress=self.progress())
            except NineplanError as exc:
                raise CommandError(f"{exc.category}: {exc.message}") from exc
        self.stdout.write(session.name)

    @staticmethod
    def _open(file: str):
        """The document as a file that can be read more than once: stdin is copied aside."""
        if file != "-":
            return open(file, "rb")
        spool = tempfile.TemporaryFile()
        # One byte over the bound is enough to refuse it.
        shutil.copyfileobj(_Bounded(sys.stdin.buffer, MAX_BYTES + 1), spool)
        spool.seek(0)
        return spool


class _Bounded:
    def __init__(self, stream, limit: int):
        self._stream, self._left = stream, limit

    def read(self, size: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        data = self._stream.read(self._left if size < 0 else min(size, self._left))
        self._left -= len(data)
        return data
