"""Consistent backups of the database and the plan files, taken while agents keep working."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils import timezone

log = logging.getLogger("nineplan.backup")


def default_backup_dir() -> Path:
    return Path(settings.NINEPLAN_DATA_DIR) / "backups"


def backup_create(*, destination: Path | None = None, progress=None) -> Path:
    """Copies the database (SQLite's online backup API: a consistent snapshot even while
    writers run) and the sessions folder into a new timestamped folder; returns it."""
    destination = Path(destination or default_backup_dir())
    target = destination / timezone.now().strftime("9plan-%Y%m%dT%H%M%S%f")
    target.mkdir(parents=True, exist_ok=False)
    say = progress or (lambda msg: None)
    if connection.vendor == "sqlite":
        db_path = settings.DATABASES["default"]["NAME"]
        say(f"copying database {db_path}")
        source = sqlite3.connect(db_path, timeout=20)
        copy = sqlite3.connect(target / "9plan.sqlite3")
        try:
            # Pages are copied in steps so writers are held up only briefly.
            source.backup(copy, pages=1024, progress=lambda status, remaining, total: None)
        finally:
            copy.close()
            source.close()
    else:
        say("PostgreSQL: use pg_dump for the database (see README, Backups); copying plan files only")
    sessions = Path(settings.NINEPLAN_SESSIONS_PATH)
    if sessions.exists():
        say(f"copying plan files from {sessions}")
        shutil.copytree(sessions, target / "sessions", ignore=shutil.ignore_patterns(".tmp-*"))
    log.info("backup written", extra={"path": str(target)})
    return target


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
