"""Which other 9plan processes have the database open: what a command that replaces the
data under them (a restore) must know before it starts (docs/design.md, "Repair").

SQLite: every 9plan process holds a shared flock on a file beside the database
(``<database>-processes.lock``) from its first connection until it exits, connected or
idle, since an idle server still answers from the database as soon as it is called. A
command that replaces the database takes that lock exclusively, which succeeds only when
no other process holds it, and keeps it while it works: a server that starts meanwhile
waits for it rather than open a half-replaced database. (SQLite's own locks cannot say
this: an idle connection holds none.)

PostgreSQL: the other client backends on the database, from ``pg_stat_activity``; each
9plan process names its connections ``9plan/<pid>`` (nineplan/settings.py), so that a
process's own pooled connections are not counted as somebody else's.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

try:
    import fcntl
except ImportError:  # Windows: no flock; the check then finds nobody on SQLite
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("nineplan.attachment")

LOCK_SUFFIX = "-processes.lock"
APPLICATION_PREFIX = "9plan/"

_held_lock = threading.Lock()
_held: dict[str, tuple[int, int]] = {}  # database path -> (pid, descriptor)


class Attached(Exception):
    """Other processes have the database open; ``others`` says which, for a person."""

    def __init__(self, others: list[str]):
        super().__init__(", ".join(others))
        self.others = others


def _sqlite_path(db) -> str | None:
    name = str(db.settings_dict.get("NAME") or "")
    if db.vendor != "sqlite" or not name or name.startswith((":", "file:")) or fcntl is None:
        return None
    return name


def _descriptor(path: str) -> tuple[int, bool]:
    """This process's descriptor of the lock file, and whether it was opened just now."""
    pid, fd = _held.get(path, (None, None))
    if pid == os.getpid() and fd is not None:
        return fd, False
    # A forked child gets a descriptor of its own: the parent's lock is the parent's.
    fd = os.open(path + LOCK_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    _held[path] = (os.getpid(), fd)
    return fd, True


def hold_while_running(sender, connection, **kwargs) -> None:
    """connection_created hook: this process has the database open from now until it exits.
    Waits while a command replacing the database holds it alone."""
    path = _sqlite_path(connection)
    if path is None:
        return
    with _held_lock:
        fd, new = _descriptor(path)
        if new:
            fcntl.flock(fd, fcntl.LOCK_SH)


def others() -> list[str]:
    """The other processes that have this 9plan's database open (a line each, for a person);
    empty when there are none. Takes nothing: for a question asked before a prompt."""
    with sole_user(force=True) as found:
        return found


@contextmanager
def sole_user(*, force: bool = False) -> Iterator[list[str]]:
    """Runs the block as the database's only 9plan process, and yields []. When other
    processes have it open: raises Attached (having changed nothing), or with ``force``
    runs the block all the same and yields what they are."""
    path = _sqlite_path(connection)
    if path is not None:
        with _held_lock:
            fd, _ = _descriptor(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                alone = True
            except BlockingIOError:
                # A failed conversion may have dropped this process's shared lock: take it again.
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                alone = False
        found = [] if alone else _sqlite_holders(path + LOCK_SUFFIX)
        try:
            if found and not force:
                raise Attached(found)
            yield found
        finally:
            if alone:
                fcntl.flock(fd, fcntl.LOCK_SH)
        return
    found = _postgres_backends() if connection.vendor == "postgresql" else []
    if found and not force:
        raise Attached(found)
    yield found


def _sqlite_holders(lock_path: str) -> list[str]:
    """The processes holding the lock, named from /proc where the system has it (Linux);
    else one line saying that some do."""
    described = []
    try:
        inode = os.stat(lock_path).st_ino
        with open("/proc/locks", encoding="ascii") as locks:
            pids = {
                int(fields[4])
                for fields in (line.split() for line in locks)
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode)
            }
    except (OSError, ValueError):
        pids = set()
    for pid in sorted(pids - {os.getpid()}):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                command = b" ".join(cmdline.read().split(b"\0")).decode("utf-8", "replace").strip()
        except OSError:
            command = "?"
        described.append(f"process {pid} ({command[:120]})")
    return described or ["another 9plan process"]


def _postgres_backends() -> list[str]:
    own = str(connection.settings_dict.get("OPTIONS", {}).get("application_name") or "")
    # A name a person chose may be every process's: then only this connection is known as ours.
    ours = own if own.startswith(APPLICATION_PREFIX) else None
    # Raw: pg_stat_activity is a system view the ORM has no model of.
    with connection.cursor() as cur:
        cur.execute(
            "SELECT pid, application_name, COALESCE(host(client_addr), 'local socket') FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
            "AND application_name IS DISTINCT FROM %s ORDER BY pid",
            [ours],
        )
        rows = cur.fetchall()
    return [f"connection {pid} ({name or 'unnamed'} from {addr})" for pid, name, addr in rows]
