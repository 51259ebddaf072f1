"""Every state change of 9plan. The MCP tools, the admin and the REST API call these and
nothing else writes.

Each service runs in one write transaction: on SQLite it begins IMMEDIATE (the write lock
is taken before the first read), on PostgreSQL the session row is locked first. So every
read-modify-write of a queue or a plan's text is serialized against every other writer.

Plan files follow the database: a file is written inside the transaction (so a failed
write rolls the database back) and deleted only after the commit (so a crash leaves a
file the repair can judge, never a plan without its text).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from sessions_app import planfiles, statements, inputs
from sessions_app.errors import (
    DatabaseFailed,
    NineplanError,
    NoActivePlan,
    PlanAlreadyActive,
    PlanNotFound,
    QueueEmpty,
    SessionNotFound,
    ValidationFailed,
)
from sessions_app.identifiers import new_plan_id, new_session_name
from sessions_app.models import SECTIONS, Event, Plan, Session

try:
    import fcntl
except ImportError:  # Windows: writers wait in SQLite's own retry loop
    fcntl = None

log = logging.getLogger("nineplan.services")

ID_ATTEMPTS = 20


@dataclass(frozen=True)
class PlanInput:
    context: str
    goal: str
    approach: str
    success_criteria: str
    inputs: str = ""
    outputs: str = ""


# --- plumbing ---------------------------------------------------------------------------


@contextmanager
def _write() -> Iterator[list[Callable[[], None]]]:
    """One write transaction; yields a list of undo steps for files written inside it."""
    undo: list[Callable[[], None]] = []
    try:
        with _writer_turn(), transaction.atomic():
            yield undo
    except NineplanError:
        _run(undo)
        raise
    except DatabaseError as exc:
        _run(undo)
        log.error("database error", extra={"error": str(exc)})
        raise _database_failed(exc) from exc
    except BaseException:
        _run(undo)
        raise


_turns = threading.Lock()
_turn_file: dict[str, tuple[int, int]] = {}  # database path -> (pid, descriptor)


@contextmanager
def _writer_turn() -> Iterator[None]:
    """Writers of one SQLite file take turns, handed over as soon as the last one ends.

    A writer that finds SQLite's write lock taken sleeps and retries (after 1, 2, 5 ...
    up to 100 ms), so under contention the lock sits free while waiters sleep and an
    unlucky one waits seconds (SPEC §11). Waiting on an exclusive flock of a file beside
    the database instead, taken before BEGIN IMMEDIATE, the kernel wakes the next writer
    at once. Measured with 4 processes on 2 cores (bench/, docs/benchmarks.md): p99 fell
    from 130-180 ms to 22 ms and the maximum from 1.1 s to 30 ms at the same throughput;
    the median rose from 2 to 8.5 ms, as waiting is shared out evenly.

    Only an outermost transaction takes a turn: code already in a transaction may hold
    SQLite's lock, and a turn-holder waiting for that lock would then wait on it in turn
    (a deadlock). SQLite's own lock remains the guarantee; turns only order the writers.
    """
    name = str(connection.settings_dict.get("NAME") or "")
    in_memory = name.startswith((":", "file:"))
    if fcntl is None or connection.vendor != "sqlite" or connection.in_atomic_block or in_memory:
        yield
        return
    with _turns:  # threads of one process share the descriptor, so they queue here first
        pid, fd = _turn_file.get(name, (None, None))
        if pid != os.getpid():  # a forked child must not share its parent's open file
            fd = os.open(f"{name}-writers.lock", os.O_RDWR | os.O_CREAT, 0o600)
            _turn_file[name] = (os.getpid(), fd)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


# PostgreSQL's codes for a transaction that lost to a concurrent one (serialization
# failure, deadlock) and for a wait that was cut short (lock timeout, statement timeout).
COLLIDED = {"40001", "40P01"}
WAITED_TOO_LONG = {"55P03", "57014"}


def _database_failed(exc: DatabaseError) -> DatabaseFailed:
    """A clear error for a refused write; the whole transaction was rolled back by then."""
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    state = getattr(exc.__cause__, "sqlstate", None)
    if state in COLLIDED:
        return DatabaseFailed(
            f"The change collided with a concurrent change to the same session and was rolled back ({reason}).",
            suggestion="Retry the call: nothing of it was saved, so retrying is safe.",
        )
    # "database is locked" is SQLite's; PoolTimeout means every pooled connection was busy.
    if state in WAITED_TOO_LONG or "locked" in reason or type(exc.__cause__).__name__ == "PoolTimeout":
        return DatabaseFailed(
            f"The database was busy with other writers for too long and the change was rolled back ({reason}).",
            suggestion="Retry the call in a moment: nothing of it was saved.",
        )
    if isinstance(exc, IntegrityError):
        return DatabaseFailed(
            f"The change would break a rule of the database and was rolled back ({reason}).",
            suggestion="Check the session with 9plan_session_resume or 9plan_admin_validate, then retry if "
            "the change is still needed: nothing of it was saved.",
        )
    return DatabaseFailed(f"The database refused the change and it was rolled back ({reason}).")


def _run(steps: list[Callable[[], None]]) -> None:
    for step in reversed(steps):
        try:
            step()
        except OSError:
            log.warning("undo of a plan file failed", exc_info=True)


def _lock_session(name: object) -> Session:
    """The session row, with its plan counts as they are inside this write transaction."""
    name = inputs.session_name(name)
    session = statements.session_for_write(name)
    if session is None:
        raise SessionNotFound(f"No session named '{name}' exists.")
    return session


def _event(session_name: str, kind: str, actor: str, plan: Plan | None = None, **detail) -> None:
    statements.insert_event(session_name, kind, actor, None if plan is None else plan.id, detail, timezone.now())


def _active_plan(session: Session) -> Plan:
    plan = statements.plan_in(session.name, Plan.Status.ACTIVE)
    if plan is None:
        raise NoActivePlan(f"Session '{session.name}' has no active plan.")
    return plan


def _next_position(session: Session, position: str) -> int:
    # One end of the (session, status, sort_key) index, read directly. MIN and MAX
    # in one aggregate make SQLite scan the whole queue instead: measured 5 ms at 10,000
    # queued plans, against 0.05 ms this way.
    end = statements.end_of_queue(session.name, front=position == "front")
    if end is None:
        return 0
    return end - 1 if position == "front" else end + 1


def _place(session: Session, position: str) -> int:
    """Where a plan put at ``position`` now is in the queue (1 = next), from the queue's
    length as this transaction found it; the plan was not queued before."""
    return 1 if position == "front" else session.count_queued + 1


def _check_queue_room(session: Session, adding: int) -> None:
    from django.conf import settings

    limit = settings.NINEPLAN_MAX_QUEUE_LENGTH
    length = session.count_queued
    if length + adding > limit:
        raise ValidationFailed(
            f"queue: adding {adding} plan(s) would make the queue {length + adding} long; at most {limit} are allowed.",
            field="queue",
            suggestion="Work through the queue (9plan_queue_pull) before adding more; nothing was changed.",
        )


_UNREAD = object()


def _write_file(undo: list, plan: Plan, previous: str | None | object = _UNREAD) -> None:
    """Write the plan's file, with an undo step. ``previous`` is the file's text if the
    caller has just read it (None: there was none), so it is not read a second time."""
    path = planfiles.plan_path(plan.session_id, plan.id)
    if previous is _UNREAD:
        previous = planfiles.read_plan(plan.session_id, plan.id) if path.exists() else None
    planfiles.write_plan(plan.session_id, plan.id, plan.sections())
    if previous is None:
        undo.append(lambda: path.unlink(missing_ok=True))
    else:
        undo.append(lambda: planfiles.write_atomic(path, previous))


def compose_append(stored: str, fragment: str) -> str:
    """SPEC §8: stored notes without trailing whitespace, a blank line, then the fragment
    without its leading whitespace-only lines. Interior characters are never touched."""
    head = stored.rstrip()
    # A line ends at "\n" (so "\r\n" too), as seed 004 defines it; splitlines() would also
    # break at NEL or U+2028 and drop them from the start of the first real line.
    start = 0
    while (end := fragment.find("\n", start)) != -1 and fragment[start:end].strip() == "":
        start = end + 1
    tail = fragment[start:]
    return tail if head == "" else f"{head}\n\n{tail}"


def _absorb_file(plan: Plan, actor: str) -> str | None:
    """Keep what the agent wrote in the plan file: the database takes the file's sections.

    A missing or unreadable file leaves the database copy as it is. A section whose
    heading was removed keeps its database text (its lines went to the section above,
    so nothing is lost either way); text above the first heading joins the Notes.
    Returns the file's text as read (None: no readable file).
    """
    read = planfiles.read_plan(plan.session_id, plan.id)
    if read is None:
        log.warning("plan file missing; keeping the database copy", extra={"session": plan.session_id, "plan": plan.id})
        return None
    if read == planfiles.render(plan.sections()):
        return read  # untouched since 9plan wrote it: nothing to parse
    text = read.replace("\x00", "\ufffd")  # PostgreSQL cannot store NUL
    parsed = planfiles.parse(text)
    changed = []
    for name in SECTIONS:
        if name not in parsed.sections:
            continue
        new = parsed.sections[name]
        if name == "goal" and inputs.is_blank(new):
            continue  # a plan always keeps a goal
        if new != getattr(plan, name).strip("\r\n"):
            setattr(plan, name, new)
            changed.append(name)
    if parsed.preamble:
        plan.notes = compose_append(plan.notes, parsed.preamble)
        changed.append("preamble")
    if changed:
        _event(plan.session_id, Event.Kind.FILE_EDITS_KEPT, actor, plan, sections=changed)
    return read


TOUCHED = ("version", "updated_at")


def _touch(plan: Plan) -> None:
    plan.version += 1
    plan.updated_at = timezone.now()


def _plan_input(fields: PlanInput | dict, prefix: str = "") -> PlanInput:
    get = fields.get if isinstance(fields, dict) else lambda k: getattr(fields, k)
    checked = PlanInput(
        context=inputs.text(prefix + "context", get("context"), required=True),
        goal=inputs.text(prefix + "goal", get("goal"), required=True),
        approach=inputs.text(prefix + "approach", get("approach"), required=True),
        success_criteria=inputs.text(prefix + "success_criteria", get("success_criteria"), required=True),
        inputs=inputs.text(prefix + "inputs", get("inputs"), required=False),
        outputs=inputs.text(prefix + "outputs", get("outputs"), required=False),
    )
    inputs.plan_size(vars(checked), field=(prefix.rstrip(".") or "plan"))
    return checked


def _new_plan_id() -> str:
    for _ in range(ID_ATTEMPTS):
        candidate = new_plan_id()
        if not statements.plan_id_taken(candidate):
            return candidate
        log.warning("plan id collision; drawing another", extra={"plan": candidate})
    raise DatabaseFailed("Could not find a free plan id after several attempts.")


# --- sessions ---------------------------------------------------------------------------


def session_create(*, task_description: str | None = None, actor: str = "agent") -> Session:
    """Creates a session with a fresh three-word name and its plans folder."""
    if task_description is not None:
        task_description = inputs.text("task_description", task_description, required=False) or None
    with _write():
        for _ in range(ID_ATTEMPTS):
            name = new_session_name()
            if not Session.objects.filter(name=name).exists():
                break
            log.warning("session name collision; drawing another", extra={"session": name})
        else:
            raise DatabaseFailed("Could not find a free session name after several attempts.")
        session = Session.objects.create(name=name, task_description=task_description)
        planfiles.ensure_session_dir(name)
        _event(name, Event.Kind.SESSION_CREATED, actor, task_description=task_description)
    log.info("session created", extra={"session": name})
    return session


# --- queue ------------------------------------------------------------------------------


def plan_enqueue(
    *,
    session_name: str,
    context: str,
    goal: str,
    approach: str,
    success_criteria: str,
    inputs: str | None = None,
    outputs: str | None = None,
    position: str | None = None,
    actor: str = "agent",
) -> Plan:
    """Adds one plan at the front (blocking) or back (eventual) of the queue, with its file."""
    fields = dict(
        context=context, goal=goal, approach=approach, success_criteria=success_criteria, inputs=inputs, outputs=outputs
    )
    return plan_enqueue_many(session_name=session_name, plans=[fields], position=position, actor=actor)[0]


def plan_enqueue_many(
    *,
    session_name: str,
    plans: list[dict] | list[PlanInput],
    position: str | None = None,
    actor: str = "agent",
) -> list[Plan]:
    """Adds several plans that keep the given order, at the front or the back; all or none.

    Each returned plan carries ``queue_place``: its place in the queue (1 = next) as the
    write left it, as do the plans that plan_defer, plan_move and plan_requeue return."""
    from django.conf import settings

    position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    if not isinstance(plans, list) or not plans:
        raise ValidationFailed("plans must be a non-empty list of plans.", field="plans")
    if len(plans) > settings.NINEPLAN_MAX_BATCH:
        raise ValidationFailed(
            f"plans has {len(plans)} entries; at most {settings.NINEPLAN_MAX_BATCH} are allowed in one call.",
            field="plans",
        )
    prefix = (lambda i: f"plans[{i}].") if len(plans) > 1 else (lambda i: "")
    checked = []
    for i, p in enumerate(plans):
        if not isinstance(p, (dict, PlanInput)):
            raise ValidationFailed(f"plans[{i}] must be an object with the plan's sections.", field=f"plans[{i}]")
        checked.append(_plan_input(p, prefix(i)))
    created: list[Plan] = []
    with _write() as undo:
        session = _lock_session(session_name)
        _check_queue_room(session, len(checked))
        # Front insertion reverses order (A, B, C at the front gives C, B, A), so a batch
        # going to the front is inserted last-first: it then reads A, B, C at the front.
        order = list(reversed(checked)) if position == "front" else checked
        now = timezone.now()
        first_place = _place(session, position)
        for item in order:
            plan = Plan(
                id=_new_plan_id(),
                session_id=session.name,
                status=Plan.Status.QUEUED,
                sort_key=_next_position(session, position),
                created_at=now,
                updated_at=now,
                **vars(item),
            )
            statements.insert_plan(plan)
            _event(session.name, Event.Kind.PLAN_CREATED, actor, plan, position=position)
            _write_file(undo, plan)
            created.append(plan)
    if position == "front":
        created.reverse()
    for i, plan in enumerate(created):
        plan.queue_place = first_place + i
    for plan in created:
        log.info("plan added", extra={"session": session.name, "plan": plan.id, "position": position})
    return created


def plan_pull(*, session_name: str, actor: str = "agent") -> Plan:
    """Makes the front plan active; exactly one caller wins when several race."""
    with _write() as undo:
        session = _lock_session(session_name)
        active = statements.active_plan_id(session.name)
        if active is not None:
            raise PlanAlreadyActive(
                f"Plan {active} is already active in session '{session.name}'; only one plan is worked at a time."
            )
        plan = statements.plan_in(session.name, Plan.Status.QUEUED, first_in_queue=True)
        if plan is None:
            raise QueueEmpty("Task complete! 🎉 The queue is empty.")
        # Compare-and-set: the claim holds only if the plan is still queued; the unique
        # "one active plan" constraint is the last line if two writers ever got here.
        plan.status, plan.sort_key, plan.updated_at = Plan.Status.ACTIVE, None, timezone.now()
        try:
            claimed = statements.update_plan(
                plan, ("status", "sort_key", "updated_at"), only_if_status=Plan.Status.QUEUED
            )
        except IntegrityError:
            raise PlanAlreadyActive(f"Another plan became active in session '{session.name}'.") from None
        if claimed != 1:
            raise PlanAlreadyActive(f"Plan {plan.id} was claimed by another caller.")
        _event(session.name, Event.Kind.PLAN_PULLED, actor, plan)
        # Restored inside the transaction: if the file cannot be written the pull is
        # undone, rather than reporting an error for a plan that is now active anyway.
        if planfiles.read_plan(session.name, plan.id) is None:
            _write_file(undo, plan, previous=None)
    log.info("plan pulled", extra={"session": session.name, "plan": plan.id})
    return plan


def plan_defer(
    *, session_name: str, reason: str, position: str | None = None, actor: str = "agent"
) -> Plan:
    """Returns the active plan to the queue with the timestamped reason in its Notes."""
    reason = inputs.text("reason", reason, required=True)
    position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    with _write() as undo:
        session = _lock_session(session_name)
        plan = _active_plan(session)
        previous = _absorb_file(plan, actor)
        stamp = timezone.now().strftime("%Y-%m-%d %H:%M:%S UTC")
        plan.notes = compose_append(plan.notes, f"Deferred {stamp}: {reason}")
        inputs.plan_size(plan.sections(), field="reason")
        plan.status = Plan.Status.QUEUED
        plan.sort_key = _next_position(session, position)
        plan.queue_place = _place(session, position)
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, "status", "sort_key", *TOUCHED))
        _event(session.name, Event.Kind.PLAN_DEFERRED, actor, plan, reason=reason, position=position)
        _write_file(undo, plan, previous)
    log.info("plan deferred", extra={"session": session.name, "plan": plan.id, "position": position})
    return plan


def plan_complete(*, session_name: str, outcome: str, actor: str = "agent") -> Plan:
    """Completes the active plan: keeps the file's edits, stores the outcome, indexes it for
    search, then deletes the file."""
    outcome = inputs.text("outcome", outcome, required=True)
    with _write():
        session = _lock_session(session_name)
        plan = _active_plan(session)
        _absorb_file(plan, actor)
        plan.outcome = outcome
        inputs.plan_size({**plan.sections(), "outcome": outcome}, field="outcome")
        plan.status = Plan.Status.COMPLETED
        plan.completed_at = timezone.now()
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, "outcome", "status", "completed_at", *TOUCHED))
        _event(session.name, Event.Kind.PLAN_COMPLETED, actor, plan)
    planfiles.delete_plan(session.name, plan.id)
    log.info("plan completed", extra={"session": session.name, "plan": plan.id})
    return plan


def plan_discard(*, session_name: str, reason: str, actor: str = "agent") -> Plan:
    """Discards the active plan (never searchable); keeps the file's edits, deletes the file."""
    reason = inputs.text("reason", reason, required=True)
    with _write():
        session = _lock_session(session_name)
        plan = _discard(session, _active_plan(session), reason, actor)
    planfiles.delete_plan(session.name, plan.id)
    log.info("plan discarded", extra={"session": session.name, "plan": plan.id})
    return plan


def _discard(session: Session, plan: Plan, reason: str, actor: str) -> Plan:
    _absorb_file(plan, actor)
    plan.discard_reason = reason
    plan.status = Plan.Status.DISCARDED
    plan.sort_key = None
    plan.discarded_at = timezone.now()
    _touch(plan)
    statements.update_plan(plan, (*SECTIONS, "discard_reason", "status", "sort_key", "discarded_at", *TOUCHED))
    _event(session.name, Event.Kind.PLAN_DISCARDED, actor, plan, reason=reason)
    return plan


def plan_note(*, session_name: str, text: str, mode: str | None = None, actor: str = "agent") -> Plan:
    """Appends to (or replaces) the active plan's Notes inside the serialized region, so
    concurrent appends all survive. Not idempotent: a retried append appends twice."""
    mode = inputs.choice("mode", mode, inputs.NOTE_MODES, default="append")
    text = inputs.text("text", text, required=True, max_chars=10**9)
    with _write() as undo:
        session = _lock_session(session_name)
        plan = _active_plan(session)
        previous = _absorb_file(plan, actor)
        notes = compose_append(plan.notes, text) if mode == "append" else text
        # Limits apply to the composed result, and report its size (SPEC §8).
        inputs.text("notes", notes, required=False)
        inputs.plan_size({**plan.sections(), "notes": notes}, field="notes")
        plan.notes = notes
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, *TOUCHED))
        _event(session.name, Event.Kind.PLAN_NOTE, actor, plan, mode=mode, chars=len(text))
        _write_file(undo, plan, previous)
    log.info("plan note written", extra={"session": session.name, "plan": plan.id, "mode": mode})
    return plan


# --- staff interventions (admin) ---------------------------------------------------------


def _lock_plan(session: Session, plan_id: object) -> Plan:
    plan_id = inputs.plan_id(plan_id)
    try:
        return Plan.objects.get(session=session, id=plan_id)
    except Plan.DoesNotExist:
        raise PlanNotFound(f"No plan {plan_id} in session '{session.name}'.") from None


def plan_move(*, session_name: str, plan_id: str, position: str, actor: str) -> Plan:
    """Moves a queued plan to the front or back of its queue."""
    position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    with _write():
        session = _lock_session(session_name)
        plan = _lock_plan(session, plan_id)
        if plan.status != Plan.Status.QUEUED:
            raise ValidationFailed(f"Plan {plan.id} is {plan.status}; only a queued plan can be moved.", field="plan_id")
        new_position = _next_position(session, position)
        Plan.objects.filter(id=plan.id).update(sort_key=new_position, updated_at=timezone.now())
        plan.sort_key = new_position
        plan.queue_place = 1 if position == "front" else session.count_queued
        _event(session.name, Event.Kind.PLAN_MOVED, actor, plan, position=position)
    return plan


def plan_requeue(*, session_name: str, plan_id: str, position: str = "front", actor: str) -> Plan:
    """Returns an active plan to the queue without a reason from the agent (staff action)."""
    position = inputs.choice("position", position, inputs.POSITIONS, default="front")
    with _write() as undo:
        session = _lock_session(session_name)
        plan = _lock_plan(session, plan_id)
        if plan.status != Plan.Status.ACTIVE:
            raise ValidationFailed(f"Plan {plan.id} is {plan.status}; only the active plan can be requeued.", field="plan_id")
        previous = _absorb_file(plan, actor)
        plan.status = Plan.Status.QUEUED
        plan.sort_key = _next_position(session, position)
        plan.queue_place = _place(session, position)
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, "status", "sort_key", *TOUCHED))
        _event(session.name, Event.Kind.PLAN_REQUEUED, actor, plan, position=position)
        _write_file(undo, plan, previous)
    return plan


def plan_discard_any(*, session_name: str, plan_id: str, reason: str, actor: str) -> Plan:
    """Discards a queued or active plan chosen by id (staff action)."""
    reason = inputs.text("reason", reason, required=True)
    with _write():
        session = _lock_session(session_name)
        plan = _lock_plan(session, plan_id)
        if not plan.is_open:
            raise ValidationFailed(f"Plan {plan.id} is already {plan.status}.", field="plan_id")
        plan = _discard(session, plan, reason, actor)
    planfiles.delete_plan(session.name, plan.id)
    return plan
