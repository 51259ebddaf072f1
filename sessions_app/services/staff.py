"""What staff do to plans from the admin: take an active plan back into the queue, hand a
plan waiting for a person back to the workers, discard any open or held plan. (Moving a
queued plan is in queue.py, taking a claim back in claims.py, the review gate in review.py.)"""

from __future__ import annotations

from sessions_app import access, inputs
from sessions_app.errors import ValidationFailed
from sessions_app.models import SECTIONS, Event, Plan
from sessions_app.services.file_edits import file_now, read_ahead, retire_file, take_in_file, write_file
from sessions_app.services.worker_writes import discard
from sessions_app.services.write_kit import (
    RETURNED,
    TOUCHED,
    Written,
    back_to_queue,
    lock_session,
    plan_for_write,
    record_event,
    touch,
)
from sessions_app.store import transactions


def plan_requeue(*, session_name: str, plan_id: str, position: str = "front", actor: str) -> Written:
    """Returns an active plan to the queue without a reason from the agent, or hands a plan
    that waits for a person back to the workers with its attempts counted afresh (staff
    action)."""
    position = inputs.choice("position", position, inputs.POSITIONS, default="front")
    name, plan_id = inputs.session_name(session_name), inputs.plan_id(plan_id)
    ahead = read_ahead(name, plan_id)
    with transactions.write() as undo:
        plan = plan_for_write(name, plan_id, access.MANAGE)
        session = lock_session(name, access.MANAGE)
        waiting = plan.status == Plan.Status.QUEUED and plan.waiting_for_person
        if plan.status != Plan.Status.ACTIVE and not waiting:
            raise ValidationFailed(
                f"Plan {plan.id} is {plan.status}; only the active plan of a worker, or a queued plan waiting for a person, can be "
                "requeued.",
                field="plan_id",
            )
        previous = file_now(plan, ahead)
        taken_in = take_in_file(plan, actor, previous, strict=True)
        if waiting:
            # Out of the queue and back in at the chosen end, as a move does.
            plan.waiting_for_person = False
            plan.attempts = 0
        place = back_to_queue(plan, session, position)
        touch(plan)
        plan.save(update_fields=[*SECTIONS, *RETURNED, "attempts", "waiting_for_person", *TOUCHED])
        detail = {"position": position, **({"was_waiting_for_person": True} if waiting else {})}
        record_event(session.name, Event.Kind.PLAN_REQUEUED, actor, plan, **detail)
        write_file(undo, plan, previous)
    return Written(plan, place, taken_in.notice)


def plan_discard_any(*, session_name: str, plan_id: str, reason: str, actor: str) -> Written:
    """Discards a queued, active or held plan chosen by id (staff action)."""
    reason = inputs.text("reason", reason, required=True)
    name, plan_id = inputs.session_name(session_name), inputs.plan_id(plan_id)
    ahead = read_ahead(name, plan_id)
    with transactions.write() as undo:
        plan = plan_for_write(name, plan_id, access.MANAGE)
        if not plan.is_open and plan.status != Plan.Status.HELD:
            raise ValidationFailed(f"Plan {plan.id} is already {plan.status}.", field="plan_id")
        taken_in = discard(name, plan, reason, actor, ahead, undo)
    return retire_file(plan, taken_in)
