"""`manage.py nineplan_webhook add PROJECT URL --events TYPE[,TYPE...] | list | rotate ID
[--overlap HOURS] | remove ID`: the URLs that a project's events are posted to
(docs/design.md, "Webhooks").

`add` and `rotate` print the subscription's secret on stdout, once: it is never shown
again, and the receiver verifies every message's signature with it. `--events all`
subscribes to every event type, including ones added later. After `rotate`, the old secret
signs every message beside the new one for the overlap, then is dropped.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError

from sessions_app import access, clock, services
from sessions_app.errors import NineplanError
from sessions_app.management.person_command import PersonCommand
from sessions_app.reads import queries
from sessions_app.webhooks import event_types

NO_LINKS = "Messages carry no link to the plan's page until NINEPLAN_PUBLIC_URL is set (docs/configuration.md)."


class Command(PersonCommand):
    help = "Subscribe a URL to a project's events, list the subscriptions, rotate a secret, remove one."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="{add,list,rotate,remove}")
        add = actions.add_parser("add", help="subscribe a URL; prints its secret once")
        add.add_argument("project")
        add.add_argument("url", help="an http or https URL")
        add.add_argument(
            "--events",
            required=True,
            help=f"event types separated by commas, or 'all': {', '.join(event_types.TYPES)}",
        )
        actions.add_parser("list", help="every subscription with its deliveries' counts and its last error")
        rotate = actions.add_parser("rotate", help="give a subscription a new secret; prints it once")
        rotate.add_argument("id", type=int)
        rotate.add_argument(
            "--overlap",
            type=int,
            default=services.DEFAULT_OVERLAP_HOURS,
            metavar="HOURS",
            help=f"hours the old secret goes on signing beside the new one (default {services.DEFAULT_OVERLAP_HOURS}; 0: none)",
        )
        remove = actions.add_parser("remove", help="remove a subscription and its deliveries")
        remove.add_argument("id", type=int)

    def handle(self, *args, action: str, **options):
        try:
            if action == "add":
                made = services.webhook_subscribe(
                    project=options["project"],
                    url=options["url"],
                    events=options["events"],
                    actor=access.current().label,
                )
                sub = made.subscription
                self.stderr.write(
                    f"Subscribed {sub.url} to {', '.join(sub.type_list())} of project '{sub.project_id}' (id {sub.id}). "
                    "Its secret, shown only now:"
                )
                self.stdout.write(made.secret)
                if not settings.NINEPLAN_PUBLIC_URL:
                    self.stderr.write(NO_LINKS)
            elif action == "rotate":
                rotated = services.webhook_secret_rotate(
                    subscription_id=options["id"], overlap_hours=options["overlap"], actor=access.current().label
                )
                until = (
                    f"the old one signs beside it until {clock.utc_text(rotated.previous_until)}"
                    if rotated.previous_until
                    else "the old one no longer signs"
                )
                self.stderr.write(f"New secret for subscription {rotated.subscription.id} ({until}), shown only now:")
                self.stdout.write(rotated.secret)
            elif action == "remove":
                removed = services.webhook_unsubscribe(subscription_id=options["id"])
                self.stderr.write(f"Removed subscription {removed.id} ({removed.url}) and its deliveries.")
            else:
                self._list()
        except NineplanError as exc:
            raise CommandError(exc.message) from exc

    def _list(self) -> None:
        rows = queries.webhook_subscriptions()
        if not rows:
            self.stderr.write("No webhook subscriptions; add one with `nineplan_webhook add PROJECT URL --events ...`.")
            return
        for row in rows:
            sub = row.subscription
            state = "active" if sub.active else "inactive"
            self.stdout.write(f"{sub.id}  {sub.project_id}  {sub.url}  {','.join(sub.type_list())}  {state}")
            self.stdout.write(f"    deliveries: {row.pending} pending, {row.delivered} delivered, {row.failed} failed")
            if sub.previous_secret and sub.previous_secret_until:
                self.stdout.write(f"    previous secret signs too until {clock.utc_text(sub.previous_secret_until)}")
            if row.last_error:
                self.stdout.write(f"    last error (msg_{row.last_error_delivery}): {row.last_error}")
