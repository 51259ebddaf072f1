"""Consistent backups of the database and the plan files, taken while agents keep working.

The database is copied first, as one snapshot; the plan files after it. A file that
changes in between is reconciled by the repair when a backup is restored (a plan
without its file is rendered from the database, a file without its plan is kept aside),
so a restore is: put the copy in place, then run ``manage.py nineplan_repair --apply``.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import stat
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils import timezone

from nineplan.progress import Progress
from sessions_app import planfiles

log = logging.getLogger("nineplan.backup")

DB_FILE = "9plan.sqlite3"
SESSIONS_DIR = "sessions"


def default_backup_dir() -> Path:
    return Path(settings.NINEPLAN_DATA_DIR) / "backups"


def backup_create(*, destination: Path | None = None, progress: Progress | None = None, notice=None) -> Path:
    """Copies the database (SQLite's online backup API: a consistent snapshot even while
    writers run) and the sessions folder into a new timestamped folder; returns it.
    ``notice`` receives what a person must know (that PostgreSQL needs pg_dump)."""
    progress = progress or Progress()
    destination = Path(destination or default_backup_dir())
    target = destination / timezone.now().strftime("9plan-%Y%m%dT%H%M%S%f")
    target.mkdir(parents=True, exist_ok=False)
    if connection.vendor == "sqlite":
        db_path = connection.settings_dict["NAME"]
        progress.stage(f"Copying the database {db_path}")
        _copy_sqlite(Path(db_path), target / DB_FILE)
    elif notice is not None:
        notice("PostgreSQL: back up the database with pg_dump (see README, Maintenance); copying plan files only.")
    sessions = planfiles.sessions_root()
    if sessions.is_dir():
        progress.stage(f"Copying plan files from {sessions}")
        _copy_tree(sessions, target / SESSIONS_DIR, progress)
    progress.finish()
    log.info("backup written", extra={"path": str(target)})
    return target


def _copy_sqlite(source_path: Path, copy_path: Path) -> None:
    source = sqlite3.connect(source_path, timeout=20)
    copy = sqlite3.connect(copy_path)
    try:
        source.execute("PRAGMA busy_timeout = 20000")
        # All pages in one step, inside one read transaction: under WAL that neither
        # blocks writers nor restarts when they commit, and yields one point in time.
        # (Copying in small steps restarts after every commit by another process, so
        # a busy server could keep it from ever finishing.)
        source.backup(copy, pages=-1)
        # A single self-contained file: no -wal beside it to lose when it is moved.
        copy.execute("PRAGMA journal_mode=DELETE")
    finally:
        copy.close()
        source.close()


def _copy_tree(source: Path, target: Path, progress: Progress) -> None:
    """Copy the sessions folder; files that vanish mid-copy (a plan completed meanwhile)
    are skipped, and temporary files of writes in progress are left out.

    Only regular files and real folders are copied: a link is never followed (it could
    lead anywhere outside the sessions folder) and a FIFO or device is never opened (it
    could stall the backup); each is logged and left out.
    """
    for folder, dirs, files in os.walk(source):  # does not descend into linked folders
        rel = Path(folder).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in dirs:
            if (Path(folder) / name).is_symlink():
                log.warning("backup left out a link", extra={"file": str(rel / name)})
        for name in files:
            if name.startswith(planfiles.TEMP_PREFIX):
                continue
            progress.advance()
            try:
                _copy_regular(Path(folder) / name, target / rel / name)
            except FileNotFoundError:
                continue
            except _NotRegular as exc:
                log.warning("backup left out an entry", extra={"file": str(rel / name), "kind": str(exc)})


class _NotRegular(Exception):
    pass


def _copy_regular(source: Path, target: Path) -> None:
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the name is a link
            raise _NotRegular("a symbolic link") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _NotRegular(planfiles.kind_of(st.st_mode))
        with open(target, "wb") as out:
            while chunk := os.read(fd, 1 << 20):
                out.write(chunk)
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    finally:
        os.close(fd)


def backup_before_data_migration(sender, plan=None, using="default", **kwargs) -> None:
    """pre_migrate hook: a migration that changes data is preceded by a backup."""
    if not plan:
        return
    from sessions_app.models import Session

    changes_data = any(
        migration.app_label == "sessions_app"
        and not backwards
        and any(type(op).__name__ in ("RunPython", "RunSQL") for op in migration.operations)
        for migration, backwards in plan
    )
    if not changes_data:
        return
    try:
        if not Session.objects.using(using).exists():
            return
    except Exception:  # the table does not exist yet: nothing to back up
        return
    path = backup_create()
    log.warning("backup taken before a data migration", extra={"path": str(path)})
