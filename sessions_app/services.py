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
from dataclasses import dataclass

from django.db import IntegrityError
from django.utils import timezone

from sessions_app import errors, inputs, planfiles, queries, revisions, statements, transactions
from sessions_app.errors import (
    DatabaseFailed,
    NineplanError,
    NoActivePlan,
    PlanAlreadyActive,
    PlanNotFound,
    QueueEmpty,
    SessionNotFound,
    FileSystemFailed,
    ValidationFailed,
)
from sessions_app.identifiers import is_plan_id, is_session_name, new_plan_id, new_session_name
from sessions_app.models import SECTIONS, Event, Plan, ReviewPolicy, Revision, Session


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


def _event(session_name: str, kind: str, actor: str, plan: Plan | None = None, **detail) -> None:
    statements.insert_event(session_name, kind, actor, None if plan is None else plan.id, detail, timezone.now())


def _active_plan(session: Session) -> Plan:
    plan = statements.plan_in(session.name, Plan.Status.ACTIVE)
    if plan is None:
        # An agent that finds its plan gone is told who took it and why, so its work is
        # not silently thrown away (read only on this error path).
        fate = queries.fate_of_last_pulled(session.name)
        told = f" {fate.describe()}" if fate is not None else ""
        raise NoActivePlan(f"Session '{session.name}' has no active plan.{told}")
    return plan


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


def _read_ahead(session_name: object, plan_id: object = None) -> _Ahead | None:
    """The plan file of the session's active plan (or of ``plan_id``), read before the write
    transaction: a file that is slow to read then never holds up other writers."""
    if not is_session_name(session_name):
        return None  # the service's own checks report it
    if plan_id is None:
        try:
            plan_id = statements.active_plan_id(session_name)
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


def _new_plan_id(session_name: str) -> str:
    for _ in range(ID_ATTEMPTS):
        candidate = new_plan_id()
        # A file already named after the id (one a crash left, say) is never overwritten.
        if not statements.plan_id_taken(candidate) and planfiles.file_stamp(session_name, candidate) is None:
            return candidate
        log.warning("plan id collision; drawing another", extra={"plan": candidate})
    raise DatabaseFailed("Could not find a free plan id after several attempts.")


# --- sessions ---------------------------------------------------------------------------


def session_create(*, task_description: str | None = None, review: str | None = None, actor: str = "agent") -> Session:
    """Creates a session with a fresh three-word name and its plans folder."""
    review = inputs.choice("review", review, ReviewPolicy.values, default=ReviewPolicy.NONE)
    if task_description is not None:
        task_description = inputs.text("task_description", task_description, required=False) or None
    with transactions.write():
        for _ in range(ID_ATTEMPTS):
            name = new_session_name()
            if not Session.objects.filter(name=name).exists():
                break
            log.warning("session name collision; drawing another", extra={"session": name})
        else:
            raise DatabaseFailed("Could not find a free session name after several attempts.")
        session = Session.objects.create(name=name, task_description=task_description, review=review)
        planfiles.ensure_session_dir(name)
        _event(name, Event.Kind.SESSION_CREATED, actor, task_description=task_description, review=review)
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
    With ``review``, each waits for a reviewer's approval when completed."""
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
    for i, p in enumerate(plans):
        if not isinstance(p, (dict, PlanInput)):
            raise ValidationFailed(f"plans[{i}] must be an object with the plan's sections.", field=f"plans[{i}]")
        checked.append(_plan_input(p, prefix(i)))
    created: list[Plan] = []
    with transactions.write() as undo:
        session = _lock_session(session_name)
        _check_queue_room(session, len(checked))
        # Front insertion reverses order (A, B, C at the front gives C, B, A), so a batch
        # going to the front is inserted last-first: it then reads A, B, C at the front.
        order = list(reversed(checked)) if position == "front" else checked
        now = timezone.now()
        first_place = _place(session, position)
        for item in order:
            plan = Plan(
                id=_new_plan_id(session.name),
                session_id=session.name,
                status=Plan.Status.QUEUED,
                sort_key=_next_position(session, position),
                created_at=now,
                updated_at=now,
                review=review,
                **vars(item),
            )
            statements.insert_plan(plan)
            revisions.record(plan, kind=Revision.Kind.ADD, actor=actor, before=None, at=now)
            _event(session.name, Event.Kind.PLAN_CREATED, actor, plan, position=position)
            _write_file(undo, plan)
            created.append(plan)
    if position == "front":
        created.reverse()
    for plan in created:
        log.info("plan added", extra={"session": session.name, "plan": plan.id, "position": position})
    return [Written(plan, first_place + i) for i, plan in enumerate(created)]


def plan_pull(*, session_name: str, actor: str = "agent") -> Plan:
    """Makes the front plan active; exactly one caller wins when several race."""
    with transactions.write() as undo:
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
        # Only checked, never read: a link or FIFO in the file's place is left alone, and the
        # answer's text then comes from the database.
        if planfiles.probe(session.name, plan.id).state == planfiles.MISSING:
            _write_file(undo, plan, previous=None)
    log.info("plan pulled", extra={"session": session.name, "plan": plan.id})
    return plan


def plan_defer(
    *, session_name: str, reason: str, position: str | None = None, actor: str = "agent"
) -> Written:
    """Returns the active plan to the queue with the timestamped reason in its Notes."""
    reason = inputs.text("reason", reason, required=True)
    position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    ahead = _read_ahead(session_name)
    with transactions.write() as undo:
        session = _lock_session(session_name)
        plan = _active_plan(session)
        previous = _file_now(plan, ahead)
        absorbed = _absorb_file(plan, actor, previous, strict=True)
        # NINEPLAN_MAX_QUEUE_LENGTH is not checked here: the plan was counted against it
        # when it was added, and refusing would leave the agent unable to set it aside.
        # The queue can so exceed the limit by at most the session's one active plan.
        stamp = timezone.now().strftime("%Y-%m-%d %H:%M:%S UTC")
        before = plan.sections()
        plan.notes = compose_append(plan.notes, f"Deferred {stamp}: {reason}")
        inputs.plan_size(plan.sections(), field="reason")
        plan.status = Plan.Status.QUEUED
        plan.sort_key = _next_position(session, position)
        place = _place(session, position)
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, "status", "sort_key", *TOUCHED))
        revisions.record(plan, kind=Revision.Kind.DEFER, actor=actor, before=before)
        _event(session.name, Event.Kind.PLAN_DEFERRED, actor, plan, reason=reason, position=position)
        _write_file(undo, plan, previous)
    log.info("plan deferred", extra={"session": session.name, "plan": plan.id, "position": position})
    return Written(plan, place, absorbed.notice)


def plan_complete(*, session_name: str, outcome: str, actor: str = "agent") -> Written:
    """Completes the active plan: keeps the file's edits, stores the outcome, indexes it for
    search, then deletes the file. A plan that needs review goes to ``in_review`` instead,
    and is indexed once approved (sessions_app/review.py)."""
    outcome = inputs.text("outcome", outcome, required=True)
    ahead = _read_ahead(session_name)
    with transactions.write():
        session = _lock_session(session_name)
        plan = _active_plan(session)
        absorbed = _absorb_file(plan, actor, _file_now(plan, ahead), strict=True)
        plan.outcome = outcome
        inputs.plan_size({**plan.sections(), "outcome": outcome}, field="outcome")
        reviewed = plan.review or session.review == ReviewPolicy.REQUIRED
        plan.status = Plan.Status.IN_REVIEW if reviewed else Plan.Status.COMPLETED
        plan.completed_at = None if reviewed else timezone.now()
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, "outcome", "status", "completed_at", *TOUCHED))
        _event(session.name, Event.Kind.PLAN_SUBMITTED if reviewed else Event.Kind.PLAN_COMPLETED, actor, plan)
    written = _retire_file(plan, absorbed)
    log.info("plan completed", extra={"session": session.name, "plan": plan.id})
    return written


def plan_discard(*, session_name: str, reason: str, actor: str = "agent") -> Written:
    """Discards the active plan (never searchable); keeps the file's edits, deletes the file."""
    reason = inputs.text("reason", reason, required=True)
    ahead = _read_ahead(session_name)
    with transactions.write():
        session = _lock_session(session_name)
        plan = _active_plan(session)
        absorbed = _discard(session, plan, reason, actor, ahead)
    written = _retire_file(plan, absorbed)
    log.info("plan discarded", extra={"session": session.name, "plan": plan.id})
    return written


def _discard(session: Session, plan: Plan, reason: str, actor: str, ahead: _Ahead | None) -> _Absorbed:
    # A discard always goes through: a file it cannot take in is left alone or kept aside,
    # and the answer says so.
    absorbed = _absorb_file(plan, actor, _file_now(plan, ahead), strict=False)
    plan.discard_reason = reason
    plan.status = Plan.Status.DISCARDED
    plan.sort_key = None
    plan.discarded_at = timezone.now()
    _touch(plan)
    statements.update_plan(plan, (*SECTIONS, "discard_reason", "status", "sort_key", "discarded_at", *TOUCHED))
    _event(session.name, Event.Kind.PLAN_DISCARDED, actor, plan, reason=reason)
    return absorbed


def plan_note(*, session_name: str, text: str, mode: str | None = None, actor: str = "agent") -> Written:
    """Appends to (or replaces) the active plan's Notes inside the serialized region, so
    concurrent appends all survive. Not idempotent: a retried append appends twice."""
    mode = inputs.choice("mode", mode, inputs.NOTE_MODES, default="append")
    text = inputs.text("text", text, required=True, max_chars=10**9)
    ahead = _read_ahead(session_name)
    with transactions.write() as undo:
        session = _lock_session(session_name)
        plan = _active_plan(session)
        previous = _file_now(plan, ahead)
        absorbed = _absorb_file(plan, actor, previous, strict=True)
        notes = compose_append(plan.notes, text) if mode == "append" else text
        # Limits apply to the composed result, and report its size: a small fragment must not
        # slip a plan past its limit.
        inputs.text("notes", notes, required=False)
        inputs.plan_size({**plan.sections(), "notes": notes}, field="notes")
        before = plan.sections()
        plan.notes = notes
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, *TOUCHED))
        revisions.record(plan, kind=Revision.Kind.NOTE, actor=actor, before=before)
        _event(session.name, Event.Kind.PLAN_NOTE, actor, plan, mode=mode, chars=len(text))
        _write_file(undo, plan, previous)
    log.info("plan note written", extra={"session": session.name, "plan": plan.id, "mode": mode})
    return Written(plan, file_notice=absorbed.notice)


# --- staff interventions (admin) ---------------------------------------------------------


def _plan_of(session: Session, plan_id: object) -> Plan:
    """The plan ``plan_id`` of the session (read inside the caller's write transaction)."""
    plan_id = inputs.plan_id(plan_id)
    try:
        return Plan.objects.get(session=session, id=plan_id)
    except Plan.DoesNotExist:
        raise PlanNotFound.in_session(plan_id, session.name) from None


def plan_move(*, session_name: str, plan_id: str, position: str, actor: str) -> Written:
    """Moves a queued plan to the front or back of its queue."""
    position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    with transactions.write():
        session = _lock_session(session_name)
        plan = _plan_of(session, plan_id)
        if plan.status != Plan.Status.QUEUED:
            raise ValidationFailed(f"Plan {plan.id} is {plan.status}; only a queued plan can be moved.", field="plan_id")
        new_position = _next_position(session, position)
        Plan.objects.filter(id=plan.id).update(sort_key=new_position, updated_at=timezone.now())
        plan.sort_key = new_position
        _event(session.name, Event.Kind.PLAN_MOVED, actor, plan, position=position)
    # The plan was queued already, so at the back it is last of the queue as it was.
    return Written(plan, 1 if position == "front" else session.count_queued)


def plan_requeue(*, session_name: str, plan_id: str, position: str = "front", actor: str) -> Written:
    """Returns an active plan to the queue without a reason from the agent (staff action)."""
    position = inputs.choice("position", position, inputs.POSITIONS, default="front")
    ahead = _read_ahead(session_name, plan_id)
    with transactions.write() as undo:
        session = _lock_session(session_name)
        plan = _plan_of(session, plan_id)
        if plan.status != Plan.Status.ACTIVE:
            raise ValidationFailed(f"Plan {plan.id} is {plan.status}; only the active plan can be requeued.", field="plan_id")
        previous = _file_now(plan, ahead)
        absorbed = _absorb_file(plan, actor, previous, strict=True)
        plan.status = Plan.Status.QUEUED
        plan.sort_key = _next_position(session, position)
        place = _place(session, position)
        _touch(plan)
        statements.update_plan(plan, (*SECTIONS, "status", "sort_key", *TOUCHED))
        _event(session.name, Event.Kind.PLAN_REQUEUED, actor, plan, position=position)
        _write_file(undo, plan, previous)
    return Written(plan, place, absorbed.notice)


def plan_discard_any(*, session_name: str, plan_id: str, reason: str, actor: str) -> Written:
    """Discards a queued or active plan chosen by id (staff action)."""
    reason = inputs.text("reason", reason, required=True)
    ahead = _read_ahead(session_name, plan_id)
    with transactions.write():
        session = _lock_session(session_name)
        plan = _plan_of(session, plan_id)
        if not plan.is_open and plan.status != Plan.Status.HELD:
            raise ValidationFailed(f"Plan {plan.id} is already {plan.status}.", field="plan_id")
        absorbed = _discard(session, plan, reason, actor, ahead)
    return _retire_file(plan, absorbed)
