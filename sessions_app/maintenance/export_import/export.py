"""The export: a whole session as one JSON document, streamed (see the package's face,
sessions_app/maintenance/export_import/__init__.py, for what the document holds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

from django.db.models import Aggregate, CharField, OuterRef, Subquery
from django.utils import timezone

from sessions_app import planfiles
from sessions_app.maintenance.export_import.document import FORMAT, FORMAT_VERSION, PLAN_TEXT
from sessions_app.maintenance.progress import Progress
from sessions_app.models import Event, Plan, PlanDependency, Revision, Session
from sessions_app.reads import queries
from sessions_app.store import event_feed

# Rows fetched per round trip while exporting: a few MiB of plan text at most.
EXPORT_CHUNK = 500


def _when(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def export_session(name: object) -> dict:
    """The whole session as plain JSON data, in memory (for small sessions and tests; the
    command and the REST API stream it with export_stream)."""
    return json.loads("".join(export_stream(name)))


def export_stream(name: object, *, progress: Progress | None = None) -> Iterator[str]:
    """The session's export document as JSON text, piece by piece: memory stays flat
    whatever the session's size (rows are read in chunks and written one by one).

    The session is looked up at once, so a missing one raises before any text is made.
    The events are those committed when the export began; a plan that changes while the
    export runs is written as it is when its row is read. Every event's plan is among the
    exported plans, so the document always imports.
    """
    session = queries.get_session(name)
    # Read before the plans: every event up to it belongs to a plan committed by then.
    last_event = event_feed.committed_up_to()
    return _export_pieces(session, last_event, progress or Progress())


class _IdList(Aggregate):
    """The ids of a group joined by commas (plan ids hold none): GROUP_CONCAT on SQLite,
    STRING_AGG on PostgreSQL."""

    function = "GROUP_CONCAT"
    output_field = CharField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="STRING_AGG", template="%(function)s(%(expressions)s, ',')")


def _depends_on_ids() -> Subquery:
    links = PlanDependency.objects.filter(plan=OuterRef("pk")).order_by().values("plan")
    return Subquery(links.annotate(ids=_IdList("depends_on_id")).values("ids")[:1])


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _export_pieces(session: Session, last_event: int, progress: Progress) -> Iterator[str]:
    # One plan or event a line, so that the document is also easy to read, grep and diff.
    yield "{\n"
    for key, value in (
        ("format", FORMAT),
        ("version", FORMAT_VERSION),
        ("exported_at", _when(timezone.now())),
        (
            "session",
            {
                "name": session.name,
                "task_description": session.task_description,
                "created_at": _when(session.created_at),
                "review": session.review,
                "lease_seconds": session.lease_seconds,
                "max_attempts": session.max_attempts,
                "project": session.project_id,
            },
        ),
    ):
        yield f" {_dump(key)}: {_dump(value)},\n"
    plans = Plan.objects.filter(session=session)
    # Counted only for a person watching: the REST export has no use for the totals.
    progress.stage("Exporting plans", plans.count() if progress.shown else None)
    yield ' "plans": ['
    first = True
    columns = (
        "id", "status", "sort_key", *PLAN_TEXT, "version", "created_at", "updated_at", "completed_at", "discarded_at",
        "review", "rejections", "worker", "claimed_at", "lease_expires_at", "attempts", "waiting_for_person",
    )  # fmt: skip
    kept = _revisions_in_plan_order(session)
    # Each plan's dependencies come with its row (a subquery), so the export reads no more
    # statements for them whatever the session holds.
    rows = (
        plans.annotate(depends=_depends_on_ids())
        .order_by("created_at", "id")
        .values_list(*columns, "depends")
        .iterator(chunk_size=EXPORT_CHUNK)
    )
    for row in rows:
        plan = dict(zip(columns, row))
        plan_revisions = kept.take(plan["id"], plan["created_at"])
        for key in ("created_at", "updated_at", "completed_at", "discarded_at", "claimed_at", "lease_expires_at"):
            plan[key] = _when(plan[key])
        plan["depends_on"] = sorted(row[-1].split(",")) if row[-1] else []
        # The agent's working copy may hold edits the database takes in only later. Read
        # safely (a regular file, bounded, never blocking); null when it cannot be used.
        is_open = plan["status"] in (Plan.Status.QUEUED, Plan.Status.ACTIVE)
        plan["file_text"] = planfiles.read_plan(session.name, plan["id"]) if is_open else None
        plan["revisions"] = plan_revisions
        yield ("\n  " if first else ",\n  ") + _dump(plan)
        first = False
        progress.advance()
    yield "\n ],\n" if not first else "],\n"
    events = Event.objects.filter(session=session, id__lte=last_event)
    progress.stage("Exporting events", events.count() if progress.shown else None)
    yield ' "events": ['
    first = True
    event_columns = ("id", "plan_id", "kind", "actor", "detail", "created_at")
    for event_id, plan_id, kind, actor, detail, created_at in (
        events.order_by("id").values_list(*event_columns).iterator(chunk_size=EXPORT_CHUNK)
    ):
        event = {
            "id": event_id,
            "plan": plan_id,
            "kind": kind,
            "actor": actor,
            "detail": detail,
            "created_at": _when(created_at),
        }
        yield ("\n  " if first else ",\n  ") + _dump(event)
        first = False
        progress.advance()
    yield "\n ]\n}\n" if not first else "]\n}\n"
    progress.finish()


class _RevisionWalk:
    """The session's revisions in one query, read alongside the plans in the same order
    (the plan's creation time, then its id), handing each plan its own, oldest first.

    Only creation times are compared here: plans added in one batch share theirs, and the
    database may order their ids by a collation Python does not share, so the revisions of
    plans created at the same time are held until their plan comes."""

    def __init__(self, rows: Iterator[tuple]) -> None:
        self._rows = rows
        self._next = next(rows, None)
        self._held: dict[str, tuple[datetime, list[dict]]] = {}

    def _group(self) -> tuple[str, datetime, list[dict]]:
        assert self._next is not None  # take() groups only while rows are left
        plan_id, created_at = self._next[0], self._next[1]
        found = []
        while self._next is not None and self._next[0] == plan_id:
            _, _, number, kind, actor, sections, undo, at = self._next
            found.append(
                {
                    "number": number,
                    "kind": kind,
                    "actor": actor,
                    "sections": sections,
                    "undo": undo,
                    "created_at": _when(at),
                }
            )
            self._next = next(self._rows, None)
        return plan_id, created_at, found

    def take(self, plan_id: str, created_at: datetime) -> list[dict]:
        # Held groups of plans created earlier belong to plans the plan query did not see.
        self._held = {k: v for k, v in self._held.items() if v[0] >= created_at}
        if plan_id in self._held:
            return self._held.pop(plan_id)[1]
        while self._next is not None and self._next[1] <= created_at:
            group_plan, group_created, found = self._group()
            if group_plan == plan_id:
                return found
            if group_created == created_at:
                self._held[group_plan] = (group_created, found)
        return []


def _revisions_in_plan_order(session: Session) -> _RevisionWalk:
    rows = (
        Revision.objects.filter(plan__session=session)
        .order_by("plan__created_at", "plan_id", "number")
        .values_list("plan_id", "plan__created_at", "number", "kind", "actor", "sections", "undo", "created_at")
        .iterator(chunk_size=EXPORT_CHUNK)
    )
    return _RevisionWalk(iter(rows))
