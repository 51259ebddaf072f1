"""Sessions: creating one, and the staff's choice of its review policy."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from sessions_app import access, inputs, planfiles
from sessions_app.errors import DatabaseFailed, NotPermitted, ValidationFailed
from sessions_app.identifiers import new_session_name
from sessions_app.models import (
    DEFAULT_PROJECT,
    LEASE_SECONDS,
    MAX_ATTEMPTS,
    MAX_LEASE_SECONDS,
    Event,
    Project,
    ReviewPolicy,
    Session,
)
from sessions_app.services.write_kit import lock_session, record_event
from sessions_app.store import transactions

log = logging.getLogger("nineplan.services")

# How many fresh names or ids are drawn before a write gives up on finding a free one.
ID_ATTEMPTS = 20


def session_create(
    *,
    task_description: str | None = None,
    lease_seconds: int | None = None,
    max_attempts: int | None = None,
    review: str | None = None,
    project: str | None = None,
    actor: str = "agent",
) -> Session:
    """Creates a session with a fresh three-word name and its plans folder, in ``project``
    (see ``project_for_new_session``). ``lease_seconds``: how long a pull's claim lasts
    without a write by its worker; ``max_attempts``: how many claims of a plan may run out
    before it waits for a person; ``review``: whether its completed plans wait for a
    reviewer (``required``) or only those added with ``review``."""
    if project is not None:
        project = inputs.project_name(project)
    if task_description is not None:
        task_description = inputs.text("task_description", task_description, required=False) or None
    lease_seconds = inputs.bounded_int(
        "lease_seconds", lease_seconds, default=LEASE_SECONDS, minimum=1, maximum=MAX_LEASE_SECONDS
    )
    max_attempts = inputs.bounded_int("max_attempts", max_attempts, default=MAX_ATTEMPTS, minimum=1, maximum=100)
    review = inputs.choice("review", review, ReviewPolicy.values, default=ReviewPolicy.NONE)
    with transactions.write():
        project = project_for_new_session(project)
        for _ in range(ID_ATTEMPTS):
            name = new_session_name()
            if not Session.objects.filter(name=name).exists():
                break
            log.warning("session name collision; drawing another", extra={"session": name})
        else:
            raise DatabaseFailed("Could not find a free session name after several attempts.")
        options = {"lease_seconds": lease_seconds, "max_attempts": max_attempts, "review": review}
        session = Session.objects.create(name=name, project_id=project, task_description=task_description, **options)
        planfiles.ensure_session_dir(name)
        detail: dict[str, Any] = {"task_description": task_description, "review": review, "project": project}
        if (lease_seconds, max_attempts) != (LEASE_SECONDS, MAX_ATTEMPTS):
            detail.update(lease_seconds=lease_seconds, max_attempts=max_attempts)
        record_event(name, Event.Kind.SESSION_CREATED, actor, **detail)
    log.info("session created", extra={"session": name, "project": project})
    return session


def project_for_new_session(named: str | None) -> str:
    """The project a new session goes into, for the caller, who must hold the agent or
    manager role there. Named: that project. Unnamed: NINEPLAN_PROJECT for a caller who may work
    everywhere (the local user, made at first use), else the one project where the caller
    may work; with several, the caller must choose, and the error lists them. Agents and
    managers put work in (access.ADD)."""
    caller = access.current()
    if named is None and caller.everything and caller.within is None:
        Project.objects.get_or_create(name=settings.NINEPLAN_PROJECT)
        return settings.NINEPLAN_PROJECT
    if named is None:
        yours = caller.projects_allowing(access.ADD)
        if yours == [DEFAULT_PROJECT]:
            # The project tokens made before projects work in; made again if it was removed.
            Project.objects.get_or_create(name=DEFAULT_PROJECT)
        if len(yours) == 1:
            return yours[0]
        if not yours:
            raise NotPermitted(
                "You hold the agent or manager role in no project, so you cannot create sessions; ask a project's manager "
                "for it. Nothing was changed.",
                field="project",
            )
        raise ValidationFailed(
            f"project is required: you may create sessions in {len(yours)} projects ({', '.join(yours)}); "
            "pass project with one of them.",
            field="project",
        )
    if not Project.objects.filter(name=named).exists() or not caller.allows(access.VIEW, named):
        yours = caller.projects_allowing(access.ADD)
        listed = f"yours are: {', '.join(yours)}" if yours else "you hold the agent or manager role in none"
        raise ValidationFailed(f"project {named!r}: no such project of yours; {listed}.", field="project")
    access.require_in_project(access.ADD, named)
    return named


def session_set_review(*, session_name: str, review: str, actor: str) -> Session:
    """Staff change whether a session's completed plans wait for review (from the next completion)."""
    review = inputs.choice("review", review, ReviewPolicy.values, default=ReviewPolicy.NONE)
    name = inputs.session_name(session_name)
    with transactions.write():
        session = lock_session(name, access.MANAGE)
        if session.review != review:
            Session.objects.filter(name=session.name).update(review=review)
            record_event(session.name, Event.Kind.SESSION_CHANGED, actor, review=review)
        session.review = review
    return session
