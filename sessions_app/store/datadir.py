"""A fresh data directory made ready to use: its folders and the database's tables.

Every command that reads or writes 9plan's data prepares them first, quietly: `mcp` in
its background start-up (mcp_bridge/readiness.py), every other 9plan command before it
runs (sessions_app/management/person_command.py), and the login commands a newcomer runs first (nineplan/cli.py).
Nothing is printed: a command's stdout may carry data (an export, a token, JSON-RPC).
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

log = logging.getLogger("sessions_app.store.datadir")


def make_folders() -> None:
    from django.conf import settings
    from django.db import connection

    if connection.vendor == "sqlite":
        Path(settings.DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    settings.NINEPLAN_SESSIONS_PATH.mkdir(parents=True, exist_ok=True)


def migrate() -> None:
    """Applies every migration not applied yet (and what runs after a migrate), printing nothing."""
    from django.core.management import call_command
    from django.db import OperationalError

    make_folders()
    for attempt in range(3):
        try:
            # Two processes starting on one fresh database race here, and the loser simply
            # finds the migrations applied.
            call_command("migrate", interactive=False, verbosity=0, stdout=io.StringIO(), stderr=io.StringIO())
            return
        except OperationalError:
            if attempt == 2:
                raise
            log.warning("migrate raced another process; retrying")


def unapplied() -> int:
    """How many migrations the database lacks (all of them on a fresh one)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def make_if_missing() -> None:
    """Migrates only a database that lacks migrations: an up-to-date one costs a read of
    the migrations table, and no schema change runs inside a caller's transaction."""
    make_folders()
    missing = unapplied()
    if missing:
        log.info("preparing the database", extra={"migrations": missing})
        migrate()
