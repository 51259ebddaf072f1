"""A separate OS process that writes one event and keeps its transaction open until told,
so a test can show that the event feed never skips an id that commits late.

Run as ``python -m tests.sessions_app.api_feed_holder SESSION``. Prints the event's id once
it is inserted (uncommitted), then waits for a line on stdin before it commits.
"""

from __future__ import annotations

import os
import sys

os.environ["DJANGO_SETTINGS_MODULE"] = "nineplan.settings"

import django

django.setup()

from django.db import transaction  # noqa: E402

from sessions_app.models import Event  # noqa: E402


def main(session: str) -> None:
    with transaction.atomic():
        event = Event.objects.create(session_id=session, kind=Event.Kind.REPAIRED, actor="holder", detail={})
        print(event.id, flush=True)
        sys.stdin.readline()
    print("committed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
