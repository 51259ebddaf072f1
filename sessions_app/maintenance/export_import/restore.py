"""The import: an export document restored into a database that does not hold its
session, all or nothing, read from a file as a stream and never held whole.

The file is read up to three times (docs/design.md, "The edges"):

1. its header (format, version, session), which an export writes first, so that this read
   stops there (a document whose header comes after its plans is read to its end for it);
2. every plan, revision and event, each checked on its own as it comes, keeping only what
   the checks across them need (each plan's id, the queue's positions, the workers that
   hold plans, the dependencies, the plans the events name); nothing is written;
3. inside one write transaction, every piece again, checked again as it becomes a row and
   written in batches; the plan files go into a folder aside (staging.py), moved into
   place after the commit. Should the file's digest differ from the second read's (it was
   changed meanwhile), the transaction is rolled back.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from typing import BinaryIO, cast

from django.conf import settings

from sessions_app import access, inputs, planfiles
from sessions_app.errors import BROKE_A_RULE, DatabaseFailed, FileSystemFailed
from sessions_app.identifiers import is_plan_id
from sessions_app.maintenance import invariants
from sessions_app.maintenance.export_import.document import (
    DOCUMENT_KEYS,
    HEADER_KEYS,
    PLAN_TEXT,
    check_event,
    check_header,
    check_plan,
    check_revision,
    fail,
    plan_defaults,
    session_row,
)
from sessions_app.maintenance.export_import.reader import TOO_LONG, DocumentReader, Unreadable
from sessions_app.maintenance.export_import.staging import ImportFolder
from sessions_app.maintenance.progress import Progress
from sessions_app.models import DEFAULT_PROJECT, MAX_DEPENDENTS, Event, Plan, PlanDependency, Project, Revision, Session
from sessions_app.store import event_feed, revisions, transactions

log = logging.getLogger("nineplan.export_import")

BATCH = 1000  # rows of one kind written at a time
# ...and at most about this many characters of text held for them, whatever their kind:
# a thousand plans near the plan limit would otherwise hold a quarter of a gigabyte.
BATCH_CHARS = 8 * 1024 * 1024
# A plan (with its revisions) whose text is longer than this is read key by key, its
# revisions one at a time, rather than decoded whole: a plan holding a million revisions
# costs no more memory than one holding ten.
WHOLE_PLAN_CHARS = 4 * 1024 * 1024


def longest_value() -> int:
    """The most characters one value of the document may take: a whole plan's text with
    every character escaped (``\\uXXXX``, six), and room for the rest of a revision."""
    return 6 * settings.NINEPLAN_MAX_PLAN_CHARS + 65536


def session_import(
    data: object, *, actor: str = "import", project: str | None = None, progress: Progress | None = None
) -> Session:
    """Restores an exported session given as decoded JSON, all or nothing; returns the session."""
    try:
        raw = json.dumps(data, ensure_ascii=True).encode("ascii")
    except (TypeError, ValueError) as exc:
        raise fail("document", f"is not JSON data ({exc}).") from None
    return import_file(io.BytesIO(raw), actor=actor, project=project, progress=progress)


def import_file(
    stream: BinaryIO, *, actor: str = "import", project: str | None = None, progress: Progress | None = None
) -> Session:
    """Restores the export document in ``stream`` (binary, seekable) into this database,
    all or nothing; returns the session. Memory stays flat whatever the document's size.
    The session goes into ``project`` if given, else the project the document names (or
    ``default``, for a document from before projects); the caller must hold the agent role
    there."""
    progress = progress or Progress()
    if project is not None:
        project = inputs.project_name(project)
    header = _header(stream)
    version, old = check_header(header)
    session = session_row(header["session"], version, old)
    session.project_id = project or (session.project_id if version >= 4 else DEFAULT_PROJECT)
    if session.project_id == DEFAULT_PROJECT:
        Project.objects.get_or_create(name=DEFAULT_PROJECT)  # made again if it was removed
    elif not Project.objects.filter(name=session.project_id).exists():
        raise fail(
            "project",
            f"no project named '{session.project_id}' here; create it with `9plan project create "
            f"{session.project_id}`, or import into another with --project.",
        )
    # Set just above; the stubs type a foreign key with a database default as optional.
    access.require_in_project(access.WORK, cast(str, session.project_id))
    checks = _Checks()
    digest = _walk(stream, _Reading(version, old, session, checks, progress, []))
    checks.finish()
    folder = None
    try:
        with transactions.write() as undo:
            _check_free(session, checks.ids)
            session.save(force_insert=True)
            folder = ImportFolder(session.name)
            undo.append(folder.discard)
            writes = _Writes(session, actor, old, folder, progress, checks)
            if _walk(stream, _Reading(version, old, session, writes, progress, checks.ids)) != digest:
                raise fail("document", "the file changed while it was imported; nothing was imported.")
            writes.finish()
        progress.finish()
        folder.publish()
    except DatabaseFailed as exc:
        if exc.reason == BROKE_A_RULE:
            raise fail(
                "document", f"the database refused it ({exc.message}); another process may have imported it."
            ) from exc
        raise
    finally:
        if folder is not None:
            folder.close()
    log.info(
        "session imported",
        extra={"session": session.name, "plans": len(checks.ids), "events": checks.events, "actor": actor},
    )
    return session


class _Hashed:
    """The stream as the reader reads it, and the digest of everything read."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self.digest = hashlib.sha256()

    def read(self, size: int) -> bytes:
        data = self._stream.read(size)
        self.digest.update(data)
        return data


def _reader(stream) -> DocumentReader:
    return DocumentReader(stream, max_chars=longest_value())


def _header(stream: BinaryIO) -> dict:
    """The document's header: format, version, exported_at and session."""
    stream.seek(0)
    reader = _reader(stream)
    found: dict = {}
    try:
        first = reader.peek()
        if first in ("", "\ufeff"):
            what = "is empty" if not first else "starts with a byte order mark (U+FEFF); save it as UTF-8 without one"
            raise fail("document", f"{what}: an export is one JSON object, as `9plan export` writes it.")
        if first != "{":
            raise fail("document", "must be a JSON object.")
        for key in reader.keys():  # noqa: SIM118 (the reader streams a JSON object's keys; it is no dict)
            if key in HEADER_KEYS:
                try:
                    found[key] = reader.value()
                except Unreadable as exc:
                    raise _unreadable(key, exc) from None
                if len(found) == len(HEADER_KEYS):
                    break
            else:
                reader.skip()
    except Unreadable as exc:
        raise _unreadable("document", exc) from None
    missing = [key for key in HEADER_KEYS if key not in found]
    if missing:
        raise fail("document", f"lacks {', '.join(missing)}.")
    return found


def _unreadable(field: str, exc: Unreadable, *, plan: object = None):
    of = f" (plan {plan})" if is_plan_id(plan) else ""
    return fail(field, f"cannot be read{of}: the file {exc.message} ({exc.where}); nothing was imported.")


class _Reading:
    """One read of the whole document: what it knows beforehand and where the pieces go."""

    def __init__(self, version: int, old: bool, session: Session, sink, progress: Progress, ids: list[str]):
        self.version, self.old, self.session = version, old, session
        self.sink, self.progress = sink, progress
        self.ids = ids  # each plan's id, by its place, from an earlier read


def _walk(stream: BinaryIO, reading: _Reading) -> str:
    """Reads the document through, handing each piece to the reading's sink; returns the
    file's digest."""
    stream.seek(0)
    hashed = _Hashed(stream)
    reader = _reader(hashed)
    seen = set()
    where = "document"
    try:
        for key in reader.keys():  # noqa: SIM118 (the reader streams a JSON object's keys; it is no dict)
            seen.add(key)
            if key in HEADER_KEYS:
                reader.skip()  # read by _header; the digest vouches that it is the same
            elif key == "plans":
                _plans(reader, reading)
            elif key == "events":
                _events(reader, reading)
            else:
                raise fail("document", f"has unknown keys {key}; expected exactly {', '.join(DOCUMENT_KEYS)}.")
        reader.end()
    except Unreadable as exc:
        raise _unreadable(reading.sink.at or where, exc) from None
    missing = [key for key in DOCUMENT_KEYS if key not in seen]
    if missing:
        raise fail("document", f"lacks {', '.join(missing)}.")
    return hashed.digest.hexdigest()


def _array(reader: DocumentReader, field: str):
    if reader.peek() != "[":
        reader.value()
        raise fail(field, "must be a JSON array.")
    return reader.items()


def _plans(reader: DocumentReader, reading: _Reading) -> None:
    sink = reading.sink
    reading.progress.stage(f"{sink.verb} plans", sink.totals.get("plans"))
    for i in _array(reader, "plans"):
        at = sink.at = f"plans[{i}]"
        hint = reading.ids[i] if i < len(reading.ids) else None
        plan, file_text, depends_on = _plan(reader, at, hint, reading)
        sink.plan(at, plan, file_text, depends_on)
        reading.progress.advance()
    sink.at = None
    sink.end_plans()


def _plan(reader: DocumentReader, at: str, hint: str | None, reading: _Reading):
    """One plan, its revisions handed to the sink as they come."""
    sink, previous = reading.sink, 0
    row = reader.value_within(WHOLE_PLAN_CHARS)
    if row is TOO_LONG and reader.peek() == "{":
        fields: dict[str, object] = {}
        for key in reader.keys():  # noqa: SIM118 (the reader streams a JSON object's keys; it is no dict)
            if key == "revisions" and reader.peek() == "[":
                for j in reader.items():
                    revision = check_revision(f"{at}.revisions[{j}]", hint, reader.value(), previous)
                    previous = revision.number
                    sink.revision(revision)
                fields[key] = []
            else:
                try:
                    fields[key] = reader.value()
                except Unreadable as exc:
                    raise _unreadable(f"{at}.{key}", exc, plan=fields.get("id")) from None
        return check_plan(at, plan_defaults(fields, reading.version, reading.old), reading.version, reading.session)
    if row is TOO_LONG:
        row = reader.value()  # one value over the bound: refused by the reader
    row = plan_defaults(row, reading.version, reading.old)
    kept = row.get("revisions") if isinstance(row, dict) else None
    if isinstance(row, dict) and isinstance(kept, list):
        row = {**row, "revisions": []}
    found = check_plan(at, row, reading.version, reading.session)
    for j, raw in enumerate(kept or ()):
        revision = check_revision(f"{at}.revisions[{j}]", found[0].id, raw, previous)
        previous = revision.number
        sink.revision(revision)
    return found


def _events(reader: DocumentReader, reading: _Reading) -> None:
    sink = reading.sink
    reading.progress.stage(f"{sink.verb} events", sink.totals.get("events"))
    for i in _array(reader, "events"):
        at = sink.at = f"events[{i}]"
        event, number = check_event(at, reader.value(), reading.session)
        sink.event(at, event, number)
        reading.progress.advance()
    sink.at = None


class _Checks:
    """The checks across pieces, made while the document is read the first time."""

    verb = "Checking"

    def __init__(self):
        self.at: str | None = None
        self.totals: dict[str, int] = {}
        self.ids: list[str] = []
        self._known: set[str] = set()
        self._positions: set[int] = set()
        self._workers: set[str] = set()
        self._links: list[tuple[str, str]] = []
        self._plans_read = False
        self._named: dict[str, str] = {}  # plan id -> the first event naming it, before the plans were read
        self._previous: int | None = None
        self.events = 0

    def plan(self, at: str, plan: Plan, file_text: str | None, depends_on: list[str]) -> None:
        if plan.id in self._known:
            raise fail(f"{at}.id", f"plan {plan.id} appears twice.")
        self._known.add(plan.id)
        self.ids.append(plan.id)
        if plan.status == Plan.Status.QUEUED:
            if plan.sort_key in self._positions:
                raise fail(f"{at}.sort_key", f"position {plan.sort_key} is taken by another queued plan.")
            assert plan.sort_key is not None  # check_plan gives every queued plan its position
            self._positions.add(plan.sort_key)
        if plan.status == Plan.Status.ACTIVE:
            if plan.worker in self._workers:
                raise fail(f"{at}.worker", f"worker '{plan.worker}' holds another active plan; a worker holds one.")
            assert plan.worker is not None  # check_claim gives every active plan its worker
            self._workers.add(plan.worker)
        self._links.extend((plan.id, dep) for dep in depends_on)

    def revision(self, revision: Revision) -> None:
        """A revision needs nothing of the others (its plan's order was checked as it came)."""

    def end_plans(self) -> None:
        self._plans_read = True
        self.totals["plans"] = len(self.ids)
        graph: dict[str, list[str]] = {}
        dependents: dict[str, int] = {}
        for plan_id, dep in self._links:
            if dep not in self._known or dep == plan_id:
                raise fail("plans", f"plan {plan_id} depends on {dep}, which is not another plan of the document.")
            graph.setdefault(plan_id, []).append(dep)
            dependents[dep] = dependents.get(dep, 0) + 1
            if dependents[dep] > MAX_DEPENDENTS:
                raise fail(
                    "plans", f"plan {dep} has more than {MAX_DEPENDENTS} dependents; a plan may have at most that many."
                )
        if invariants.has_cycle(graph):
            raise fail("plans", "the plans' dependencies form a cycle.")
        self._positions.clear()
        self._workers.clear()

    def event(self, at: str, event: Event, number: int) -> None:
        if self._previous is not None and number <= self._previous:
            raise fail(f"{at}.id", "events must be listed in increasing id order.")
        self._previous = number
        self.events += 1
        if event.plan_id is None:
            return
        if self._plans_read and event.plan_id not in self._known:
            raise fail(f"{at}.plan", f"names plan {event.plan_id!r}, which is not among the exported plans.")
        if not self._plans_read:
            self._named.setdefault(event.plan_id, at)

    def finish(self) -> None:
        self.totals["events"] = self.events
        for plan_id, at in self._named.items():
            if plan_id not in self._known:
                raise fail(f"{at}.plan", f"names plan {plan_id!r}, which is not among the exported plans.")
        self._known.clear()


class _Writes:
    """The rows and files of the second read, written in batches inside the transaction.

    The foreign keys are checked at the commit (Django makes them deferrable on both
    databases), so a revision or an event may be written before its plan's batch."""

    verb = "Writing"

    def __init__(
        self, session: Session, actor: str, old: bool, folder: ImportFolder, progress: Progress, checks: _Checks
    ):
        self.at: str | None = None
        self.session, self.actor, self.old, self.folder, self.progress = session, actor, old, folder, progress
        self.totals = checks.totals
        self._plans: list[Plan] = []
        self._revisions: list[Revision] = []
        self._events: list[Event] = []
        self._links: list[PlanDependency] = []
        self._held = 0  # characters of text in the rows not written yet
        self._feed_told = False

    def plan(self, at: str, plan: Plan, file_text: str | None, depends_on: list[str]) -> None:
        self._plans.append(plan)
        self._held += sum(len(getattr(plan, key)) for key in PLAN_TEXT)
        self._links.extend(PlanDependency(plan_id=plan.id, depends_on_id=dep) for dep in depends_on)
        if plan.is_open:
            rendered = planfiles.render(plan.sections())
            # The file's base is the plan's text as imported: an edit in the exported file
            # reads as an edit, and the file never overwrites text written after the import.
            self.folder.write(plan.id, file_text if file_text is not None else rendered, base=rendered)
        self._flush(full=True)

    def revision(self, revision: Revision) -> None:
        self._revisions.append(revision)
        self._held += chars_in(revision.sections) + chars_in(revision.undo)
        self._flush(full=True)

    def end_plans(self) -> None:
        self._flush(full=False)

    def event(self, at: str, event: Event, number: int) -> None:
        self._events.append(event)
        self._held += chars_in(event.detail)
        self._flush(full=True)

    def _flush(self, *, full: bool) -> None:
        # A plan's revisions come before it, so they are all written when it is, and the
        # import revision of an older document's plan is numbered after them. Past the
        # budget of text, every row held is written.
        full = full and self._held < BATCH_CHARS
        if not full:
            self._held = 0
        plans = len(self._plans) >= BATCH or (self._plans and not full)
        if plans or len(self._revisions) >= BATCH or (self._revisions and not full):
            Revision.objects.bulk_create(self._revisions)
            self._revisions = []
        if plans:
            Plan.objects.bulk_create(self._plans)
            if self.old:
                # The text as imported is where these plans' recorded history begins.
                for plan in self._plans:
                    revisions.save(plan, kind=Revision.Kind.IMPORT, actor=self.actor, before=None)
            self._plans = []
        if len(self._links) >= BATCH or (self._links and not full):
            PlanDependency.objects.bulk_create(self._links)
            self._links = []
        if len(self._events) >= BATCH or (self._events and not full):
            if not self._feed_told:
                # bulk_create sends no pre_save signal: tell the feed about the new ids here.
                event_feed.before_event_write()
                self._feed_told = True
            Event.objects.bulk_create(self._events)
            self._events = []

    def finish(self) -> None:
        self._flush(full=False)


def chars_in(value: object) -> int:
    """The characters of the strings in a decoded JSON value (keys too), without recursion."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


def _check_free(session: Session, ids: list[str]) -> None:
    if Session.objects.filter(name=session.name).exists():
        raise fail("session.name", f"a session named '{session.name}' already exists in this database.")
    taken: list[str] = []
    for start in range(0, len(ids), 500):
        taken += Plan.objects.filter(id__in=ids[start : start + 500]).values_list("id", flat=True)
    if taken:
        raise fail("plans", f"plan id(s) {', '.join(sorted(taken)[:10])} already exist in this database.")
    found = planfiles.scan(session.name)
    if found.problem:
        raise FileSystemFailed(f"The plan files cannot be written: {found.problem}; 9plan leaves it alone.")
    if found.files:
        raise fail(
            "session.name",
            f"the folder {planfiles.plans_dir(session.name)} already holds plan files, which no session of "
            "this database owns (an import killed midway may have left them); nothing was imported. Run "
            "`9plan repair --apply`, which keeps them in preserved/, or move them away, then import again.",
        )
