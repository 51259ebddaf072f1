"""`manage.py nineplan_backup`: a consistent copy of the database and plan files."""

from __future__ import annotations

from pathlib import Path

from nineplan.commands import PersonCommand
from sessions_app.backup import backup_create, default_backup_dir


class Command(PersonCommand):
    help = "Write a consistent copy of the 9plan database and plan files (safe while agents work)."

    def add_arguments(self, parser):
        parser.add_argument("--output", type=Path, help=f"folder to write into (default: {default_backup_dir()})")

    def handle(self, *args, output=None, **options):
        path = backup_create(destination=output, progress=self.progress(), notice=self.stderr.write)
        self.stdout.write(f"Backup written to {path}")
