"""A separate OS process that runs 9plan services on command, for the concurrency tests.

Run as ``python -m tests.proofs.race_worker`` with DATABASE_URL and
NINEPLAN_SESSIONS_PATH pointing at the test's database and sessions folder. It speaks
JSON lines: stdin sends ``{"ops": [{"op": ..., "kwargs": {...}}, ...]}``, the worker
answers ``{"armed": true}`` and then waits for a ``go`` line, so the test can release all
workers at once; after running the ops it answers one ``{"results": [...]}`` line. One
process serves many rounds, so Django's start-up is paid once per worker, not per call.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

# The protocol owns the real stdout; anything else that prints goes to stderr.
_protocol = sys.stdout
sys.stdout = sys.stderr

os.environ["DJANGO_SETTINGS_MODULE"] = "nineplan.settings"

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from sessions_app import services  # noqa: E402
from sessions_app.errors import NineplanError, QueueBlocked, QueueEmpty  # noqa: E402
from sessions_app.models import Plan  # noqa: E402


def drain(*, session_name: str, worker: str, hold: float = 0.0, give_up_after: float = 120.0) -> dict:
    """What an agent of a parallel team does: pull, note, complete, until the queue is empty;
    a pull that finds every plan waiting for others is tried again shortly. Returns, in
    order, the plans this worker completed."""
    done: list[str] = []
    deadline = time.monotonic() + give_up_after
    while time.monotonic() < deadline:
        try:
            plan = services.plan_pull(session_name=session_name, worker=worker)
        except QueueEmpty:
            return {"done": done}
        except QueueBlocked:
            time.sleep(0.002)
            continue
        services.plan_note(session_name=session_name, worker=worker, text=f"[{worker}] worked on {plan.id}")
        if hold:
            time.sleep(hold)
        services.plan_complete(session_name=session_name, worker=worker, outcome=f"{plan.id} done by {worker}")
        done.append(plan.id)
    raise RuntimeError(f"worker {worker} still draining after {give_up_after} s")


OPS = {
    "drain": drain,
    "plan_renew": services.plan_renew,
    "plan_pull": services.plan_pull,
    "plan_note": services.plan_note,
    "plan_enqueue": services.plan_enqueue,
    "plan_enqueue_many": services.plan_enqueue_many,
    "plan_complete": services.plan_complete,
    "plan_defer": services.plan_defer,
}


def _plan(value: Plan | services.Written) -> dict:
    plan = value.plan if isinstance(value, services.Written) else value
    return {"id": plan.id, "status": plan.status, "sort_key": plan.sort_key, "attempts": plan.attempts}


def run(op: str, kwargs: dict) -> dict:
    try:
        value = OPS[op](**kwargs)
    except NineplanError as exc:
        return {"ok": False, "category": exc.category, "message": exc.message, "reason": exc.reason}
    except Exception as exc:  # reported to the test, which fails on anything uncategorised
        return {"ok": False, "category": "EXCEPTION", "message": "".join(traceback.format_exception(exc))}
    if isinstance(value, dict):
        return {"ok": True, **value}
    if isinstance(value, list):
        return {"ok": True, "plans": [_plan(p) for p in value]}
    return {"ok": True, "plan": _plan(value)}


def send(message: dict) -> None:
    _protocol.write(json.dumps(message) + "\n")
    _protocol.flush()


def main() -> None:
    # Open the connection (and run its PRAGMAs) now, so a released worker goes straight
    # to its first write instead of arriving late to the race.
    connection.ensure_connection()
    send({"ready": os.getpid()})
    while line := sys.stdin.readline():
        ops = json.loads(line)["ops"]
        send({"armed": True})
        if sys.stdin.readline().strip() != "go":
            return
        send({"results": [run(item["op"], item.get("kwargs", {})) for item in ops]})


if __name__ == "__main__":
    main()
