"""The HTTP transport's settings, tokens and token check, in-process (the served app is
exercised through real server processes in tests/proofs/test_http_server.py)."""

from __future__ import annotations

import io
import socket

import anyio
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError

from mcp_bridge import auth, http
from mcp_bridge.models import McpToken

pytestmark = pytest.mark.anyio


# --- settings -----------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_binds_need_no_token_by_default(settings, host):
    config = http.load_config(host=host, port=8123)
    assert http.is_loopback(config.host)
    assert config.require_token is False
    assert "127.0.0.1:*" in config.allowed_hosts and "localhost:*" in config.allowed_hosts


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "agents.example.com"])
def test_any_other_bind_requires_a_token(host):
    assert http.load_config(host=host, port=8123).require_token is True


def test_loopback_can_require_a_token(settings):
    settings.NINEPLAN_HTTP_REQUIRE_TOKEN = True
    assert http.load_config(host="127.0.0.1", port=8123).require_token is True


def test_the_environment_gives_the_defaults(settings):
    settings.NINEPLAN_HTTP_HOST = "192.0.2.7"
    settings.NINEPLAN_HTTP_PORT = 9001
    config = http.load_config()
    assert (config.host, config.port, config.url) == ("192.0.2.7", 9001, "http://192.0.2.7:9001/mcp")
    # Options win over the environment.
    assert http.load_config(host="127.0.0.1", port=9002).url == "http://127.0.0.1:9002/mcp"


@pytest.mark.parametrize(
    "kwargs,source",
    [
        ({"host": "http://0.0.0.0"}, "--host"),
        ({"host": "127.0.0.1:8080"}, "--host"),
        ({"host": ""}, "--host"),
        ({"host": "bad host"}, "--host"),
        ({"host": "a/b"}, "--host"),
        ({"port": 0}, "--port"),
        ({"port": 70000}, "--port"),
        ({"port": -1}, "--port"),
    ],
)
def test_bad_options_are_refused_naming_the_option(kwargs, source):
    with pytest.raises(ImproperlyConfigured) as info:
        http.load_config(**{"host": "127.0.0.1", "port": 8123, **kwargs})
    assert str(info.value).startswith(f"{source}=")


def test_a_bad_host_variable_is_refused_naming_the_variable(settings):
    settings.NINEPLAN_HTTP_HOST = "https://example.com/mcp"
    with pytest.raises(ImproperlyConfigured, match=r"^NINEPLAN_HTTP_HOST='https://example.com/mcp' is not accepted"):
        http.load_config()


@pytest.mark.parametrize(
    "variable,value",
    [
        ("NINEPLAN_HTTP_ALLOWED_ORIGINS", ["example.com"]),
        ("NINEPLAN_HTTP_ALLOWED_ORIGINS", ["https://example.com/path"]),
        ("NINEPLAN_HTTP_ALLOWED_HOSTS", ["exa mple.com"]),
        ("NINEPLAN_HTTP_ALLOWED_HOSTS", ["https://example.com"]),
    ],
)
def test_bad_allowed_lists_are_refused_naming_the_variable(settings, variable, value):
    setattr(settings, variable, value)
    with pytest.raises(ImproperlyConfigured, match=f"^{variable} has"):
        http.load_config(host="127.0.0.1", port=8123)


@pytest.mark.slow
def test_the_settings_module_refuses_a_bad_port_variable(subprocess_env):
    import subprocess

    from tests.conftest import MANAGE, PYTHON, REPO

    env = {**subprocess_env, "NINEPLAN_HTTP_PORT": "80x"}
    done = subprocess.run(
        [PYTHON, MANAGE, "mcp", "--transport", "http"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "NINEPLAN_HTTP_PORT='80x' is not accepted" in done.stderr
    assert done.stdout == ""


def test_allowed_hosts_follow_the_bind_address(settings):
    named = http.load_config(host="192.0.2.10", port=8123).allowed_hosts
    assert "192.0.2.10:*" in named and "192.0.2.10" in named
    everywhere = http.load_config(host="0.0.0.0", port=8123).allowed_hosts
    assert f"{socket.gethostname()}:*" in everywhere
    assert "0.0.0.0:*" not in everywhere  # nobody reaches a server by the wildcard address
    v6 = http.load_config(host="2001:db8::1", port=8123).allowed_hosts
    assert "[2001:db8::1]:*" in v6


def test_extra_hosts_and_origins_are_added(settings):
    settings.NINEPLAN_HTTP_ALLOWED_HOSTS = ["9plan.example.com", "proxy.example.com:8443"]
    settings.NINEPLAN_HTTP_ALLOWED_ORIGINS = ["https://tools.example.com"]
    config = http.load_config(host="127.0.0.1", port=8123)
    assert {"9plan.example.com", "9plan.example.com:*", "proxy.example.com:8443"} <= set(config.allowed_hosts)
    assert "proxy.example.com:8443:*" not in config.allowed_hosts
    origins = set(config.allowed_origins)
    assert {"https://9plan.example.com", "https://tools.example.com", "http://localhost:*"} <= origins
    security = http.transport_security(config)
    assert security.enable_dns_rebinding_protection is True
    assert security.allowed_hosts == list(config.allowed_hosts)
    # Clients reaching a loopback server by a public name come through a proxy: token.
    assert config.require_token is True


def test_extra_loopback_names_do_not_require_a_token(settings):
    settings.NINEPLAN_HTTP_ALLOWED_HOSTS = ["127.0.0.1:8443", "localhost", "[::1]:*"]
    assert http.load_config(host="127.0.0.1", port=8123).require_token is False


def test_a_star_leaves_host_checks_to_a_proxy_but_keeps_the_token(settings):
    settings.NINEPLAN_HTTP_ALLOWED_HOSTS = ["*"]
    config = http.load_config(host="0.0.0.0", port=8123)
    assert config.allowed_hosts == ()
    assert http.transport_security(config).enable_dns_rebinding_protection is False
    assert config.require_token is True


# --- tokens -------------------------------------------------------------------------------


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


@pytest.mark.django_db
def test_the_command_prints_the_token_once_and_lists_without_it():
    call_command("nineplan_project", "create", "billing", stdout=io.StringIO(), stderr=io.StringIO())
    call_command("nineplan_project", "grant", "billing", "ci-bot", "agent", stdout=io.StringIO(), stderr=io.StringIO())
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "nineplan_mcp_token", "create", "build-server", "--user", "ci-bot", "--project", "billing", stdout=out, stderr=err
    )
    token = out.getvalue().strip()
    assert auth.token_check(token).name == "build-server"
    assert auth.token_check(token).caller.roles == {"billing": "agent"}
    assert "shown only this once" in err.getvalue() and "'ci-bot' (projects billing)" in err.getvalue()

    listing = io.StringIO()
    call_command("nineplan_mcp_token", "list", stdout=listing, stderr=io.StringIO())
    lines = listing.getvalue().splitlines()
    assert lines[0].split() == ["NAME", "USER", "PROJECTS", "STATUS", "CREATED", "LAST_USED"]
    assert lines[1].split()[:4] == ["build-server", "ci-bot", "billing", "active"]
    assert token not in listing.getvalue() and auth.digest(token) not in listing.getvalue()

    call_command("nineplan_mcp_token", "revoke", "build-server", stdout=io.StringIO(), stderr=io.StringIO())
    assert auth.token_check(token) is None
    with pytest.raises(CommandError, match="No active token"):
        call_command("nineplan_mcp_token", "revoke", "build-server", stdout=io.StringIO(), stderr=io.StringIO())


# --- the middleware -----------------------------------------------------------------------


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


def test_stateless_serving_is_a_setting(settings):
    assert http.load_config(host="127.0.0.1", port=8123).stateless is False
    settings.NINEPLAN_HTTP_STATELESS = True
    assert http.load_config(host="127.0.0.1", port=8123).stateless is True
