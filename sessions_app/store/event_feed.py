"""The event feed: every event in id order, resumable from an opaque cursor, so an
integration that follows it sees each event exactly once.

That promise needs more than ``ORDER BY id``: an id is drawn when the row is inserted, but
becomes visible only when its transaction commits. A reader that hands out event 11 while
the transaction holding event 10 is still open would move its cursor past 10 for good.

- SQLite serialises writers (BEGIN IMMEDIATE) and its AUTOINCREMENT ids only grow, so
  the committed events are always a prefix of the id sequence: what a reader sees can
  never be overtaken by a lower id.
- PostgreSQL draws ids from a sequence outside any lock, so transactions can commit out
  of id order. A reader must never wait for writers (a waiting exclusive lock would queue
  every new writer behind it), so each writer announces itself instead: before its first
  event it reads a floor F, the highest event id it can see, and holds a shared advisory
  lock whose key carries F until its transaction ends; every id it then draws is above F.
  The reader, without waiting for anything, (1) reads the highest visible id M, then
  (2) reads the floors of the feed locks held right now from ``pg_locks``, and hands out
  nothing above W = min(M, every floor). Why no event at or below W can still appear: take
  an id x <= W. Its writer took its lock before drawing x. If that writer were still
  open at (2), its floor F < x would be among the floors, so W <= F < x: impossible. So it
  had ended before (2), and PostgreSQL makes a commit visible before it releases the
  transaction's locks, so the events query, a later statement, sees x (or x was rolled
  back and never appears). A writer that began after (2) draws ids above M, which was
  drawn before (1).
"""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import dataclass

from django.db import connection, connections

from sessions_app.errors import ValidationFailed
from sessions_app.models import Event, Plan, Session

log = logging.getLogger("nineplan.event_feed")

# A cursor is 9 bytes, base64url: a format version (1), then the event id as 8 bytes
# big-endian. Every 12-character string matching the pattern decodes to version 1 and an
# id below 2**63, so the published pattern describes exactly the cursors we accept.
CURSOR_VERSION = 1
CURSOR_PATTERN = r"^A[Q-X][A-Za-z0-9_-]{10}$"
CURSOR_RE = re.compile(CURSOR_PATTERN[1:-1])
# A writer's feed lock is the bigint advisory key FLOOR_KEY_BASE + its floor: "9p" in the top
# 16 bits keeps it apart from other advisory keys, the low 48 bits carry the floor.
FLOOR_KEY_BASE = 0x3970 << 48
FLOOR_LIMIT = 1 << 48
# Where a writer keeps its floor for the rest of its transaction (a transaction-local setting:
# a savepoint rolled back takes it away together with the lock taken under it).
FLOOR_SETTING = "nineplan.feed_floor"


def encode_cursor(event_id: int) -> str:
    raw = bytes([CURSOR_VERSION]) + event_id.to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def decode_cursor(token: object, field: str = "after") -> int:
    """The event id a cursor stands for; anything that is not a cursor this module made is
    a VALIDATION_ERROR naming ``field``."""
    if not isinstance(token, str) or CURSOR_RE.fullmatch(token) is None:
        raise ValidationFailed(
            f"{field} is not a cursor of this feed: pass the next_cursor of an earlier page, "
            "or leave it out to start from the first event.",
            field=field,
        )
    raw = base64.urlsafe_b64decode(token)
    return int.from_bytes(raw[1:], "big")


def before_event_write(using: str = "default") -> None:
    """Run by every writer right before it inserts events, inside its transaction (the
    pre_save signal does it for Event.save(), and so for every event the services record;
    bulk_create callers call it themselves). On PostgreSQL it holds the feed lock carrying
    this transaction's floor; it never waits, since no one takes the feed's keys exclusively."""
    conn = connections[using]
    if conn.vendor != "postgresql":
        return
    if not conn.in_atomic_block:
        # In autocommit the lock would end before the insert begins, and a reader
        # could hand out a higher id while this one is still uncommitted.
        log.warning("an event is written outside a transaction; the event feed may skip it")
    table = conn.ops.quote_name(Event._meta.db_table)
    # The first call of a transaction reads the floor and keeps it; later calls take the
    # same key again, which adds no entry to the lock table (an import calls this per batch).
    # Raw: an advisory lock and a transaction-local setting, which the ORM cannot say.
    with conn.cursor() as cur:
        cur.execute(
            "SELECT pg_advisory_xact_lock_shared(%s + f.floor) FROM (SELECT COALESCE("
            "NULLIF(current_setting(%s, true), ''), "
            f"set_config(%s, (SELECT COALESCE(MAX(id), 0) FROM {table})::text, true)"
            ")::bigint AS floor) AS f",
            [FLOOR_KEY_BASE, FLOOR_SETTING, FLOOR_SETTING],
        )


def before_event_saved(sender, instance, using: str = "default", **kwargs) -> None:
    if instance._state.adding:
        before_event_write(using)


def _committed_watermark() -> int | None:
    """The highest id below which no event can still appear (PostgreSQL); None on SQLite,
    where the visible events are already a gap-free prefix. Takes no lock: see the module's
    docstring for why the answer is safe."""
    if connection.vendor != "postgresql":
        return None
    table = connection.ops.quote_name(Event._meta.db_table)
    # One statement: its snapshot, which the MAX reads, is taken before pg_locks is read
    # during execution, the order the argument needs. Under READ COMMITTED (Django's
    # default) the caller's next statement sees every writer that had ended by then. The
    # caller's own transaction is left out: it sees its own events already.
    # Raw: pg_locks is a system view the ORM has no model for.
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT LEAST((SELECT COALESCE(MAX(id), 0) FROM {table}), "
            "(SELECT MIN(k.key) - %s FROM (SELECT (l.classid::bigint << 32) | l.objid::bigint AS key "
            "FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.pid <> pg_backend_pid() "
            "AND l.database = "
            "(SELECT oid FROM pg_database WHERE datname = current_database())) AS k "
            "WHERE k.key >= %s AND k.key < %s))",
            [FLOOR_KEY_BASE, FLOOR_KEY_BASE, FLOOR_KEY_BASE + FLOOR_LIMIT],
        )
        return int(cur.fetchone()[0])


def committed_up_to() -> int:
    """The highest event id below which every event is committed and none can still
    appear (0 when there are none)."""
    watermark = _committed_watermark()
    if watermark is not None:
        return watermark
    # SQLite: the visible events are already a gap-free prefix of the ids.
    return Event.objects.order_by("-id").values_list("id", flat=True).first() or 0


@dataclass
class FeedPage:
    events: list[Event]
    # Where the next read resumes: the last event handed out, or the cursor given.
    last_id: int
    has_more: bool


def events_after(
    *,
    after: int,
    limit: int,
    session: Session | None = None,
    plan: Plan | None = None,
    projects: frozenset[str] | None = None,
) -> FeedPage:
    """Up to ``limit`` events with an id above ``after``, oldest first, in a fixed number of
    queries: of a session, of a plan, or of every session of ``projects`` (None: all)."""
    qs = Event.objects.filter(id__gt=after)
    if projects is not None:
        qs = qs.filter(session__project_id__in=projects)
    if session is not None:
        qs = qs.filter(session=session)
    if plan is not None:
        qs = qs.filter(plan=plan)
    watermark = _committed_watermark()
    if watermark is not None:
        qs = qs.filter(id__lte=watermark)
    rows = list(qs.order_by("id")[: limit + 1])
    has_more = len(rows) > limit
    rows = rows[:limit]
    return FeedPage(events=rows, last_id=rows[-1].id if rows else after, has_more=has_more)
