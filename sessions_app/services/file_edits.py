"""Taking in what an agent wrote in a plan file, and writing the file back.

The database is the source of truth for structure; the file is the agent's working copy
(docs/design.md, "Plan files"). Before a plan leaves the queue or its Notes are written,
the file is read back and the agent's edits are kept. A file is read before the write
transaction begins (``read_ahead``), so that no read of a slow file ever holds the write
lock; inside it, the file is only checked for a change since (``file_now``).

Files follow the database: a file is written inside the transaction with an undo step
(``write_file``), and deleted only after the commit (``retire_file``), so a crash leaves
a file the repair can judge, never a plan without its text. What another process writes in
the file between its read and its replace or delete is never lost with the old file
(``planfiles.displaced``): lines added at its end join the new file, anything else is kept
aside and reported.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import DatabaseError, transaction

from sessions_app import errors, inputs, planfiles
from sessions_app.errors import FileSystemFailed, NineplanError, ValidationFailed
from sessions_app.identifiers import is_plan_id, is_session_name
from sessions_app.models import DEFAULT_WORKER, SECTIONS, Event, Plan, Revision
from sessions_app.planfiles import text as plan_text
from sessions_app.services.write_kit import Written, compose_append, record_event, set_sections
from sessions_app.store import revisions, transactions

log = logging.getLogger("nineplan.services")

KEPT_LAST_GOOD = "The database kept the plan's last good text"
# Who the event of a plan file kept aside while 9plan wrote or removed it names: 9plan's own
# handling of the file, as "lease" and "repair" name its other jobs.
FILE_ACTOR = "file"


@dataclass(frozen=True)
class TakenIn:
    """What reading the plan file back came to: a notice when it was not taken in, and
    whether the file is to be moved aside (not deleted) once the plan leaves the queue."""

    notice: str = ""
    set_aside: bool = False
    # The file as it was read (None: none, or not one whose text was read): what a delete
    # after the commit compares the file with, to keep anything written in it since.
    found: str | bytes | None = None


TAKEN_IN = TakenIn()


@dataclass(frozen=True)
class FileAhead:
    """A plan file as read before the write transaction (``stem``: the file's name)."""

    stem: str
    read: planfiles.FileRead


# The file of the plan each worker holds, as this process last saw it (its pull, or its last
# write): where read_ahead looks first, so that a worker's note, defer or complete reads its
# file ahead without a statement of its own. Only a guess: file_now reads the file afresh
# inside the transaction when the plan held there has another file (another process
# reclaimed it, say), and a guess that names no plan the worker holds only costs a read.
_HELD_FILES: dict[tuple[str, str, str], str] = {}
_HELD_FILES_MAX = 10_000


def remember_held_file(session_name: str, claimant: str, worker: str, stem: str) -> None:
    if len(_HELD_FILES) >= _HELD_FILES_MAX:
        _HELD_FILES.clear()  # a long-running server's guesses start over; each costs a statement at most
    _HELD_FILES[(session_name, claimant, worker)] = stem


def read_ahead(
    session_name: object, plan_id: object = None, *, worker: str = DEFAULT_WORKER, claimant: str = ""
) -> FileAhead | None:
    """The plan file of the plan ``worker`` of ``claimant`` holds (or of ``plan_id``), read
    before the write transaction: a file that is slow to read then never holds up other
    writers. Nothing read here is used unless the transaction lets the caller write."""
    if not is_session_name(session_name) or not planfiles.enabled():
        return None  # the service's own checks report a bad name
    stem: str | None
    if plan_id is None:
        stem = _HELD_FILES.get((session_name, claimant, worker))
        if stem is None:
            held = Plan.objects.filter(session_id=session_name, status=Plan.Status.ACTIVE, claimant=claimant)
            try:
                found = next(iter(held.filter(worker=worker).order_by().values_list("id", "reclaims")), None)
            except DatabaseError:
                return None  # the transaction meets the same fault and reports it properly
            stem = None if found is None else Plan(id=found[0], reclaims=found[1]).file_stem
    elif is_plan_id(plan_id):
        stem = plan_id
    else:
        return None
    if stem is None:
        return None
    return FileAhead(stem, planfiles.read_plan_file(session_name, stem))


def file_now(plan: Plan, ahead: FileAhead | None) -> planfiles.FileRead:
    """The plan's file as it is now, inside the transaction: the read made ahead when the
    file has not changed since (one stat, nothing opened), else a fresh read, which is
    bounded and never blocks either."""
    stem = plan.file_stem
    seen = None if ahead is None or ahead.stem != stem else ahead.read
    if seen is not None and (seen.identity is not None or seen.state == planfiles.MISSING):
        # The file read ahead still stands when the path still names what that read saw.
        now = planfiles.file_identity(plan.session_id, stem)
        if (seen.identity is not None and now == seen.identity) or (seen.state == planfiles.MISSING and now is None):
            return seen
    return planfiles.read_plan_file(plan.session_id, stem)


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


def take_in_file(plan: Plan, actor: str, read: planfiles.FileRead, *, strict: bool) -> TakenIn:
    """Keep what the agent wrote in the plan file: the database takes the file's sections
    (``_take_in``); the file as read goes with the answer, for ``retire_file``."""
    if strict:
        late_file_edits(plan, actor)
        taken_in = _take_in(plan, actor, read, strict=strict)
    else:
        taken_in = _take_in_or_pass(plan, actor, read)
    return replace(taken_in, found=_found(read)) if read.state in (planfiles.OK, planfiles.NOT_UTF8) else taken_in


def _take_in_or_pass(plan: Plan, actor: str, read: planfiles.FileRead) -> TakenIn:
    """A discard's take-in, which never stops the discard: a file or base that breaks the
    reading in a way nothing above foresaw (a decoder's limit, say) leaves the database's
    text as it was, and the file is kept aside. A savepoint undoes what the take-in wrote."""
    try:
        with transaction.atomic():
            late_file_edits(plan, actor)
            return _take_in(plan, actor, read, strict=False)
    except (ValueError, TypeError, OverflowError, RecursionError, UnicodeError) as exc:
        log.warning("plan file not taken in", extra={"session": plan.session_id, "plan": plan.id, "error": str(exc)})
        path = planfiles.plan_path(plan.session_id, plan.file_stem)
        return TakenIn(f"The plan file {path} could not be read back ({exc}). {KEPT_LAST_GOOD}.", True)


def _found(read: planfiles.FileRead) -> str | bytes | None:
    """What the file held when ``read`` read it (None: nothing that was read)."""
    return read.text if read.state == planfiles.OK else read.data if read.state == planfiles.NOT_UTF8 else None


def _take_in(plan: Plan, actor: str, read: planfiles.FileRead, *, strict: bool) -> TakenIn:
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
    path = planfiles.plan_path(plan.session_id, plan.file_stem)
    where = {"session": plan.session_id, "plan": plan.id}
    if read.state == planfiles.MISSING:
        # No copy here (files off, or the plan was never copied to this machine): the
        # database's text is the plan.
        log.debug("no plan file; the database's text stands", extra=where)
        return TAKEN_IN
    if read.state == planfiles.REFUSED:
        log.warning("plan file left alone", extra={**where, "problem": read.problem})
        if strict:
            raise FileSystemFailed(
                f"The plan file {path} {read.problem}: 9plan neither reads nor replaces it. Nothing was changed; "
                "the database keeps the plan's last good text.",
                reason=errors.PLAN_FILE_REFUSED,
            )
        return TakenIn(
            f"The plan file {path} {read.problem}: 9plan did not read it and left it alone; {KEPT_LAST_GOOD}."
        )
    if read.state == planfiles.TOO_LARGE:
        reason = f"it {read.problem}; at most {planfiles.read_cap()} bytes are read (from NINEPLAN_MAX_PLAN_CHARS)"
        return _refuse_file(plan, path, reason, strict)
    if read.state == planfiles.NOT_UTF8:
        # Kept before anything else happens; should the call fail after this, the copy
        # stays too: a second copy of an agent's bytes is harmless, a lost one is not.
        assert read.data is not None  # a read that found bytes other than UTF-8 carries them
        kept = planfiles.preserve_bytes(plan.session_id, plan.file_stem, read.data)
        log.warning("plan file not UTF-8; kept aside", extra={**where, "kept_as": kept})
        record_event(
            plan.session_id, Event.Kind.FILE_EDITS_KEPT, actor, plan, sections=[], kept_as=kept, problem=read.problem
        )
        return TakenIn(
            f"The plan file {path} {read.problem}: its bytes are kept as written in "
            f"{planfiles.session_dir(plan.session_id) / kept}, and the database's text was used instead."
        )
    if read.text == planfiles.render(plan.sections()):
        return TAKEN_IN  # untouched since 9plan wrote it: nothing to parse
    base_text, file_text = planfiles.file_and_base(plan.session_id, plan.file_stem, read, plan.version)
    if file_text == base_text:
        # A copy nobody edited, written before others changed the plan (on another server,
        # by another worker, a reviewer or a restore), or by a write that never committed:
        # never taken in; the next write rewrites it.
        return TAKEN_IN
    assert file_text is not None  # the file was read (every other state returned above), so it has its text
    parsed = planfiles.parse(file_text)
    base = planfiles.parse(base_text) if base_text is not None else None
    new = plan.sections()
    changed, both = [], []
    for name in SECTIONS:
        if name not in parsed.sections:
            continue
        text, current = parsed.sections[name], new[name].strip("\r\n")
        if base is not None:
            # Applied as a change against the text the file was written from: a section the
            # agent did not touch keeps everything written since by anyone.
            text, clashed = plan_text.merge_section(base.sections.get(name, ""), current, text)
        else:
            # No base to merge against: the database may hold newer text (a server with
            # files off wrote it), which the file must never overwrite.
            text, clashed = plan_text.merge_without_base(current, text)
        if clashed:
            both.append(name)
        if name == "goal" and inputs.is_blank(text):
            continue  # a plan always keeps a goal
        if text != current:
            new[name] = text
            changed.append(name)
    if parsed.preamble and (base is None or parsed.preamble != base.preamble):
        new["notes"] = compose_append(new["notes"], parsed.preamble)
        changed.append("preamble")
    if not changed:
        return TAKEN_IN
    reason = _oversize(plan, new)
    if reason:
        return _refuse_file(plan, path, reason, strict)
    before = plan.sections()
    set_sections(plan, new)
    revisions.save(plan, kind=Revision.Kind.FILE_EDIT, actor=actor, before=before)
    detail = {"both_changed": both} if both else {}
    record_event(plan.session_id, Event.Kind.FILE_EDITS_KEPT, actor, plan, sections=changed, **detail)
    if not both:
        return TAKEN_IN
    titles = ", ".join(planfiles.SECTION_TITLES[name] for name in both)
    return TakenIn(
        f"{titles} changed both in the plan file and elsewhere since the file was written: both texts are kept "
        f"(the file's after the other, below the line '{plan_text.BOTH_KEPT}')."
    )


def _refuse_file(plan: Plan, path, reason: str, strict: bool) -> TakenIn:
    """A plan file over a limit: the call is refused, or (discard) goes on without it and the
    file is moved aside after the commit."""
    log.warning("plan file too large", extra={"session": plan.session_id, "plan": plan.id, "reason": reason})
    if strict:
        raise ValidationFailed(
            f"plan_file: the plan file {path} is too large: {reason}. {KEPT_LAST_GOOD}; nothing was changed.",
            field="plan_file",
            reason=errors.PLAN_FILE_TOO_LARGE,
        )
    return TakenIn(f"The plan file {path} is too large: {reason}. {KEPT_LAST_GOOD} and did not take the file in.", True)


def retire_file(plan: Plan, taken_in: TakenIn) -> Written:
    """After the commit: the file of a plan that left the queue is deleted, or, if its
    text could not be taken in, moved to the session's preserved/ folder. A file that changed
    after it was read is kept aside as well, and the answer says where."""
    if not taken_in.set_aside:
        late = planfiles.delete_plan(plan.session_id, plan.file_stem, found=taken_in.found)
        if not late.kept_as:
            return Written(plan, file_notice=taken_in.notice)
        try:
            with transactions.write():
                _report_kept(plan, late)
        except (NineplanError, DatabaseError) as exc:
            log.warning(
                "kept plan file not recorded", extra={"session": plan.session_id, "plan": plan.id, "error": str(exc)}
            )
        return Written(plan, file_notice=" ".join(filter(None, [taken_in.notice, _kept_notice(plan, late)])))
    try:
        kept = planfiles.preserve_file(plan.session_id, plan.file_stem)
    except FileSystemFailed as exc:
        log.warning(
            "plan file not moved aside", extra={"session": plan.session_id, "plan": plan.id, "error": exc.message}
        )
        where = " It stays where it is (it could not be moved aside); the invariant check reports it."
    else:
        where = f" The file is kept as {planfiles.session_dir(plan.session_id) / kept}."
    return Written(plan, file_notice=taken_in.notice + where)


def _report_kept(plan: Plan, late: planfiles.Late) -> None:
    """A plan file kept aside because it changed while 9plan replaced or removed it, in the
    plan's event log (its page lists it)."""
    record_event(
        plan.session_id,
        Event.Kind.FILE_EDITS_KEPT,
        FILE_ACTOR,
        plan,
        sections=[],
        kept_as=late.kept_as,
        problem=late.problem,
    )


def _kept_notice(plan: Plan, late: planfiles.Late) -> str:
    path = planfiles.plan_path(plan.session_id, plan.file_stem)
    return (
        f"The plan file {path} {late.problem}: it is kept as {planfiles.session_dir(plan.session_id) / late.kept_as}."
    )


def write_file(undo: transactions.Undo, plan: Plan, previous: planfiles.FileRead | None = None) -> None:
    """Write the plan's file and its base, with an undo step that puts back what was there
    before (``previous``: the file as read in this call; None: there was none). What the
    file gained after that read is not lost (``planfiles.write_file``): lines added at its
    end join the new file, to be taken in by the next read, and any other change keeps the
    old file aside, in the plan's event log."""
    if not planfiles.enabled():
        return
    session_name, stem = plan.session_id, plan.file_stem
    rendered = planfiles.render(plan.sections())
    if previous is None or previous.state == planfiles.MISSING:
        late = planfiles.write_plan(session_name, stem, plan.sections())
        if late.kept_as:
            _report_kept(plan, late)
        left = _left(rendered, late)
        undo.append(lambda: planfiles.delete_plan(session_name, stem, found=left))
        return
    base = planfiles.read_base(session_name, stem)
    late = planfiles.write_plan(session_name, stem, plan.sections(), version=plan.version, stored=base, before=previous)
    if late.kept_as:
        _report_kept(plan, late)
    found = _found(previous)
    if found is None:
        undo.append(lambda: planfiles.write_base(session_name, stem, base))
        return
    # Undone, the file is put back as it was found, with whatever was added at its end since.
    if late.moved:
        found = _as_bytes(found) + late.moved
    inode, version, left = previous.inode, plan.version, _left(rendered, late)
    undo.append(lambda: planfiles.put_back(session_name, stem, found, base, inode, version, left))


def _as_bytes(text: str | bytes) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else text


def _left(rendered: str, late: planfiles.Late) -> str | bytes | None:
    """What a write left in the file: the text it wrote, and what it added at its end (None:
    not known, when that was more than is held)."""
    if late.moved is None:
        return None
    return _as_bytes(rendered) + late.moved if late.moved else rendered


def refresh_copy(undo: transactions.Undo, plan: Plan) -> str | None:
    """Before a worker reads the plan it pulled: its file is written when missing, and
    rewritten when it is a stale copy nobody edited. A file with edits stays for the next
    write to take in; anything that is not a plain file is left alone (the answer's text then
    comes from the database). Returns the text the file now holds, None when plan files are
    off or the file cannot be used."""
    if not planfiles.enabled():
        return None
    read = planfiles.read_plan_file(plan.session_id, plan.file_stem)
    if read.state == planfiles.MISSING:
        write_file(undo, plan, previous=None)
        return planfiles.render(plan.sections())
    if not read.usable:
        return None
    rendered = planfiles.render(plan.sections())
    if read.text != rendered and planfiles.untouched(plan.session_id, plan.file_stem, plan.version, read):
        write_file(undo, plan, read)
        return rendered
    return read.text


def late_file_edits(plan: Plan, actor: str) -> int:
    """The files of the plan's earlier claims, edited by their workers after the claims were
    taken back (``fence_file`` marked what it found as seen): each edit is kept as a late
    write naming that claim's worker, on the plan where reviewers see it, and marked as
    seen. Never taken in. Returns how many were kept."""
    if not plan.reclaims or not planfiles.enabled():
        return 0
    holders = list(
        Event.objects.filter(plan_id=plan.id, kind=Event.Kind.PLAN_RECLAIMED)
        .order_by("id")
        .values_list("detail__worker", flat=True)[: plan.reclaims]
    )
    kept = 0
    for claim in range(plan.reclaims):
        stem = Plan(id=plan.id, reclaims=claim).file_stem
        worker = holders[claim] if claim < len(holders) and isinstance(holders[claim], str) else ""
        kept += _keep_late_edits(plan, stem, worker, actor)
    return kept


def fence_file(plan: Plan, worker: str, actor: str) -> None:
    """A claim is taken back: what its worker edited in its plan file is not taken in (it
    would read as the next holder's work) but kept as a late write of that worker, shown to
    the next holder and to reviewers. The file stays where the worker has it, its edits
    marked as seen; the next claim gets a file of its own (``Plan.file_stem``)."""
    _keep_late_edits(plan, plan.file_stem, worker, actor)


def _keep_late_edits(plan: Plan, stem: str, worker: str, actor: str) -> int:
    """What ``worker`` edited in the plan's file ``stem`` beyond its base, as a late write
    (1), the file's text then its base so that it is kept once; 0 when nothing was edited."""
    read = planfiles.read_plan_file(plan.session_id, stem)
    if not read.usable or read.text == planfiles.render(plan.sections()):
        return 0
    base_text, file_text = planfiles.file_and_base(plan.session_id, stem, read, plan.version)
    if file_text == base_text:
        return 0
    assert file_text is not None  # a usable read has its text
    edited = planfiles.parse(file_text)
    was = planfiles.parse(base_text if base_text is not None else planfiles.render(plan.sections()))
    parts = [
        f"# {planfiles.SECTION_TITLES[name]}\n{text}"
        for name, text in edited.sections.items()
        if text != was.sections.get(name, "")
    ]
    if edited.preamble and edited.preamble != was.preamble:
        parts.insert(0, edited.preamble)
    if not parts:
        return 0
    record_event(
        plan.session_id, Event.Kind.LATE_WRITE_KEPT, actor, plan, worker=worker, op="file", text="\n\n".join(parts)
    )
    try:
        planfiles.write_base(plan.session_id, stem, read.text)
    except FileSystemFailed as exc:
        log.warning(
            "fenced file's base not updated", extra={"session": plan.session_id, "plan": plan.id, "error": exc.message}
        )
    return 1
