"""Write transactions: every write of 9plan runs in one, with undo steps for its files.

On SQLite a transaction begins IMMEDIATE (the write lock is taken before the first read)
and writers of one database file take turns (``writer_turn``); on PostgreSQL the services
lock the session row first. So every read-modify-write of a queue or a plan's text is
serialized against every other writer (docs/design.md, "Transactions and writer turns").

Plan files are not part of a database transaction: a file written inside one registers an
undo step, run if the transaction fails, so a failed write leaves the files as they were.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import DatabaseError, IntegrityError, connection, transaction

from sessions_app import errors
from sessions_app.errors import DatabaseFailed, NineplanError

try:
    import fcntl
except ImportError:  # Windows: writers wait in SQLite's own retry loop
    HAS_FLOCK = False
else:
    HAS_FLOCK = True

log = logging.getLogger("nineplan.services")

# An undo step's value, if any, is not used.
Undo = list[Callable[[], object]]


@contextmanager
def write() -> Iterator[Undo]:
    """One write transaction; yields a list of undo steps for files written inside it."""
    undo: Undo = []
    try:
        with writer_turn(), transaction.atomic():
            yield undo
    except NineplanError:
        run_undo(undo)
        raise
    except DatabaseError as exc:
        run_undo(undo)
        log.error("database error", extra={"error": str(exc)})
        raise database_failed(exc) from exc
    except BaseException:
        run_undo(undo)
        raise


_turns = threading.Lock()
_turn_file: dict[str, tuple[int, int]] = {}  # database path -> (pid, descriptor)


@contextmanager
def writer_turn() -> Iterator[None]:
    """Writers of one SQLite file take turns, handed over as soon as the last one ends.

    A writer that finds SQLite's write lock taken sleeps and retries after ever longer
    pauses, so under contention the lock sits free while waiters sleep, and an unlucky
    writer can lose every retry for a long time. Waiting on an exclusive flock of a file
    beside the database instead, taken before BEGIN IMMEDIATE, the kernel wakes the next
    writer at once: the worst waits shrink at the same throughput, and the typical wait
    grows a little, as waiting is shared out evenly (docs/benchmarks.md).

    Only an outermost transaction takes a turn: code already in a transaction may hold
    SQLite's lock, and a turn-holder waiting for that lock would then wait on it in turn
    (a deadlock). SQLite's own lock remains the guarantee; turns only order the writers.
    """
    name = str(connection.settings_dict.get("NAME") or "")
    in_memory = name.startswith((":", "file:"))
    if not HAS_FLOCK or connection.vendor != "sqlite" or connection.in_atomic_block or in_memory:
        yield
        return
    with _turns:  # threads of one process share the descriptor, so they queue here first
        held = _turn_file.get(name)
        if held is None or held[0] != os.getpid():  # a forked child must not share its parent's open file
            held = (os.getpid(), os.open(f"{name}-writers.lock", os.O_RDWR | os.O_CREAT, 0o600))
            _turn_file[name] = held
        fd = held[1]
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


# PostgreSQL's codes for a transaction that lost to a concurrent one (serialization
# failure, deadlock) and for a wait that was cut short (lock timeout, statement timeout).
COLLIDED = {"40001", "40P01"}
WAITED_TOO_LONG = {"55P03", "57014"}


def database_failed(exc: DatabaseError) -> DatabaseFailed:
    """A clear error for a refused write; the whole transaction was rolled back by then."""
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    state = getattr(exc.__cause__, "sqlstate", None)
    if state in COLLIDED:
        return DatabaseFailed(
            f"The change collided with a concurrent change to the same session and was rolled back ({reason}); "
            "nothing of it was saved.",
            reason=errors.COLLIDED,
        )
    # "database is locked" is SQLite's; PoolTimeout means every pooled connection was busy.
    if state in WAITED_TOO_LONG or "locked" in reason or type(exc.__cause__).__name__ == "PoolTimeout":
        return DatabaseFailed(
            f"The database was busy with other writers for too long and the change was rolled back ({reason}); "
            "nothing of it was saved.",
            reason=errors.BUSY,
        )
    if isinstance(exc, IntegrityError):
        return DatabaseFailed(
            f"The change would break a rule of the database and was rolled back ({reason}); nothing of it was saved.",
            reason=errors.BROKE_A_RULE,
        )
    return DatabaseFailed(f"The database refused the change and it was rolled back ({reason}).")


def run_undo(steps: Undo) -> None:
    for step in reversed(steps):
        try:
            step()
        except (OSError, NineplanError):
            log.warning("undo of a plan file failed", exc_info=True)
