"""Database start-up for the MCP server, off the path to the `initialize` answer.

`manage.py mcp` starts serving at once and prepares the database (migrations, repair)
in a background thread; tools wait here until it is done. A fresh data directory is
initialised quietly: nothing is printed, so stdout stays the protocol's.
"""

from __future__ import annotations

import io
import logging
import threading

log = logging.getLogger("nineplan.mcp")

_ready = threading.Event()
_error: list[BaseException] = []
_started = threading.Lock()
_thread: threading.Thread | None = None


def prepare_database() -> None:
    from django.core.management import call_command
    from django.db import OperationalError, close_old_connections, connection

    from django.conf import settings

    if connection.vendor == "sqlite":
        from pathlib import Path

        Path(settings.DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    settings.NINEPLAN_SESSIONS_PATH.mkdir(parents=True, exist_ok=True)
    for attempt in range(3):
        try:
            # Output goes to a buffer, never stdout; two servers starting on one fresh
            # database race here, and the loser simply finds the migrations applied.
            call_command("migrate", interactive=False, verbosity=0, stdout=io.StringIO(), stderr=io.StringIO())
            break
        except OperationalError:
            if attempt == 2:
                raise
            log.warning("migrate raced another process; retrying")
    # What a killed process left behind is put right before the first tool call.
    from sessions_app import repair

    for action in repair.repair_all(apply=True):
        log.warning("start-up repair", extra={"session": action.session, "action": action.kind, "file": action.target})
    close_old_connections()


def start(prepare=prepare_database) -> None:
    """Begin preparing the database in the background (idempotent)."""
    global _thread
    with _started:
        if _thread is not None:
            return

        def work() -> None:
            try:
                prepare()
            except BaseException as exc:  # reported to every tool call, and logged
                log.exception("database preparation failed")
                _error.append(exc)
            finally:
                _ready.set()

        _thread = threading.Thread(target=work, name="nineplan-prepare", daemon=True)
        _thread.start()


def wait_ready(timeout: float = 120.0) -> None:
    """Block until start-up preparation is done; in-process servers that never called
    start() have a prepared database already and do not wait."""
    if _thread is not None and not _ready.is_set():
        _ready.wait(timeout)
    if _error:
        from sessions_app.errors import DatabaseFailed

        raise DatabaseFailed(f"The database could not be prepared at start-up: {_error[0]}")
