"""The authorization server end to end through its pages: discovery, registration, consent,
code exchange, refresh rotation, resource binding, and every bad input refused."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from oauth2_provider.models import AccessToken, Grant, RefreshToken

from sessions_app.models import Consent, Membership, Project, Role
from sessions_app.oauth.tokens import token_grantee
from tests.sessions_app.oauth.flow import (
    API,
    MCP,
    PUBLIC,
    authorize_query,
    code_of,
    consent,
    exchange,
    oauth_on,  # noqa: F401 (fixture)
    pkce,
    refresh,
    register,
    signed_in_tokens,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice(db):
    for name in ("alpha", "beta", "gamma"):
        Project.objects.create(name=name)
    user = get_user_model().objects.create_user("alice", password="pw-alice-123", is_staff=True)
    Membership.objects.create(user=user, project_id="alpha", role=Role.AGENT)
    Membership.objects.create(user=user, project_id="beta", role=Role.MANAGER)
    return user


def tables() -> dict[str, int]:
    return {
        "access": AccessToken.objects.filter(user__isnull=False).count(),
        "refresh": RefreshToken.objects.filter(revoked__isnull=True).count(),
        "grants": Grant.objects.count(),
        "consents": Consent.objects.count(),
    }


def test_metadata_says_code_with_s256_only_and_the_issuer(client, oauth_on):
    meta = client.get("/.well-known/oauth-authorization-server").json()
    assert meta["issuer"] == PUBLIC
    assert meta["response_types_supported"] == ["code"]
    assert meta["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert meta["client_id_metadata_document_supported"] is True
    assert meta["registration_endpoint"] == PUBLIC + "/oauth/register/"
    assert meta["authorization_endpoint"] == PUBLIC + "/oauth/authorize/"


def test_everything_is_404_while_oauth_is_off(client, settings):
    settings.NINEPLAN_OAUTH = False
    assert client.get("/.well-known/oauth-authorization-server").status_code == 404
    assert client.post("/oauth/register/", data="{}", content_type="application/json").status_code == 404


def test_the_flow_gives_a_token_narrowed_to_the_choice(client, alice, oauth_on):
    client_id = register(client, name="Claude")
    client.force_login(alice)
    verifier, challenge = pkce()
    page, answer = consent(client, authorize_query(client_id, challenge), projects=["alpha"], role="agent")
    text = page.content.decode()
    assert "Claude" in text and "registered itself" in text and "127.0.0.1:17999" in text
    got = code_of(answer)
    assert got["state"] == "st-1" and got["iss"] == PUBLIC  # RFC 9207
    tokens = exchange(client, client_id, got["code"], verifier).json()
    stored = AccessToken.objects.get(user=alice)
    assert stored.token == "" and stored.token_checksum  # kept hashed only
    grantee = token_grantee(tokens["access_token"], MCP)
    assert grantee is not None
    assert dict(grantee.caller.roles) == {"alpha": "agent"}
    assert grantee.caller.claimant == f"oauth:{grantee.consent_id}"
    # Bound to the MCP endpoint: the REST API refuses it, and so does any other resource.
    assert token_grantee(tokens["access_token"], API) is None
    assert token_grantee(tokens["access_token"], "https://elsewhere.example/mcp") is None
    client.logout()
    assert client.get("/api/sessions/", HTTP_AUTHORIZATION="Bearer " + tokens["access_token"]).status_code == 401


def test_a_token_for_the_api_works_there_and_not_on_mcp(client, alice, oauth_on):
    _, tokens = signed_in_tokens(client, alice, projects=["beta"], role="reader", resource=API)
    client.logout()
    answer = client.get("/api/sessions/", HTTP_AUTHORIZATION="Bearer " + tokens["access_token"])
    assert answer.status_code == 200, answer.content
    assert token_grantee(tokens["access_token"], MCP) is None


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_family(client, alice, oauth_on):
    client_id, tokens = signed_in_tokens(client, alice, projects=["alpha"], role="agent")
    renewed = refresh(client, client_id, tokens["refresh_token"])
    assert renewed.status_code == 200, renewed.content
    second = renewed.json()
    assert second["refresh_token"] != tokens["refresh_token"]
    assert token_grantee(second["access_token"], MCP) is not None
    assert token_grantee(tokens["access_token"], MCP) is None  # the old access token went with rotation
    replay = refresh(client, client_id, tokens["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    # The whole family is gone: the live access token and the newest refresh token too.
    assert token_grantee(second["access_token"], MCP) is None
    assert refresh(client, client_id, second["refresh_token"]).status_code == 400


def test_a_code_is_good_once(client, alice, oauth_on):
    client_id = register(client)
    client.force_login(alice)
    verifier, challenge = pkce()
    _, answer = consent(client, authorize_query(client_id, challenge), projects=["alpha"], role="agent")
    code = code_of(answer)["code"]
    assert exchange(client, client_id, code, verifier).status_code == 200
    before = tables()
    again = exchange(client, client_id, code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert exchange(client, client_id, "wrong-code", verifier).status_code == 400
    assert tables()["access"] <= before["access"]


def test_a_pkce_verifier_that_does_not_match_is_refused(client, alice, oauth_on):
    client_id = register(client)
    client.force_login(alice)
    _, challenge = pkce()
    _, answer = consent(client, authorize_query(client_id, challenge), projects=["alpha"], role="agent")
    code = code_of(answer)["code"]
    other_verifier, _ = pkce()
    refused = exchange(client, client_id, code, other_verifier)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    assert tables()["access"] == 0


def test_plain_pkce_and_no_pkce_and_implicit_are_refused(client, alice, oauth_on):
    client_id = register(client)
    client.force_login(alice)
    verifier, _ = pkce()
    for query in (
        authorize_query(client_id, None, code_challenge_method=None),
        authorize_query(client_id, verifier, response_type="token"),
    ):
        answer = client.get("/oauth/authorize/", query)
        assert answer.status_code in (302, 400), query
        if answer.status_code == 302:
            assert "error=" in answer["Location"] and "code=" not in answer["Location"]
    # "plain" is refused when the code would be made, after the person's consent.
    _, answer = consent(
        client, authorize_query(client_id, verifier, code_challenge_method="plain"), projects=["alpha"], role="agent"
    )
    assert answer.status_code == 302 and "error=invalid_request" in answer["Location"]
    assert "code=" not in answer["Location"]
    assert Grant.objects.count() == 0 and Consent.objects.count() == 0


def test_an_unregistered_redirect_uri_is_refused_without_a_redirect(client, alice, oauth_on):
    client_id = register(client)
    client.force_login(alice)
    _, challenge = pkce()
    answer = client.get(
        "/oauth/authorize/", authorize_query(client_id, challenge, redirect_uri="https://evil.example/cb")
    )
    assert answer.status_code == 400
    assert Grant.objects.count() == 0


def test_a_resource_of_another_server_is_refused(client, alice, oauth_on):
    client_id = register(client)
    client.force_login(alice)
    _, challenge = pkce()
    answer = client.get(
        "/oauth/authorize/", authorize_query(client_id, challenge, resource="https://elsewhere.example/mcp")
    )
    assert answer.status_code == 400
    assert b"not served here" in answer.content
    assert tables() == {"access": 0, "refresh": 0, "grants": 0, "consents": 0}


def test_a_role_above_the_persons_own_is_refused(client, alice, oauth_on):
    client_id = register(client)
    client.force_login(alice)
    _, challenge = pkce()
    page, answer = consent(client, authorize_query(client_id, challenge), projects=["alpha"], role="manager")
    assert answer.status_code == 200 and Grant.objects.count() == 0 and Consent.objects.count() == 0
    _, answer = consent(client, authorize_query(client_id, challenge), projects=["gamma"], role="reader")
    assert answer.status_code == 200 and Grant.objects.count() == 0 and Consent.objects.count() == 0


def test_a_removed_member_and_an_expired_token_are_refused(client, alice, oauth_on):
    _, tokens = signed_in_tokens(client, alice, projects=["alpha"], role="agent")
    assert token_grantee(tokens["access_token"], MCP) is not None
    Membership.objects.filter(user=alice, project_id="alpha").delete()
    assert token_grantee(tokens["access_token"], MCP) is None
    Membership.objects.create(user=alice, project_id="alpha", role=Role.REVIEWER)
    narrowed = token_grantee(tokens["access_token"], MCP)
    assert narrowed is not None and dict(narrowed.caller.roles) == {"alpha": "reader"}
    from datetime import timedelta

    from django.utils import timezone

    AccessToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    assert token_grantee(tokens["access_token"], MCP) is None


def test_the_deploy_check_warns_when_oauth_is_on_without_https(oauth_on):
    from sessions_app.oauth.checks import oauth_over_https

    assert [w.id for w in oauth_over_https(None)] == ["nineplan.W101"]
    oauth_on.NINEPLAN_PUBLIC_URL = "https://9plan.example.com"
    oauth_on.NINEPLAN_MCP_URL = "https://9plan.example.com/mcp"
    assert oauth_over_https(None) == []
