"""Every state change an agent, a reviewer or an integration can ask for. The MCP tools,
the admin and the REST API call these and write nothing themselves. The other writers are
maintenance: the import (export_import.py) and the repair (repair.py); every writer runs
in a write transaction from transactions.py.

Each service runs in one write transaction: on SQLite it begins IMMEDIATE (the write lock
is taken before the first read), on PostgreSQL the session row is locked first. So every
read-modify-write of a queue or a plan's text is serialized against every other writer.

Plan files follow the database: a file is written inside the transaction (so a failed
write rolls the database back) and deleted only after the commit (so a crash leaves a
file the repair can judge, never a plan without its text). A plan file is read before the
transaction begins, so that no read of a slow file ever holds the write lock; inside it,
the file is only checked for a change since (and read again if it changed).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from datetime import timedelta
from datetime import timezone as dt_timezone

from django.db import DatabaseError, IntegrityError

from sessions_app import clock, errors, excerpts, inputs, planfiles, queries, revisions, statements, transactions
from sessions_app.errors import DatabaseFailed, FileSystemFailed, LeaseLost, NineplanError, NoActivePlan
from sessions_app.errors import PlanAlreadyActive, PlanNotFound, QueueBlocked, QueueEmpty, SessionNotFound
from sessions_app.errors import ValidationFailed
from sessions_app.identifiers import is_plan_id, is_session_name, new_plan_id, new_session_name
from sessions_app.models import DEFAULT_WORKER, LEASE_SECONDS, MAX_ATTEMPTS, MAX_LEASE_SECONDS, SECTIONS
from sessions_app.models import Event, Plan, PlanDependency, ReviewPolicy, Revision, Session

ACTOR_CHARS = Event._meta.get_field("actor").max_length


log = logging.getLogger("nineplan.services")

ID_ATTEMPTS = 20


@dataclass(frozen=True)
class Written:
    """What a write did to a plan: the plan as stored; its place in the queue (1 = pulled
    next) when the write left it queued, as the write's own transaction saw it (counting
    afterwards could also count plans another writer queued meanwhile); and, when its plan
    file was not taken in, why (``file_notice``, for the caller to pass on)."""

    plan: Plan
    place: int | None = None
    file_notice: str = ""


@dataclass(frozen=True)
class _Absorbed:
    """What reading the plan file back came to: a notice when it was not taken in, and
    whether the file is to be moved aside (not deleted) once the plan leaves the queue."""

    notice: str = ""
    set_aside: bool = False


_TAKEN_IN = _Absorbed()


@dataclass(frozen=True)
class PlanInput:
    context: str
    goal: str
    approach: str
    success_criteria: str
    inputs: str = ""
    outputs: str = ""


# --- plumbing ---------------------------------------------------------------------------


def _lock_session(name: object) -> Session:
    """The session row, with its plan counts as they are inside this write transaction."""
    name = inputs.session_name(name)
    session = statements.session_for_write(name)
    if session is None:
        raise SessionNotFound.named(name)
    return session


def _event(session_name: str, kind: str, actor: str, plan: Plan | str | None = None, **detail) -> None:
    plan_id = plan.id if isinstance(plan, Plan) else plan
    statements.insert_event(session_name, kind, actor, plan_id, detail, clock.now())


def _next_position(session: Session, position: str) -> int:
    # One end of the (session, status, sort_key) index, read directly. MIN and MAX
    # in one aggregate make SQLite scan the whole queue instead, a cost that grows with
    # the queue (docs/benchmarks.md).
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
            reason=errors.QUEUE_FULL,
        )


def _write_file(undo: list, plan: Plan, previous: planfiles.FileRead | None = None) -> None:
    """Write the plan's file, with an undo step that puts back what was there before
    (``previous``: the file as read in this call; None: there was none)."""
    planfiles.write_plan(plan.session_id, plan.id, plan.sections())
    session_name, plan_id = plan.session_id, plan.id
    if previous is None or previous.state == planfiles.MISSING:
        undo.append(lambda: planfiles.delete_plan(session_name, plan_id))
    elif previous.state == planfiles.OK:
        undo.append(lambda: planfiles.write_file(session_name, plan_id, previous.text))
    elif previous.state == planfiles.NOT_UTF8:
        undo.append(lambda: planfiles.write_file(session_name, plan_id, previous.data))


def compose_append(stored: str, fragment: str) -> str:
    """Stored notes without trailing whitespace, a blank line, then the fragment
    without its leading whitespace-only lines. Interior characters are never touched
    (docs/design.md, "Plan files")."""
    head = stored.rstrip()
    # A line ends at "\n" (so "\r\n" too), as in plan files; splitlines() would also
    # break at NEL or U+2028 and drop them from the start of the first real line.
    start = 0
    while (end := fragment.find("\n", start)) != -1 and fragment[start:end].strip() == "":
        start = end + 1
    tail = fragment[start:]
    return tail if head == "" else f"{head}\n\n{tail}"


@dataclass(frozen=True)
class _Ahead:
    plan_id: str
    read: planfiles.FileRead


def _read_ahead(session_name: object, plan_id: object = None, *, worker: str = DEFAULT_WORKER) -> _Ahead | None:
    """The plan file of the plan ``worker`` holds (or of ``plan_id``), read before the write
    transaction: a file that is slow to read then never holds up other writers."""
    if not is_session_name(session_name):
        return None  # the service's own checks report it
    if plan_id is None:
        try:
            plan_id = statements.held_plan_id(session_name, worker)
        except DatabaseError:
            return None  # the transaction meets the same fault and reports it properly
    if not is_plan_id(plan_id):
        return None
    return _Ahead(plan_id, planfiles.read_plan_file(session_name, plan_id))


def _file_now(plan: Plan, ahead: _Ahead | None) -> planfiles.FileRead:
    """The plan's file as it is now, inside the transaction: the read made ahead when the
    file has not changed since (one stat, nothing opened), else a fresh read, which is
    bounded and never blocks either."""
    if ahead is not None and ahead.plan_id == plan.id and ahead.read.stamp is not None:
        if planfiles.file_stamp(plan.session_id, plan.id) == ahead.read.stamp:
            return ahead.read
    if ahead is not None and ahead.plan_id == plan.id and ahead.read.state == planfiles.MISSING:
        if planfiles.file_stamp(plan.session_id, plan.id) is None:
            return ahead.read
    return planfiles.read_plan_file(plan.session_id, plan.id)


KEPT_LAST_GOOD = "The database kept the plan's last good text"


def _oversize(plan: Plan, sections: dict[str, str]) -> str:
    """Why the text taken from the file breaks a limit ("" if it does not): the same limits
    as text given in an argument."""
    from django.conf import settings

    for name, text in sections.items():
        if len(text) > settings.NINEPLAN_MAX_FIELD_CHARS and text != getattr(plan, name):
            title = planfiles.SECTION_TITLES[name]
            return f"its {title} is {len(text)} characters; at most {settings.NINEPLAN_MAX_FIELD_CHARS} are allowed"
    size = sum(len(v) for v in sections.values()) + len(plan.outcome or "")
    if size > settings.NINEPLAN_MAX_PLAN_CHARS:
        return f"the plan's text would be {size} characters; at most {settings.NINEPLAN_MAX_PLAN_CHARS} are allowed"
    return ""


def _absorb_file(plan: Plan, actor: str, read: planfiles.FileRead, *, strict: bool) -> _Absorbed:
    """Keep what the agent wrote in the plan file: the database takes the file's sections.

    Only a regular file of whole UTF-8 text within the size limits is taken in; for
    anything else the database copy stands. ``strict`` (note, defer, complete, requeue):
    a file that is not a regular file, or too large, refuses the call, so the agent's text
    in it is not passed over; otherwise (discard) the call goes on and the returned notice
    says what was found. Bytes that are not UTF-8 are kept aside as written, either way.
    A missing file leaves the database copy as it is. A section whose heading was removed
    keeps its database text (its lines went to the section above, so nothing is lost);
    text above the first heading joins the Notes.
    """
    path = planfiles.plan_path(plan.session_id, plan.id)
    where = {"session": plan.session_id, "plan": plan.id}
    if read.state == planfiles.MISSING:
        log.warning("plan file missing; keeping the database copy", extra=where)
        return _TAKEN_IN
    if read.state == planfiles.REFUSED:
        log.warning("plan file left alone", extra={**where, "problem": read.problem})
        if strict:
            raise FileSystemFailed(
                f"The plan file {path} {read.problem}: 9plan neither reads nor replaces it. Nothing was changed; "
                "the database keeps the plan's last good text.",
                reason=errors.PLAN_FILE_REFUSED,
            )
        return _Absorbed(f"The plan file {path} {read.problem}: 9plan did not read it and left it alone; {KEPT_LAST_GOOD}.")
    if read.state == planfiles.TOO_LARGE:
        reason = f"it {read.problem}; at most {planfiles.read_cap()} bytes are read (from NINEPLAN_MAX_PLAN_CHARS)"
        return _refuse_file(plan, path, reason, strict)
    if read.state == planfiles.NOT_UTF8:
        # Kept before anything else happens; should the call fail after this, the copy
        # stays too: a second copy of an agent's bytes is harmless, a lost one is not.
        kept = planfiles.preserve_bytes(plan.session_id, plan.id, read.data)
        log.warning("plan file not UTF-8; kept aside", extra={**where, "kept_as": kept})
        _event(plan.session_id, Event.Kind.FILE_EDITS_KEPT, actor, plan, sections=[], kept_as=kept, problem=read.problem)
        return _Absorbed(
            f"The plan file {path} {read.problem}: its bytes are kept as written in "
            f"{planfiles.session_dir(plan.session_id) / kept}, and the database's text was used instead."
        )
    if read.text == planfiles.render(plan.sections()):
        return _TAKEN_IN  # untouched since 9plan wrote it: nothing to parse
    parsed = planfiles.parse(read.text)
    new = plan.sections()
    changed = []
    for name in SECTIONS:
        if name not in parsed.sections:
            continue
        text = parsed.sections[name]
        if name == "goal" and inputs.is_blank(text):
            continue  # a plan always keeps a goal
        if text != new[name].strip("\r\n"):
            new[name] = text
            changed.append(name)
    if parsed.preamble:
        new["notes"] = compose_append(new["notes"], parsed.preamble)
        changed.append("preamble")
    if not changed:
        return _TAKEN_IN
    reason = _oversize(plan, new)
    if reason:
        return _refuse_file(plan, path, reason, strict)
    before = plan.sections()
    for name in SECTIONS:
        setattr(plan, name, new[name])
    revisions.record(plan, kind=Revision.Kind.FILE_EDIT, actor=actor, before=before)
    _event(plan.session_id, Event.Kind.FILE_EDITS_KEPT, actor, plan, sections=changed)
    return _TAKEN_IN


def _refuse_file(plan: Plan, path, reason: str, strict: bool) -> _Absorbed:
    """A plan file over a limit: the call is refused, or (discard) goes on without it and the
    file is moved aside after the commit."""
    log.warning("plan file too large", extra={"session": plan.session_id, "plan": plan.id, "reason": reason})
    if strict:
        raise ValidationFailed(
            f"plan_file: the plan file {path} is too large: {reason}. {KEPT_LAST_GOOD}; nothing was changed.",
            field="plan_file",
            reason=errors.PLAN_FILE_TOO_LARGE,
        )
    return _Absorbed(f"The plan file {path} is too large: {reason}. {KEPT_LAST_GOOD} and did not take the file in.", True)


def _retire_file(plan: Plan, absorbed: _Absorbed) -> Written:
    """After the commit: the file of a plan that left the queue is deleted, or, if its
    text could not be taken in, moved to the session's preserved/ folder."""
    if not absorbed.set_aside:
        planfiles.delete_plan(plan.session_id, plan.id)
        return Written(plan, file_notice=absorbed.notice)
    try:
        kept = planfiles.preserve_file(plan.session_id, plan.id)
    except FileSystemFailed as exc:
        log.warning("plan file not moved aside", extra={"session": plan.session_id, "plan": plan.id, "error": exc.message})
        where = " It stays where it is (it could not be moved aside); the invariant check reports it."
    else:
        where = f" The file is kept as {planfiles.session_dir(plan.session_id) / kept}."
    return Written(plan, file_notice=absorbed.notice + where)


TOUCHED = ("version", "updated_at")


def _touch(plan: Plan) -> None:
    plan.version += 1
    plan.updated_at = clock.now()


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


def _new_plan_id(session_name: str, avoid: list[str] = ()) -> str:
    for _ in range(ID_ATTEMPTS):
        candidate = new_plan_id()
        # A file already named after the id (one a crash left, say) is never overwritten.
        if candidate not in avoid and not statements.plan_id_taken(candidate) and planfiles.file_stamp(session_name, candidate) is None:
            return candidate
        log.warning("plan id collision; drawing another", extra={"plan": candidate})
    raise DatabaseFailed("Could not find a free plan id after several attempts.")


# --- sessions ---------------------------------------------------------------------------


def session_create(
    *,
    task_description: str | None = None,
    lease_seconds: int | None = None,
    max_attempts: int | None = None,
    review: str | None = None,
    actor: str = "agent",
) -> Session:
    """Creates a session with a fresh three-word name and its plans folder. ``lease_seconds``:
    how long a pull's claim lasts without a write by its worker; ``max_attempts``: how many
    claims of a plan may run out before it waits for a person; ``review``: whether its
    completed plans wait for a reviewer (``required``) or only those added with ``review``."""
    if task_description is not None:
        task_description = inputs.text("task_description", task_description, required=False) or None
    lease_seconds = inputs.bounded_int(
        "lease_seconds", lease_seconds, default=LEASE_SECONDS, minimum=1, maximum=MAX_LEASE_SECONDS
    )
    max_attempts = inputs.bounded_int("max_attempts", max_attempts, default=MAX_ATTEMPTS, minimum=1, maximum=100)
    review = inputs.choice("review", review, ReviewPolicy.values, default=ReviewPolicy.NONE)
    with transactions.write():
        for _ in range(ID_ATTEMPTS):
            name = new_session_name()
            if not Session.objects.filter(name=name).exists():
                break
            log.warning("session name collision; drawing another", extra={"session": name})
        else:
            raise DatabaseFailed("Could not find a free session name after several attempts.")
        session = Session.objects.create(
            name=name,
            task_description=task_description,
            lease_seconds=lease_seconds,
            max_attempts=max_attempts,
            review=review,
        )
        planfiles.ensure_session_dir(name)
        detail = {"task_description": task_description, "review": review}
        if (lease_seconds, max_attempts) != (LEASE_SECONDS, MAX_ATTEMPTS):
            detail.update(lease_seconds=lease_seconds, max_attempts=max_attempts)
        _event(name, Event.Kind.SESSION_CREATED, actor, **detail)
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
    review: bool | None = None,
    actor: str = "agent",
) -> Written:
    """Adds one plan at the front (blocking) or back (eventual) of the queue, with its file."""
    fields = dict(
        context=context, goal=goal, approach=approach, success_criteria=success_criteria, inputs=inputs, outputs=outputs
    )
    return plan_enqueue_many(session_name=session_name, plans=[fields], position=position, review=review, actor=actor)[0]


def plan_enqueue_many(
    *,
    session_name: str,
    plans: list[dict] | list[PlanInput],
    position: str | None = None,
    review: bool | None = None,
    actor: str = "agent",
) -> list[Written]:
    """Adds several plans that keep the given order, at the front or the back; all or none.

    A plan (a dict) may name ``depends_on``: ids of plans of the session, or (in a batch)
    the index of an earlier plan of the same call. It is handed out only once every plan
    it depends on is completed. With ``review``, each waits for a reviewer's approval when
    completed."""
    from django.conf import settings

    position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    review = inputs.flag("review", review)
    if not isinstance(plans, list) or not plans:
        raise ValidationFailed("plans must be a non-empty list of plans.", field="plans")
    if len(plans) > settings.NINEPLAN_MAX_BATCH:
        raise ValidationFailed(
            f"plans has {len(plans)} entries; at most {settings.NINEPLAN_MAX_BATCH} are allowed in one call.",
            field="plans",
        )
    prefix = (lambda i: f"plans[{i}].") if len(plans) > 1 else (lambda i: "")
    checked = []
    wanted: list[list[str | int]] = []
    for i, p in enumerate(plans):
        if not isinstance(p, (dict, PlanInput)):
            raise ValidationFailed(f"plans[{i}] must be an object with the plan's sections.", field=f"plans[{i}]")
        checked.append(_plan_input(p, prefix(i)))
        deps = p.get("depends_on") if isinstance(p, dict) else None
        wanted.append(_dependency_input(prefix(i) + "depends_on", deps, i, batch=len(plans) > 1))
    created: list[Plan] = []
    with transactions.write() as undo:
        session = _lock_session(session_name)
        _check_queue_room(session, len(checked))
        _check_dependencies_exist(session, wanted, prefix)
        now = clock.now()
        first_place = _place(session, position)
        ids: list[str] = []
        for _ in checked:
            ids.append(_new_plan_id(session.name, avoid=ids))
        # Front insertion reverses order (A, B, C at the front gives C, B, A), so a batch
        # going to the front is inserted last-first: it then reads A, B, C at the front.
        order = list(range(len(checked)))
        if position == "front":
            order.reverse()
        by_index: dict[int, Plan] = {}
        for i in order:
            plan = Plan(
                id=ids[i],
                session_id=session.name,
                status=Plan.Status.QUEUED,
                sort_key=_next_position(session, position),
                created_at=now,
                updated_at=now,
                review=review,
                **vars(checked[i]),
            )
            statements.insert_plan(plan)
            revisions.record(plan, kind=Revision.Kind.ADD, actor=actor, before=None, at=now)
            by_index[i] = plan
        pairs = []
        for i, deps in enumerate(wanted):
            for dep in deps:
                pairs.append((ids[i], ids[dep] if isinstance(dep, int) else dep))
        statements.insert_dependencies(pairs)
        for i in order:
            plan = by_index[i]
            detail = {"position": position}
            if wanted[i]:
                detail["depends_on"] = [ids[d] if isinstance(d, int) else d for d in wanted[i]]
            _event(session.name, Event.Kind.PLAN_CREATED, actor, plan, **detail)
            _write_file(undo, plan)
        created = [by_index[i] for i in range(len(checked))]
    for plan in created:
        log.info("plan added", extra={"session": session.name, "plan": plan.id, "position": position})
    return [Written(plan, first_place + i) for i, plan in enumerate(created)]


MAX_DEPENDENCIES = 50


def _dependency_input(field: str, value: object, index: int, *, batch: bool) -> list[str | int]:
    """The plans a new plan depends on, as given: plan ids, or (in a batch) the index of an
    earlier plan of the same call. Repeats are dropped."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationFailed(f"{field} must be a list of plan ids.", field=field)
    if len(value) > MAX_DEPENDENCIES:
        raise ValidationFailed(
            f"{field} has {len(value)} entries; at most {MAX_DEPENDENCIES} are allowed.", field=field
        )
    found: list[str | int] = []
    for j, dep in enumerate(value):
        at = f"{field}[{j}]"
        if isinstance(dep, int) and not isinstance(dep, bool):
            if not batch and index == 0:
                raise ValidationFailed(
                    f"{at} is {dep}: a plan index only names an earlier plan of the same 9plan_queue_add_batch call; "
                    "give a plan id here.",
                    field=at,
                )
            if not 0 <= dep < index:
                raise ValidationFailed(
                    f"{at} is {dep}: an index must name an earlier plan of this batch (0 to {index - 1})."
                    if index
                    else f"{at} is {dep}: the first plan of a batch has no earlier plan to depend on.",
                    field=at,
                )
        else:
            inputs.plan_id(dep, field=at)
        if dep not in found:
            found.append(dep)
    return found


def _check_dependencies_exist(session: Session, wanted: list[list[str | int]], prefix) -> None:
    """Every plan id named is a plan of this session that may still complete: a dependency
    exists before its dependent, so no cycle can form, and none waits for a discarded plan."""
    named = {dep for deps in wanted for dep in deps if isinstance(dep, str)}
    if not named:
        return
    status = dict(Plan.objects.filter(session_id=session.name, id__in=named).values_list("id", "status"))
    for i, deps in enumerate(wanted):
        for j, dep in enumerate(deps):
            if not isinstance(dep, str):
                continue
            at = f"{prefix(i)}depends_on[{j}]"
            if dep not in status:
                raise ValidationFailed(
                    f"{at}: no plan {dep} in session '{session.name}'; a plan can only depend on plans already in "
                    "its session (or, in a batch, on an earlier plan of the batch by its index).",
                    field=at,
                )
            if status[dep] == Plan.Status.DISCARDED:
                raise ValidationFailed(
                    f"{at}: plan {dep} was discarded and will never complete; a plan cannot wait for it.", field=at
                )


# --- the worker's plan -------------------------------------------------------------------


def worker_actor(actor: str, worker: str) -> str:
    """Who an event names: the caller, and the worker when it named one (a single agent's
    events read as they always did)."""
    if worker == DEFAULT_WORKER:
        return actor
    return f"{actor[: ACTOR_CHARS - len(worker) - 1]}/{worker}"


def _lease_until(session_or_seconds: Session | int, now) -> object:
    seconds = session_or_seconds if isinstance(session_or_seconds, int) else session_or_seconds.lease_seconds
    return now + timedelta(seconds=seconds)


def _stamp(at) -> str:
    return at.astimezone(dt_timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass
class _Hold:
    """The plan a worker's write acts on and its session's lease; or, when the worker's
    claim was reclaimed, the LEASE_LOST to raise once its late text is kept."""

    plan: Plan | None
    lease_seconds: int = 0
    lost: LeaseLost | None = None


def _hold(session_name: str, worker: str, actor: str, op: str, text: str | None = None, **late) -> _Hold:
    """The plan ``worker`` holds, locked for this write (and so fenced against a reclaim);
    else LEASE_LOST if its claim was reclaimed (its text kept aside), else NO_ACTIVE_PLAN."""
    found = statements.held_plan(session_name, worker)
    if found is not None:
        plan, lease = found
        return _Hold(plan, lease)
    if statements.session_for_write(session_name, lock=False) is None:
        raise SessionNotFound.named(session_name)
    lost = statements.lost_claim(session_name, worker)
    if lost is None:
        # An agent that finds its plan gone is told who took it and why, so its work is
        # not silently thrown away (read only on this error path).
        fate = queries.fate_of_last_pulled(session_name, actor)
        told = f" {fate.describe()}" if fate is not None else ""
        whose = "" if worker == DEFAULT_WORKER else f" held by worker '{worker}'"
        raise NoActivePlan(f"Session '{session_name}' has no active plan{whose}.{told}")
    plan_id, lost_at = lost
    if text is not None:
        _event(session_name, Event.Kind.LATE_WRITE_KEPT, actor, plan_id, worker=worker, op=op, text=text, **late)
    now_held = statements.held_by(plan_id)
    where = f" it is now held by worker '{now_held}'" if now_held else " it went back to the queue"
    kept = (
        " Your text was not applied: it is kept with the plan, shown to its next holder and to reviewers."
        if text is not None
        else ""
    )
    return _Hold(
        None,
        lost=LeaseLost(
            f"Worker '{worker}' no longer holds plan {plan_id}: its claim was reclaimed at {_stamp(lost_at)} "
            f"(the lease ran out without a write);{where}. Nothing of the plan was changed.{kept}",
            field="worker",
        ),
    )


@dataclass(frozen=True)
class _HeldWrite:
    """A write to the plan a worker holds, inside the write transaction (``undo`` is its
    list of undo steps); ``ahead`` is the plan file as read before the transaction."""

    session_name: str
    worker: str
    actor: str
    plan: Plan
    lease_seconds: int
    undo: transactions.Undo
    ahead: _Ahead | None

    def take_in_file(self) -> tuple[planfiles.FileRead, _Absorbed]:
        """The plan file as it is now, and what taking its text in came to; a file that
        cannot be taken in refuses the write (``_absorb_file``, strict)."""
        read = _file_now(self.plan, self.ahead)
        return read, _absorb_file(self.plan, self.actor, read, strict=True)


@contextmanager
def _worker_write(
    session_name: str, worker: str | None, actor: str, op: str, text: str | None = None, **late
) -> Iterator[_HeldWrite]:
    """The opening every write to a worker's plan shares (note, defer, complete, discard):
    the worker and the session checked, the plan file read ahead, and the worker's plan held
    in the write transaction the body runs in. When the worker's claim was reclaimed the
    body never runs: its ``text`` is kept as a late write, that commits, and LEASE_LOST is
    raised."""
    worker = inputs.worker(worker)
    name = inputs.session_name(session_name)
    actor = worker_actor(actor, worker)
    ahead = _read_ahead(name, worker=worker)
    with transactions.write() as undo:
        held = _hold(name, worker, actor, op, text, **late)
        if held.plan is not None:
            yield _HeldWrite(name, worker, actor, held.plan, held.lease_seconds, undo, ahead)
            return
    raise held.lost


def _renew(plan: Plan, lease_seconds: int, now) -> None:
    plan.lease_expires_at = _lease_until(lease_seconds, now)


LEASE = ("lease_expires_at",)


def plan_pull(*, session_name: str, worker: str | None = None, actor: str = "agent") -> Plan:
    """Claims the first ready plan in queue order for ``worker`` (one plan per worker);
    exactly one caller wins each plan when several race. Expired claims of the session are
    reclaimed first, and stay reclaimed even when nothing can be handed out."""
    worker = inputs.worker(worker)
    actor = worker_actor(actor, worker)
    refusal: NineplanError | None = None
    name = inputs.session_name(session_name)
    with transactions.write() as undo:
        now = clock.now()
        # Whether a claim ran out is read before the session row is locked: on PostgreSQL
        # every claim of the session waits for that row, from the lock to the commit, and
        # a claim rarely runs out (one that runs out after this read is reclaimed by the
        # next pull). The worker's own plan is read under the lock: read before it, a plan
        # the worker claimed in another process meanwhile would be missed, and the claim
        # below would wait on that process's completion while it waits for the session.
        expiring = statements.has_expired_claims(name, now)
        session = _lock_session(name)
        if expiring:
            _reclaim_expired(session, now, undo)
        held, lost_a_claim = statements.worker_before_claim(session.name, worker)
        plan = None if held else statements.first_ready(session.name)
        if held:
            whose = "" if worker == DEFAULT_WORKER else f" by worker '{worker}'"
            refusal = PlanAlreadyActive(
                f"Plan {held} is already active{whose} in session '{session.name}'; a worker works one plan at a time."
            )
        elif plan is None:
            refusal = _nothing_ready(session.name)
        else:
            # Compare-and-set: the claim holds only if the plan is still queued; the unique
            # "one active plan per worker" constraint is the last line.
            plan.status, plan.sort_key = Plan.Status.ACTIVE, None
            plan.worker, plan.claimed_at, plan.updated_at = worker, now, now
            _renew(plan, session.lease_seconds, now)
            try:
                claimed = statements.update_plan(
                    plan,
                    ("status", "sort_key", "worker", "claimed_at", "lease_expires_at", "updated_at"),
                    only_if_status=Plan.Status.QUEUED,
                )
            except IntegrityError:
                raise PlanAlreadyActive(f"Worker '{worker}' already holds a plan in session '{session.name}'.") from None
            if claimed != 1:
                raise PlanAlreadyActive(f"Plan {plan.id} was claimed by another caller.")
            if lost_a_claim:
                statements.forget_lost_claim(session.name, worker)
            detail = {"attempt": plan.attempts + 1} if plan.attempts else {}
            _event(session.name, Event.Kind.PLAN_PULLED, actor, plan, **detail)
            # Restored inside the transaction: if the file cannot be written the pull is
            # undone, rather than reporting an error for a plan that is now active anyway.
            # Only checked, never read: a link or FIFO in the file's place is left alone, and the
            # answer's text then comes from the database.
            if planfiles.probe(session.name, plan.id).state == planfiles.MISSING:
                _write_file(undo, plan, previous=None)
    if refusal is not None:
        raise refusal
    log.info("plan pulled", extra={"session": session.name, "plan": plan.id, "worker": worker})
    return plan


BLOCKED_SHOWN = 5


def _awaiting_review(session_name: str) -> QueueBlocked | None:
    """The refusal when nothing is queued or active but plans wait for a reviewer (in
    review) or for a person (held after their last rejection): the task is not done."""
    parts = []
    for status, what in ((Plan.Status.IN_REVIEW, "await review"), (Plan.Status.HELD, "are held for a person")):
        rows, total = queries.plans_in(session_name, status, limit=BLOCKED_SHOWN)
        if total:
            more = f" and {total - len(rows)} more" if total > len(rows) else ""
            parts.append(f"{total} plan(s) {what} ({', '.join(p.id for p in rows)}{more})")
    if not parts:
        return None
    return QueueBlocked(
        "No plan is queued or active, but the task is not done: " + " and ".join(parts) + ". An approval "
        "completes a plan; a rejection puts it back at the front of the queue with the reviewer's notes.",
        reason=errors.AWAITING_REVIEW,
    )


def _nothing_ready(session_name: str) -> NineplanError:
    """Why a pull found nothing to hand out: the task is done, nothing was added yet, or
    plans wait (for other plans, for the workers holding those, or for a person)."""
    counts = Session.objects.filter(name=session_name).values("count_queued", "count_completed", "count_discarded")[0]
    active = list(
        Plan.objects.filter(session_id=session_name, status=Plan.Status.ACTIVE)
        .order_by("claimed_at", "id")
        .values_list("id", "worker", "lease_expires_at")
    )
    if not counts["count_queued"] and not active:
        if reviewed := _awaiting_review(session_name):
            return reviewed
        if counts["count_completed"]:
            return QueueEmpty("Task complete! 🎉 The queue is empty.")
        if not counts["count_discarded"]:
            return QueueEmpty(
                f"The queue is empty: no plan was added to session '{session_name}' yet.", reason=errors.NOTHING_ADDED
            )
        return QueueEmpty(
            f"The queue is empty and no plan of session '{session_name}' was completed "
            f"({counts['count_discarded']} discarded).",
            reason=errors.NOTHING_COMPLETED,
        )
    held = "; ".join(f"{pid} (worker '{w}', lease until {_stamp(until)})" for pid, w, until in active[:BLOCKED_SHOWN])
    if not counts["count_queued"]:
        return QueueBlocked(
            f"No plan is queued, but {len(active)} plan(s) are still active: {held}. Their workers may add or "
            "defer plans.",
            reason=errors.OTHERS_ACTIVE,
        )
    waits = queries.blocked_plans(session_name, limit=BLOCKED_SHOWN)
    described = "; ".join(w.describe() for w in waits)
    more = counts["count_queued"] - len(waits)
    message = f"{counts['count_queued']} plan(s) are queued but none is ready: {described}"
    message += f"; and {more} more." if more > 0 else "."
    everyone_waits_for_person = all(w.waiting_for_person for w in waits) and more <= 0
    return QueueBlocked(message, reason=errors.WAITING_FOR_PERSON if everyone_waits_for_person else None)


def plan_renew(*, session_name: str, worker: str | None = None, actor: str = "agent") -> Plan:
    """Renews the lease of the plan ``worker`` holds, changing nothing else: for a worker
    busy for longer than the lease without writing."""
    worker = inputs.worker(worker)
    name = inputs.session_name(session_name)
    with transactions.write():
        held = _hold(name, worker, worker_actor(actor, worker), "renew")
        if held.plan is not None:
            _renew(held.plan, held.lease_seconds, clock.now())
            statements.renew(held.plan.id, held.plan.lease_expires_at)
    if held.lost is not None:
        raise held.lost
    return held.plan


def plan_defer(
    *,
    session_name: str,
    reason: str,
    position: str | None = None,
    worker: str | None = None,
    actor: str = "agent",
) -> Written:
    """Returns the worker's plan to the queue with the timestamped reason in its Notes."""
    reason = inputs.text("reason", reason, required=True)
    position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    with _worker_write(session_name, worker, actor, "defer", reason, position=position) as held:
        plan, actor = held.plan, held.actor
        # The plan row first, then the session row: a writer holding the session row never
        # waits for a plan row, so the two cannot wait on each other.
        session = _lock_session(held.session_name)
        previous, absorbed = held.take_in_file()
        # NINEPLAN_MAX_QUEUE_LENGTH is not checked here: the plan was counted against it
        # when it was added, and refusing would leave the agent unable to set it aside.
        # The queue can so exceed the limit by at most the session's active plans.
        now = clock.now()
        before = plan.sections()
        plan.notes = compose_append(plan.notes, f"Deferred {_stamp(now)}: {reason}")
        inputs.plan_size(plan.sections(), field="reason")
        _back_to_queue(plan)
        plan.sort_key = _next_position(session, position)
        place = _place(session, position)
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, *RETURNED, *TOUCHED))
        revisions.record(plan, kind=Revision.Kind.DEFER, actor=actor, before=before)
        _event(session.name, Event.Kind.PLAN_DEFERRED, actor, plan, reason=reason, position=position)
        _write_file(held.undo, plan, previous)
    log.info("plan deferred", extra={"session": session.name, "plan": plan.id, "position": position})
    return Written(plan, place, absorbed.notice)


# What changes when a plan goes back to the queue: its claim ends.
RETURNED = ("status", "sort_key", "worker", "claimed_at", "lease_expires_at")


def _back_to_queue(plan: Plan) -> None:
    plan.status = Plan.Status.QUEUED
    plan.worker = plan.claimed_at = plan.lease_expires_at = None


def plan_complete(*, session_name: str, outcome: str, worker: str | None = None, actor: str = "agent") -> Written:
    """Completes the worker's plan: keeps the file's edits, stores the outcome, indexes it
    for search, then deletes the file. Plans that depend on it may then be pulled. A plan
    that needs review goes to ``in_review`` instead (the worker's claim ends all the same);
    it is indexed, and its dependents freed, once approved (sessions_app/review.py)."""
    outcome = inputs.text("outcome", outcome, required=True)
    with _worker_write(session_name, worker, actor, "complete", outcome) as held:
        plan, name = held.plan, held.session_name
        _, absorbed = held.take_in_file()
        plan.outcome = outcome
        inputs.plan_size({**plan.sections(), "outcome": outcome}, field="outcome")
        session = statements.session_for_write(name, lock=False)
        reviewed = plan.review or session.review == ReviewPolicy.REQUIRED
        plan.status = Plan.Status.IN_REVIEW if reviewed else Plan.Status.COMPLETED
        plan.completed_at = None if reviewed else clock.now()
        plan.lease_expires_at = None
        _touch(plan)
        # The event first: on PostgreSQL the status change takes the session row (its
        # counts), and every claim of the session waits for that row until the commit.
        _event(name, Event.Kind.PLAN_SUBMITTED if reviewed else Event.Kind.PLAN_COMPLETED, held.actor, plan)
        statements.update_plan(plan, (*SECTIONS, "outcome", "status", "completed_at", *LEASE, *TOUCHED))
    written = _retire_file(plan, absorbed)
    log.info("plan completed", extra={"session": name, "plan": plan.id, "worker": held.worker})
    return written


def plan_discard(*, session_name: str, reason: str, worker: str | None = None, actor: str = "agent") -> Written:
    """Discards the worker's plan (never searchable); keeps the file's edits, deletes the
    file. Plans that depended on it stop waiting for it, with a note saying why."""
    reason = inputs.text("reason", reason, required=True)
    with _worker_write(session_name, worker, actor, "discard", reason) as held:
        absorbed = _discard(held.session_name, held.plan, reason, held.actor, held.ahead, held.undo)
    written = _retire_file(held.plan, absorbed)
    log.info("plan discarded", extra={"session": held.session_name, "plan": held.plan.id, "worker": held.worker})
    return written


def _discard(session_name: str, plan: Plan, reason: str, actor: str, ahead: _Ahead | None, undo) -> _Absorbed:
    # A discard always goes through: a file it cannot take in is left alone or kept aside,
    # and the answer says so.
    absorbed = _absorb_file(plan, actor, _file_now(plan, ahead), strict=False)
    # Dependents first: their rows are locked before the status change below takes the
    # session row (plan rows, then the session row, as every writer does).
    _drop_from_dependents(session_name, plan, reason, actor, undo)
    plan.discard_reason = reason
    plan.status = Plan.Status.DISCARDED
    plan.sort_key = None
    plan.discarded_at = clock.now()
    plan.lease_expires_at = None
    plan.waiting_for_person = False
    _touch(plan)
    statements.update_plan(
        plan,
        (*SECTIONS, "discard_reason", "status", "sort_key", "discarded_at", "waiting_for_person", *LEASE, *TOUCHED),
    )
    _event(session_name, Event.Kind.PLAN_DISCARDED, actor, plan, reason=reason)
    return absorbed


def _drop_from_dependents(session_name: str, plan: Plan, reason: str, actor: str, undo) -> None:
    """A discarded plan will never complete: each plan that depended on it stops waiting for
    it, with a note saying why, so no work waits forever."""
    links = list(
        PlanDependency.objects.filter(depends_on_id=plan.id).order_by("plan_id").values_list("id", "plan_id")
    )
    if not links:
        return
    for dependent_id in sorted({plan_id for _, plan_id in links}):
        dependent = statements.plan_for_write(session_name, dependent_id)
        if dependent is None or not dependent.is_open:
            continue
        previous = planfiles.read_plan_file(session_name, dependent.id)
        _absorb_file(dependent, actor, previous, strict=False)
        note = (
            f"Dependency dropped {_stamp(clock.now())}: plan {plan.id} ({excerpts.one_line(plan.goal, 80)}) was "
            f"discarded ({excerpts.one_line(reason, 200)}); this plan no longer waits for it."
        )
        notes = compose_append(dependent.notes, note)
        before = dependent.sections()
        if len(notes) <= _max_field() and sum(len(v) for v in {**dependent.sections(), "notes": notes}.values()) <= _max_plan():
            dependent.notes = notes
        _touch(dependent)
        statements.update_plan(dependent, (*SECTIONS, *TOUCHED))
        revisions.record(dependent, kind=Revision.Kind.NOTE, actor=actor, before=before)
        _event(session_name, Event.Kind.DEPENDENCY_DROPPED, actor, dependent, depends_on=plan.id, reason=reason)
        _write_file(undo, dependent, previous)
    PlanDependency.objects.filter(id__in=[link_id for link_id, _ in links]).delete()


def _max_field() -> int:
    from django.conf import settings

    return settings.NINEPLAN_MAX_FIELD_CHARS


def _max_plan() -> int:
    from django.conf import settings

    return settings.NINEPLAN_MAX_PLAN_CHARS


def plan_note(
    *, session_name: str, text: str, mode: str | None = None, worker: str | None = None, actor: str = "agent"
) -> Written:
    """Appends to (or replaces) the worker's plan's Notes inside the serialized region, so
    concurrent appends all survive; renews the worker's lease. Not idempotent: a retried
    append appends twice."""
    mode = inputs.choice("mode", mode, inputs.NOTE_MODES, default="append")
    text = inputs.text("text", text, required=True, max_chars=10**9)
    with _worker_write(session_name, worker, actor, "note", text, mode=mode) as held:
        plan, name = held.plan, held.session_name
        previous, absorbed = held.take_in_file()
        notes = compose_append(plan.notes, text) if mode == "append" else text
        # Limits apply to the composed result, and report its size: a small fragment must
        # not slip a plan past its limit.
        inputs.text("notes", notes, required=False)
        inputs.plan_size({**plan.sections(), "notes": notes}, field="notes")
        before = plan.sections()
        plan.notes = notes
        _touch(plan)
        _renew(plan, held.lease_seconds, plan.updated_at)
        statements.update_plan(plan, (*SECTIONS, *LEASE, *TOUCHED))
        revisions.record(plan, kind=Revision.Kind.NOTE, actor=held.actor, before=before)
        _event(name, Event.Kind.PLAN_NOTE, held.actor, plan, mode=mode, chars=len(text))
        _write_file(held.undo, plan, previous)
    log.info("plan note written", extra={"session": name, "plan": plan.id, "mode": mode})
    return Written(plan, file_notice=absorbed.notice)


# --- leases ------------------------------------------------------------------------------

RECLAIM_ACTOR = "lease"


def _reclaim_expired(session: Session, now, undo) -> list[Plan]:
    """Every claim of the session whose lease ran out before ``now`` goes back to the front
    of the queue (inside the caller's write transaction, with the session row held)."""
    expired = statements.expired_claims(session.name, now)
    # The oldest claim ends up first in the queue.
    for plan in reversed(expired):
        _reclaim(session, plan, now, undo, actor=RECLAIM_ACTOR, why="its lease ran out without a write")
    return expired


def _reclaim(session: Session, plan: Plan, now, undo, *, actor: str, why: str, count: bool = True) -> None:
    """The plan leaves its worker: everything the worker wrote stays (its notes, and its
    plan file's edits, taken in now), a note says whose claim ended when and why, and the
    worker's next write gets LEASE_LOST. ``count``: the claim counts as a failed attempt,
    and at the session's max_attempts the plan waits for a person."""
    worker, expired_at = plan.worker, plan.lease_expires_at
    previous = planfiles.read_plan_file(session.name, plan.id)
    _absorb_file(plan, actor, previous, strict=False)
    if count:
        plan.attempts += 1
    waits = count and plan.attempts >= session.max_attempts
    note = (
        f"Reclaimed {_stamp(now)}: the claim of worker '{worker}' (lease until {_stamp(expired_at)}) ended: {why}; "
        f"attempt {plan.attempts} of {session.max_attempts} lost."
        if count
        else f"Reclaimed {_stamp(now)}: the claim of worker '{worker}' ended: {why}."
    )
    if waits:
        note += " It is not handed out again until a person requeues or discards it."
    notes = compose_append(plan.notes, note)
    before = plan.sections()
    if len(notes) <= _max_field() and sum(len(v) for v in {**plan.sections(), "notes": notes}.values()) <= _max_plan():
        plan.notes = notes
    _back_to_queue(plan)
    plan.sort_key = _next_position(session, "front")
    plan.waiting_for_person = waits
    _touch(plan)
    plan.updated_at = now
    statements.update_plan(plan, (*SECTIONS, *RETURNED, "attempts", "waiting_for_person", *TOUCHED))
    revisions.record(plan, kind=Revision.Kind.NOTE, actor=actor, before=before, at=now)
    statements.record_lost_claim(session.name, worker, plan.id, now)
    _event(
        session.name,
        Event.Kind.PLAN_RECLAIMED,
        actor,
        plan,
        worker=worker,
        lease_expired_at=_stamp(expired_at),
        attempts=plan.attempts,
        waiting_for_person=waits,
    )
    _write_file(undo, plan, previous)
    log.warning(
        "claim reclaimed",
        extra={"session": session.name, "plan": plan.id, "worker": worker, "attempts": plan.attempts},
    )


def reclaim_expired(*, session_name: str | None = None) -> list[Plan]:
    """Reclaims every expired claim (of one session, or of all): what the periodic sweep of
    the long-running servers and ``nineplan_reclaim`` run. Returns the plans reclaimed."""
    now = clock.now()
    names = [inputs.session_name(session_name)] if session_name is not None else statements.sessions_with_expired_claims(now)
    reclaimed: list[Plan] = []
    for name in names:
        with transactions.write() as undo:
            session = _lock_session(name)
            reclaimed += _reclaim_expired(session, now, undo)
    return reclaimed


# --- staff interventions (admin) ---------------------------------------------------------


def _plan_of(session_name: object, plan_id: object) -> tuple[str, Plan]:
    """The plan ``plan_id`` of the session, locked for this write (on PostgreSQL; the plan
    row before the session row, as every writer takes them)."""
    name = inputs.session_name(session_name)
    plan_id = inputs.plan_id(plan_id)
    plan = statements.plan_for_write(name, plan_id)
    if plan is None:
        if statements.session_for_write(name, lock=False) is None:
            raise SessionNotFound.named(name)
        raise PlanNotFound.in_session(plan_id, name)
    return name, plan


def plan_move(*, session_name: str, plan_id: str, position: str, actor: str) -> Written:
    """Moves a queued plan to the front or back of its queue."""
    position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    with transactions.write():
        name, plan = _plan_of(session_name, plan_id)
        session = _lock_session(name)
        if plan.status != Plan.Status.QUEUED:
            raise ValidationFailed(f"Plan {plan.id} is {plan.status}; only a queued plan can be moved.", field="plan_id")
        new_position = _next_position(session, position)
        Plan.objects.filter(id=plan.id).update(sort_key=new_position, updated_at=clock.now())
        plan.sort_key = new_position
        _event(session.name, Event.Kind.PLAN_MOVED, actor, plan, position=position)
    # The plan was queued already, so at the back it is last of the queue as it was.
    return Written(plan, 1 if position == "front" else session.count_queued)


def plan_requeue(*, session_name: str, plan_id: str, position: str = "front", actor: str) -> Written:
    """Returns an active plan to the queue without a reason from the agent, or hands a plan
    that waits for a person back to the workers with its attempts counted afresh (staff
    action)."""
    position = inputs.choice("position", position, inputs.POSITIONS, default="front")
    ahead = _read_ahead(session_name, plan_id)
    with transactions.write() as undo:
        name, plan = _plan_of(session_name, plan_id)
        session = _lock_session(name)
        waiting = plan.status == Plan.Status.QUEUED and plan.waiting_for_person
        if plan.status != Plan.Status.ACTIVE and not waiting:
            raise ValidationFailed(
                f"Plan {plan.id} is {plan.status}; only the active plan of a worker, or a queued plan waiting for a person, can be "
                "requeued.",
                field="plan_id",
            )
        previous = _file_now(plan, ahead)
        absorbed = _absorb_file(plan, actor, previous, strict=True)
        if waiting:
            # Out of the queue and back in at the chosen end, as a move does.
            plan.sort_key = None
            plan.waiting_for_person = False
            plan.attempts = 0
        _back_to_queue(plan)
        plan.sort_key = _next_position(session, position)
        place = _place(session, position) if not waiting else (1 if position == "front" else session.count_queued)
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, *RETURNED, "attempts", "waiting_for_person", *TOUCHED))
        detail = {"position": position, **({"was_waiting_for_person": True} if waiting else {})}
        _event(session.name, Event.Kind.PLAN_REQUEUED, actor, plan, **detail)
        _write_file(undo, plan, previous)
    return Written(plan, place, absorbed.notice)


def plan_reclaim(*, session_name: str, plan_id: str, actor: str) -> Written:
    """Takes an active plan back from its worker now, as an expired lease would (staff
    action, for a worker that is stuck): the plan goes to the front of the queue with
    everything its worker wrote, the attempt counts, and the worker's next write gets
    LEASE_LOST."""
    with transactions.write() as undo:
        name, plan = _plan_of(session_name, plan_id)
        session = _lock_session(name)
        if plan.status != Plan.Status.ACTIVE:
            raise ValidationFailed(f"Plan {plan.id} is {plan.status}; only an active plan can be reclaimed.", field="plan_id")
        _reclaim(session, plan, clock.now(), undo, actor=actor, why=f"taken back by {actor}")
    return Written(plan, 1)


def plan_discard_any(*, session_name: str, plan_id: str, reason: str, actor: str) -> Written:
    """Discards a queued, active or held plan chosen by id (staff action)."""
    reason = inputs.text("reason", reason, required=True)
    ahead = _read_ahead(session_name, plan_id)
    with transactions.write() as undo:
        name, plan = _plan_of(session_name, plan_id)
        if not plan.is_open and plan.status != Plan.Status.HELD:
            raise ValidationFailed(f"Plan {plan.id} is already {plan.status}.", field="plan_id")
        absorbed = _discard(name, plan, reason, actor, ahead, undo)
    return _retire_file(plan, absorbed)
