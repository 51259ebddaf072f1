"""`manage.py nineplan_export SESSION`: write a session as one JSON document (lossless)."""

from __future__ import annotations

import json
import sys

from django.core.management.base import CommandError
from django.core.serializers.json import DjangoJSONEncoder

from nineplan.commands import PersonCommand
from sessions_app import export_import
from sessions_app.errors import NineplanError


class Command(PersonCommand):
    help = (
        "Export SESSION: the session, every plan in every state with all its fields, every event, and the "
        "open plans' files, as JSON on stdout (or into --output FILE). nineplan_import restores it."
    )

    def add_arguments(self, parser):
        parser.add_argument("session")
        parser.add_argument("-o", "--output", help="write to this file instead of stdout")

    def handle(self, *args, session: str, output: str | None, **options):
        try:
            document = export_import.export_session(session)
        except NineplanError as exc:
            raise CommandError(f"{exc.category}: {exc.message}") from exc
        text = json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False, indent=1)
        if output is None:
            sys.stdout.write(text + "\n")
            return
        try:
            with open(output, "x", encoding="utf-8") as fh:
                fh.write(text + "\n")
        except FileExistsError:
            raise CommandError(f"{output} already exists; nothing was written. Choose another file name.") from None
        except OSError as exc:
            raise CommandError(f"Could not write {output}: {exc.strerror or exc}.") from exc
        self.stderr.write(f"Exported session {document['session']['name']} to {output}.")
