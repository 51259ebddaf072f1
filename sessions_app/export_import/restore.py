"""The import: an export document restored into a database that does not hold its
session, all or nothing."""

from __future__ import annotations

import logging
from pathlib import Path

from nineplan.progress import Progress
from sessions_app import event_feed, inputs, invariants, planfiles, revisions, transactions
from sessions_app.errors import BROKE_A_RULE, DatabaseFailed
from sessions_app.export_import.document import (
    ACTOR_CHARS,
    EVENT_KEYS,
    FILE_CHARS,
    FORMAT,
    PLAN_KEYS,
    PLAN_KEYS_V3,
    PLAN_TEXT,
    READABLE_VERSIONS,
    _check_claim,
    _check_revisions,
    _check_session,
    _datetime,
    _fail,
    _integer,
    _list,
    _object,
    _renamed,
    _text,
)
from sessions_app.models import SECTIONS, Event, Plan, PlanDependency, ReviewPolicy, Revision, Session

log = logging.getLogger("nineplan.export_import")


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
