"""Export a session as one JSON document, and import such a document into a database
that does not hold the session yet.

The export is lossless: the session, every plan in every state with every field and every
revision of its text, every event, and the text of each open plan's file as the agent left
it. The import checks the
whole document before it writes anything, then restores it in one transaction: the same
session name, plan ids, fields and timestamps, the events in their order, and the plan
files of the queued and active plans.

Event ids are not carried over: an id is a position in one database's event feed, and an
imported event given an id below a reader's cursor would never reach that reader. The
events are inserted in their exported order, so they keep their relative order.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from django.db.models import Aggregate, CharField, OuterRef, Subquery
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from nineplan.progress import Progress
from sessions_app import event_feed, inputs, invariants, planfiles, queries, revisions, transactions
from sessions_app.errors import BAD_DOCUMENT, BROKE_A_RULE, DatabaseFailed, FileSystemFailed, ValidationFailed
from sessions_app.models import DEFAULT_WORKER, MAX_LEASE_SECONDS, SECTIONS, Event, Plan, PlanDependency
from sessions_app.models import ReviewPolicy, Revision, Session

log = logging.getLogger("nineplan.export_import")

FORMAT = "9plan-session-export"
FORMAT_VERSION = 3
# Version 1 named the queue's sort key "queue_position"; it is read as "sort_key". Versions
# 1 and 2 had no review, no revisions, no workers, leases or dependencies: their plans are
# read as never reviewed, each gets one "import" revision holding its text as imported, and
# an active plan is restored as the default worker's, with a fresh lease. A version 3
# document written before review existed (no review keys) is read as never reviewed too.
READABLE_VERSIONS = (1, 2, 3)

SESSION_KEYS_V2 = ("name", "task_description", "created_at")
SESSION_KEYS = (*SESSION_KEYS_V2, "review", "lease_seconds", "max_attempts")
PLAN_TEXT = (*SECTIONS, "outcome", "discard_reason")
PLAN_KEYS = (
    "id",
    "status",
    "sort_key",
    *PLAN_TEXT,
    "version",
    "created_at",
    "updated_at",
    "completed_at",
    "discarded_at",
    "file_text",
    "review",
    "rejections",
    "revisions",
)
REVISION_KEYS = ("number", "kind", "actor", "sections", "undo", "created_at")
CLAIM_KEYS = ("worker", "claimed_at", "lease_expires_at", "attempts", "waiting_for_person", "depends_on")
PLAN_KEYS_V3 = (*PLAN_KEYS, *CLAIM_KEYS)
EVENT_KEYS = ("id", "plan", "kind", "actor", "detail", "created_at")
BIGINT = 2**63
ACTOR_CHARS = Event._meta.get_field("actor").max_length
FILE_CHARS = 16 * 1024 * 1024
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
    columns = ("id", "plan_id", "kind", "actor", "detail", "created_at")
    for event_id, plan_id, kind, actor, detail, created_at in events.order_by("id").values_list(*columns).iterator(
        chunk_size=EXPORT_CHUNK
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
        plan_id, created_at = self._next[0], self._next[1]
        found = []
        while self._next is not None and self._next[0] == plan_id:
            _, _, number, kind, actor, sections, undo, at = self._next
            found.append(
                {"number": number, "kind": kind, "actor": actor, "sections": sections, "undo": undo, "created_at": _when(at)}
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


# --- import ------------------------------------------------------------------------------


def _fail(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", field=field, reason=BAD_DOCUMENT)


def _object(field: str, value: object, keys: tuple[str, ...]) -> dict:
    if not isinstance(value, dict):
        raise _fail(field, "must be a JSON object.")
    missing = [k for k in keys if k not in value]
    if missing:
        raise _fail(field, f"lacks {', '.join(missing)}.")
    extra = sorted(set(value) - set(keys))
    if extra:
        raise _fail(field, f"has unknown keys {', '.join(extra)}; expected exactly {', '.join(keys)}.")
    return value


def _list(field: str, value: object) -> list:
    if not isinstance(value, list):
        raise _fail(field, "must be a JSON array.")
    return value


def _integer(field: str, value: object, *, minimum: int = -BIGINT, maximum: int = BIGINT - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise _fail(field, f"must be a whole number from {minimum} to {maximum}.")
    return value


def _datetime(field: str, value: object, *, required: bool) -> datetime | None:
    if value is None and not required:
        return None
    parsed = None
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise _fail(field, "must be an ISO 8601 date and time with a UTC offset, like '2025-01-31T12:00:00+00:00'.")
    return parsed


def _text(
    field: str, value: object, *, required: bool = False, nullable: bool = False, max_chars: int | None = None
) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _fail(field, "must be a string.")
    return inputs.text(field, value, required=required, max_chars=max_chars)


def _check_session(data: object, version: int) -> Session:
    data = _object("session", data, SESSION_KEYS if version >= 3 else (*SESSION_KEYS_V2, "review"))
    name = inputs.session_name(data["name"], field="session.name")
    session = Session(
        name=name,
        task_description=_text("session.task_description", data["task_description"], nullable=True),
        created_at=_datetime("session.created_at", data["created_at"], required=True),
        review=_choice("session.review", data["review"], ReviewPolicy.values),
    )
    if version >= 3:
        session.lease_seconds = _integer("session.lease_seconds", data["lease_seconds"], minimum=1, maximum=MAX_LEASE_SECONDS)
        session.max_attempts = _integer("session.max_attempts", data["max_attempts"], minimum=1, maximum=100)
    return session


def _choice(field: str, value: object, choices) -> str:
    if value not in choices:
        raise _fail(field, f"must be one of {', '.join(choices)}; got {value!r}.")
    return value


def _check_revisions(at: str, plan_id: str, rows: object) -> list[Revision]:
    found: list[Revision] = []
    previous = 0
    for i, row in enumerate(_list(at, rows)):
        where = f"{at}[{i}]"
        row = _object(where, row, REVISION_KEYS)
        number = _integer(f"{where}.number", row["number"], minimum=1, maximum=2**31 - 1)
        if number <= previous:
            raise _fail(f"{where}.number", "revisions must be listed in increasing number order.")
        previous = number
        sections = _list(f"{where}.sections", row["sections"])
        if any(name not in SECTIONS for name in sections):
            raise _fail(f"{where}.sections", f"may name only {', '.join(SECTIONS)}.")
        undo = row["undo"]
        if not isinstance(undo, dict) or any(
            name not in SECTIONS
            or not isinstance(step, list)
            or len(step) != 2
            or isinstance(step[0], bool)
            or not isinstance(step[0], int)
            or step[0] < 0
            or not isinstance(step[1], str)
            for name, step in undo.items()
        ):
            raise _fail(f"{where}.undo", "must map section names to [kept prefix length, text].")
        actor = _text(f"{where}.actor", row["actor"], required=True)
        if len(actor) > ACTOR_CHARS:
            raise _fail(f"{where}.actor", f"is {len(actor)} characters; at most {ACTOR_CHARS} are allowed.")
        found.append(
            Revision(
                plan_id=plan_id,
                number=number,
                kind=_choice(f"{where}.kind", row["kind"], Revision.Kind.values),
                actor=actor,
                sections=sections,
                undo=undo,
                created_at=_datetime(f"{where}.created_at", row["created_at"], required=True),
            )
        )
    return found


def _check_plans(
    session: Session, rows: list, version: int, progress: Progress
) -> tuple[list[Plan], dict[str, str], list[tuple[str, str]], list[Revision]]:
    kept: list[Revision] = []
    plans: list[Plan] = []
    files: dict[str, str] = {}
    seen: set[str] = set()
    positions: set[int] = set()
    workers: set[str] = set()
    links: list[tuple[str, str]] = []
    progress.stage("Checking plans", len(rows))
    for i, row in enumerate(rows):
        progress.advance()
        at = f"plans[{i}]"
        row = _object(at, row, PLAN_KEYS_V3 if version >= 3 else PLAN_KEYS)
        plan_id = inputs.plan_id(row["id"], field=f"{at}.id")
        if plan_id in seen:
            raise _fail(f"{at}.id", f"plan {plan_id} appears twice.")
        seen.add(plan_id)
        status = row["status"]
        if status not in Plan.Status.values:
            raise _fail(f"{at}.status", f"must be one of {', '.join(Plan.Status.values)}; got {status!r}.")
        position = row["sort_key"]
        if status == Plan.Status.QUEUED:
            position = _integer(f"{at}.sort_key", position)
            if position in positions:
                raise _fail(f"{at}.sort_key", f"position {position} is taken by another queued plan.")
            positions.add(position)
        elif position is not None:
            raise _fail(f"{at}.sort_key", f"must be null for a {status} plan.")
        claim = _check_claim(at, row, status, version, session)
        if status == Plan.Status.ACTIVE:
            if claim["worker"] in workers:
                raise _fail(f"{at}.worker", f"worker '{claim['worker']}' holds another active plan; a worker holds one.")
            workers.add(claim["worker"])
        for j, dep in enumerate(row.get("depends_on") or [] if version >= 3 else []):
            links.append((plan_id, inputs.plan_id(dep, field=f"{at}.depends_on[{j}]")))
        text = {key: _text(f"{at}.{key}", row[key], required=(key == "goal")) for key in PLAN_TEXT}
        inputs.plan_size({k: text[k] for k in (*SECTIONS, "outcome")}, field=at)
        # An agent's file is not held to the field limits (it may hold a whole plan), only
        # to a bound that keeps a hostile document from exhausting memory or disk.
        file_text = _text(f"{at}.file_text", row["file_text"], nullable=True, max_chars=FILE_CHARS)
        if file_text is not None:
            if status not in (Plan.Status.QUEUED, Plan.Status.ACTIVE):
                raise _fail(f"{at}.file_text", f"must be null for a {status} plan (it has no file).")
            files[plan_id] = file_text
        if not isinstance(row["review"], bool):
            raise _fail(f"{at}.review", "must be true or false.")
        kept.extend(_check_revisions(f"{at}.revisions", plan_id, row["revisions"]))
        plans.append(
            Plan(
                id=plan_id,
                session=session,
                status=status,
                sort_key=position,
                review=row["review"],
                rejections=_integer(f"{at}.rejections", row["rejections"], minimum=0, maximum=2**31 - 1),
                version=_integer(f"{at}.version", row["version"], minimum=1, maximum=2**31 - 1),
                created_at=_datetime(f"{at}.created_at", row["created_at"], required=True),
                updated_at=_datetime(f"{at}.updated_at", row["updated_at"], required=True),
                completed_at=_datetime(f"{at}.completed_at", row["completed_at"], required=False),
                discarded_at=_datetime(f"{at}.discarded_at", row["discarded_at"], required=False),
                **claim,
                **text,
            )
        )
    ids = {p.id for p in plans}
    for plan_id, dep in links:
        if dep not in ids or dep == plan_id:
            raise _fail("plans", f"plan {plan_id} depends on {dep}, which is not another plan of the document.")
    graph: dict[str, list[str]] = {}
    for plan_id, dep in links:
        graph.setdefault(plan_id, []).append(dep)
    if invariants.has_cycle(graph):
        raise _fail("plans", "the plans' dependencies form a cycle.")
    return plans, files, sorted(set(links)), kept


def _check_claim(at: str, row: dict, status: str, version: int, session: Session) -> dict:
    """The plan's claim fields: as exported (version 3), or, from an older document, an
    active plan held by the default worker with a fresh lease."""
    if version < 3:
        if status != Plan.Status.ACTIVE:
            return {}
        now = timezone.now()
        return {
            "worker": DEFAULT_WORKER,
            "claimed_at": now,
            "lease_expires_at": now + timedelta(seconds=session.lease_seconds),
        }
    worker = row["worker"]
    if worker is not None:
        worker = inputs.worker(worker, field=f"{at}.worker")
    claim = {
        "worker": worker,
        "claimed_at": _datetime(f"{at}.claimed_at", row["claimed_at"], required=False),
        "lease_expires_at": _datetime(f"{at}.lease_expires_at", row["lease_expires_at"], required=False),
        "attempts": _integer(f"{at}.attempts", row["attempts"], minimum=0, maximum=2**31 - 1),
        "waiting_for_person": row["waiting_for_person"],
    }
    if not isinstance(claim["waiting_for_person"], bool):
        raise _fail(f"{at}.waiting_for_person", "must be true or false.")
    if status == Plan.Status.ACTIVE and None in (worker, claim["claimed_at"], claim["lease_expires_at"]):
        raise _fail(f"{at}.worker", "an active plan needs its worker, claimed_at and lease_expires_at.")
    if status != Plan.Status.ACTIVE and claim["lease_expires_at"] is not None:
        raise _fail(f"{at}.lease_expires_at", f"must be null for a {status} plan.")
    if status != Plan.Status.QUEUED and claim["waiting_for_person"]:
        raise _fail(f"{at}.waiting_for_person", f"must be false for a {status} plan.")
    if not isinstance(row["depends_on"], list):
        raise _fail(f"{at}.depends_on", "must be a JSON array of plan ids.")
    return claim


def _check_events(session: Session, rows: list, plan_ids: set[str], progress: Progress) -> list[Event]:
    events: list[Event] = []
    previous = None
    progress.stage("Checking events", len(rows))
    for i, row in enumerate(rows):
        progress.advance()
        at = f"events[{i}]"
        row = _object(at, row, EVENT_KEYS)
        number = _integer(f"{at}.id", row["id"], minimum=1)
        if previous is not None and number <= previous:
            raise _fail(f"{at}.id", "events must be listed in increasing id order.")
        previous = number
        if row["kind"] not in Event.Kind.values:
            raise _fail(f"{at}.kind", f"must be one of {', '.join(Event.Kind.values)}; got {row['kind']!r}.")
        plan_id = row["plan"]
        if plan_id is not None and plan_id not in plan_ids:
            raise _fail(f"{at}.plan", f"names plan {plan_id!r}, which is not among the exported plans.")
        actor = _text(f"{at}.actor", row["actor"], required=True)
        if len(actor) > ACTOR_CHARS:
            raise _fail(f"{at}.actor", f"is {len(actor)} characters; at most {ACTOR_CHARS} are allowed.")
        if not isinstance(row["detail"], dict):
            raise _fail(f"{at}.detail", "must be a JSON object.")
        events.append(
            Event(
                session=session,
                plan_id=plan_id,
                kind=row["kind"],
                actor=actor,
                detail=row["detail"],
                created_at=_datetime(f"{at}.created_at", row["created_at"], required=True),
            )
        )
    return events


def _check_free(session: Session, plans: list[Plan]) -> None:
    if Session.objects.filter(name=session.name).exists():
        raise _fail("session.name", f"a session named '{session.name}' already exists in this database.")
    taken = sorted(Plan.objects.filter(id__in=[p.id for p in plans]).values_list("id", flat=True))
    if taken:
        raise _fail("plans", f"plan id(s) {', '.join(taken[:10])} already exist in this database.")
    if planfiles.list_plan_files(session.name):
        raise _fail(
            "session.name",
            f"the folder {planfiles.plans_dir(session.name)} already holds plan files; "
            "move them away first so that no agent's text is overwritten.",
        )


def _renamed(row: object, old: str, new: str) -> object:
    if isinstance(row, dict) and old in row and new not in row:
        row = {(new if key == old else key): value for key, value in row.items()}
    return row


def session_import(data: object, *, actor: str = "import", progress: Progress | None = None) -> Session:
    """Restores an exported session into this database, all or nothing; returns the session."""
    progress = progress or Progress()
    data = _object("document", data, ("format", "version", "exported_at", "session", "plans", "events"))
    if data["format"] != FORMAT:
        raise _fail("format", f"must be '{FORMAT}'; got {data['format']!r}.")
    if data["version"] not in READABLE_VERSIONS or isinstance(data["version"], bool):
        raise _fail("version", f"must be 1, 2 or 3; this 9plan cannot read version {data['version']!r}.")
    version = data["version"]
    session_row = data["session"]
    # Written before review existed: no review policy, flags or revisions.
    old = version < 3 or (isinstance(session_row, dict) and "review" not in session_row)
    if old and isinstance(session_row, dict):
        session_row = {"review": ReviewPolicy.NONE, **session_row}
    session = _check_session(session_row, version)
    rows = _list("plans", data["plans"])
    if version == 1:
        rows = [_renamed(row, "queue_position", "sort_key") for row in rows]
    if old:
        rows = [{"review": False, "rejections": 0, "revisions": [], **r} if isinstance(r, dict) else r for r in rows]
    plans, files, links, kept = _check_plans(session, rows, version, progress)
    events = _check_events(session, _list("events", data["events"]), {p.id for p in plans}, progress)

    try:
        with transactions.write() as undo:
            _check_free(session, plans)
            session.save(force_insert=True)
            progress.stage("Writing plans", len(plans))
            for batch in _batches(plans):
                Plan.objects.bulk_create(batch)
                progress.advance(len(batch))
            PlanDependency.objects.bulk_create([PlanDependency(plan_id=p, depends_on_id=d) for p, d in links])
            # bulk_create sends no pre_save signal: tell the feed about the new ids here.
            event_feed.before_event_write()
            progress.stage("Writing events", len(events))
            for batch in _batches(events):
                Event.objects.bulk_create(batch)
                progress.advance(len(batch))
            for batch in _batches(kept):
                Revision.objects.bulk_create(batch)
            if old:
                # The text as imported is where these plans' recorded history begins.
                for plan in plans:
                    revisions.record(plan, kind=Revision.Kind.IMPORT, actor=actor, before=None)
            progress.stage("Writing plan files", sum(1 for plan in plans if plan.is_open))
            _restore_files(session, plans, files, undo, progress)
        progress.finish()
    except DatabaseFailed as exc:
        if exc.reason == BROKE_A_RULE:
            raise _fail("document", f"the database refused it ({exc.message}); another process may have imported it.") from exc
        raise
    log.info(
        "session imported",
        extra={"session": session.name, "plans": len(plans), "events": len(events), "actor": actor},
    )
    return session


def _batches(rows: list, size: int = 1000):
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _restore_files(session: Session, plans: list[Plan], files: dict[str, str], undo: list, progress: Progress) -> None:
    root = planfiles.session_dir(session.name)
    created_root = not root.exists()
    planfiles.ensure_session_dir(session.name)
    if created_root:
        undo.append(lambda: _remove_empty_tree(root))
    for plan in plans:
        if not plan.is_open:
            continue
        text = files.get(plan.id)
        planfiles.write_file(session.name, plan.id, text if text is not None else planfiles.render(plan.sections()))
        undo.append(lambda plan_id=plan.id: planfiles.delete_plan(session.name, plan_id))
        progress.advance()


def _remove_empty_tree(root: Path) -> None:
    for folder in (root / "plans", root):
        try:
            folder.rmdir()
        except OSError:
            pass
