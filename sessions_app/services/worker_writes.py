"""A worker's writes to the plan it holds: note, defer, complete and discard
(docs/design.md, "Services and queries": workers' writes). Each takes the plan's file
edits in first, and acts only on the plan the named worker holds."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from sessions_app import access, clock, inputs, planfiles
from sessions_app.clock import utc_text
from sessions_app.models import SECTIONS, Event, Plan, PlanDependency, ReviewPolicy, Revision
from sessions_app.reads import excerpts, interventions
from sessions_app.services.claims import claim_of, renew
from sessions_app.services.file_edits import (
    FileAhead,
    TakenIn,
    file_now,
    read_ahead,
    remember_held_file,
    retire_file,
    take_in_file,
    write_file,
)
from sessions_app.services.write_kit import (
    LEASE,
    RETURNED,
    TOUCHED,
    Written,
    append_note_if_room,
    back_to_queue,
    compose_append,
    lock_session,
    only_row,
    plans_for_write,
    record_event,
    touch,
    worker_actor,
)
from sessions_app.store import revisions, transactions

log = logging.getLogger("nineplan.services")


@dataclass(frozen=True)
class WorkerWrite:
    """A write to the plan a worker holds, inside the write transaction (``undo`` is its
    list of undo steps); ``ahead`` is the plan file as read before the transaction."""

    session_name: str
    worker: str
    actor: str
    plan: Plan
    lease_seconds: int
    undo: transactions.Undo
    ahead: FileAhead | None
    # What people did to the plan since this worker last wrote it (interventions.py).
    changed_by_others: tuple[str, ...] = ()

    def written(self, written: Written) -> Written:
        """``written`` with what the worker is to be told."""
        return replace(written, changed_by_others=self.changed_by_others)

    def take_in_file(self) -> tuple[planfiles.FileRead, TakenIn]:
        """The plan file as it is now, and what taking its text in came to; a file that
        cannot be taken in refuses the write (``take_in_file``, strict)."""
        read = file_now(self.plan, self.ahead)
        return read, take_in_file(self.plan, self.actor, read, strict=True)


@contextmanager
def worker_write(
    session_name: str, worker: str | None, actor: str, op: str, text: str | None = None, **late
) -> Iterator[WorkerWrite]:
    """The opening every write to a worker's plan shares (note, defer, complete, discard):
    the worker and the session checked, the plan file read ahead, and the worker's plan held
    in the write transaction the body runs in. When the worker's claim was reclaimed the
    body never runs: its ``text`` is kept as a late write, that commits, and LEASE_LOST is
    raised."""
    worker = inputs.worker(worker)
    name = inputs.session_name(session_name)
    actor = worker_actor(actor, worker)
    claimant = access.current().claimant
    ahead = read_ahead(name, worker=worker, claimant=claimant)
    with transactions.write() as undo:
        claim = claim_of(name, worker, actor, op, text, **late)
        if claim.plan is not None:
            remember_held_file(name, claimant, worker, claim.plan.file_stem)
            changed: tuple[str, ...] = ()
            if claim.others_changed:
                changed = tuple(i.describe() for i in interventions.since_worker_wrote(claim.plan.id, actor))
            yield WorkerWrite(name, worker, actor, claim.plan, claim.lease_seconds, undo, ahead, changed)
            return
    assert claim.lost is not None  # a claim without its plan was lost
    raise claim.lost


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
    with worker_write(session_name, worker, actor, "defer", reason, position=position) as write:
        plan, actor = write.plan, write.actor
        # The plan row first, then the session row: a writer holding the session row never
        # waits for a plan row, so the two cannot wait on each other.
        session = lock_session(write.session_name, access.WORK)
        previous, taken_in = write.take_in_file()
        # NINEPLAN_MAX_QUEUE_LENGTH is not checked here: the plan was counted against it
        # when it was added, and refusing would leave the agent unable to set it aside.
        # The queue can so exceed the limit by at most the session's active plans.
        before = plan.sections()
        plan.notes = compose_append(plan.notes, f"Deferred {utc_text(clock.now())}: {reason}")
        inputs.plan_size(plan.sections(), field="reason")
        place = back_to_queue(plan, session, position)
        touch(plan)
        plan.save(update_fields=[*SECTIONS, *RETURNED, *TOUCHED])
        revisions.save(plan, kind=Revision.Kind.DEFER, actor=actor, before=before)
        record_event(session.name, Event.Kind.PLAN_DEFERRED, actor, plan, reason=reason, position=position)
        write_file(write.undo, plan, previous)
    log.info("plan deferred", extra={"session": session.name, "plan": plan.id, "position": position})
    return write.written(Written(plan, place, taken_in.notice))


def plan_complete(*, session_name: str, outcome: str, worker: str | None = None, actor: str = "agent") -> Written:
    """Completes the worker's plan: keeps the file's edits, stores the outcome, indexes it
    for search, then deletes the file. Plans that depend on it may then be pulled. A plan
    that needs review goes to ``in_review`` instead (the worker's claim ends all the same);
    it is indexed, and its dependents freed, once approved (services/review.py)."""
    outcome = inputs.text("outcome", outcome, required=True)
    with worker_write(session_name, worker, actor, "complete", outcome) as write:
        plan, name = write.plan, write.session_name
        _, taken_in = write.take_in_file()
        plan.outcome = outcome
        inputs.plan_size({**plan.sections(), "outcome": outcome}, field="outcome")
        # Its session was read with the plan (claims.claim_of).
        reviewed = plan.review or plan.session.review == ReviewPolicy.REQUIRED
        plan.status = Plan.Status.IN_REVIEW if reviewed else Plan.Status.COMPLETED
        plan.completed_at = None if reviewed else clock.now()
        plan.lease_expires_at = None
        touch(plan)
        # The event first: on PostgreSQL the status change takes the session row (its
        # counts), and every claim of the session waits for that row until the commit.
        record_event(name, Event.Kind.PLAN_SUBMITTED if reviewed else Event.Kind.PLAN_COMPLETED, write.actor, plan)
        plan.save(update_fields=[*SECTIONS, "outcome", "status", "completed_at", *LEASE, *TOUCHED])
    written = write.written(retire_file(plan, taken_in))
    log.info("plan completed", extra={"session": name, "plan": plan.id, "worker": write.worker})
    return written


def plan_discard(*, session_name: str, reason: str, worker: str | None = None, actor: str = "agent") -> Written:
    """Discards the worker's plan (never searchable); keeps the file's edits, deletes the
    file. Plans that depended on it stop waiting for it, with a note saying why."""
    reason = inputs.text("reason", reason, required=True)
    with worker_write(session_name, worker, actor, "discard", reason) as write:
        taken_in = discard(write.session_name, write.plan, reason, write.actor, write.ahead, write.undo)
    written = write.written(retire_file(write.plan, taken_in))
    log.info("plan discarded", extra={"session": write.session_name, "plan": write.plan.id, "worker": write.worker})
    return written


def discard(session_name: str, plan: Plan, reason: str, actor: str, ahead: FileAhead | None, undo) -> TakenIn:
    """The discard itself, inside the caller's write transaction, for a worker's plan or one
    staff chose. A discard always goes through: a file it cannot take in is left alone or
    kept aside, and the returned notice says so."""
    taken_in = take_in_file(plan, actor, file_now(plan, ahead), strict=False)
    # Dependents first: their rows are locked before the status change below takes the
    # session row (plan rows, then the session row, as every writer does).
    _drop_from_dependents(session_name, plan, reason, actor, undo)
    plan.discard_reason = reason
    plan.status = Plan.Status.DISCARDED
    plan.sort_key = None
    plan.discarded_at = clock.now()
    plan.lease_expires_at = None
    plan.waiting_for_person = False
    touch(plan)
    # The event first, as a completion writes it: the outbox tells from the plan's status
    # before the change whether this discard empties the queue (webhooks.write_messages).
    record_event(session_name, Event.Kind.PLAN_DISCARDED, actor, plan, reason=reason)
    plan.save(
        update_fields=[
            *SECTIONS,
            "discard_reason",
            "status",
            "sort_key",
            "discarded_at",
            "waiting_for_person",
            *LEASE,
            *TOUCHED,
        ]
    )
    return taken_in


def _drop_from_dependents(session_name: str, plan: Plan, reason: str, actor: str, undo) -> None:
    """A discarded plan will never complete: each plan that depended on it stops waiting for
    it, with a note saying why, so no work waits forever."""
    links = list(PlanDependency.objects.filter(depends_on_id=plan.id).order_by("plan_id").values_list("id", "plan_id"))
    if not links:
        return
    for dependent_id in sorted({plan_id for _, plan_id in links}):
        dependent = only_row(plans_for_write().filter(session_id=session_name, id=dependent_id).order_by())
        if dependent is None or not dependent.is_open:
            continue
        previous = planfiles.read_plan_file(session_name, dependent.file_stem)
        take_in_file(dependent, actor, previous, strict=False)
        before = dependent.sections()
        append_note_if_room(
            dependent,
            f"Dependency dropped {utc_text(clock.now())}: plan {plan.id} ({excerpts.one_line(plan.goal, 80)}) was "
            f"discarded ({excerpts.one_line(reason, 200)}); this plan no longer waits for it.",
        )
        touch(dependent)
        dependent.save(update_fields=[*SECTIONS, *TOUCHED])
        revisions.save(dependent, kind=Revision.Kind.NOTE, actor=actor, before=before)
        record_event(session_name, Event.Kind.DEPENDENCY_DROPPED, actor, dependent, depends_on=plan.id, reason=reason)
        write_file(undo, dependent, previous)
    PlanDependency.objects.filter(id__in=[link_id for link_id, _ in links]).delete()


def plan_note(
    *, session_name: str, text: str, mode: str | None = None, worker: str | None = None, actor: str = "agent"
) -> Written:
    """Appends to (or replaces) the worker's plan's Notes inside the serialized region, so
    concurrent appends all survive; renews the worker's lease. Not idempotent: a retried
    append appends twice."""
    mode = inputs.choice("mode", mode, inputs.NOTE_MODES, default="append")
    text = inputs.text("text", text, required=True, max_chars=10**9)
    with worker_write(session_name, worker, actor, "note", text, mode=mode) as write:
        plan, name = write.plan, write.session_name
        previous, taken_in = write.take_in_file()
        notes = compose_append(plan.notes, text) if mode == "append" else text
        # Limits apply to the composed result, and report its size: a small fragment must
        # not slip a plan past its limit.
        inputs.text("notes", notes, required=False)
        inputs.plan_size({**plan.sections(), "notes": notes}, field="notes")
        before = plan.sections()
        plan.notes = notes
        touch(plan)
        renew(plan, write.lease_seconds, plan.updated_at)
        plan.save(update_fields=[*SECTIONS, *LEASE, *TOUCHED])
        revisions.save(plan, kind=Revision.Kind.NOTE, actor=write.actor, before=before)
        record_event(name, Event.Kind.PLAN_NOTE, write.actor, plan, mode=mode, chars=len(text))
        write_file(write.undo, plan, previous)
    log.info("plan note written", extra={"session": name, "plan": plan.id, "mode": mode})
    return write.written(Written(plan, file_notice=taken_in.notice))
