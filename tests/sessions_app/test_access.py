"""Who may do what (sessions_app/access.py): require refuses a caller without the role and
lets one with it pass, a session the caller may not see is not found, and a refused call
through the services changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from sessions_app import access, services
from sessions_app.errors import NotPermitted, SessionNotFound
from sessions_app.models import Role
from tests.conftest import plan_fields


def member(username: str, role: str, project: str = "default") -> access.Caller:
    services.project_grant(project=project, username=username, role=role)
    return access.caller_for_user(get_user_model().objects.get(username=username))


@pytest.mark.parametrize(
    ("role", "allowed"),
    [
        (Role.READER, {access.VIEW}),
        (Role.AGENT, {access.VIEW, access.WORK}),
        (Role.REVIEWER, {access.VIEW, access.REVIEW}),
        (Role.MANAGER, {access.VIEW, access.REVIEW, access.MANAGE}),
    ],
)
def test_require_lets_each_role_do_what_it_may_and_refuses_the_rest(role, allowed):
    caller = access.Caller(label=f"user:{role}", roles={"default": role})
    with access.acting_as(caller):
        for need in (access.VIEW, access.WORK, access.REVIEW, access.MANAGE):
            if need in allowed:
                access.require(need, project="default", session_name="calm-blue-heron")
            else:
                with pytest.raises(NotPermitted) as refused:
                    access.require(need, project="default", session_name="calm-blue-heron")
                assert (
                    refused.value.field == "project" and f"'{access.ROLE_NEEDED[need]}' role" in refused.value.message
                )


def test_a_session_in_a_project_the_caller_cannot_see_is_not_found():
    with access.acting_as(access.Caller(label="user:eve", roles={"elsewhere": Role.MANAGER})):
        with pytest.raises(SessionNotFound, match="No session named 'calm-blue-heron' exists."):
            access.require(access.VIEW, project="default", session_name="calm-blue-heron")
        assert access.projects_where(access.MANAGE) == frozenset({"elsewhere"})
        with pytest.raises(NotPermitted):
            access.require_in_project(access.WORK, "default")


def test_everything_narrowed_to_some_projects_allows_only_those():
    caller = access.Caller(label="user:root", everything=True, within=frozenset({"billing"}))
    assert caller.allows(access.MANAGE, "billing") and not caller.allows(access.VIEW, "default")
    assert caller.visible_projects() == frozenset({"billing"})
    assert access.LOCAL.visible_projects() is None and access.LOCAL.allows(access.MANAGE, "anything")


@pytest.mark.django_db
def test_a_users_roles_make_its_caller(settings):
    services.project_create(name="billing")
    member("rita", Role.REVIEWER)
    caller = member("rita", Role.AGENT, project="billing")
    assert caller.roles == {"default": Role.REVIEWER, "billing": Role.AGENT}
    assert caller.projects_allowing(access.WORK) == ["billing"] and caller.allows_anything()


@pytest.mark.django_db
def test_a_member_without_the_role_is_refused_and_nothing_changes(session, rejects):
    reader = member("rob", Role.READER)
    with access.acting_as(reader), rejects("PERMISSION_DENIED", field="project"):
        services.plan_enqueue(session_name=session.name, **plan_fields(goal="Not mine to add"))
    agent = member("ada", Role.AGENT)
    with access.acting_as(agent):
        added = services.plan_enqueue(session_name=session.name, **plan_fields(goal="Mine to add")).plan
    assert added.goal == "Mine to add"
