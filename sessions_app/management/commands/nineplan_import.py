"""`manage.py nineplan_import FILE`: restore a session exported by nineplan_export."""

from __future__ import annotations

import json
import sys

from django.core.management.base import CommandError

from nineplan.commands import PersonCommand
from sessions_app import export_import
from sessions_app.errors import NineplanError

MAX_BYTES = 512 * 1024 * 1024


class Command(PersonCommand):
    help = (
        "Import a session that nineplan_export wrote. FILE ('-' for stdin), as written by nineplan_export or "
        "the API's export endpoint, goes into a database that does not hold it yet: plans, events and the open "
        "plans' files. "
        "The whole document is checked first; on any error nothing is changed."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")

    def handle(self, *args, file: str, **options):
        try:
            if file == "-":
                raw = sys.stdin.buffer.read(MAX_BYTES + 1)
            else:
                with open(file, "rb") as fh:
                    raw = fh.read(MAX_BYTES + 1)
        except OSError as exc:
            raise CommandError(f"Could not read {file}: {exc.strerror or exc}.") from exc
        if len(raw) > MAX_BYTES:
            raise CommandError(f"{file} is larger than {MAX_BYTES // (1024 * 1024)} MiB; nothing was imported.")
        try:
            document = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CommandError(f"{file} is not UTF-8 JSON ({exc}); nothing was imported.") from exc
        try:
            session = export_import.session_import(document, actor="import", progress=self.progress())
        except NineplanError as exc:
            raise CommandError(f"{exc.category}: {exc.message}") from exc
        self.stdout.write(session.name)
