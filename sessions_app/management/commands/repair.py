"""`manage.py repair`: show (default) or apply the repairs a crash calls for."""

from __future__ import annotations

from django.core.management.base import CommandError

from sessions_app.maintenance import repair
from sessions_app.management.person_command import PersonCommand, add_session_option


class Command(PersonCommand):
    help = (
        "List the repairs a crash calls for (with --apply, carry them out). Plan files are checked against the "
        "database; each repair carried out is written to the event log. Dry run by default."
    )

    def add_arguments(self, parser):
        parser.add_argument("--apply", action="store_true", help="carry out the repairs (default: only list them)")
        add_session_option(parser)

    def handle(self, *args, apply=False, session=None, **options):
        actions = repair.repair_all(apply=apply, session_name=session, progress=self.progress())
        verb = "repaired" if apply else "would repair"
        alone = [a for a in actions if a.kind == "left_alone"]
        actions = [a for a in actions if a.kind != "left_alone"]
        failed = [a for a in actions if a.failed]
        for action in actions:
            self.stdout.write(f"{'could not repair' if action.failed else verb}: {action}")
        # Links, FIFOs and devices in the sessions folder are never touched by a repair:
        # only a person can judge where they came from.
        for action in alone:
            self.stdout.write(f"left alone: {action}")
        if not actions and not alone:
            self.stdout.write("Nothing to repair.")
        elif not apply:
            self.stdout.write(f"{len(actions)} repair(s) found; run again with --apply to carry them out.")
        else:
            self.stdout.write(f"{len(actions) - len(failed)} repair(s) done.")
        if alone:
            self.stdout.write(
                f"{len(alone)} entr(ies) left alone: they are not regular files or real folders; remove them by hand."
            )
        if failed:
            raise CommandError(f"{len(failed)} repair(s) failed; see the lines above, fix the cause and run again.")
        if alone and apply:
            raise CommandError(f"{len(alone)} entr(ies) in the sessions folder were left alone; see the lines above.")
