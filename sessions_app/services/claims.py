"""Claims: a pull hands a worker the first ready plan; its lease runs until the worker's
next write; an expired claim stays with its worker until another worker's pull, a person
or ``nineplan_reclaim`` takes it back, and the worker that lost it is fenced off
(docs/design.md, "Model and invariants": workers, claims, lost claims; "Services and
queries": reclaiming, what a pull says when it hands nothing out)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError
from django.db.models import Exists, OuterRef, Q

from sessions_app import access, clock, errors, inputs
from sessions_app.clock import utc_text
from sessions_app.errors import (
    LeaseLost,
    NineplanError,
    PlanAlreadyActive,
    QueueBlocked,
    QueueEmpty,
    ValidationFailed,
)
from sessions_app.models import DEFAULT_WORKER, SECTIONS, Event, LostClaim, Plan, PlanDependency, Revision, Session
from sessions_app.reads import interventions, queries
from sessions_app.services.file_edits import fence_file, refresh_copy, remember_held_file, write_file
from sessions_app.services.write_kit import (
    RETURNED,
    TOUCHED,
    Written,
    append_note_if_room,
    back_to_queue,
    enter_session,
    lease_until,
    lock_session,
    only_row,
    plan_for_write,
    plans_for_write,
    record_event,
    touch,
    worker_actor,
)
from sessions_app.store import revisions, transactions

log = logging.getLogger("nineplan.services")

RECLAIM_ACTOR = "lease"
BLOCKED_SHOWN = 5


@dataclass(frozen=True)
class PullResult:
    """What a pull knew as it handed its plan out (``Plan.pull_result`` of the plan it returns),
    so that its answer needs no statement or file read of its own."""

    queue_remaining: int  # plans still queued once the pull committed
    has_dependencies: bool  # the plan waited for others: its answer shows what they produced
    file_text: str | None  # its plan file's text as the pull left it; None: files off, or unusable


def plan_pull(*, session_name: str, worker: str | None = None, actor: str = "agent") -> Plan:
    """Claims the first ready plan in queue order for ``worker`` (one plan per worker);
    exactly one caller wins each plan when several race. Expired claims of the session's
    other workers are reclaimed first, and stay reclaimed even when nothing can be handed
    out; the caller's own expired claim stays its own. The plan returned carries its
    ``pull_result``."""
    worker = inputs.worker(worker)
    actor = worker_actor(actor, worker)
    refusal: NineplanError | None = None
    name = inputs.session_name(session_name)
    claimant = access.current().claimant
    with transactions.write() as undo:
        now = clock.now()
        # The worker's own plan and whether other workers' claims ran out are read under the
        # session row's lock (a claim that runs out after this read is reclaimed by the next
        # pull). Read before it, a plan the worker claimed in another process meanwhile would
        # be missed, and the claim below would wait on that process's completion while it
        # waits for the session. The caller's own claim is never reclaimed by its pull: a
        # worker that pulls again while it holds a plan is told so, whatever its lease says.
        session = lock_session(name, access.WORK)
        holding, expired = worker_and_expired(session.name, claimant, worker, now)
        reclaimed = reclaim_expired_in(session, now, undo, keep=(claimant, worker)) if expired else []
        plan, has_dependencies = (None, False) if holding else first_ready(session.name)
        if holding:
            whose = "" if worker == DEFAULT_WORKER else f" by worker '{worker}'"
            refusal = PlanAlreadyActive(
                f"Plan {holding} is already active{whose} in session '{session.name}'; a worker works one plan at a time."
            )
        elif plan is None:
            refusal = _nothing_ready(session.name)
        else:
            # Compare-and-set: the claim holds only if the plan is still queued; the unique
            # "one active plan per worker" constraint is the last line.
            plan.status, plan.sort_key = Plan.Status.ACTIVE, None
            plan.claimant, plan.worker, plan.claimed_at, plan.updated_at = claimant, worker, now, now
            plan.lease_expires_at = lease_until(session.lease_seconds, now)
            try:
                claimed = Plan.objects.filter(id=plan.id, status=Plan.Status.QUEUED).update(
                    status=plan.status,
                    sort_key=None,
                    claimant=claimant,
                    worker=worker,
                    claimed_at=now,
                    lease_expires_at=plan.lease_expires_at,
                    updated_at=now,
                )
            except IntegrityError:
                raise PlanAlreadyActive(
                    f"Worker '{worker}' already holds a plan in session '{session.name}'."
                ) from None
            if claimed != 1:
                raise PlanAlreadyActive(f"Plan {plan.id} was claimed by another caller.")
            # The worker is told of a lost claim until it pulls again.
            LostClaim.objects.filter(session_id=session.name, claimant=claimant, worker=worker).delete()
            detail = {"attempt": plan.attempts + 1} if plan.attempts else {}
            record_event(session.name, Event.Kind.PLAN_PULLED, actor, plan, **detail)
            # Written inside the transaction: if the file cannot be written the pull is
            # undone, rather than reporting an error for a plan that is now active anyway.
            file_text = refresh_copy(undo, plan)
            # The session's row is held, so its count changes only by this transaction's
            # writes: the claim, and reclaims, which put plans back (read again then).
            remaining = queries.queue_length(session.name) if reclaimed else session.count_queued - 1
            plan.pull_result = PullResult(remaining, has_dependencies, file_text)
    if refusal is not None:
        raise refusal
    assert plan is not None  # every path that claims no plan sets a refusal
    remember_held_file(session.name, claimant, worker, plan.file_stem)
    log.info("plan pulled", extra={"session": session.name, "plan": plan.id, "worker": worker})
    return plan


def worker_and_expired(session_name: str, claimant: str, worker: str, now: datetime) -> tuple[str | None, bool]:
    """What a pull reads first under the session's lock, in one statement over the session's
    active plans: the plan the worker holds, if any, and whether another worker's claim ran
    out before ``now``."""
    holding, expired = None, False
    mine = Q(claimant=claimant, worker=worker)
    active = Plan.objects.filter(mine | Q(lease_expires_at__lt=now), session_id=session_name, status=Plan.Status.ACTIVE)
    for plan_id, plan_claimant, plan_worker in active.order_by().values_list("id", "claimant", "worker"):
        if (plan_claimant, plan_worker) == (claimant, worker):
            holding = plan_id
        else:
            expired = True
    return holding, expired


# The ready plans in queue order, with whether each waited for others (its answer then
# shows what they produced). Built once and narrowed per pull, as queries.READY_PLANS.
PULLABLE = queries.READY_PLANS.annotate(
    has_dependencies=Exists(PlanDependency.objects.filter(plan=OuterRef("pk")))
).order_by("sort_key")


def first_ready(session_name: str) -> tuple[Plan | None, bool]:
    """The first ready plan in queue order, locked on PostgreSQL (rows held by other writers
    are passed over: such a plan is being changed, not waiting to be pulled), and whether it
    depends on others."""
    plan = only_row(plans_for_write(PULLABLE.filter(session_id=session_name), skip_locked=True)[:1])
    return plan, bool(plan and plan.has_dependencies)


def _awaiting_review(session_name: str) -> QueueBlocked | None:
    """The refusal when nothing is queued or active but plans wait for a reviewer (in
    review) or for a person (held after their last rejection): the task is not done."""
    parts, why = [], []
    for status, what in ((Plan.Status.IN_REVIEW, "await review"), (Plan.Status.HELD, "are held")):
        rows, total = queries.plans_in(session_name, status, limit=BLOCKED_SHOWN)
        if total:
            more = f" and {total - len(rows)} more" if total > len(rows) else ""
            parts.append(f"{total} plan(s) {what} ({', '.join(p.id for p in rows)}{more})")
            why.append(REVIEW_STORY if status == Plan.Status.IN_REVIEW else HELD_STORY)
    if not parts:
        return None
    return QueueBlocked(
        "No plan is queued or active, but the task is not done: " + " and ".join(parts) + ". " + " ".join(why),
        reason=errors.AWAITING_REVIEW if REVIEW_STORY in why else errors.HELD_PLANS,
    )


REVIEW_STORY = (
    "A reviewer's approval completes a plan in review; a rejection puts it back at the front of the queue with "
    "the reviewer's notes."
)
HELD_STORY = f"A plan is held after too many rejections in review: {interventions.HELD_UNTIL}."


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
    claims = "; ".join(
        f"{pid} (worker '{w}', lease until {utc_text(until)})" for pid, w, until in active[:BLOCKED_SHOWN]
    )
    if not counts["count_queued"]:
        return QueueBlocked(
            f"No plan is queued, but {len(active)} plan(s) are still active: {claims}. Their workers may add or "
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


# --- the worker's claim --------------------------------------------------------------------


@dataclass
class Claim:
    """The plan a worker's write acts on and its session's lease; or, when the worker's
    claim was reclaimed, the LEASE_LOST to raise once its late text is kept."""

    plan: Plan | None
    lease_seconds: int = 0
    lost: LeaseLost | None = None
    # Whether people did something to the plan since the worker last wrote it
    # (interventions.any_since_worker_wrote).
    others_changed: bool = False


def claim_of(session_name: str, worker: str, actor: str, op: str, text: str | None = None, **late) -> Claim:
    """The plan ``worker`` (of the calling token, or of the local user) holds, locked for
    this write (and so fenced against a reclaim); else LEASE_LOST if its claim was reclaimed
    (its text kept aside), else NO_ACTIVE_PLAN. The caller must hold the agent role in the
    session's project."""
    claimant = access.current().claimant
    # Locked on PostgreSQL, so that a reclaim passes the plan over while its holder writes.
    # Its session (lease, project, review policy) comes with it.
    plan = only_row(
        plans_for_write()
        .select_related("session")
        .filter(session_id=session_name, status=Plan.Status.ACTIVE, claimant=claimant, worker=worker)
        .order_by()
    )
    if plan is not None:
        access.require(access.WORK, project=plan.session.project_id, session_name=session_name)
        others_changed = interventions.any_since_worker_wrote(plan.id, actor)
        return Claim(plan, plan.session.lease_seconds, others_changed=others_changed)
    enter_session(session_name, access.WORK)
    lost = only_row(
        LostClaim.objects.filter(session_id=session_name, claimant=claimant, worker=worker).values_list(
            "plan_id", "lost_at"
        )
    )
    if lost is None:
        # An agent that finds its plan gone is told who took it and why, so its work is
        # not silently thrown away (read only on this error path).
        fate = interventions.fate_of_last_pulled(session_name, actor)
        fate_text = f" {fate.describe()}" if fate is not None else ""
        raise queries.holds_nothing(session_name, worker, fate_text)
    plan_id, lost_at = lost
    if text is not None:
        record_event(session_name, Event.Kind.LATE_WRITE_KEPT, actor, plan_id, worker=worker, op=op, text=text, **late)
    holding = Plan.objects.filter(id=plan_id, status=Plan.Status.ACTIVE).order_by()
    holder = only_row(holding.values_list("worker", flat=True))
    where = f" it is now held by worker '{holder}'" if holder else " it went back to the queue"
    kept = (
        " Your text was not applied: it is kept with the plan, shown to its next holder and to reviewers."
        if text is not None
        else ""
    )
    return Claim(
        None,
        lost=LeaseLost(
            f"Worker '{worker}' no longer holds plan {plan_id}: its claim was taken back at {utc_text(lost_at)} "
            f"(by another worker's pull after its lease ran out, or by a person);{where}. Nothing of the plan was changed.{kept}",
            field="worker",
        ),
    )


def renew(plan: Plan, lease_seconds: int, now: datetime) -> None:
    plan.lease_expires_at = lease_until(lease_seconds, now)


def plan_renew(*, session_name: str, worker: str | None = None, actor: str = "agent") -> Plan:
    """Renews the lease of the plan ``worker`` holds, changing nothing else: for a worker
    busy for longer than the lease without writing."""
    worker = inputs.worker(worker)
    name = inputs.session_name(session_name)
    with transactions.write():
        claim = claim_of(name, worker, worker_actor(actor, worker), "renew")
        if claim.plan is not None:
            renew(claim.plan, claim.lease_seconds, clock.now())
            claim.plan.save(update_fields=["lease_expires_at"])
    if claim.lost is not None:
        raise claim.lost
    assert claim.plan is not None  # a claim that was not lost has its plan
    return claim.plan


# --- reclaiming ------------------------------------------------------------------------------


def reclaim_expired_in(
    session: Session, now: datetime, undo: transactions.Undo, *, keep: tuple[str, str] | None = None
) -> list[Plan]:
    """Every claim of the session whose lease ran out before ``now`` goes back to the front
    of the queue (inside the caller's write transaction, with the session row held), but
    the claim of ``keep`` (claimant, worker): the pulling worker's own."""
    # Oldest claim first; on PostgreSQL a plan whose holder is writing right now is passed
    # over: that write renews it.
    expired = [
        p
        for p in plans_for_write(skip_locked=True)
        .filter(session_id=session.name, status=Plan.Status.ACTIVE, lease_expires_at__lt=now)
        .order_by("lease_expires_at", "id")
        if (p.claimant, p.worker) != keep
    ]
    # The oldest claim ends up first in the queue.
    for plan in reversed(expired):
        _reclaim(session, plan, now, undo, actor=RECLAIM_ACTOR, why="its lease ran out without a write")
    return expired


def _reclaim(session: Session, plan: Plan, now: datetime, undo, *, actor: str, why: str) -> None:
    """The plan leaves its worker: everything the worker wrote stays (its notes, and its
    plan file's edits, taken in now), a note says whose claim ended when and why, and the
    worker's next write gets LEASE_LOST. The claim counts as a failed attempt, and at the
    session's max_attempts the plan waits for a person."""
    claimant, worker, expired_at = plan.claimant, plan.worker, plan.lease_expires_at
    assert worker is not None  # an active plan has its worker (the plan_active_has_claim constraint)
    fence_file(plan, worker, actor)
    plan.attempts += 1
    plan.reclaims += 1
    waits = plan.attempts >= session.max_attempts
    note = (
        f"Reclaimed {utc_text(now)}: the claim of worker '{worker}' (lease until {utc_text(expired_at)}) ended: {why}; "
        f"attempt {plan.attempts} of {session.max_attempts} lost."
    )
    if waits:
        note += " It is not handed out again until a person requeues or discards it."
    before = plan.sections()
    append_note_if_room(plan, note)
    back_to_queue(plan, session, "front")
    plan.waiting_for_person = waits
    touch(plan, now)
    plan.save(update_fields=[*SECTIONS, *RETURNED, "attempts", "reclaims", "waiting_for_person", *TOUCHED])
    revisions.save(plan, kind=Revision.Kind.NOTE, actor=actor, before=before, at=now)
    LostClaim.objects.filter(session_id=session.name, claimant=claimant, worker=worker).delete()
    LostClaim.objects.create(session_id=session.name, claimant=claimant, worker=worker, plan_id=plan.id, lost_at=now)
    record_event(
        session.name,
        Event.Kind.PLAN_RECLAIMED,
        actor,
        plan,
        worker=worker,
        lease_expired_at=utc_text(expired_at),
        attempts=plan.attempts,
        waiting_for_person=waits,
    )
    write_file(undo, plan, previous=None)
    log.warning(
        "claim reclaimed",
        extra={"session": session.name, "plan": plan.id, "worker": worker, "attempts": plan.attempts},
    )


def reclaim_expired(*, session_name: str | None = None) -> list[Plan]:
    """Reclaims every expired claim (of one session, or of all): what ``nineplan_reclaim``
    runs, for a person who wants them back now (the periodic sweep only reports them).
    Returns the plans reclaimed."""
    now = clock.now()
    if session_name is not None:
        names = [inputs.session_name(session_name)]
    else:
        expired = Plan.objects.filter(status=Plan.Status.ACTIVE, lease_expires_at__lt=now)
        names = list(expired.order_by("session_id").values_list("session_id", flat=True).distinct())
    reclaimed: list[Plan] = []
    for name in names:
        with transactions.write() as undo:
            session = lock_session(name, access.MANAGE)
            reclaimed += reclaim_expired_in(session, now, undo)
    return reclaimed


def plan_reclaim(*, session_name: str, plan_id: str, actor: str) -> Written:
    """Takes an active plan back from its worker now, as an expired lease would (staff
    action, for a worker that is stuck): the plan goes to the front of the queue with
    everything its worker wrote, the attempt counts, and the worker's next write gets
    LEASE_LOST."""
    name, plan_id = inputs.session_name(session_name), inputs.plan_id(plan_id)
    with transactions.write() as undo:
        plan = plan_for_write(name, plan_id, access.MANAGE)
        session = lock_session(name, access.MANAGE)
        if plan.status != Plan.Status.ACTIVE:
            raise ValidationFailed(
                f"Plan {plan.id} is {plan.status}; only an active plan can be reclaimed.", field="plan_id"
            )
        _reclaim(session, plan, clock.now(), undo, actor=actor, why=f"taken back by {actor}")
    return Written(plan, 1)
