"""Projects and their members: create a project, grant a user a role in it, revoke it
(docs/design.md, "Projects and access"). Anyone who may work everywhere (a superuser, the
local user) creates projects; a project's managers keep its members."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.contrib.auth import get_user_model

from sessions_app import access, inputs
from sessions_app.errors import NotPermitted, ValidationFailed
from sessions_app.models import DEFAULT_PROJECT, Membership, Project, Role
from sessions_app.store import transactions

log = logging.getLogger("nineplan.services")


def project_create(*, name: str, title: str | None = None) -> Project:
    """A new, empty project (only for a caller who may work everywhere)."""
    name = inputs.project_name(name, field="name")
    title = inputs.text("title", title, required=False, max_chars=200)
    caller = access.current()
    if not (caller.everything and caller.within is None):
        raise NotPermitted("Only an administrator creates projects. Nothing was changed.", field="name")
    with transactions.write():
        if Project.objects.filter(name=name).exists():
            raise ValidationFailed(f"name: a project named '{name}' exists already.", field="name")
        project = Project.objects.create(name=name, title=title)
    log.info("project created", extra={"project": name})
    return project


@dataclass(frozen=True)
class Granted:
    """A grant's result: the membership, its role before (None: new), and whether the user
    had to be created (without a password: it signs in once an administrator sets one)."""

    membership: Membership
    previous_role: str | None
    user_created: bool


def _project(name: object) -> Project:
    name = inputs.project_name(name)
    if name == DEFAULT_PROJECT:
        # The project every session made before projects is in; made again if removed.
        Project.objects.get_or_create(name=DEFAULT_PROJECT)
    project = Project.objects.filter(name=name).first()
    # A project the caller may not see is no more there than one that does not exist.
    if project is None or not access.current().allows(access.VIEW, name):
        raise ValidationFailed(f"project: no project named '{name}'.", field="project")
    return project


def _username(value: object) -> str:
    username = inputs.text("username", value, required=True, max_chars=150)
    if username != username.strip() or any(c.isspace() for c in username):
        raise ValidationFailed(f"username {inputs.shown(username)} may not contain white space.", field="username")
    return username


def project_grant(*, project: str, username: str, role: str) -> Granted:
    """Gives ``username`` the ``role`` in ``project`` (replacing the role it had there),
    creating the user without a password when there is none; for the project's managers."""
    role = inputs.choice("role", role, Role.values, default=Role.READER)
    username = _username(username)
    found = _project(project)
    access.require_in_project(access.MANAGE, found.name)
    User = get_user_model()
    with transactions.write():
        user = User.objects.filter(username=username).first()
        created = user is None
        if user is None:
            user = User(username=username, is_staff=True)
            user.set_unusable_password()
            user.save()
        elif not user.is_staff:
            # Members read the project in the admin, which only staff may enter.
            User.objects.filter(pk=user.pk).update(is_staff=True)
        membership = Membership.objects.filter(project=found, user=user).first()
        previous = membership.role if membership else None
        if membership is None:
            membership = Membership.objects.create(project=found, user=user, role=role)
        elif membership.role != role:
            Membership.objects.filter(pk=membership.pk).update(role=role)
            membership.role = role
    log.info("role granted", extra={"project": found.name, "user": username, "role": role})
    return Granted(membership, previous, created)


def project_revoke(*, project: str, username: str) -> Membership:
    """Ends ``username``'s membership of ``project``; it loses access at its next request."""
    username = _username(username)
    found = _project(project)
    access.require_in_project(access.MANAGE, found.name)
    with transactions.write():
        membership = Membership.objects.filter(project=found, user__username=username).select_related("user").first()
        if membership is None:
            raise ValidationFailed(
                f"username: '{username}' is not a member of project '{found.name}'.", field="username"
            )
        membership.delete()
    log.info("role revoked", extra={"project": found.name, "user": username})
    return membership


def roles_from_groups(*, user, groups: list[str]) -> dict[str, str]:
    """Gives a person signing in through single sign-on for the first time the roles their
    provider's groups map to (NINEPLAN_OIDC_GROUP_ROLES; the highest where several name one
    project), in projects that exist; no group mapped, no role. The provider vouched for the
    person, so no caller's right is asked for."""
    from django.conf import settings

    order = list(Role.values)
    roles: dict[str, str] = {}
    for group in groups:
        for project, role in settings.NINEPLAN_OIDC_GROUP_ROLES.get(group, ()):
            if project not in roles or order.index(role) > order.index(roles[project]):
                roles[project] = role
    known = set(Project.objects.filter(name__in=roles).values_list("name", flat=True))
    roles = {p: r for p, r in roles.items() if p in known}
    with transactions.write():
        for project, role in roles.items():
            Membership.objects.get_or_create(user=user, project_id=project, defaults={"role": role})
    return roles
