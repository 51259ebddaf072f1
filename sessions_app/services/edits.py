"""A person's or an integration's correction of an open plan (docs/design.md, "Model and
invariants": revisions): a queued plan's text, its place in the queue, or both, in one
write; or an active plan's text, by a manager, while its worker holds it. An edit is a
revision, as a restore is, and reaches an active plan's worker the same way a restore
does: on its next write and on resume, as a change by others (reads/interventions.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sessions_app import access, clock, inputs
from sessions_app.errors import ValidationFailed
from sessions_app.models import SECTIONS, Event, Plan, Revision
from sessions_app.services.file_edits import file_now, read_ahead, take_in_file, write_file
from sessions_app.services.write_kit import (
    TOUCHED,
    Written,
    lock_session,
    next_sort_key,
    place_at,
    plan_for_write,
    record_event,
    set_sections,
    touch,
)
from sessions_app.store import revisions, transactions

log = logging.getLogger("nineplan.services")

# Sections a plan cannot be without (an add requires them).
REQUIRED = ("context", "goal", "approach", "success_criteria")


def plan_edit(
    *,
    session_name: str,
    plan_id: str,
    sections: dict[str, object] | None = None,
    position: str | None = None,
    actor: str,
    expected_version: int | None = None,
    precondition: Callable[[Plan], None] | None = None,
) -> Written:
    """Changes the sections given of a queued or active plan (a revision, as a restore is)
    and/or moves a queued plan to the front or back; all or nothing. Agents and managers
    correct a queued plan; an active plan's text, which its worker is working from, only a
    manager. ``expected_version``: the version the editor started from (a plan changed since
    is refused, never overwritten); ``precondition`` runs inside the write transaction with
    the plan as stored (the REST API checks the client's ETag there)."""
    if sections is not None and not isinstance(sections, dict):
        raise ValidationFailed("sections must map section names to their text.", field="sections")
    sections = dict(sections or {})
    unknown = sorted(str(name) for name in set(sections) - set(SECTIONS))
    if unknown:
        raise ValidationFailed(
            f"{unknown[0]} is not a section of a plan; the sections are {', '.join(SECTIONS)}.", field=unknown[0]
        )
    checked = {name: inputs.text(name, value, required=name in REQUIRED) for name, value in sections.items()}
    if position is not None:
        position = inputs.choice("position", position, inputs.POSITIONS, default="back")
    if expected_version is not None:
        expected_version = inputs.bounded_int("version", expected_version, default=0, minimum=0, maximum=2**62)
    if not checked and position is None:
        raise ValidationFailed("Nothing to change: give one or more sections, or position.", field="sections")
    name, plan_id = inputs.session_name(session_name), inputs.plan_id(plan_id)
    ahead = read_ahead(name, plan_id) if checked else None
    place = None
    changed: list[str] = []
    with transactions.write() as undo:
        plan = plan_for_write(name, plan_id, access.ADD)
        session = lock_session(name, access.ADD)
        if precondition is not None:
            precondition(plan)
        if plan.status == Plan.Status.ACTIVE and position is None:
            access.require(access.MANAGE, project=session.project_id or "", session_name=session.name)
        elif plan.status != Plan.Status.QUEUED:
            what = "text" if position is None else "place"
            raise ValidationFailed(
                f"Plan {plan.id} is {plan.status}; only a queued plan's text or place, or an active plan's text, "
                f"can be changed (not this one's {what}).",
                field="plan_id",
            )
        if expected_version is not None and plan.version != expected_version:
            raise ValidationFailed(
                f"Plan {plan.id} changed since you opened it (version {expected_version}, now {plan.version}); "
                "open it again to edit its text as it is now.",
                field="version",
            )
        now = clock.now()
        if checked:
            previous = file_now(plan, ahead)
            # The agent's unsaved edits in the file become a revision first, so this edit
            # cannot overwrite them unrecorded.
            take_in_file(plan, actor, previous, strict=True)
            before = plan.sections()
            after = {**before, **checked}
            changed = [s for s in SECTIONS if after[s] != before[s]]
            if changed:
                inputs.plan_size({**after, "outcome": plan.outcome}, field="sections")
                set_sections(plan, after)
                touch(plan, now)
                plan.save(update_fields=[*SECTIONS, *TOUCHED])
                made = revisions.save(plan, kind=Revision.Kind.EDIT, actor=actor, before=before, at=now)
                record_event(session.name, Event.Kind.PLAN_EDITED, actor, plan, sections=changed, new_revision=made)
                write_file(undo, plan, previous)
        if position is not None:
            new_key = next_sort_key(session, position)
            Plan.objects.filter(id=plan.id).update(sort_key=new_key, updated_at=now)
            plan.sort_key = new_key
            record_event(session.name, Event.Kind.PLAN_MOVED, actor, plan, position=position)
            place = place_at(session, position, was_queued=True)
    log.info("plan edited", extra={"session": name, "plan": plan_id, "sections": changed, "position": position})
    return Written(plan, place)
