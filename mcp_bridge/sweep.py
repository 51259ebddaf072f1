"""The periodic sweep of a long-running MCP server: it reports claims whose lease ran out
(and leaves them with their workers), and forgets the answers kept for retried writes once
they are old (docs/design.md, "Services and queries": reclaiming; "Plan files": retries).

An expired claim stays its worker's until another worker's pull, a person or
``nineplan_reclaim`` takes it back: a lone agent that thinks for longer than its lease
keeps its plan. A daemon thread reads the expired claims every NINEPLAN_RECLAIM_INTERVAL
seconds, once start-up preparation is done, and logs each one once (per lease). It writes
nothing but log lines, and those go to stderr: under stdio, stdout carries only JSON-RPC.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta

from django.conf import settings

log = logging.getLogger("nineplan.mcp")

_stop = threading.Event()
_thread: threading.Thread | None = None
_lock = threading.Lock()
# The claims already reported, with the lease each ran out at: a claim renewed and run out
# again is reported again, one still expired is not repeated every round.
_reported: dict[str, object] = {}
TOKEN_SWEEP_EVERY = timedelta(hours=1)
# When the next sweep of expired OAuth tokens is due (the first round does it).
next_token_sweep = [datetime.min.replace(tzinfo=UTC)]


def start(interval: float | None = None) -> threading.Thread | None:
    """Starts the sweep (once per process); None when the interval is 0."""
    global _thread
    every = settings.NINEPLAN_RECLAIM_INTERVAL if interval is None else interval
    if not every:
        return None
    with _lock:
        if _thread is None or not _thread.is_alive():
            _stop.clear()
            _thread = threading.Thread(target=_run, args=(every,), name="nineplan-sweep", daemon=True)
            _thread.start()
        return _thread


def stop() -> None:
    _stop.set()


def _run(every: float) -> None:
    from mcp_bridge import readiness

    try:
        readiness.wait_ready()
    except Exception:  # the tools report a failed start-up; the sweep simply does not run
        log.warning("sweep not started: the database was not prepared")
        return
    while not _stop.wait(every):
        sweep_once()


def sweep_once() -> int:
    """One sweep; returns how many claims are past their lease. Moves nothing and never
    raises: a database that is briefly unavailable is tried again on the next round."""
    from django.db import close_old_connections

    from sessions_app import access, clock, services
    from sessions_app.clock import utc_text
    from sessions_app.reads import queries

    try:
        close_old_connections()
        # The server's own look, as the local user: every session of the database.
        with access.acting_as(access.LOCAL):
            expired = queries.expired_claims(clock.now())
            # Answers kept for retried writes (request_id) are forgotten after 48 hours.
            services.forget_old_requests()
            if settings.NINEPLAN_OAUTH and clock.now() >= next_token_sweep[0]:
                # Expired OAuth tokens and codes go too, at most once an hour.
                services.tokens_sweep()
                next_token_sweep[0] = clock.now() + TOKEN_SWEEP_EVERY
    except Exception:
        log.exception("sweep failed; trying again on the next round")
        return 0
    finally:
        close_old_connections()
    current = {p.id: p.lease_expires_at for p in expired}
    for plan in expired:
        if _reported.get(plan.id) != plan.lease_expires_at:
            log.info(
                "lease expired, claim still held until another worker pulls",
                extra={
                    "session": plan.session_id,
                    "plan": plan.id,
                    "worker": plan.worker,
                    "lease_expired_at": utc_text(plan.lease_expires_at),
                },
            )
    _reported.clear()
    _reported.update(current)
    return len(expired)
