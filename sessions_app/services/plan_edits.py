"""A person edits the text of an open plan: a queued one before any worker sees it, or an
active one while its worker holds it. The edit is a revision, as a restore is, and it
reaches the worker the same way a restore does: on its next write and on resume, as a
change by others (reads/interventions.py)."""

from __future__ import annotations

import logging

from sessions_app import access, inputs
from sessions_app.errors import ValidationFailed
from sessions_app.models import SECTIONS, Event, Revision
from sessions_app.services.file_edits import file_now, read_ahead, take_in_file, write_file
from sessions_app.services.write_kit import (
    TOUCHED,
    Written,
    lock_session,
    plan_for_write,
    record_event,
    set_sections,
    touch,
)
from sessions_app.store import revisions, transactions

log = logging.getLogger("nineplan.services")

# The sections a plan cannot be without (as when it is added).
REQUIRED_SECTIONS = ("context", "goal", "approach", "success_criteria")


def plan_edit(
    *,
    session_name: str,
    plan_id: str,
    sections: dict[str, object],
    expected_version: int | None = None,
    actor: str,
) -> Written:
    """Replaces the sections given of a queued or active plan's text, kept as a new
    revision. ``expected_version``: the plan's version the editor started from; a plan
    changed since (its worker wrote, another person edited) is refused, never overwritten."""
    if not isinstance(sections, dict) or not sections:
        raise ValidationFailed("sections must name at least one of the plan's sections.", field="sections")
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        raise ValidationFailed(
            f"{unknown[0]}: no such section; a plan's sections are {', '.join(SECTIONS)}.", field=str(unknown[0])
        )
    checked = {name: inputs.text(name, value, required=name in REQUIRED_SECTIONS) for name, value in sections.items()}
    if expected_version is not None:
        expected_version = inputs.bounded_int("version", expected_version, default=0, minimum=0, maximum=2**62)
    name, plan_id = inputs.session_name(session_name), inputs.plan_id(plan_id)
    ahead = read_ahead(name, plan_id)
    with transactions.write() as undo:
        plan = plan_for_write(name, plan_id, access.MANAGE)
        session = lock_session(name, access.MANAGE)
        if not plan.is_open:
            raise ValidationFailed(
                f"Plan {plan.id} is {plan.status}; only a queued or active plan's text can be edited.", field="plan_id"
            )
        if expected_version is not None and plan.version != expected_version:
            raise ValidationFailed(
                f"Plan {plan.id} changed since you opened it (version {expected_version}, now {plan.version}); "
                "open it again to edit its text as it is now.",
                field="version",
            )
        previous = file_now(plan, ahead)
        # The agent's unsaved edits in the file become a revision first, so the edit
        # cannot overwrite them unrecorded.
        take_in_file(plan, actor, previous, strict=True)
        before = plan.sections()
        target = {**before, **checked}
        if target == before:
            raise ValidationFailed(f"Plan {plan.id}'s text is already as given; nothing to change.", field="sections")
        inputs.plan_size({**target, "outcome": plan.outcome}, field="sections")
        set_sections(plan, target)
        touch(plan)
        plan.save(update_fields=[*SECTIONS, *TOUCHED])
        made = revisions.record(plan, kind=Revision.Kind.EDIT, actor=actor, before=before)
        changed = [s for s in SECTIONS if target[s] != before[s]]
        record_event(session.name, Event.Kind.PLAN_EDITED, actor, plan, sections=changed, new_revision=made)
        write_file(undo, plan, previous)
    log.info("plan edited", extra={"session": session.name, "plan": plan.id})
    return Written(plan)
