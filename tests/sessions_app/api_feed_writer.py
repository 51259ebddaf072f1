"""A separate OS process that keeps agents' writes coming while a test reads the event feed.

Run as ``python -m tests.sessions_app.api_feed_writer SESSION ROUNDS`` with DATABASE_URL and
NINEPLAN_SESSIONS_PATH pointing at the test's database and sessions folder. Each round adds
two plans (one at the front, one at the back), pulls one, notes and completes it, so the
session's queue grows by one plan per round. Prints ``ready`` once Django is up and ``done``
with the number of rounds at the end.
"""

from __future__ import annotations

import os
import sys

os.environ["DJANGO_SETTINGS_MODULE"] = "nineplan.settings"

import django

django.setup()

from sessions_app import services  # noqa: E402


def fields(goal: str) -> dict:
    return {"context": "feed test", "goal": goal, "approach": "write", "success_criteria": "recorded"}


def main(session: str, rounds: int) -> None:
    print("ready", flush=True)
    for i in range(rounds):
        services.plan_enqueue(session_name=session, position="front", **fields(f"front {i}"))
        services.plan_enqueue(session_name=session, position="back", **fields(f"back {i}"))
        services.plan_pull(session_name=session)
        services.plan_note(session_name=session, text=f"round {i}")
        services.plan_complete(session_name=session, outcome=f"round {i} done")
    print(f"done {rounds}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
