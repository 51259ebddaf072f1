"""Bring plan files back in step with the database after a crash, losing no text.

The database is authoritative for structure; a file is the agent's working copy. A
process killed mid-operation can leave: a queued/active plan without its file (the
file is re-rendered from the database), a file whose plan is no longer queued/active
(deleted if it holds nothing the database lacks, otherwise kept aside in the session's
``preserved/`` folder and reported), a file for a plan the database never committed
(kept aside: it holds an agent's text), or a temporary file of an interrupted write
(removed once it is old enough not to be a write in progress). The SQLite search index
is checked against the completed plans and rebuilt if they differ, and the plan counts
on each session row against its plans (recounted if they differ, their triggers
re-created if missing). Every applied repair is written to the event log.

The repair touches nothing outside the sessions folder, ever: a session or plans folder
that is a symbolic link (or not a folder), and an entry that is not a regular file (a
link, FIFO, device or socket), are reported as ``left_alone`` and never read, written,
moved or deleted (docs/design.md, "Repair").
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from django.db import connection

from sessions_app import planfiles, search
from sessions_app.errors import FileSystemFailed
from sessions_app.identifiers import is_session_name
from sessions_app.maintenance import export_import
from sessions_app.maintenance.progress import Progress
from sessions_app.models import SECTIONS, Event, Plan, Session
from sessions_app.store import plan_counts, transactions

log = logging.getLogger("nineplan.repair")

ACTOR = "repair"
OPEN = (Plan.Status.QUEUED, Plan.Status.ACTIVE)


@dataclass(frozen=True)
class Action:
    session: str
    # rerender | delete_stale | preserve | remove_temp | clear_import | reindex | recount | clear_claim
    # | left_alone
    kind: str
    target: str
    detail: str
    failed: str = ""

    def __str__(self) -> str:
        text = f"{self.session}: {self.kind} {self.target} ({self.detail})"
        return f"{text} FAILED: {self.failed}" if self.failed else text


def file_adds_text(text: str, plan: Plan | None) -> bool:
    """Whether a file holds text the database copy of its plan lacks."""
    if plan is None:
        return text.strip() != ""
    parsed = planfiles.parse(text)
    if parsed.preamble:
        return True
    stored = {name: (getattr(plan, name) or "") for name in SECTIONS}
    everything = "\n".join(stored.values())
    for name, body in parsed.sections.items():
        body = body.strip()
        # A section moved under another heading is not new text either.
        if body and body not in stored[name] and body not in everything:
            return True
    return False


class _Run:
    """One session's repair: collects actions and, when applying, carries each out and logs it.

    An ``orphan`` run is of a session folder whose session is not in the database (what an
    import killed by an earlier 9plan left): there is no event log to write to, so its
    repairs are only logged."""

    def __init__(self, session: Session, apply: bool, *, orphan: bool = False):
        self.session = session
        self.apply = apply
        self.orphan = orphan
        self.actions: list[Action] = []

    def left_alone(self, target: str, detail: str) -> None:
        """Something no repair may touch: reported (and logged), never fixed."""
        self.actions.append(Action(self.session.name, "left_alone", target, detail))
        if self.apply:
            log.warning("left alone", extra={"session": self.session.name, "file": target, "reason": detail})

    def act(self, kind: str, target: str, detail: str, plan: Plan | None, fix) -> None:
        if not self.apply:
            self.actions.append(Action(self.session.name, kind, target, detail))
            return
        try:
            extra = fix() or {}
        except (OSError, FileSystemFailed) as exc:
            # One file that cannot be fixed must not stop the others, nor the server's start.
            reason = getattr(exc, "message", None) or str(exc)
            log.error(
                "repair failed", extra={"session": self.session.name, "action": kind, "file": target, "error": reason}
            )
            self.actions.append(Action(self.session.name, kind, target, detail, failed=reason))
            return
        self.actions.append(Action(self.session.name, kind, target, detail))
        if self.orphan:
            log.warning(
                "repaired a folder without a session",
                extra={"session": self.session.name, "action": kind, "file": target},
            )
            return
        Event.objects.create(
            session=self.session,
            plan=plan,
            kind=Event.Kind.REPAIRED,
            actor=ACTOR,
            detail={"action": kind, "file": target, "reason": detail, **extra},
        )
        log.info("repaired", extra={"session": self.session.name, "action": kind, "file": target})


def _rerender(session_name: str, plan: Plan) -> None:
    planfiles.write_plan(session_name, plan.file_stem, plan.sections())


# Said of an entry that is not a regular file, after what it is.
NOT_A_FILE = f"not a regular file: {planfiles.LEFT_ALONE}; remove it by hand"


def _repair_files(run: _Run) -> None:
    session = run.session
    name = session.name
    found = planfiles.scan(name)
    if found.problem:
        run.left_alone(name, f"{found.problem}; nothing in it is read or changed")
        return
    # Looked for after the listing: an import commits its session before its files appear,
    # so files listed while the session is still absent are not that import's.
    if run.orphan and Session.objects.filter(name=name).exists():
        return
    open_plans = {p.file_stem: p for p in Plan.objects.filter(session_id=name, status__in=OPEN)}
    on_disk = set(found.files)

    for stem in sorted(set(open_plans) - on_disk):
        open_plan = open_plans[stem]
        if planfiles.read_base(name, stem) is None:
            continue  # never copied to this machine: nothing was lost (a pull writes it)
        run.act(
            "rerender",
            f"{stem}.txt",
            f"{open_plan.status} plan had no file; rendered from the database",
            open_plan,
            lambda plan=open_plan: _rerender(name, plan),
        )
    for stem in sorted(open_plans):
        if planfiles.unreadable_base(planfiles.read_base(name, stem)):
            run.act(
                "forget_base",
                f".bases/{stem}.txt",
                "base is no record 9plan can read (the file was read as having none); removed",
                open_plans[stem],
                lambda stem=stem: planfiles.write_base(name, stem, None),
            )
    for stem in sorted(set(open_plans) & on_disk):
        if found.files[stem]:
            run.left_alone(f"{stem}.txt", f"{open_plans[stem].status} plan's file is {found.files[stem]}, {NOT_A_FILE}")

    stale = sorted(on_disk - set(open_plans))
    # Only this session's plans: a file never speaks for a plan of another session.
    known = Plan.objects.filter(session_id=name).in_bulk({planfiles.stem_plan_id(stem) for stem in stale})
    for stem in stale:
        target = f"{stem}.txt"
        if found.files[stem]:
            run.left_alone(target, f"is {found.files[stem]}, {NOT_A_FILE}")
            continue
        plan = known.get(planfiles.stem_plan_id(stem))
        if plan is None:
            state = "no such plan in the database"
        elif plan.is_open:
            state = f"file of an earlier claim of the plan (now {plan.file_stem}.txt)"
        else:
            state = f"plan is {plan.status}"
        if run.orphan:
            state = "no such session in the database"
        read = planfiles.read_plan_file(name, stem)
        if read.state == planfiles.MISSING:
            continue  # vanished meanwhile
        if read.state == planfiles.REFUSED:
            run.left_alone(target, f"{read.problem}; left alone")
            continue
        # A copy nobody edited holds nothing its plan's row lacks: but only where that row
        # is still there.
        untouched = plan is not None and not run.orphan and planfiles.untouched(name, stem, plan.version, read)
        earlier_claim = plan is not None and plan.is_open
        # A usable read has its text ("" stands in for the None of one that is not, never read).
        if not untouched and (not read.usable or earlier_claim or file_adds_text(read.text or "", plan)):
            why = "the file holds text the database lacks" if read.usable else f"the file {read.problem}"
            run.act(
                "preserve",
                target,
                f"{state}; {why}, kept aside",
                plan,
                lambda stem=stem: {"kept_as": planfiles.preserve_file(name, stem)},
            )
        else:
            run.act(
                "delete_stale",
                target,
                f"{state}; the database has all its text",
                plan,
                lambda stem=stem: planfiles.remove_file(name, stem),
            )

    for tmp, age, what in found.temp:
        if what:
            run.left_alone(tmp, f"is {what}, {NOT_A_FILE}")
        elif age >= planfiles.TEMP_FILE_GRACE_SECONDS:
            run.act(
                "remove_temp",
                tmp,
                "left by an interrupted write",
                None,
                lambda tmp=tmp: planfiles.remove_temp(name, tmp),
            )


def _locked_session(name: str) -> Session | None:
    """The session's row, locked on PostgreSQL as a service locks it (FOR NO KEY UPDATE:
    docs/design.md, "Transactions and writer turns")."""
    return Session.objects.select_for_update(no_key=True).filter(name=name).order_by().first()


def session_repair(*, session_name: str, apply: bool) -> list[Action]:
    """Finds (and with ``apply``, fixes) what a crash left in one session's plan files."""
    if not is_session_name(session_name):
        return []
    if not apply:
        session = Session.objects.filter(name=session_name).first()
        run = _Run(session or Session(name=session_name), apply=False, orphan=session is None)
        _repair_files(run)
        return run.actions
    # Under the session's write lock: a service writes a new plan's file before its
    # transaction commits, so a repair running beside a live server would otherwise take
    # that file for an orphan and move it aside from under the plan being created.
    with transactions.write():
        session = _locked_session(session_name)
        run = _Run(session or Session(name=session_name), apply=True, orphan=session is None)
        _repair_files(run)
    return run.actions


def imports_repair(*, apply: bool, session_name: str | None = None) -> list[Action]:
    """What killed imports left aside: the files of an import whose session was committed
    are moved into place, those of one that never committed are removed."""
    actions = []
    for leftover in export_import.import_leftovers():
        if session_name is not None and leftover.session_name != session_name:
            continue
        imported = Session.objects.filter(name=leftover.session_name).exists()
        what = (
            "its session was imported: its files go into place"
            if imported
            else "its session was never imported: removed (the export document still holds its text)"
        )
        action = Action(
            leftover.session_name, "clear_import", leftover.name, f"left by an import that did not finish; {what}"
        )
        if apply:
            try:
                with transactions.write():
                    if imported:
                        _locked_session(leftover.session_name)
                    done = export_import.clear_import_leftover(leftover, imported=imported)
                    if imported and done:
                        Event.objects.create(
                            session_id=leftover.session_name,
                            kind=Event.Kind.REPAIRED,
                            actor=ACTOR,
                            detail={"action": "clear_import", "file": leftover.name, **done},
                        )
            except (OSError, FileSystemFailed) as exc:
                action = Action(**{**action.__dict__, "failed": getattr(exc, "message", None) or str(exc)})
            log.info(
                "repaired", extra={"session": leftover.session_name, "action": "clear_import", "file": leftover.name}
            )
        actions.append(action)
    return actions


def index_repair(*, apply: bool, progress: Progress | None = None) -> list[Action]:
    """The search index holds exactly the completed plans (SQLite); rebuilt if not."""
    if connection.vendor != "sqlite":
        return []
    search.ensure_index()
    with transactions.write():
        indexed = search.indexed_count()
        completed = Plan.objects.filter(status=Plan.Status.COMPLETED).count()
        if indexed == completed:
            return []
        action = Action("*", "reindex", search.FTS_TABLE, f"{indexed} indexed, {completed} completed plans")
        if apply:
            drifted = _index_drift_by_session()
            if progress is not None:
                # One statement: nothing to count, but a person sees what the wait is for.
                progress.stage(f"Rebuilding the search index ({completed:,} completed plans)")
            search.rebuild_index()
            # The index is shared, the event log is per session: each session whose
            # entries were wrong gets the event.
            for session_name, (had, wanted) in drifted.items():
                Event.objects.create(
                    session_id=session_name,
                    kind=Event.Kind.REPAIRED,
                    actor=ACTOR,
                    detail={"action": "reindex", "file": search.FTS_TABLE, "indexed": had, "completed": wanted},
                )
            log.info("repaired", extra={"action": "reindex", "indexed": indexed, "completed": completed})
    return [action]


def counts_repair(*, apply: bool, session_name: str | None = None) -> list[Action]:
    """The plan counts on session rows match their plans, and the triggers that keep them
    exist; missing triggers are re-created and wrong counts recomputed."""
    actions: list[Action] = []
    with transactions.write():
        if not plan_counts.triggers_present():
            actions.append(Action("*", "recount", "triggers", "the triggers that keep the plan counts were missing"))
            if apply:
                plan_counts.ensure_triggers()
        drift = plan_counts.drifted(session_name)
        for name, off in drift.items():
            detail = "; ".join(f"{status}: {kept} kept, {counted} counted" for status, (kept, counted) in off.items())
            actions.append(Action(name, "recount", "plan counts", detail))
            if apply:
                plan_counts.recount(name)
                Event.objects.create(
                    session_id=name,
                    kind=Event.Kind.REPAIRED,
                    actor=ACTOR,
                    detail={
                        "action": "recount",
                        **{status: {"kept": k, "counted": c} for status, (k, c) in off.items()},
                    },
                )
                log.info("repaired", extra={"session": name, "action": "recount"})
    return actions


def claims_repair(*, apply: bool, session_name: str | None = None) -> list[Action]:
    """A lease or a wait left on a plan that is not active or queued is cleared. A claim
    whose lease ran out is no crash's leftover: it stays with its worker until another
    worker's pull, a person or ``nineplan_reclaim`` takes it back."""
    stale = Plan.objects.exclude(status=Plan.Status.ACTIVE).filter(lease_expires_at__isnull=False)
    waiting = Plan.objects.exclude(status=Plan.Status.QUEUED).filter(waiting_for_person=True)
    if session_name is not None:
        stale, waiting = (q.filter(session_id=session_name) for q in (stale, waiting))
    actions = [
        Action(p.session_id, "clear_claim", p.id, f"a {p.status} plan kept a lease or a wait for a person")
        for p in (stale | waiting).only("id", "session_id", "status").order_by("session_id", "id")
    ]
    if not apply or not actions:
        return actions
    with transactions.write():
        for action in actions:
            Plan.objects.filter(id=action.target).exclude(status=Plan.Status.ACTIVE).update(lease_expires_at=None)
            Plan.objects.filter(id=action.target).exclude(status=Plan.Status.QUEUED).update(waiting_for_person=False)
            Event.objects.create(
                session_id=action.session,
                plan_id=action.target,
                kind=Event.Kind.REPAIRED,
                actor=ACTOR,
                detail={"action": "clear_claim", "reason": action.detail},
            )
    return actions


def _index_drift_by_session() -> dict[str, tuple[int, int]]:
    from django.db.models import Count

    # Raw: the FTS5 index is a virtual table, which no model maps.
    with connection.cursor() as cur:
        cur.execute(f"SELECT session_name, count(*) FROM {search.FTS_TABLE} GROUP BY session_name")
        indexed = dict(cur.fetchall())
    completed = dict(
        Plan.objects.filter(status=Plan.Status.COMPLETED)
        .order_by()
        .values_list("session_id")
        .annotate(n=Count("id"))
        .values_list("session_id", "n")
    )
    known = set(Session.objects.filter(name__in=set(indexed) | set(completed)).values_list("name", flat=True))
    return {
        name: (indexed.get(name, 0), completed.get(name, 0))
        for name in sorted(known)
        if indexed.get(name, 0) != completed.get(name, 0)
    }


def _open_plan_ids(names: list[str]) -> dict[str, set[str]]:
    ids: dict[str, set[str]] = {}
    rows = Plan.objects.filter(status__in=OPEN).order_by().values_list("session_id", "id")
    if len(names) == 1:
        rows = rows.filter(session_id=names[0])
    for session, plan_id in rows:
        ids.setdefault(session, set()).add(plan_id)
    return ids


def _looks_in_step(name: str, open_ids: set[str]) -> bool:
    """Every open plan has its file (a regular one, in real folders), no other entry is
    there, and no old or odd temp file."""
    found = planfiles.scan(name)
    return (
        not found.problem
        and set(found.files) == open_ids
        and not any(found.files.values())
        and not any(what or age >= planfiles.TEMP_FILE_GRACE_SECONDS for _, age, what in found.temp)
    )


def session_names() -> list[str]:
    """Sessions to check: every folder on disk, and every session with open plans (whose
    folder may be gone altogether)."""
    names: set[str] = set()
    try:
        names.update(n for n in os.listdir(planfiles.sessions_root()) if is_session_name(n))
    except (FileNotFoundError, NotADirectoryError):
        pass
    names.update(Plan.objects.filter(status__in=OPEN).values_list("session_id", flat=True).distinct())
    return sorted(names)


def repair_all(*, apply: bool, session_name: str | None = None, progress: Progress | None = None) -> list[Action]:
    """Repairs every session (or just ``session_name``), then the plan counts and the
    search index."""
    progress = progress or Progress()
    names = [session_name] if session_name is not None else session_names()
    actions: list[Action] = []
    # One query for every session's open plans, then a directory listing each: a session
    # whose files already match is passed over without its write lock, so the start-up
    # repair of a server with thousands of sessions costs a listing per session, not a
    # locked read of each.
    expected = _open_plan_ids(names)
    progress.stage("Checking what imports left")
    actions.extend(imports_repair(apply=apply, session_name=session_name))
    # A session an import is writing now is that import's to finish.
    importing = export_import.running_imports()
    progress.stage("Checking plan files", len(names))
    for name in names:
        progress.advance()
        if name in importing or _looks_in_step(name, expected.get(name, set())):
            continue
        actions.extend(session_repair(session_name=name, apply=apply))
    progress.stage("Checking claims")
    actions.extend(claims_repair(apply=apply, session_name=session_name))
    progress.stage("Checking plan counts")
    actions.extend(counts_repair(apply=apply, session_name=session_name))
    if session_name is None:
        progress.stage("Checking the search index")
        actions.extend(index_repair(apply=apply, progress=progress))
    progress.finish()
    return actions
