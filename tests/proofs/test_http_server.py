"""`manage.py mcp --transport http` as a real process on the test database, driven by the
SDK's streamable HTTP client and by plain HTTP requests: a whole session, DNS-rebinding
checks, bearer tokens, and refusing to start unprotected."""

from __future__ import annotations

import json
import socket

import pytest

from mcp_bridge import auth
from sessions_app.models import Event, Plan, Session
from tests.mcp_bridge.helpers import body_of, error, in_thread, ok, plan_args, snapshot
from tests.mcp_bridge.http_server import (  # noqa: F401 (start_server is a fixture)
    free_port,
    http_client,
    legacy_session,
    post_json,
    post_tool,
    start_server,
)

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


def tool_result(body: bytes) -> dict:
    """The result of a JSON-RPC answer sent as JSON or as one server-sent event."""
    text = body.decode("utf-8")
    if not text.lstrip().startswith("{"):
        text = next(line[len("data:") :] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)["result"]


async def test_a_whole_session_over_http(start_server, sessions_dir):
    server = start_server()
    async with http_client(server.url) as client:
        # The SDK's client speaks the stateless protocol: no MCP session id, so no
        # current session either, and every call names its session.
        created = await client.call_tool("9plan_session_create", {"task_description": "Port billing"})
        name = created.structured_content["session_name"]
        ok(created, name)
        assert f"pass session_name='{name}' on every call" in created.content[0].text

        unnamed = await client.call_tool("9plan_queue_add", plan_args())
        assert "stateless HTTP" in error(unnamed, "NO_SESSION_SELECTED", None)["message"]

        added = ok(
            await client.call_tool(
                "9plan_queue_add_batch",
                {"plans": [plan_args(goal="Model invoices"), plan_args(goal="Write the API")], "session_name": name},
            ),
            name,
        )
        assert added["added"] == 2
        pulled = await client.call_tool("9plan_queue_pull", {"session_name": name})
        first = ok(pulled, name)["plan_id"]
        assert "# Goal\nModel invoices" in body_of(pulled)
        ok(await client.call_tool("9plan_plan_note", {"text": "Uses UUID keys", "session_name": name}), name)
        outcome = {"outcome": "Invoice model in billing/models.py", "session_name": name}
        ok(await client.call_tool("9plan_plan_complete", outcome), name)
        found = ok(await client.call_tool("9plan_history_search", {"query": "invoice", "session_name": name}), name)
        assert [r["id"] for r in found["results"]] == [first]
        second = ok(await client.call_tool("9plan_queue_pull", {"session_name": name}), name)["plan_id"]
        ok(await client.call_tool("9plan_plan_defer", {"reason": "Needs the schema", "session_name": name}), name)
        resumed = await client.call_tool("9plan_session_resume", {"session_name": name})
        assert ok(resumed, name)["queue"] == [{"id": second, "goal": "Write the API", "queue_position": 1}]
        assert "pass session_name" in resumed.content[0].text
        assert ok(await client.call_tool("9plan_admin_validate", {"session_name": name}), name)["valid"] is True

    done = await in_thread(Plan.objects.get, id=first)
    assert (done.status, done.notes) == ("completed", "Uses UUID keys")
    assert done.outcome == "Invoice model in billing/models.py"
    waiting = await in_thread(Plan.objects.get, id=second)
    assert waiting.status == "queued" and "Deferred" in waiting.notes and "Needs the schema" in waiting.notes
    # Its agents are on other machines: `mcp --transport http` keeps no plan files.
    assert not (sessions_dir / name).exists()
    kinds = await in_thread(lambda: list(Event.objects.filter(session_id=name).values_list("kind", flat=True)))
    assert kinds.count("plan_pulled") == 2 and "plan_completed" in kinds and "plan_deferred" in kinds


async def test_the_environment_chooses_transport_and_port(start_server):
    port = free_port()
    server = start_server(options=False, port=port, NINEPLAN_TRANSPORT="http", NINEPLAN_HTTP_PORT=str(port))
    async with http_client(server.url) as client:
        listed = ok(await client.call_tool("9plan_admin_sessions", {}), None)
    assert listed["total"] == await in_thread(Session.objects.count)


async def test_a_client_with_an_mcp_session_keeps_its_current_session(start_server):
    server = start_server()
    async with http_client(server.url, mode="legacy") as one, http_client(server.url, mode="legacy") as two:
        first = (await one.call_tool("9plan_session_create", {})).structured_content["session_name"]
        second = (await two.call_tool("9plan_session_create", {})).structured_content["session_name"]
        # Each connection's current session is its own, though one process serves both.
        ok(await one.call_tool("9plan_queue_add", plan_args(goal="for one")), first)
        ok(await two.call_tool("9plan_queue_add", plan_args(goal="for two")), second)
    goals = await in_thread(lambda: dict(Plan.objects.values_list("session_id", "goal")))
    assert goals == {first: "for one", second: "for two"}


async def test_stateless_servers_let_any_process_answer_an_older_protocol_client(start_server):
    a, b = start_server(NINEPLAN_HTTP_STATELESS="true"), start_server(NINEPLAN_HTTP_STATELESS="true")
    async with http_client(a.url, mode="legacy") as client:
        created = await client.call_tool("9plan_session_create", {})
        name = created.structured_content["session_name"]
        assert "pass session_name" in created.content[0].text  # no MCP session, so no memory
        version = client.protocol_version
    # The other process never saw this client's handshake, and needs not have.
    params = {"name": "9plan_queue_add", "arguments": plan_args(session_name=name)}
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    code, headers, body = post_json(b.url, call, {"mcp-protocol-version": version})
    assert code == 200, body
    assert "mcp-session-id" not in {k.lower() for k in headers}
    assert tool_result(body)["structuredContent"]["session_name"] == name
    assert await in_thread(Plan.objects.filter(session_id=name).count) == 1


@pytest.mark.parametrize(
    "headers,status",
    [
        ({"Host": "evil.example"}, 421),
        ({"Host": "evil.example:8080"}, 421),
        ({"Host": "127.0.0.1.evil.example"}, 421),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "https://localhost.evil.example"}, 403),
        ({"Origin": "null"}, 403),
    ],
)
async def test_a_foreign_host_or_origin_is_rejected_and_changes_nothing(start_server, sessions_dir, headers, status):
    server = start_server()
    before = await in_thread(snapshot, sessions_dir)
    code, _, body = post_tool(server.url, "9plan_session_create", {"task_description": "rebound"}, headers)
    assert code == status, body
    assert await in_thread(snapshot, sessions_dir) == before
    # The same request from a page of this server's own origin goes through.
    code, _, body = post_tool(server.url, "9plan_session_create", {}, {"Origin": f"http://localhost:{server.port}"})
    assert code == 200 and not tool_result(body)["isError"]
    assert await in_thread(Session.objects.count) == len(before["sessions"]) + 1


async def test_configured_host_names_are_accepted(start_server):
    # Names beyond loopback mean clients come from elsewhere (a proxy): a token is needed.
    token = await in_thread(auth.token_create, name="proxy")
    server = start_server(NINEPLAN_HTTP_ALLOWED_HOSTS="9plan.example.com")
    bearer = {"Authorization": f"Bearer {token}"}
    code, _, body = post_tool(server.url, "9plan_admin_sessions", {}, {"Host": "9plan.example.com", **bearer})
    assert code == 200 and not tool_result(body)["isError"]
    code, _, _ = post_tool(server.url, "9plan_admin_sessions", {}, {"Host": "other.example.com", **bearer})
    assert code == 421
    code, _, _ = post_tool(server.url, "9plan_admin_sessions", {}, {"Host": "9plan.example.com"})
    assert code == 401


def test_a_non_loopback_bind_without_a_token_refuses_to_start(start_server):
    server = start_server("--host", "0.0.0.0", wait=False)
    assert server.wait_exit() != 0
    assert "needs a bearer token" in server.stderr
    assert "0.0.0.0, which is not a loopback address" in server.stderr
    assert "nineplan_mcp_token create NAME" in server.stderr
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()


def test_a_loopback_bind_requiring_a_token_refuses_to_start_without_one(start_server):
    server = start_server(wait=False, NINEPLAN_HTTP_REQUIRE_TOKEN="true")
    assert server.wait_exit() != 0
    assert "NINEPLAN_HTTP_REQUIRE_TOKEN is true" in server.stderr


def test_a_proxied_loopback_bind_without_a_token_refuses_to_start(start_server):
    server = start_server(wait=False, NINEPLAN_HTTP_ALLOWED_HOSTS="9plan.example.com")
    assert server.wait_exit() != 0
    assert "NINEPLAN_HTTP_ALLOWED_HOSTS lets clients reach it by other names" in server.stderr


def test_a_revoked_token_does_not_count(start_server):
    auth.token_create(name="old")
    auth.token_revoke(name="old")
    server = start_server("--host", "0.0.0.0", wait=False)
    assert server.wait_exit() != 0
    assert "no active token exists" in server.stderr


async def test_with_a_token_required_a_missing_or_wrong_token_gets_401_and_changes_nothing(start_server, sessions_dir):
    token = await in_thread(auth.token_create, name="agent")
    other = await in_thread(auth.token_create, name="other")
    server = start_server("--host", "0.0.0.0")
    before = await in_thread(snapshot, sessions_dir)
    for headers in (
        {},
        {"Authorization": "Bearer 9plan_wrong"},
        {"Authorization": f"Bearer {token[:-1]}"},
        {"Authorization": f"Basic {token}"},
        {"Authorization": auth.digest(token)},
    ):
        code, response_headers, body = post_tool(server.url, "9plan_session_create", {"task_description": "x"}, headers)
        assert code == 401, (headers, body)
        assert response_headers["www-authenticate"].startswith('Bearer realm="9plan"')
        assert json.loads(body)["error"] == "invalid_token"
    assert await in_thread(snapshot, sessions_dir) == before

    # The SDK's client with the right token works, through either protocol.
    async with http_client(server.url, token) as client:
        name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
        ok(await client.call_tool("9plan_queue_add", plan_args(session_name=name)), name)
    async with http_client(server.url, other, mode="legacy") as client:
        ok(await client.call_tool("9plan_queue_add", plan_args(session_name=name)), name)
    assert await in_thread(Plan.objects.filter(session_id=name).count) == 2

    # Revoked: refused from the next request on, without a restart.
    await in_thread(auth.token_revoke, name="agent")
    revoked = {"Authorization": f"Bearer {token}"}
    code, _, _ = post_tool(server.url, "9plan_queue_add", plan_args(session_name=name), revoked)
    assert code == 401
    assert await in_thread(Plan.objects.filter(session_id=name).count) == 2


async def test_an_mcp_session_belongs_to_the_token_that_opened_it(start_server):
    import httpx2

    token = await in_thread(auth.token_create, name="agent")
    other = await in_thread(auth.token_create, name="other")
    server = start_server(NINEPLAN_HTTP_REQUIRE_TOKEN="true")
    session_ids = []

    async def remember(response):
        if "mcp-session-id" in response.headers:
            session_ids.append(response.headers["mcp-session-id"])

    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, event_hooks={"response": [remember]}, timeout=60
    ) as http:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client:
            await client.call_tool("9plan_admin_sessions", {})
            params = {"name": "9plan_admin_sessions", "arguments": {}}
            call = {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": params}
            legacy = {"mcp-session-id": session_ids[0], "mcp-protocol-version": client.protocol_version}
            # Another token presenting this MCP session's id is told the session does not exist.
            code, _, _ = post_json(server.url, call, {**legacy, "Authorization": f"Bearer {other}"})
            assert code == 404
            code, _, body = post_json(server.url, call, {**legacy, "Authorization": f"Bearer {token}"})
            assert code == 200, body


async def test_a_wrong_token_is_refused_even_where_none_is_required(start_server, sessions_dir):
    # Loopback, NINEPLAN_HTTP_REQUIRE_TOKEN unset: no token is needed, but one that is
    # sent must be valid, so a typo shows at once instead of when tokens become required.
    token = await in_thread(auth.token_create, name="alice-laptop")
    await in_thread(auth.token_create, name="retired")
    await in_thread(auth.token_revoke, name="retired")
    server = start_server()
    before = await in_thread(snapshot, sessions_dir)
    for headers in (
        {"Authorization": f"Bearer {token[:-1]}"},
        {"Authorization": "Bearer 9plan_wrong"},
        {"Authorization": f"Bearer: {token}"},
        {"Authorization": f"Token {token}"},
        {"Authorization": "Bearer"},
        {"Authorization": token},
    ):
        code, response_headers, body = post_tool(server.url, "9plan_session_create", {"task_description": "x"}, headers)
        assert code == 401, (headers, body)
        assert 'error="invalid_token"' in response_headers["www-authenticate"]
        assert "always checked" in json.loads(body)["error_description"]
    assert await in_thread(snapshot, sessions_dir) == before
    assert '"problem": "invalid"' in server.stderr

    code, _, body = post_tool(server.url, "9plan_session_create", {}, {"Authorization": f"Bearer {token}"})
    assert code == 200 and not tool_result(body)["isError"], body
    code, _, body = post_tool(server.url, "9plan_session_create", {})
    assert code == 200 and not tool_result(body)["isError"], body
    assert await in_thread(Session.objects.count) == len(before["sessions"]) + 2


async def test_events_over_http_name_the_token_that_made_them(start_server):
    alice = await in_thread(auth.token_create, name="alice-laptop")
    build = await in_thread(auth.token_create, name="build-server")
    server = start_server()
    async with http_client(server.url, alice) as client:
        name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
        ok(
            await client.call_tool(
                "9plan_queue_add_batch", {"plans": [plan_args(), plan_args()], "session_name": name}
            ),
            name,
        )
    async with http_client(server.url, build, mode="legacy") as client:
        ok(await client.call_tool("9plan_queue_pull", {"session_name": name}), name)
        ok(await client.call_tool("9plan_plan_note", {"text": "n", "session_name": name}), name)
    async with http_client(server.url) as client:  # loopback without a token: the local user
        # A worker is its token and its name: the local default worker holds nothing yet.
        refused = await client.call_tool("9plan_plan_note", {"text": "n", "session_name": name})
        assert refused.is_error and refused.structured_content["error"] == "NO_ACTIVE_PLAN"
        ok(await client.call_tool("9plan_queue_pull", {"session_name": name}), name)
        ok(await client.call_tool("9plan_plan_note", {"text": "n", "session_name": name}), name)
    actors = await in_thread(
        lambda: list(Event.objects.filter(session_id=name).order_by("id").values_list("kind", "actor"))
    )
    assert actors == [
        ("session_created", "agent:alice-laptop"),
        ("plan_created", "agent:alice-laptop"),
        ("plan_created", "agent:alice-laptop"),
        ("plan_pulled", "agent:build-server"),
        ("plan_note", "agent:build-server"),
        ("plan_pulled", "agent"),
        ("plan_note", "agent"),
    ]


async def test_another_tokens_mcp_session_id_reaches_nothing_of_its_state(start_server, sessions_dir):
    owner = await in_thread(auth.token_create, name="owner")
    intruder = await in_thread(auth.token_create, name="intruder")
    server = start_server()
    async with legacy_session(server.url, owner) as (client, session_id):
        mine = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
        before = await in_thread(snapshot, sessions_dir)
        # A stateless request is not checked against the MCP session by the SDK; it carries
        # the owner's id, but the intruder's token.
        code, _, body = post_tool(
            server.url,
            "9plan_queue_add",
            plan_args(goal="planted"),
            {"Authorization": f"Bearer {intruder}", "mcp-session-id": session_id},
        )
        assert code == 200, body
        result = tool_result(body)
        assert result["isError"] and result["structuredContent"]["error"] == "NO_SESSION_SELECTED", result
        assert result["content"][0]["text"].startswith("[Session: none] Error: NO_SESSION_SELECTED")
        assert await in_thread(snapshot, sessions_dir) == before
        # The owner's connection still has its current session.
        ok(await client.call_tool("9plan_queue_add", plan_args(goal="mine")), mine)
    assert await in_thread(lambda: list(Plan.objects.values_list("session_id", "goal"))) == [(mine, "mine")]


async def test_on_a_stateless_server_a_session_id_is_bound_to_the_token_that_used_it(start_server, sessions_dir):
    owner = await in_thread(auth.token_create, name="owner")
    intruder = await in_thread(auth.token_create, name="intruder")
    server = start_server(NINEPLAN_HTTP_STATELESS="true")
    legacy = "2025-06-18"

    def call(token: str, name: str, arguments: dict):
        params = {"name": name, "arguments": arguments}
        payload = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        # A stateless server checks no MCP session id: the client may send any.
        headers = {"Authorization": f"Bearer {token}", "mcp-session-id": "chosen", "mcp-protocol-version": legacy}
        code, _, body = post_json(server.url, payload, headers)
        assert code == 200, body
        return tool_result(body)

    created = call(owner, "9plan_session_create", {})
    mine = created["structuredContent"]["session_name"]
    before = await in_thread(snapshot, sessions_dir)
    refused = call(intruder, "9plan_queue_add", plan_args(goal="planted"))
    assert refused["isError"] and refused["structuredContent"]["error"] == "NO_SESSION_SELECTED", refused
    assert await in_thread(snapshot, sessions_dir) == before
    assert call(owner, "9plan_queue_add", plan_args(goal="mine"))["structuredContent"]["session_name"] == mine
    assert await in_thread(lambda: list(Plan.objects.values_list("session_id", "goal"))) == [(mine, "mine")]
