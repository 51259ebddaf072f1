"""Connected apps in the admin: people see and revoke their own clients, a project's managers
those of their projects, superusers all; a revoked client is refused on its next request."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from mcp_bridge import sweep
from sessions_app.models import Consent, Membership, Project, Role
from sessions_app.oauth.tokens import token_grantee
from tests.sessions_app.oauth.flow import MCP, oauth_on, signed_in_tokens  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)

LIST = "/admin/sessions_app/consent/"


@pytest.fixture
def team(db):
    for name in ("alpha", "beta"):
        Project.objects.create(name=name)
    User = get_user_model()
    people = {
        name: User.objects.create_user(name, password="pw-" + name + "-123", is_staff=True)
        for name in ("alice", "bob", "carol")
    }
    Membership.objects.create(user=people["alice"], project_id="alpha", role=Role.AGENT)
    Membership.objects.create(user=people["bob"], project_id="alpha", role=Role.MANAGER)
    Membership.objects.create(user=people["carol"], project_id="beta", role=Role.MANAGER)
    people["root"] = User.objects.create_superuser("root", password="pw-root-123")
    return people


def listed(client, user) -> str:
    client.force_login(user)
    page = client.get(LIST)
    assert page.status_code == 200
    return page.content.decode()


def test_who_sees_a_connected_app(client, team, oauth_on):
    signed_in_tokens(client, team["alice"], projects=["alpha"], role="agent")
    assert "Test agent" in listed(client, team["alice"])
    assert "Test agent" in listed(client, team["bob"])  # manages alpha
    assert "Test agent" not in listed(client, team["carol"])  # manages beta only
    assert "Test agent" in listed(client, team["root"])


def test_revoking_in_the_admin_refuses_the_next_request(client, team, oauth_on):
    _, tokens = signed_in_tokens(client, team["alice"], projects=["alpha"], role="agent")
    consent = Consent.objects.get()
    client.force_login(team["carol"])
    # Someone who does not see it cannot revoke it: nothing changes.
    client.post(LIST, {"action": "revoke", "_selected_action": [consent.id]})
    assert Consent.objects.filter(id=consent.id).exists()
    assert token_grantee(tokens["access_token"], MCP) is not None
    client.force_login(team["alice"])
    answer = client.post(LIST, {"action": "revoke", "_selected_action": [consent.id]}, follow=True)
    assert "can no longer act for its person" in answer.content.decode()
    assert not Consent.objects.exists()
    assert token_grantee(tokens["access_token"], MCP) is None
    assert not AccessToken.objects.filter(user=team["alice"]).exists()
    assert not RefreshToken.objects.filter(user=team["alice"], revoked__isnull=True).exists()


def test_the_sweep_deletes_expired_tokens_and_codes(client, team, oauth_on, monkeypatch):
    _, tokens = signed_in_tokens(client, team["alice"], projects=["alpha"], role="agent")
    _, live = signed_in_tokens(client, team["alice"], projects=["alpha"], role="agent")
    long_ago = timezone.now() - timedelta(days=400)
    AccessToken.objects.filter(user=team["alice"]).exclude(
        id=token_grantee(live["access_token"], MCP).access_token_id
    ).update(expires=long_ago)
    Grant.objects.create(
        user=team["alice"],
        application=AccessToken.objects.filter(user=team["alice"]).first().application,
        code="stale-code",
        expires=long_ago,
        redirect_uri="http://127.0.0.1:17999/callback",
    )
    monkeypatch.setattr(sweep, "next_token_sweep", [timezone.now() - timedelta(seconds=1)])
    sweep.sweep_once()
    assert not Grant.objects.filter(code="stale-code").exists()
    assert token_grantee(live["access_token"], MCP) is not None
    assert AccessToken.objects.filter(user=team["alice"]).count() == 1
