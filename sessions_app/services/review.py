"""The review gate and the restore of a revision.

A plan that needs review (added with ``review``, or in a session whose ``review`` is
``required``) goes to ``in_review`` when its agent completes it: its worker is free, and it
is not searchable yet. A reviewer approves it (it becomes completed, and the search
triggers index it; notes given with the approval are appended to its Notes as a revision,
as a rejection's are) or rejects it with notes: the notes are appended to its Notes under a
heading naming the reviewer and the time, and it returns to the front of the queue, or,
after NINEPLAN_MAX_REJECTIONS rejections, is ``held`` until a person requeues or discards
it (docs/design.md, "Model and invariants").
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings

from sessions_app import access, clock, errors, inputs
from sessions_app.clock import utc_text
from sessions_app.errors import ValidationFailed
from sessions_app.models import SECTIONS, Event, Plan, Revision
from sessions_app.services.file_edits import file_now, read_ahead, take_in_file, write_file
from sessions_app.services.write_kit import (
    RETURNED,
    TOUCHED,
    Written,
    back_to_queue,
    compose_append,
    end_claim,
    lock_session,
    plan_for_write,
    record_event,
    set_sections,
    touch,
)
from sessions_app.store import revisions, transactions

log = logging.getLogger("nineplan.services")

DECISIONS = ("approve", "reject")


def plan_review(
    *,
    session_name: str,
    plan_id: str,
    decision: str,
    notes: str | None = None,
    actor: str,
    precondition: Callable[[Plan], None] | None = None,
) -> Written:
    """Approve or reject a plan in review. ``precondition`` runs inside the write
    transaction with the plan as stored (the REST API checks the client's ETag there, so
    no change can slip in between the check and the decision)."""
    if decision is None:
        raise ValidationFailed("decision is required: 'approve' or 'reject'.", field="decision")
    decision = inputs.choice("decision", decision, DECISIONS, default="approve")
    if decision == "reject":
        notes = inputs.text("notes", notes, required=True)
    else:
        notes = inputs.text("notes", notes, required=False) if notes is not None else ""
    name, plan_id = inputs.session_name(session_name), inputs.plan_id(plan_id)
    place = None
    with transactions.write() as undo:
        # The plan row, then the session row, as every writer takes them.
        plan = plan_for_write(name, plan_id, access.REVIEW)
        session = lock_session(name, access.REVIEW)
        if precondition is not None:
            precondition(plan)
        if plan.status != Plan.Status.IN_REVIEW:
            raise ValidationFailed(
                f"Plan {plan.id} is {plan.status}, not in review; only a plan in review can be approved or rejected.",
                field="plan_id",
                reason=errors.NOT_IN_REVIEW,
            )
        now = clock.now()
        if decision == "approve":
            before = plan.sections()
            if notes:
                # Kept with the plan's history as a rejection's notes are: under a heading
                # naming the reviewer and the time, as a revision.
                plan.notes = compose_append(
                    plan.notes, f"### Approved in review by {actor}, {utc_text(now)}\n\n{notes}"
                )
                inputs.plan_size({**plan.sections(), "outcome": plan.outcome}, field="notes")
            plan.status = Plan.Status.COMPLETED
            plan.completed_at = now
            touch(plan)
            plan.save(update_fields=["status", "completed_at", *(SECTIONS if notes else ()), *TOUCHED])
            if notes:
                revisions.save(plan, kind=Revision.Kind.REVIEW, actor=actor, before=before, at=now)
            record_event(session.name, Event.Kind.PLAN_APPROVED, actor, plan, decision=decision, notes=notes)
        else:
            before = plan.sections()
            plan.notes = compose_append(plan.notes, f"### Rejected in review by {actor}, {utc_text(now)}\n\n{notes}")
            inputs.plan_size({**plan.sections(), "outcome": plan.outcome}, field="notes")
            plan.rejections += 1
            held = plan.rejections >= settings.NINEPLAN_MAX_REJECTIONS
            # The claim that finished the plan is over: back in the queue it is unclaimed (no
            # worker, no lease), as a requeued plan is; its attempts stand (a rejection is no
            # lost claim).
            if held:
                plan.status, plan.sort_key = Plan.Status.HELD, None
                end_claim(plan)
            else:
                # Sent back to the front: the work was nearly done and the notes say what is missing.
                place = back_to_queue(plan, session, "front")
            touch(plan)
            plan.save(update_fields=[*SECTIONS, *RETURNED, "rejections", *TOUCHED])
            revisions.save(plan, kind=Revision.Kind.REVIEW, actor=actor, before=before, at=now)
            record_event(
                session.name,
                Event.Kind.PLAN_REJECTED,
                actor,
                plan,
                decision=decision,
                notes=notes,
                rejections=plan.rejections,
            )
            if held:
                record_event(session.name, Event.Kind.PLAN_HELD, actor, plan, rejections=plan.rejections)
            else:
                write_file(undo, plan, previous=None)
    log.info("plan reviewed", extra={"session": session.name, "plan": plan.id, "decision": decision})
    return Written(plan, place)


def plan_release(*, session_name: str, plan_id: str, position: str | None = None, actor: str) -> Written:
    """Returns a held plan to the queue (a person decided it gets another try); its count
    of rejections starts again."""
    position = inputs.choice("position", position, inputs.POSITIONS, default="front")
    name, plan_id = inputs.session_name(session_name), inputs.plan_id(plan_id)
    with transactions.write() as undo:
        plan = plan_for_write(name, plan_id, access.MANAGE)
        session = lock_session(name, access.MANAGE)
        if plan.status != Plan.Status.HELD:
            raise ValidationFailed(
                f"Plan {plan.id} is {plan.status}; only a held plan is released to the queue.", field="plan_id"
            )
        place = back_to_queue(plan, session, position)
        plan.rejections = 0
        touch(plan)
        plan.save(update_fields=[*RETURNED, "rejections", *TOUCHED])
        record_event(session.name, Event.Kind.PLAN_REQUEUED, actor, plan, position=position, released=True)
        write_file(undo, plan, previous=None)
    return Written(plan, place)


def plan_restore(*, session_name: str, plan_id: str, number: object, actor: str) -> Written:
    """Puts an open plan's text back as it was right after revision ``number``; the restore
    is itself a new revision, so nothing is lost by it either."""
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValidationFailed(f"revision must be a whole number from 1; got {inputs.shown(number)}.", field="revision")
    name, plan_id = inputs.session_name(session_name), inputs.plan_id(plan_id)
    ahead = read_ahead(name, plan_id)
    with transactions.write() as undo:
        plan = plan_for_write(name, plan_id, access.MANAGE)
        session = lock_session(name, access.MANAGE)
        if not plan.is_open:
            raise ValidationFailed(
                f"Plan {plan.id} is {plan.status}; only a queued or active plan can be restored.", field="plan_id"
            )
        previous = file_now(plan, ahead)
        # The agent's unsaved edits in the file become a revision first, so the restore
        # cannot overwrite them unrecorded.
        take_in_file(plan, actor, previous, strict=True)
        target = revisions.text_at(plan, number)
        if target is None:
            raise ValidationFailed(f"Plan {plan.id} has no revision {number}.", field="revision")
        before = plan.sections()
        if target == before:
            raise ValidationFailed(
                f"Plan {plan.id}'s text is already as it was at revision {number}.", field="revision"
            )
        inputs.plan_size({**target, "outcome": plan.outcome}, field="revision")
        set_sections(plan, target)
        touch(plan)
        plan.save(update_fields=[*SECTIONS, *TOUCHED])
        made = revisions.save(plan, kind=Revision.Kind.RESTORE, actor=actor, before=before)
        record_event(session.name, Event.Kind.PLAN_RESTORED, actor, plan, revision=number, new_revision=made)
        write_file(undo, plan, previous)
    return Written(plan)
