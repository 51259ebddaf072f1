"""The periodic sweep of a long-running MCP server: claims whose lease ran out go back to
the queue even in a session nobody pulls from, and the answers kept for retried writes are
forgotten once they are old (docs/design.md, "The edges").

A daemon thread calls the reclaim service every NINEPLAN_RECLAIM_INTERVAL seconds, once
start-up preparation is done. It writes nothing but log lines, and those go to stderr:
under stdio, stdout carries only JSON-RPC.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings

log = logging.getLogger("nineplan.mcp")

_stop = threading.Event()
_thread: threading.Thread | None = None
_lock = threading.Lock()


def start(interval: float | None = None) -> threading.Thread | None:
    """Starts the sweep (once per process); None when the interval is 0."""
    global _thread
    every = settings.NINEPLAN_RECLAIM_INTERVAL if interval is None else interval
    if not every:
        return None
    with _lock:
        if _thread is None or not _thread.is_alive():
            _stop.clear()
            _thread = threading.Thread(target=_run, args=(every,), name="nineplan-reclaim", daemon=True)
            _thread.start()
        return _thread


def stop() -> None:
    _stop.set()


def _run(every: float) -> None:
    from mcp_bridge import readiness

    try:
        readiness.wait_ready()
    except Exception:  # the tools report a failed start-up; the sweep simply does not run
        log.warning("reclaim sweep not started: the database was not prepared")
        return
    while not _stop.wait(every):
        sweep_once()


def sweep_once() -> int:
    """One sweep; returns how many claims it reclaimed. Never raises: a database that is
    briefly unavailable is tried again on the next round."""
    from django.db import close_old_connections

    from sessions_app import access, services

    try:
        close_old_connections()
        # The server's own work, as the local user: every session of the database.
        with access.acting_as(access.LOCAL):
            reclaimed = services.reclaim_expired()
            # Answers kept for retried writes (request_id) are forgotten after 48 hours.
            services.forget_old_requests()
    except Exception:
        log.exception("reclaim sweep failed; trying again on the next round")
        return 0
    finally:
        close_old_connections()
    if reclaimed:
        log.info("expired claims reclaimed", extra={"plans": [p.id for p in reclaimed]})
    return len(reclaimed)
