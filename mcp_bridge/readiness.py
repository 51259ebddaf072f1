"""Start-up for the MCP server, off the path to the `initialize` answer.

`manage.py mcp` starts serving at once. Over stdio it answers `initialize` even before
Django loads its apps and the tools (that alone takes longer than the MCP SDK's own
start); then, in a background thread, the apps and tools load and the database is
prepared (migrations, repair). Requests that need the tools wait for the first step
(wait_apps), tools for both (wait_ready). A fresh data directory is initialised quietly:
nothing is printed, so stdout stays the protocol's.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("nineplan.mcp")

_ready = threading.Event()
_apps_ready = threading.Event()
_error: list[BaseException] = []
_setup_error: list[BaseException] = []
_started = threading.Lock()
_thread: threading.Thread | None = None


def prepare_database() -> None:
    from django.db import close_old_connections

    from sessions_app.store import datadir

    # Nothing is printed (stdout is the protocol's). A database that lacks migrations is
    # migrated; an up-to-date one costs a read of the migrations table, not a whole
    # migrate: what runs after a migrate (the search and count triggers) the repair below
    # puts in place as well.
    datadir.make_if_missing()
    # What a killed process left behind is put right before the first tool call.
    from sessions_app import access
    from sessions_app.maintenance import repair

    try:
        with access.acting_as(access.LOCAL):  # the server's own work, over every session
            actions = repair.repair_all(apply=True)
    except Exception:
        # A repair that cannot run (the database busy beyond its timeout, say) must not
        # keep the server from serving: check_invariants still reports what is out of step,
        # and the next start or `manage.py repair --apply` fixes it.
        log.exception("start-up repair failed; serving without it")
        actions = []
    for action in actions:
        extra = {"session": action.session, "action": action.kind, "file": action.target}
        if action.failed:
            log.error("start-up repair failed", extra={**extra, "error": action.failed})
        elif action.kind == "left_alone":
            log.warning("start-up repair left this alone", extra={**extra, "reason": action.detail})
        else:
            log.warning("start-up repair", extra=extra)
    close_old_connections()


def start(prepare=prepare_database, *, setup=None) -> None:
    """Begin, in the background, ``setup`` (loading Django's apps and the tools, for a
    server that answered its client before them), then preparing the database
    (idempotent)."""
    global _thread
    with _started:
        if _thread is not None:
            return

        def work() -> None:
            try:
                if setup is not None:
                    setup()
            except BaseException as exc:  # reported to every request, and logged
                log.exception("loading the apps failed")
                _setup_error.append(exc)
                _error.append(exc)
            finally:
                _apps_ready.set()
            if _setup_error:
                _ready.set()
                return
            try:
                prepare()
            except BaseException as exc:  # reported to every tool call, and logged
                log.exception("database preparation failed")
                _error.append(exc)
            finally:
                _ready.set()

        _thread = threading.Thread(target=work, name="nineplan-prepare", daemon=True)
        _thread.start()


def apps_ready() -> bool:
    """Whether the tools can be listed and called without waiting (see start)."""
    return _thread is None or _apps_ready.is_set()


def wait_apps(timeout: float = 120.0) -> None:
    """Block until Django's apps and the tools are loaded; at once when start() was
    never given a setup step."""
    if not apps_ready():
        _apps_ready.wait(timeout)
    if _setup_error:
        from sessions_app.errors import DatabaseFailed

        raise DatabaseFailed(f"The server could not load its apps at start-up: {_setup_error[0]}")


def ready() -> bool:
    """Whether a tool call can run without waiting for start-up (see start)."""
    return _thread is None or _ready.is_set()


def settle(timeout: float = 120.0) -> None:
    """Block until start-up preparation is over, whether it failed or not (wait_ready
    then says which)."""
    if not ready():
        _ready.wait(timeout)


def wait_ready(timeout: float = 120.0) -> None:
    """Block until start-up preparation is done; in-process servers that never called
    start() have a prepared database already and do not wait."""
    settle(timeout)
    if _error:
        from sessions_app.errors import DatabaseFailed

        raise DatabaseFailed(f"The database could not be prepared at start-up: {_error[0]}")
