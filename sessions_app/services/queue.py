"""Adding plans to a session's queue (one, or several in order), with the plans each
depends on, and moving a queued plan to either end (docs/design.md, "Model and
invariants": queue order, dependencies)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, F

from sessions_app import access, clock, inputs, planfiles
from sessions_app.errors import DatabaseFailed, ValidationFailed
from sessions_app.identifiers import new_plan_id
from sessions_app.models import MAX_DEPENDENTS, Event, Plan, PlanDependency, Revision, Session
from sessions_app.services.file_edits import write_file
from sessions_app.services.sessions import ID_ATTEMPTS
from sessions_app.services.write_kit import (
    Written,
    check_queue_room,
    lock_session,
    next_sort_key,
    place_at,
    plan_for_write,
    record_event,
)
from sessions_app.store import revisions, transactions

log = logging.getLogger("nineplan.services")

MAX_DEPENDENCIES = 50


@dataclass(frozen=True)
class PlanInput:
    context: str
    goal: str
    approach: str
    success_criteria: str
    inputs: str = ""
    outputs: str = ""
    # A person may start a plan with notes (the admin's forms); the agents' tools do not.
    notes: str = ""


def _plan_input(fields: PlanInput | dict, prefix: str = "") -> PlanInput:
    get = fields.get if isinstance(fields, dict) else lambda k: getattr(fields, k)
    checked = PlanInput(
        context=inputs.text(prefix + "context", get("context"), required=True),
        goal=inputs.text(prefix + "goal", get("goal"), required=True),
        approach=inputs.text(prefix + "approach", get("approach"), required=True),
        success_criteria=inputs.text(prefix + "success_criteria", get("success_criteria"), required=True),
        inputs=inputs.text(prefix + "inputs", get("inputs"), required=False),
        outputs=inputs.text(prefix + "outputs", get("outputs"), required=False),
        notes=inputs.text(prefix + "notes", get("notes"), required=False),
    )
    inputs.plan_size(vars(checked), field=(prefix.rstrip(".") or "plan"))
    return checked


def _new_plan_id(session_name: str, avoid: Sequence[str] = ()) -> str:
    for _ in range(ID_ATTEMPTS):
        candidate = new_plan_id()
        # A file already named after the id (one a crash left, say) is never overwritten.
        if (
            candidate not in avoid
            and not Plan.objects.filter(id=candidate).exists()
            and planfiles.file_identity(session_name, candidate) is None
        ):
            return candidate
        log.warning("plan id collision; drawing another", extra={"plan": candidate})
    raise DatabaseFailed("Could not find a free plan id after several attempts.")


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
    return plan_enqueue_many(session_name=session_name, plans=[fields], position=position, review=review, actor=actor)[
        0
    ]


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
    name = inputs.session_name(session_name)
    created: list[Plan] = []
    with transactions.write() as undo:
        session = lock_session(name, access.ADD)
        check_queue_room(session, len(checked))
        _check_dependencies_exist(session, wanted, prefix)
        now = clock.now()
        first_place = place_at(session, position)
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
                sort_key=next_sort_key(session, position),
                created_at=now,
                updated_at=now,
                review=review,
                **vars(checked[i]),
            )
            plan.save(force_insert=True)
            revisions.save(plan, kind=Revision.Kind.ADD, actor=actor, before=None, at=now, first=True)
            by_index[i] = plan
        pairs = []
        for i, deps in enumerate(wanted):
            for dep in deps:
                pairs.append((ids[i], ids[dep] if isinstance(dep, int) else dep))
        PlanDependency.objects.bulk_create(PlanDependency(plan_id=plan, depends_on_id=dep) for plan, dep in pairs)
        for i in order:
            plan = by_index[i]
            detail: dict[str, object] = {"position": position}
            if wanted[i]:
                detail["depends_on"] = [ids[d] if isinstance(d, int) else d for d in wanted[i]]
            record_event(session.name, Event.Kind.PLAN_CREATED, actor, plan, **detail)
            write_file(undo, plan)
        created = [by_index[i] for i in range(len(checked))]
    for plan in created:
        log.info("plan added", extra={"session": session.name, "plan": plan.id, "position": position})
    return [Written(plan, first_place + i) for i, plan in enumerate(created)]


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
    exists before its dependent, so no cycle can form, and none waits for a discarded plan;
    and no plan gets more than MAX_DEPENDENTS dependents."""
    named = {dep for deps in wanted for dep in deps if isinstance(dep, str)}
    _check_dependents_room(wanted, named, prefix)
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


def _check_dependents_room(wanted: list[list[str | int]], named: set[str], prefix) -> None:
    """A plan may have at most MAX_DEPENDENTS dependents, so that discarding it (a note
    into each, in one transaction) stays short; counted with the call's own plans."""
    has: dict[str | int, int] = {}
    if named:
        has.update(
            PlanDependency.objects.filter(depends_on_id__in=named)
            .values("depends_on_id")
            .annotate(n=Count("plan_id"))
            .values_list("depends_on_id", "n")
        )
    # Counted in the call's order, so the first plan over the limit is the one named.
    for i, deps in enumerate(wanted):
        for j, dep in enumerate(deps):
            total = has[dep] = has.get(dep, 0) + 1
            if total > MAX_DEPENDENTS:
                at = f"{prefix(i)}depends_on[{j}]"
                shown = dep if isinstance(dep, str) else f"plans[{dep}]"
                raise ValidationFailed(
                    f"{at}: plan {shown} would have {total} dependents; a plan may have at most {MAX_DEPENDENTS} "
                    "(discarding it writes a note into each of them in one write).",
                    field=at,
                )


def plan_move(
    *, session_name: str, plan_id: str, position: str | None = None, before: str | None = None, actor: str
) -> Written:
    """Moves a queued plan to the front or back of its queue, or (``before``, a board's
    drag) to just before another queued plan of the same queue."""
    if before is not None:
        if position is not None:
            raise ValidationFailed("give position or before, not both.", field="position")
        before = inputs.plan_id(before, field="before")
    else:
        position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    name, plan_id = inputs.session_name(session_name), inputs.plan_id(plan_id)
    with transactions.write():
        plan = plan_for_write(name, plan_id, access.MANAGE)
        session = lock_session(name, access.MANAGE)
        if plan.status != Plan.Status.QUEUED:
            raise ValidationFailed(
                f"Plan {plan.id} is {plan.status}; only a queued plan can be moved.", field="plan_id"
            )
        if before is not None:
            place = _put_before(session, plan, before)
            record_event(session.name, Event.Kind.PLAN_MOVED, actor, plan, before=before)
            return Written(plan, place)
        position = position or "back"
        new_key = next_sort_key(session, position)
        Plan.objects.filter(id=plan.id).update(sort_key=new_key, updated_at=clock.now())
        plan.sort_key = new_key
        record_event(session.name, Event.Kind.PLAN_MOVED, actor, plan, position=position)
    return Written(plan, place_at(session, position, was_queued=True))


def _put_before(session: Session, plan: Plan, before: str) -> int:
    """Gives ``plan`` a sort key just before the queued plan ``before``; returns its place.
    The keys are unique among the queued plans at every moment (a constraint), so the plan
    is first set aside beyond one end, then the run of consecutive keys on the shorter side
    of the target moves one step away from it, the farthest first, each into a key just
    freed; the plan takes the key so left free."""
    if before == plan.id:
        raise ValidationFailed(f"before: plan {plan.id} cannot be moved before itself.", field="before")
    queued = Plan.objects.filter(session_id=session.name, status=Plan.Status.QUEUED)
    target = queued.filter(id=before).values_list("sort_key", flat=True).first()
    if target is None:
        raise ValidationFailed(
            f"before: no queued plan {before} in session '{session.name}'; a plan moves before a queued plan of "
            "its own queue.",
            field="before",
        )
    others = queued.exclude(id=plan.id)
    ahead = others.filter(sort_key__lt=target).count()
    forward = ahead <= others.count() - ahead
    # Forward: the plans just before the target step towards the front, and the plan takes
    # target - 1. Backward: the target and the plans just behind it step back, and the plan
    # takes the target's key.
    aside = next_sort_key(session, "back" if forward else "front")
    Plan.objects.filter(id=plan.id).update(sort_key=aside)
    side = others.filter(sort_key__lt=target) if forward else others.filter(sort_key__gte=target)
    start, step = (target - 1, -1) if forward else (target, 1)
    run: list[str] = []
    ordered = side.order_by("-sort_key" if forward else "sort_key").values_list("id", "sort_key")
    for neighbour, key in ordered.iterator(chunk_size=200):
        if key != start + step * len(run):
            break
        run.append(neighbour)
    for neighbour in reversed(run):
        Plan.objects.filter(id=neighbour).update(sort_key=F("sort_key") + step)
    plan.sort_key = start
    Plan.objects.filter(id=plan.id).update(sort_key=plan.sort_key, updated_at=clock.now())
    return ahead + 1
