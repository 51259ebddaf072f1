"""Bring plan files back in step with the database after a crash, losing no text.

The database is authoritative for structure; a file is the agent's working copy. A
process killed mid-operation can leave: a queued/active plan without its file (the
file is re-rendered from the database), a file whose plan is no longer queued/active
(deleted if it holds nothing the database lacks, otherwise kept aside in the session's
``preserved/`` folder and reported), or a temporary file of an interrupted write
(removed). Every applied repair is written to the event log.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from sessions_app import planfiles, search
from sessions_app.identifiers import is_session_name
from sessions_app.models import SECTIONS, Event, Plan, Session

log = logging.getLogger("nineplan.repair")

# A temp file younger than this may belong to a write in progress in another process.
TEMP_FILE_GRACE_SECONDS = 60
ACTOR = "repair"


@dataclass(frozen=True)
class Action:
    session: str
    kind: str  # rerender | delete_stale | preserve | remove_temp | reindex
    target: str
    detail: str

    def __str__(self) -> str:
        return f"{self.session}: {self.kind} {self.target} ({self.detail})"


def _file_adds_text(text: str, plan: Plan | None) -> bool:
    """Whether a file holds text the database copy of its plan lacks."""
    if plan is None:
        return text.strip() != ""
    parsed = planfiles.parse(text)
    if parsed.preamble:
        return True
    stored = {name: (getattr(plan, name) or "") for name in SECTIONS}
    for name, body in parsed.sections.items():
        body = body.strip()
        if body and body not in stored[name] and body not in "\n".join(stored.values()):
            return True
    return False


def _preserve(session: str, path: Path) -> Path:
    target_dir = planfiles.session_dir(session) / planfiles.PRESERVED_DIR
    target_dir.mkdir(parents=True, exist_ok=True)
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S")
    target = target_dir / f"{path.stem}-{stamp}.txt"
    n = 1
    while target.exists():
        n += 1
        target = target_dir / f"{path.stem}-{stamp}-{n}.txt"
    os.replace(path, target)
    return target


def session_repair(*, session_name: str, apply: bool) -> list[Action]:
    """Finds (and with ``apply``, fixes) what a crash left in one session's plan files."""
    actions: list[Action] = []
    session = Session.objects.filter(name=session_name).first()
    if session is None:
        return actions
    open_plans = {
        p.id: p
        for p in Plan.objects.filter(session=session, status__in=[Plan.Status.QUEUED, Plan.Status.ACTIVE])
    }
    on_disk = set(planfiles.list_plan_files(session_name))

    for plan_id in sorted(set(open_plans) - on_disk):
        actions.append(Action(session_name, "rerender", f"{plan_id}.txt", "plan file missing; rendered from the database"))
        if apply:
            plan = open_plans[plan_id]
            planfiles.write_plan(session_name, plan_id, plan.sections())

    stale_ids = sorted(on_disk - set(open_plans))
    closed = Plan.objects.in_bulk(stale_ids)
    for plan_id in stale_ids:
        path = planfiles.plan_path(session_name, plan_id)
        text = planfiles.read_plan(session_name, plan_id)
        if text is None:
            continue
        plan = closed.get(plan_id)
        state = plan.status if plan else "unknown"
        if _file_adds_text(text, plan):
            actions.append(Action(session_name, "preserve", path.name, f"plan is {state}; file holds text the database lacks"))
            if apply:
                kept = _preserve(session_name, path)
                _record(session, plan, "preserve", path.name, kept_as=str(kept.relative_to(planfiles.session_dir(session_name))))
        else:
            actions.append(Action(session_name, "delete_stale", path.name, f"plan is {state}; the database has all its text"))
            if apply:
                path.unlink(missing_ok=True)

    now = time.time()
    for tmp in planfiles.list_temp_files(session_name):
        try:
            age = now - tmp.stat().st_mtime
        except FileNotFoundError:
            continue
        if age < TEMP_FILE_GRACE_SECONDS:
            continue
        actions.append(Action(session_name, "remove_temp", tmp.name, "left by an interrupted write"))
        if apply:
            tmp.unlink(missing_ok=True)

    if apply:
        for action in actions:
            if action.kind in ("rerender", "delete_stale", "remove_temp"):
                plan = open_plans.get(action.target[:5]) or closed.get(action.target[:5])
                _record(session, plan, action.kind, action.target)
    return actions


def _record(session: Session, plan: Plan | None, kind: str, target: str, **detail) -> None:
    with transaction.atomic():
        Event.objects.create(
            session=session,
            plan=plan if plan is not None and plan.pk else None,
            kind=Event.Kind.REPAIRED,
            actor=ACTOR,
            detail={"action": kind, "file": target, **detail},
        )
    log.info("repaired", extra={"session": session.name, "action": kind, "file": target})


def index_repair(*, apply: bool) -> list[Action]:
    """The search index holds exactly the completed plans (SQLite)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        return []
    search.ensure_index()
    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {search.FTS_TABLE}")
        indexed = cur.fetchone()[0]
    completed = Plan.objects.filter(status=Plan.Status.COMPLETED).count()
    if indexed == completed:
        return []
    action = Action("*", "reindex", search.FTS_TABLE, f"{indexed} indexed, {completed} completed plans")
    if apply:
        with transaction.atomic():
            search.rebuild_index()
    return [action]


def repair_all(*, apply: bool, session_name: str | None = None) -> list[Action]:
    """Repairs every session with a folder on disk (or just ``session_name``)."""
    root = planfiles.sessions_root()
    if session_name is not None:
        names = [session_name]
    else:
        try:
            names = sorted(n for n in os.listdir(root) if is_session_name(n))
        except FileNotFoundError:
            names = []
    actions: list[Action] = []
    for name in names:
        actions.extend(session_repair(session_name=name, apply=apply))
    if session_name is None:
        actions.extend(index_repair(apply=apply))
    return actions
