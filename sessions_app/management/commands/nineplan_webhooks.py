"""`manage.py nineplan_webhooks [--once]`: the webhook delivery loop on its own
(docs/design.md, "Webhooks").

It sends the messages that are due every NINEPLAN_WEBHOOKS_INTERVAL seconds (2 when that
is 0, which only turns off the loops inside the servers), until stopped; `--once` sends
what is due now and exits. Any number of loops may run against one database (each message
is claimed by one at a time), beside `serve` and the HTTP MCP server or instead of theirs.
"""

from __future__ import annotations

import signal
import threading

from django.conf import settings

from sessions_app.management.person_command import PersonCommand
from sessions_app.webhooks import sender as webhook_sender

DEFAULT_INTERVAL = 2


class Command(PersonCommand):
    help = "Send the webhook deliveries that are due, every few seconds until stopped (--once: now, then exit)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="send what is due now, then exit")

    def handle(self, *args, once: bool, **options):
        if once:
            sent = webhook_sender.deliver_due()
            self.stderr.write(f"Sent {sent} webhook deliveries.")
            return
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        self.stderr.write("Sending webhook deliveries until stopped.")
        webhook_sender.run(stop, settings.NINEPLAN_WEBHOOKS_INTERVAL or DEFAULT_INTERVAL)
