"""An MCP client that knows only the server's URL signs its person in and works within the
chosen project and role: the `mcp` SDK's own OAuth client (OAuthClientProvider) against a
real `manage.py mcp --transport http` process and a real `manage.py serve` process, with
the person signing in and consenting through the real pages over HTTP."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from html import unescape
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
import pytest
from django.contrib.auth import get_user_model
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from sessions_app.models import Consent, Membership, Project, Role, Session
from tests.conftest import MANAGE, PYTHON
from tests.mcp_bridge.helpers import in_thread, text_of
from tests.mcp_bridge.http_server import free_port, start_server  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

REDIRECT = "http://127.0.0.1:17998/callback"
PASSWORD = "a-long-test-password-1"
START_TIMEOUT = 60


class Storage:
    """The client's token store: in memory, as the SDK's examples keep it."""

    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class Person:
    """Signs in on the admin's login page and answers the consent page, as a browser would."""

    def __init__(self, web: str, username: str, *, projects: list[str], role: str):
        self.web, self.username, self.projects, self.role = web, username, projects, role
        self.result: AuthorizationCodeResult | None = None
        self.pages: list[str] = []

    async def redirect(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=60) as browser:
            login = await browser.get(self.web + "/admin/login/")
            form = hidden(login.text)
            form.update(username=self.username, password=PASSWORD, next="/admin/")
            signed_in = await browser.post(self.web + "/admin/login/", data=form)
            assert signed_in.status_code == 302, signed_in.text[:500]
            page = await browser.get(authorization_url)
            assert page.status_code == 200, page.text[:2000]
            self.pages.append(page.text)
            answer = hidden(page.text)
            answer.update(projects=self.projects, role=self.role, allow="Allow")
            action = urljoin(str(page.url), "")
            consented = await browser.post(action, data=answer)
            assert consented.status_code == 302, consented.text[:2000]
            location = consented.headers["location"]
            assert location.startswith(REDIRECT), location
            got = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
            self.result = AuthorizationCodeResult(code=got["code"], state=got.get("state"), iss=got.get("iss"))

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def hidden(html: str) -> dict:
    fields = {}
    for tag in re.findall(r"<input[^>]*>", html):
        name = re.search(r'name="([^"]+)"', tag)
        kind = re.search(r'type="([^"]+)"', tag)
        if name and kind and kind.group(1) == "hidden":
            value = re.search(r'value="([^"]*)"', tag)
            fields[name.group(1)] = unescape(value.group(1)) if value else ""
    return fields


@pytest.fixture
def people(db):
    for name in ("alpha", "beta"):
        Project.objects.create(name=name)
    alice = get_user_model().objects.create_user("alice", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=alice, project_id="alpha", role=Role.AGENT)
    Membership.objects.create(user=alice, project_id="beta", role=Role.AGENT)
    return alice


@pytest.fixture
def servers(subprocess_env, start_server, tmp_path):
    """The web app (`serve`: admin, consent page, token endpoint) and the MCP endpoint."""
    web_port = free_port()
    web = f"http://127.0.0.1:{web_port}"
    env = {
        "NINEPLAN_OAUTH": "true",
        "NINEPLAN_PUBLIC_URL": web,
        "DJANGO_SECURE": "false",
        "NINEPLAN_LOGIN_LOCKOUT": "false",
    }
    mcp_port = free_port()
    env["NINEPLAN_MCP_URL"] = f"http://127.0.0.1:{mcp_port}/mcp"
    logs = tmp_path / "web.log"
    with logs.open("w") as out:
        proc = subprocess.Popen(
            [PYTHON, MANAGE, "serve", "--port", str(web_port), "--workers", "1"],
            env={**subprocess_env, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", web_port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, logs.read_text()
                time.sleep(0.2)
        mcp = start_server(port=mcp_port, **env)
        yield web, mcp.url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def provider(mcp_url: str, person: Person, storage: Storage) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="Proof agent",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.redirect,
        callback_handler=person.callback,
    )


async def test_an_mcp_client_signs_in_works_refreshes_and_is_refused_after_revocation(servers, people):
    web, mcp_url = servers
    # Without a token the endpoint says where its metadata is (RFC 9728).
    async with httpx2.AsyncClient(timeout=30) as plain:
        refused = await plain.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        assert 'resource_metadata="' in refused.headers["www-authenticate"]
        meta_url = re.search(r'resource_metadata="([^"]+)"', refused.headers["www-authenticate"]).group(1)
        meta = (await plain.get(meta_url)).json()
        assert meta["resource"] == mcp_url
        assert [url.rstrip("/") for url in meta["authorization_servers"]] == [web]

    person = Person(web, "alice", projects=["alpha"], role="agent")
    storage = Storage()
    signing_in = provider(mcp_url, person, storage)
    async with httpx2.AsyncClient(auth=signing_in, timeout=60) as http:
        async with Client(streamable_http_client(mcp_url, http_client=http)) as client:
            made = await client.call_tool("9plan_session_create", {"task_description": "Work", "project": "alpha"})
            assert not made.is_error, text_of(made)
            # Beta is the person's project too, but not one they let this client into.
            elsewhere = await client.call_tool("9plan_session_create", {"task_description": "No", "project": "beta"})
            assert elsewhere.is_error and "no such project of yours; yours are: alpha." in text_of(elsewhere)
    assert "Proof agent" in person.pages[0] and "registered itself" in person.pages[0]
    sessions = await in_thread(lambda: list(Session.objects.values_list("name", "project_id")))
    assert len(sessions) == 1 and sessions[0][1] == "alpha"
    name = sessions[0][0]
    first = storage.tokens
    assert first is not None and first.refresh_token

    # The access token runs out: the client refreshes on its own, and gets a new pair.
    signing_in.context.token_expiry_time = time.time() - 1
    pages_before = len(person.pages)
    async with httpx2.AsyncClient(auth=signing_in, timeout=60) as http:
        async with Client(streamable_http_client(mcp_url, http_client=http)) as client:
            listed = await client.call_tool("9plan_admin_sessions", {})
            assert not listed.is_error and name in text_of(listed)
    assert len(person.pages) == pages_before  # refreshed, not signed in again
    second = storage.tokens
    assert second.access_token != first.access_token and second.refresh_token != first.refresh_token

    # The person revokes the app: its next request is refused.
    from sessions_app.services.consents import consent_revoke

    consent = await in_thread(Consent.objects.get)
    await in_thread(consent_revoke, consent_id=consent.id, by=people)
    async with httpx2.AsyncClient(timeout=30) as plain:
        answer = await plain.post(
            mcp_url,
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Authorization": f"Bearer {second.access_token}"},
        )
        assert answer.status_code == 401


async def test_static_tokens_keep_working_beside_oauth(servers, people):
    from mcp_bridge.auth import token_create
    from tests.mcp_bridge.http_server import http_client

    _, mcp_url = servers
    token = await in_thread(token_create, name="build-server", user="alice", projects=["beta"])
    async with http_client(mcp_url, token) as client:
        made = await client.call_tool("9plan_session_create", {"task_description": "Static", "project": "beta"})
        assert not made.is_error, text_of(made)
    async with httpx2.AsyncClient(timeout=30) as plain:
        wrong = await plain.post(
            mcp_url,
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Authorization": "Bearer 9plan_not-a-token"},
        )
        assert wrong.status_code == 401 and "resource_metadata=" in wrong.headers["www-authenticate"]
    assert await in_thread(lambda: list(Session.objects.values_list("project_id", flat=True))) == ["beta"]
