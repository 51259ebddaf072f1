"""The HTTP transport's tokens and their check (mcp_bridge/auth.py): a token is stored only as
its digest, wrong, revoked and lookalike tokens are refused, names are checked, and the
middleware answers 401 before the app sees a request."""

from __future__ import annotations

import anyio
import pytest

from mcp_bridge import auth
from mcp_bridge.models import McpToken

pytestmark = pytest.mark.anyio


@pytest.mark.django_db
def test_a_token_is_stored_only_as_its_digest():
    token = auth.token_create(name="alice@laptop")
    row = McpToken.objects.get()
    assert token.startswith(auth.TOKEN_PREFIX) and len(token) > 40
    assert row.token_hash == auth.digest(token) and len(row.token_hash) == 64
    assert token not in str(McpToken.objects.values().get())
    holder = auth.token_check(token)
    assert (holder.token_id, holder.name) == (row.id, "alice@laptop")
    # Made without a user, as every token was before tokens belonged to users: the agent
    # role in the default project, and workers of its own.
    assert holder.caller.roles == {"default": "agent"} and not holder.caller.everything
    assert holder.caller.claimant == f"token:{row.id}" and holder.caller.label == "agent:alice@laptop"
    row.refresh_from_db()
    assert row.last_used_at is not None


@pytest.mark.django_db
def test_wrong_revoked_and_lookalike_tokens_are_refused():
    token = auth.token_create(name="ci")
    assert auth.token_check(token + "x") is None
    assert auth.token_check(token.upper()) is None
    assert auth.token_check(auth.digest(token)) is None  # the stored digest is no token
    auth.token_revoke(name="ci")
    assert auth.token_check(token) is None
    row = McpToken.objects.get()
    assert row.revoked and row.revoked_at is not None


@pytest.mark.django_db
def test_names_are_checked_and_unique_among_active_tokens():
    auth.token_create(name="ci")
    with pytest.raises(auth.TokenError, match="active token named 'ci' exists"):
        auth.token_create(name="ci")
    auth.token_revoke(name="ci")
    second = auth.token_create(name="ci")  # the name is free again once revoked
    assert auth.token_check(second).name == "ci"
    for bad in ["", " ci", "a b", "-x", "x" * 101, "naïve", None]:
        with pytest.raises(auth.TokenError, match="is not accepted"):
            auth.token_create(name=bad)
    with pytest.raises(auth.TokenError, match="No active token is named 'nobody'"):
        auth.token_revoke(name="nobody")
    assert McpToken.objects.count() == 2


class Recorder:
    """The app behind the middleware: records what reached it."""

    def __init__(self):
        self.scopes = []

    async def __call__(self, scope, receive, send):
        self.scopes.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def call(app, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict, bytes]:
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "client": ("127.0.0.1", 1)}
    await app(scope, receive, send)
    start = sent[0]
    return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


@pytest.mark.django_db(transaction=True)
async def test_the_middleware_answers_401_before_the_app_sees_anything():
    token = await anyio.to_thread.run_sync(lambda: auth.token_create(name="agent"))
    inner = Recorder()
    app = auth.BearerTokenMiddleware(inner, required=True)

    for headers in (
        [],
        [(b"authorization", b"Bearer wrong")],
        [(b"authorization", f"Basic {token}".encode())],
        [(b"authorization", f"Bearer {token}x".encode())],
        [(b"authorization", f"Bearer {token}".encode()), (b"authorization", f"Bearer {token}".encode())],
    ):
        status, response_headers, body = await call(app, headers)
        assert status == 401, headers
        assert response_headers[b"www-authenticate"].startswith(b'Bearer realm="9plan"')
        assert b"invalid_token" in body
    assert inner.scopes == []

    status, _, body = await call(app, [(b"authorization", f"bearer  {token}".encode())])
    assert (status, body) == (200, b"ok")
    assert inner.scopes[0]["user"].access_token.client_id.startswith("9plan-token:")
    assert inner.scopes[0][auth.HOLDER_KEY].name == "agent"


@pytest.mark.django_db(transaction=True)
async def test_without_a_required_token_only_requests_without_credentials_pass_unchecked():
    token = await anyio.to_thread.run_sync(lambda: auth.token_create(name="agent"))
    inner = Recorder()
    app = auth.BearerTokenMiddleware(inner, required=False)
    status, _, _ = await call(app, [])
    assert status == 200 and len(inner.scopes) == 1
    assert "user" not in inner.scopes[0] and auth.HOLDER_KEY not in inner.scopes[0]

    for headers in (
        [(b"authorization", b"Bearer wrong")],
        [(b"authorization", f"Bearer {token}x".encode())],
        [(b"authorization", f"Basic {token}".encode())],
        [(b"authorization", b"")],
    ):
        status, response_headers, _ = await call(app, headers)
        assert status == 401, headers
        assert b'error="invalid_token"' in response_headers[b"www-authenticate"]
    assert len(inner.scopes) == 1

    status, _, _ = await call(app, [(b"authorization", f"Bearer {token}".encode())])
    assert status == 200 and inner.scopes[1][auth.HOLDER_KEY].name == "agent"
