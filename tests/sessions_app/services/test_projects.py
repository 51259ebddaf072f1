"""Projects and their members (services/projects.py), the caller's project for a new
session (services/sessions.py), and tokens narrowed to some of their user's projects."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from mcp_bridge import auth
from sessions_app import access, services
from sessions_app.errors import NotPermitted, ValidationFailed
from sessions_app.models import Membership, Project, Session

pytestmark = pytest.mark.django_db


def caller_of(username: str) -> access.Caller:
    return access.caller_for_user(get_user_model().objects.get(username=username))


def test_a_project_is_created_once():
    services.project_create(name="billing")
    with pytest.raises(ValidationFailed, match="exists already"):
        services.project_create(name="billing")


def test_only_a_manager_of_the_project_keeps_its_members():
    services.project_create(name="billing")
    services.project_grant(project="billing", username="mia", role="manager")
    services.project_grant(project="billing", username="rex", role="reviewer")
    with access.acting_as(caller_of("mia")):
        services.project_grant(project="billing", username="newbie", role="reader")
        with pytest.raises(NotPermitted):
            services.project_create(name="another")
    with access.acting_as(caller_of("rex")):
        with pytest.raises(NotPermitted, match="'manager' role"):
            services.project_grant(project="billing", username="newbie", role="manager")
        with pytest.raises(NotPermitted):
            services.project_revoke(project="billing", username="mia")
    assert Membership.objects.get(user__username="newbie").role == "reader"


def test_a_new_session_goes_into_the_callers_one_project_or_the_one_named():
    for name in ("billing", "search"):
        services.project_create(name=name)
    services.project_grant(project="billing", username="alice", role="agent")
    with access.acting_as(caller_of("alice")):
        assert services.session_create().project_id == "billing"
    services.project_grant(project="search", username="alice", role="agent")
    alice = caller_of("alice")
    with access.acting_as(alice):
        with pytest.raises(ValidationFailed, match=r"you may create sessions in 2 projects \(billing, search\)"):
            services.session_create()
        assert services.session_create(project="search").project_id == "search"
        with pytest.raises(ValidationFailed, match="no such project of yours; yours are: billing, search"):
            services.session_create(project="default")
    services.project_grant(project="search", username="bob", role="reader")
    with access.acting_as(caller_of("bob")):
        with pytest.raises(NotPermitted, match="agent or manager role in no project"):
            services.session_create()
    assert Session.objects.filter(project_id="default").count() == 0


def test_the_local_user_creates_sessions_in_the_configured_project(settings):
    settings.NINEPLAN_PROJECT = "local-work"
    assert services.session_create().project_id == "local-work"
    assert Project.objects.filter(name="local-work").exists()


def test_a_token_is_narrowed_to_some_of_its_users_projects():
    for name in ("billing", "search"):
        services.project_create(name=name)
    services.project_grant(project="billing", username="alice", role="agent")
    services.project_grant(project="search", username="alice", role="reviewer")
    wide = auth.token_check(auth.token_create(name="wide", user="alice"))
    narrow = auth.token_check(auth.token_create(name="narrow", user="alice", projects=["search"]))
    assert wide.caller.roles == {"billing": "agent", "search": "reviewer"}
    assert narrow.caller.roles == {"search": "reviewer"}
    assert wide.caller.label == "agent:alice/wide" and wide.caller.claimant != narrow.caller.claimant
    with pytest.raises(auth.TokenError, match="not a member of project"):
        auth.token_create(name="too-wide", user="alice", projects=["default"])
    with pytest.raises(auth.TokenError, match="No active user named 'ghost'"):
        auth.token_create(name="ghost-laptop", user="ghost")


def test_a_superusers_token_narrowed_to_a_project_does_everything_there_only():
    services.project_create(name="billing")
    get_user_model().objects.create_superuser("root", password=None)
    holder = auth.token_check(auth.token_create(name="root-laptop", user="root", projects=["billing"]))
    assert holder.caller.allows(access.MANAGE, "billing") and not holder.caller.allows(access.VIEW, "default")


def test_an_inactive_users_token_is_refused():
    services.project_grant(project="default", username="alice", role="agent")
    token = auth.token_create(name="laptop", user="alice")
    get_user_model().objects.filter(username="alice").update(is_active=False)
    assert auth.token_check(token) is None
