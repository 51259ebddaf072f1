"""A fresh data directory made ready to use: its folders and the database's tables, the
owner's alone (folders 0700, database files 0600, as the secret key beside them).

Every command that reads or writes 9plan's data prepares them first, quietly: `mcp` in
its background start-up (mcp_bridge/readiness.py), every other 9plan command before it
runs (sessions_app/management/person_command.py), and the login commands a newcomer runs first (nineplan/cli.py).
Nothing is printed: a command's stdout may carry data (an export, a token, JSON-RPC).
"""

from __future__ import annotations

import importlib
import io
import logging
import os
import pkgutil
import stat
from pathlib import Path

log = logging.getLogger("sessions_app.store.datadir")

# Plans, notes and outcomes are a team's work, and tokens' digests sit in the database:
# nothing of it is for the other users of the machine.
PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def private_folder(path: Path) -> None:
    """Makes the folder ``path`` (and any missing parent) if missing, the owner's alone. A
    folder that exists is left as it is: it may be one a person chose and shares (the
    parent of a sessions folder set with NINEPLAN_SESSIONS_PATH, say)."""
    Path(path).mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)


def private_database(path: Path) -> None:
    """The SQLite database file at ``path``, and its -wal and -shm, readable by the owner
    alone. A missing database is made empty (a valid SQLite database) with mode 0600 before
    SQLite opens it, since SQLite makes its files 0644 and gives the -wal and -shm the
    database's own mode; files an older 9plan left open to others are narrowed."""
    path = Path(path)
    private_folder(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE))
    except FileExistsError:
        pass
    for name in (path, *(path.with_name(path.name + end) for end in SQLITE_COMPANIONS)):
        private_file(name)


def private_file(path: Path) -> None:
    """Narrows the mode of the regular file at ``path`` (if there is one) to its owner."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return
    # A link is left alone: it could lead to a file that is not 9plan's.
    if stat.S_ISREG(found.st_mode) and found.st_mode & 0o077:
        os.chmod(path, stat.S_IMODE(found.st_mode) & 0o700)


def make_folders() -> None:
    from django.conf import settings
    from django.db import connection

    if connection.vendor == "sqlite":
        private_database(Path(settings.DATABASES["default"]["NAME"]))
    private_folder(settings.NINEPLAN_SESSIONS_PATH)


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


def every_migration_recorded() -> bool:
    """Whether every migration file of the installed apps is recorded as applied: a read of
    the migrations table beside a listing of the apps' migrations folders, without importing
    every migration, which is most of what finding the unapplied ones costs. A squashed
    migration not recorded yet reads as missing, and ``unapplied`` then decides."""
    from django.apps import apps
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader
    from django.db.migrations.recorder import MigrationRecorder

    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return False
    applied = set(recorder.applied_migrations())
    for config in apps.get_app_configs():
        module_name, _ = MigrationLoader.migrations_module(config.label)
        try:
            folders = getattr(importlib.import_module(module_name), "__path__", None) if module_name else None
        except ModuleNotFoundError:
            folders = None
        for found in pkgutil.iter_modules(folders or []):
            # Django's loader passes over the same names: packages, and "_" or "~" first.
            if not found.ispkg and found.name[0] not in "_~" and (config.label, found.name) not in applied:
                return False
    return True


def make_if_missing() -> None:
    """Migrates only a database that lacks migrations: an up-to-date one costs a read of
    the migrations table, and no schema change runs inside a caller's transaction."""
    make_folders()
    if every_migration_recorded():
        return
    missing = unapplied()
    if missing:
        log.info("preparing the database", extra={"migrations": missing})
        migrate()
