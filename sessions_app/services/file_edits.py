"""Taking in what an agent wrote in a plan file, and writing the file back.

The database is the source of truth for structure; the file is the agent's working copy
(docs/design.md, "Plan files"). Before a plan leaves the queue or its Notes are written,
the file is read back and the agent's edits are kept. A file is read before the write
transaction begins (``read_ahead``), so that no read of a slow file ever holds the write
lock; inside it, the file is only checked for a change since (``file_now``).

Files follow the database: a file is written inside the transaction with an undo step
(``write_file``), and deleted only after the commit (``retire_file``), so a crash leaves
a file the repair can judge, never a plan without its text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError

from sessions_app import errors, inputs, planfiles, revisions, statements, transactions
from sessions_app.errors import FileSystemFailed, ValidationFailed
from sessions_app.identifiers import is_plan_id, is_session_name
from sessions_app.models import DEFAULT_WORKER, SECTIONS, Event, Plan, Revision
from sessions_app.services.writing import Written, compose_append, record_event, set_sections

log = logging.getLogger("nineplan.services")

KEPT_LAST_GOOD = "The database kept the plan's last good text"


@dataclass(frozen=True)
class Absorbed:
    """What reading the plan file back came to: a notice when it was not taken in, and
    whether the file is to be moved aside (not deleted) once the plan leaves the queue."""

    notice: str = ""
    set_aside: bool = False


TAKEN_IN = Absorbed()


@dataclass(frozen=True)
class FileAhead:
    """A plan file as read before the write transaction."""

    plan_id: str
    read: planfiles.FileRead


def read_ahead(
    session_name: object, plan_id: object = None, *, worker: str = DEFAULT_WORKER, claimant: str = ""
) -> FileAhead | None:
    """The plan file of the plan ``worker`` of ``claimant`` holds (or of ``plan_id``), read
    before the write transaction: a file that is slow to read then never holds up other
    writers. Nothing read here is used unless the transaction lets the caller write."""
    if not is_session_name(session_name):
        return None  # the service's own checks report it
    if plan_id is None:
        try:
            plan_id = statements.claimed_plan_id(session_name, claimant, worker)
        except DatabaseError:
            return None  # the transaction meets the same fault and reports it properly
    if not is_plan_id(plan_id):
        return None
    return FileAhead(plan_id, planfiles.read_plan_file(session_name, plan_id))


def file_now(plan: Plan, ahead: FileAhead | None) -> planfiles.FileRead:
    """The plan's file as it is now, inside the transaction: the read made ahead when the
    file has not changed since (one stat, nothing opened), else a fresh read, which is
    bounded and never blocks either."""
    if ahead is not None and ahead.plan_id == plan.id and ahead.read.identity is not None:
        if planfiles.file_identity(plan.session_id, plan.id) == ahead.read.identity:
            return ahead.read
    if ahead is not None and ahead.plan_id == plan.id and ahead.read.state == planfiles.MISSING:
        if planfiles.file_identity(plan.session_id, plan.id) is None:
            return ahead.read
    return planfiles.read_plan_file(plan.session_id, plan.id)


def _oversize(plan: Plan, sections: dict[str, str]) -> str:
    """Why the text taken from the file breaks a limit ("" if it does not): the same limits
    as text given in an argument."""
    for name, text in sections.items():
        if len(text) > settings.NINEPLAN_MAX_FIELD_CHARS and text != getattr(plan, name):
            title = planfiles.SECTION_TITLES[name]
            return f"its {title} is {len(text)} characters; at most {settings.NINEPLAN_MAX_FIELD_CHARS} are allowed"
    size = sum(len(v) for v in sections.values()) + len(plan.outcome or "")
    if size > settings.NINEPLAN_MAX_PLAN_CHARS:
        return f"the plan's text would be {size} characters; at most {settings.NINEPLAN_MAX_PLAN_CHARS} are allowed"
    return ""


def absorb_file(plan: Plan, actor: str, read: planfiles.FileRead, *, strict: bool) -> Absorbed:
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
        return TAKEN_IN
    if read.state == planfiles.REFUSED:
        log.warning("plan file left alone", extra={**where, "problem": read.problem})
        if strict:
            raise FileSystemFailed(
                f"The plan file {path} {read.problem}: 9plan neither reads nor replaces it. Nothing was changed; "
                "the database keeps the plan's last good text.",
                reason=errors.PLAN_FILE_REFUSED,
            )
        return Absorbed(f"The plan file {path} {read.problem}: 9plan did not read it and left it alone; {KEPT_LAST_GOOD}.")
    if read.state == planfiles.TOO_LARGE:
        reason = f"it {read.problem}; at most {planfiles.read_cap()} bytes are read (from NINEPLAN_MAX_PLAN_CHARS)"
        return _refuse_file(plan, path, reason, strict)
    if read.state == planfiles.NOT_UTF8:
        # Kept before anything else happens; should the call fail after this, the copy
        # stays too: a second copy of an agent's bytes is harmless, a lost one is not.
        kept = planfiles.preserve_bytes(plan.session_id, plan.id, read.data)
        log.warning("plan file not UTF-8; kept aside", extra={**where, "kept_as": kept})
        record_event(plan.session_id, Event.Kind.FILE_EDITS_KEPT, actor, plan, sections=[], kept_as=kept, problem=read.problem)
        return Absorbed(
            f"The plan file {path} {read.problem}: its bytes are kept as written in "
            f"{planfiles.session_dir(plan.session_id) / kept}, and the database's text was used instead."
        )
    if read.text == planfiles.render(plan.sections()):
        return TAKEN_IN  # untouched since 9plan wrote it: nothing to parse
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
        return TAKEN_IN
    reason = _oversize(plan, new)
    if reason:
        return _refuse_file(plan, path, reason, strict)
    before = plan.sections()
    set_sections(plan, new)
    revisions.record(plan, kind=Revision.Kind.FILE_EDIT, actor=actor, before=before)
    record_event(plan.session_id, Event.Kind.FILE_EDITS_KEPT, actor, plan, sections=changed)
    return TAKEN_IN


def _refuse_file(plan: Plan, path, reason: str, strict: bool) -> Absorbed:
    """A plan file over a limit: the call is refused, or (discard) goes on without it and the
    file is moved aside after the commit."""
    log.warning("plan file too large", extra={"session": plan.session_id, "plan": plan.id, "reason": reason})
    if strict:
        raise ValidationFailed(
            f"plan_file: the plan file {path} is too large: {reason}. {KEPT_LAST_GOOD}; nothing was changed.",
            field="plan_file",
            reason=errors.PLAN_FILE_TOO_LARGE,
        )
    return Absorbed(f"The plan file {path} is too large: {reason}. {KEPT_LAST_GOOD} and did not take the file in.", True)


def retire_file(plan: Plan, absorbed: Absorbed) -> Written:
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


def write_file(undo: transactions.Undo, plan: Plan, previous: planfiles.FileRead | None = None) -> None:
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
