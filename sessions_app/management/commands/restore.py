"""`manage.py restore FOLDER`: put a backup that `9plan backup` wrote in place of
the database and the plan files, then repair what changed between their copies."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from sessions_app.maintenance import repair
from sessions_app.maintenance.backup import BackupRefused, backup_restore
from sessions_app.management.person_command import PersonCommand
from sessions_app.store import datadir


class Command(PersonCommand):
    help = (
        "Restore a backup that 9plan backup wrote: its database (SQLite) and plan files replace this 9plan's, "
        "then the repair settles what changed between their copies. Stop every 9plan server first. A backup "
        "that never finished, or lacks a part, is refused and nothing is changed."
    )
    # The tables are the backup's: a fresh database need not be made first.
    needs_tables = False

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path, help="the backup's folder, backups/9plan-<time> in the data directory")

    def handle(self, *args, folder: Path, **options):
        try:
            kept = backup_restore(folder, progress=self.progress())
        except BackupRefused as exc:
            raise CommandError(str(exc)) from exc
        # A backup of an older 9plan lacks the newer migrations.
        datadir.make_if_missing()
        actions = repair.repair_all(apply=True, progress=self.progress())
        failed = [action for action in actions if action.failed]
        self.stdout.write(f"Restored {folder}.")
        if kept is not None:
            self.stdout.write(f"The plan files it replaced are kept in {kept}; delete it once the restore is checked.")
        for action in actions:
            self.stdout.write(f"{'could not repair' if action.failed else 'repaired'}: {action}")
        if failed:
            raise CommandError(f"{len(failed)} repair(s) failed; see the lines above, then run 9plan repair --apply.")
