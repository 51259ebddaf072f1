"""`manage.py restore FOLDER`: put a backup that `9plan backup` wrote in place of
the database and the plan files, then repair what changed between their copies.

Nothing it replaces is lost: it refuses while another 9plan process has the database open
(unless --force), asks on a terminal (unless --yes), and first backs up what it replaces,
saying where, so that restoring that backup undoes it."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError
from django.db import connection

from sessions_app import planfiles
from sessions_app.maintenance import repair
from sessions_app.maintenance.backup import (
    BackupRefused,
    backup_create,
    backup_restore,
    backup_verify,
    default_backup_dir,
)
from sessions_app.management.person_command import PersonCommand, add_confirm_options
from sessions_app.store import attachment, datadir

ATTACHED = (
    "{count} other 9plan process(es) have the database open: {others}. Stop them first (a server would go on "
    "answering from the database it had), or run again with --force. Nothing was restored."
)


class Command(PersonCommand):
    help = (
        "Restore a backup that 9plan backup wrote: its database (SQLite) and plan files replace this 9plan's, "
        "then the repair settles what changed between their copies. What it replaces is backed up first (the "
        "command says where). It refuses while another 9plan process has the database open (--force to go on) "
        "and asks first on a terminal (--yes to go on without asking). A backup that never finished, or lacks "
        "a part, is refused and nothing is changed."
    )
    # The tables are the backup's: a fresh database need not be made first.
    needs_tables = False

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path, help="the backup's folder, backups/9plan-<time> in the data directory")
        add_confirm_options(parser, replaces="the database and plan files")

    def handle(self, *args, folder: Path, yes: bool = False, force: bool = False, **options):
        try:
            manifest = backup_verify(folder)
        except BackupRefused as exc:
            raise CommandError(str(exc)) from exc
        # Asked before the question, so that nobody confirms a restore that is then refused.
        others = attachment.others()
        if others and not force:
            raise CommandError(ATTACHED.format(count=len(others), others="; ".join(others)))
        self.confirm(self._question(folder, manifest), yes=yes)
        try:
            with attachment.sole_user(force=force) as others:
                if others:
                    self.stderr.write(
                        f"--force: restoring while {len(others)} other 9plan process(es) have the database open "
                        f"({'; '.join(others)}); restart them once it is done."
                    )
                before = backup_create(progress=self.progress(), notice=self.stderr.write)
                self.stdout.write(
                    f"What the restore replaces was backed up to {before}; to undo it, run 9plan restore {before}."
                )
                try:
                    kept = backup_restore(folder, progress=self.progress())
                except BackupRefused as exc:
                    raise CommandError(str(exc)) from exc
                # A backup of an older 9plan lacks the newer migrations.
                datadir.make_if_missing()
                actions = repair.repair_all(apply=True, progress=self.progress())
        except attachment.Attached as exc:  # one started between the question and now
            raise CommandError(ATTACHED.format(count=len(exc.others), others="; ".join(exc.others))) from exc
        failed = [action for action in actions if action.failed]
        self.stdout.write(f"Restored {folder}.")
        if kept is not None:
            self.stdout.write(f"The plan files it replaced are kept in {kept}; delete it once the restore is checked.")
        for action in actions:
            self.stdout.write(f"{'could not repair' if action.failed else 'repaired'}: {action}")
        if failed:
            raise CommandError(f"{len(failed)} repair(s) failed; see the lines above, then run 9plan repair --apply.")

    @staticmethod
    def _question(folder: Path, manifest: dict) -> str:
        sessions = planfiles.sessions_root()
        if connection.vendor == "sqlite":
            replaced = f"the database {connection.settings_dict['NAME']} and the plan files in {sessions}"
        else:
            replaced = f"the plan files in {sessions} (the database is pg_restore's to put back)"
        return (
            f"This replaces {replaced} with the backup {folder} of {manifest.get('created_at')}. What it replaces "
            f"is backed up first, to {default_backup_dir()}. Restore?"
        )
