"""`manage.py nineplan_reclaim`: return every claim whose lease ran out to its queue now (an
expired claim otherwise stays with its worker until another worker pulls)."""

from __future__ import annotations

from django.core.management.base import CommandError

from sessions_app import services
from sessions_app.errors import NineplanError
from sessions_app.management.person_command import PersonCommand, add_session_option


class Command(PersonCommand):
    help = (
        "Reclaim every claim whose lease ran out. Its plan goes back to the front of its queue with "
        "everything its worker wrote, as another worker's pull in the session would do; until then an expired claim "
        "stays its worker's."
    )

    def add_arguments(self, parser):
        add_session_option(parser)

    def handle(self, *args, session=None, **options):
        try:
            reclaimed = services.reclaim_expired(session_name=session)
        except NineplanError as exc:
            raise CommandError(f"{exc.category}: {exc.message}") from exc
        for plan in reclaimed:
            waits = " (it now waits for a person: no attempts left)" if plan.waiting_for_person else ""
            self.stdout.write(f"reclaimed: {plan.session_id} plan {plan.id}, attempt {plan.attempts} lost{waits}")
        self.stdout.write(f"{len(reclaimed)} claim(s) reclaimed." if reclaimed else "No claim has run out.")
