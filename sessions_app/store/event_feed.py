"""The event feed: every event in id order, resumable from an opaque cursor, so an
integration that follows it sees each event exactly once.

That promise needs more than ``ORDER BY id``: an id is drawn when the row is inserted, but
becomes visible only when its transaction commits. A reader that hands out event 11 while
the transaction holding event 10 is still open would move its cursor past 10 for good.

- SQLite serialises writers (BEGIN IMMEDIATE) and its AUTOINCREMENT ids only grow, so
  the committed events are always a prefix of the id sequence: what a reader sees can
  never be overtaken by a lower id.
- PostgreSQL draws ids from a sequence outside any lock, so transactions can commit out
  of id order. Every transaction that writes an event first takes a shared advisory lock
  (held until it ends); the reader takes the same lock exclusively for a moment, which
  waits for every such transaction already running, and reads the highest id then. Every
  id up to that watermark is committed, and any later writer draws a higher id, so the
  reader hands out nothing above it.
"""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import dataclass

from django.db import connection, connections, transaction
from django.db.models import Max
from django.db.models.functions import Coalesce

from sessions_app.errors import ValidationFailed
from sessions_app.models import Event, Plan, Session

log = logging.getLogger("nineplan.event_feed")

# A cursor is 9 bytes, base64url: a format version (1), then the event id as 8 bytes
# big-endian. Every 12-character string matching the pattern decodes to version 1 and an
# id below 2**63, so the published pattern describes exactly the cursors we accept.
CURSOR_VERSION = 1
CURSOR_PATTERN = r"^A[Q-X][A-Za-z0-9_-]{10}$"
CURSOR_RE = re.compile(CURSOR_PATTERN[1:-1])
# Any constant works; it only has to be the same for the writers and the reader.
FEED_LOCK_KEY = 0x39706C616E  # "9plan"


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
    bulk_create callers call it themselves)."""
    conn = connections[using]
    if conn.vendor == "postgresql":
        if not conn.in_atomic_block:
            # In autocommit the lock would end before the insert begins, and a reader
            # could hand out a higher id while this one is still uncommitted.
            log.warning("an event is written outside a transaction; the event feed may skip it")
        # Raw: an advisory lock, which the ORM cannot take.
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock_shared(%s)", [FEED_LOCK_KEY])


def before_event_saved(sender, instance, using: str = "default", **kwargs) -> None:
    if instance._state.adding:
        before_event_write(using)


def _committed_watermark() -> int | None:
    """The highest id below which no event can still appear (PostgreSQL); None on SQLite,
    where the visible events are already a gap-free prefix."""
    if connection.vendor != "postgresql":
        return None
    # A transaction-level lock: it ends with the transaction whatever happens, so it can
    # never outlive this read on a pooled connection (called inside a longer transaction,
    # it is held until that one ends).
    with transaction.atomic():
        # Raw: an advisory lock, which the ORM cannot take.
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", [FEED_LOCK_KEY])
        # READ COMMITTED (Django's default): this statement's snapshot is taken after the
        # lock was granted, so it includes every transaction the lock waited for.
        return Event.objects.aggregate(top=Coalesce(Max("id"), 0))["top"]


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
