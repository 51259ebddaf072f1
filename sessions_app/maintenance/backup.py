"""Consistent backups of the database and the plan files, taken while agents keep working.

The database is copied first, as one snapshot; the plan files after it. A file that
changes in between is reconciled by the repair when a backup is restored (a plan
without its file is rendered from the database, a file without its plan is kept aside),
so a restore (``backup_restore``, ``manage.py restore``) is: check the backup
(``backup_verify``), put the copy in place, then run the repair.

A backup is built in a folder named ``….incomplete`` and given its final name only once
it is whole, with its manifest (``backup.json``, what it holds) written last: a backup
killed midway can never pass for a finished one, and ``backup_verify`` refuses it.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import sqlite3
import stat
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils import timezone

from sessions_app import planfiles
from sessions_app.maintenance.progress import Progress
from sessions_app.store import datadir
from sessions_app.version import version

log = logging.getLogger("nineplan.backup")

DB_FILE = "9plan.sqlite3"
SESSIONS_DIR = "sessions"
MANIFEST = "backup.json"
MANIFEST_FORMAT = "9plan-backup"
INCOMPLETE = ".incomplete"


def default_backup_dir() -> Path:
    return Path(settings.NINEPLAN_DATA_DIR) / "backups"


def backup_create(*, destination: Path | None = None, progress: Progress | None = None, notice=None) -> Path:
    """Copies the database (SQLite's online backup API: a consistent snapshot even while
    writers run) and the sessions folder into a new timestamped folder; returns it.
    ``notice`` receives what a person must know (that PostgreSQL needs pg_dump)."""
    progress = progress or Progress()
    destination = Path(destination or default_backup_dir())
    started = timezone.now()
    target = destination / started.strftime("9plan-%Y%m%dT%H%M%S%f")
    building = target.with_name(target.name + INCOMPLETE)
    datadir.private_folder(destination)
    building.mkdir(mode=datadir.PRIVATE_FOLDER)
    if target.exists():  # only ever by hand: never overwrite it
        building.rmdir()
        raise FileExistsError(f"{target} exists already")
    try:
        database = None
        if connection.vendor == "sqlite":
            db_path = connection.settings_dict["NAME"]
            progress.stage(f"Copying the database {db_path}")
            _copy_sqlite(Path(db_path), building / DB_FILE)
            database = DB_FILE
        elif notice is not None:
            notice("PostgreSQL: back up the database with pg_dump (see README, Maintenance); copying plan files only.")
        sessions = planfiles.sessions_root()
        (building / SESSIONS_DIR).mkdir(mode=datadir.PRIVATE_FOLDER)
        if sessions.is_dir():
            progress.stage(f"Copying plan files from {sessions}")
            _copy_tree(sessions, building / SESSIONS_DIR, progress)
        manifest = {
            "format": MANIFEST_FORMAT,
            "version": 1,
            "created_at": started.isoformat(),
            "9plan": version(),
            "database": database,
            "files": _count_files(building / SESSIONS_DIR),
        }
        fd = os.open(building / MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL, datadir.PRIVATE_FILE)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(manifest, indent=1) + "\n")
        # The one step that makes it a backup: until here it is named incomplete.
        os.rename(building, target)
    except BaseException:
        # A failure this process sees (a full disk, say) leaves nothing; only a killed
        # backup leaves its incomplete folder, under that name.
        shutil.rmtree(building, ignore_errors=True)
        raise
    progress.finish()
    log.info("backup written", extra={"path": str(target)})
    return target


def _count_files(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


class BackupRefused(Exception):
    """What makes a folder no backup to restore from."""


def backup_verify(folder: Path) -> dict:
    """The manifest of the finished backup in ``folder``; raises BackupRefused when it is
    not one (killed midway, missing a part, or a damaged database copy)."""
    folder = Path(folder)
    if folder.name.endswith(INCOMPLETE):
        raise BackupRefused(f"{folder} is a backup that never finished (it was stopped midway); do not restore it.")
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackupRefused(
            f"{folder} has no {MANIFEST}: it is not a finished 9plan backup; do not restore it."
        ) from None
    except (OSError, ValueError) as exc:
        raise BackupRefused(f"{folder / MANIFEST} cannot be read ({exc}); do not restore this backup.") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise BackupRefused(f"{folder / MANIFEST} is not a 9plan backup's manifest; do not restore this folder.")
    if manifest.get("database") not in (None, DB_FILE):
        # Only the copy beside it: never a path that leads elsewhere.
        raise BackupRefused(f"{folder / MANIFEST} names the database {manifest.get('database')!r}, not {DB_FILE}; "
                            "do not restore this backup.")  # fmt: skip
    files = _count_files(folder / SESSIONS_DIR) if (folder / SESSIONS_DIR).is_dir() else -1
    if files != manifest.get("files"):
        raise BackupRefused(
            f"{folder / SESSIONS_DIR} holds {max(files, 0):,} files where the backup wrote {manifest.get('files')}; "
            "do not restore this backup."
        )
    if manifest.get("database"):
        problem = _sqlite_problem(folder / manifest["database"])
        if problem:
            raise BackupRefused(f"{folder / manifest['database']} {problem}; do not restore this backup.")
    return manifest


def backup_restore(folder: Path, *, progress: Progress | None = None) -> Path | None:
    """Puts the backup in ``folder`` in place of this 9plan's database (SQLite) and sessions
    folder, to be run while no server runs; the caller then runs the repair. Returns where
    the sessions folder it replaced was kept (None if there was none).

    Raises BackupRefused, having changed nothing, for a folder that is no whole backup
    (``backup_verify``) or whose database does not fit this 9plan's: a SQLite copy on
    PostgreSQL, or a backup without one (taken on PostgreSQL: pg_restore it) on SQLite."""
    progress = progress or Progress()
    folder = Path(folder)
    manifest = backup_verify(folder)
    sqlite = connection.vendor == "sqlite"
    if manifest.get("database") and not sqlite:
        raise BackupRefused(
            f"{folder} holds a SQLite database, but this 9plan uses {connection.vendor}; nothing was restored."
        )
    if not manifest.get("database") and sqlite:
        raise BackupRefused(
            f"{folder} holds no database (it was taken on PostgreSQL, whose copy is pg_dump's); nothing was restored."
        )
    # The sessions folder may be a link (it is a setting): what is replaced is its target.
    sessions = planfiles.sessions_root().resolve()
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S%f")
    staged = sessions.with_name(f"{sessions.name}.restoring-{stamp}")
    kept = sessions.with_name(f"{sessions.name}.before-restore-{stamp}") if sessions.exists() else None
    progress.stage(f"Copying plan files from {folder / SESSIONS_DIR}")
    try:
        _copy_tree(folder / SESSIONS_DIR, staged, progress)
        if kept is not None:
            os.rename(sessions, kept)
    except OSError as exc:
        # A mount point cannot be moved, nor a folder onto another file system.
        shutil.rmtree(staged, ignore_errors=True)
        raise BackupRefused(
            f"the plan files cannot be put in place of {sessions} ({exc.strerror or exc}); nothing was restored."
        ) from exc
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    try:
        os.rename(staged, sessions)
        if sqlite:
            progress.stage("Restoring the database")
            connection.close()
            _copy_sqlite(folder / DB_FILE, Path(connection.settings_dict["NAME"]), journal=False)
    except BaseException:
        # Nothing of the database was replaced (SQLite's backup is one transaction): the
        # plan files go back as they were.
        if sessions.exists() and not staged.exists():
            os.rename(sessions, staged)
        if kept is not None:
            os.rename(kept, sessions)
        shutil.rmtree(staged, ignore_errors=True)
        raise
    progress.finish()
    log.warning("backup restored", extra={"path": str(folder), "replaced": str(kept)})
    return kept


def _sqlite_problem(path: Path) -> str:
    if not path.is_file():
        return "is missing"
    try:
        copy = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            found = copy.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            copy.close()
    except sqlite3.DatabaseError as exc:
        return f"is not a readable SQLite database ({exc})"
    return "" if found == "ok" else f"fails SQLite's check ({found})"


def _copy_sqlite(source_path: Path, copy_path: Path, *, journal: bool = True) -> None:
    datadir.private_database(copy_path)
    source = sqlite3.connect(source_path, timeout=20)
    copy = sqlite3.connect(copy_path)
    try:
        source.execute("PRAGMA busy_timeout = 20000")
        # All pages in one step, inside one read transaction: under WAL that neither
        # blocks writers nor restarts when they commit, and yields one point in time.
        # (Copying in small steps restarts after every commit by another process, so
        # a busy server could keep it from ever finishing.)
        source.backup(copy, pages=-1)
        if journal:
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
        if rel == Path("."):
            # An import's files aside are no session's yet (export_import/staging.py).
            dirs[:] = [name for name in dirs if not name.startswith(planfiles.IMPORT_FOLDER_PREFIX)]
        (target / rel).mkdir(parents=True, exist_ok=True, mode=datadir.PRIVATE_FOLDER)
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
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise _NotRegular(planfiles.kind_of(st.st_mode, st.st_nlink))
        # A copy is as private as the plan file it copies.
        with os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, datadir.PRIVATE_FILE), "wb") as out:
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
