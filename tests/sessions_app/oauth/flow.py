"""Driving the authorization server through its pages with Django's test client: register,
sign in, consent, exchange the code."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

PUBLIC = "http://testserver"
MCP = PUBLIC + "/mcp"
API = PUBLIC + "/api"
REDIRECT = "http://127.0.0.1:17999/callback"


@pytest.fixture
def oauth_on(settings):
    settings.NINEPLAN_OAUTH = True
    settings.NINEPLAN_PUBLIC_URL = PUBLIC
    settings.NINEPLAN_MCP_URL = MCP
    settings.NINEPLAN_API_URL = API
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "OIDC_ISS_ENDPOINT": PUBLIC,
        "DCR_ENABLED": True,
        "CIMD_ENABLED": True,
        # As nineplan.settings has them with NINEPLAN_OAUTH=true: loopback redirects allowed.
        "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    }
    return settings


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def register(client, name: str = "Test agent", redirect: str = REDIRECT) -> str:
    answer = client.post(
        "/oauth/register/",
        data=json.dumps(
            {
                "client_name": name,
                "redirect_uris": [redirect],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            }
        ),
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content
    return answer.json()["client_id"]


def authorize_query(client_id: str, challenge: str, **extra) -> dict:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "resource": MCP,
        "scope": "nineplan",
    }
    query.update(extra)
    return {k: v for k, v in query.items() if v is not None}


def hidden_fields(html: str) -> dict[str, str]:
    fields = {}
    for tag in re.findall(r"<input[^>]*type=\"hidden\"[^>]*>", html):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name:
            fields[name.group(1)] = unescape(value.group(1)) if value else ""
    return fields


def consent(client, query: dict, *, projects: list[str], role: str, allow: bool = True):
    """The consent page's answer to GET, then to the person's choice."""
    page = client.get("/oauth/authorize/?" + urlencode(query))
    assert page.status_code == 200, page.content[:2000]
    form = hidden_fields(page.content.decode())
    form.update({"projects": projects, "role": role})
    if allow:
        form["allow"] = "Allow"
    return page, client.post("/oauth/authorize/?" + urlencode(query), data=form)


def code_of(answer) -> dict[str, str]:
    assert answer.status_code == 302, answer.content[:2000]
    location = answer["Location"]
    assert location.startswith(REDIRECT)
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def exchange(client, client_id: str, code: str, verifier: str, **extra):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": MCP,
    }
    data.update(extra)
    return client.post("/oauth/token/", data={k: v for k, v in data.items() if v is not None})


def refresh(client, client_id: str, refresh_token: str):
    return client.post(
        "/oauth/token/", data={"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    )


def signed_in_tokens(client, user, *, projects: list[str], role: str, resource: str = MCP) -> tuple[str, dict]:
    client_id = register(client)
    client.force_login(user)
    verifier, challenge = pkce()
    _, answer = consent(client, authorize_query(client_id, challenge, resource=resource), projects=projects, role=role)
    got = code_of(answer)
    tokens = exchange(client, client_id, got["code"], verifier, resource=resource)
    assert tokens.status_code == 200, tokens.content
    return client_id, tokens.json()
