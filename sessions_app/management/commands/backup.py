"""`manage.py backup`: a consistent copy of the database and plan files; with
`--verify FOLDER`, whether a backup is whole and may be restored."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from sessions_app.maintenance.backup import BackupRefused, backup_create, backup_verify, default_backup_dir
from sessions_app.management.person_command import PersonCommand


class Command(PersonCommand):
    help = (
        "Write a consistent copy of the 9plan database and plan files (safe while agents work). "
        "With --verify FOLDER, check that a backup finished and is whole before restoring it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--output", type=Path, help=f"folder to write into (default: {default_backup_dir()})")
        parser.add_argument("--verify", type=Path, metavar="FOLDER", help="check this backup instead of writing one")

    def handle(self, *args, output=None, verify=None, **options):
        if verify is not None:
            try:
                manifest = backup_verify(verify)
            except BackupRefused as exc:
                raise CommandError(str(exc)) from exc
            database = "the database and " if manifest["database"] else ""
            self.stdout.write(
                f"{verify} is a whole backup of {manifest['created_at']}: {database}{manifest['files']:,} files "
                f"of the sessions folder. To restore it, stop the servers and run 9plan restore {verify}."
            )
            return
        path = backup_create(destination=output, progress=self.progress(), notice=self.stderr.write)
        self.stdout.write(f"Backup written to {path}")
