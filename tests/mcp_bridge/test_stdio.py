"""A real `manage.py mcp` over stdio: a server whose stdin is a regular file, not a pipe,
still answers in JSON-RPC, and its integer arguments are strict."""

from __future__ import annotations

import json
import subprocess

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import MANAGE, PYTHON, REPO
from tests.mcp_bridge.helpers import error, ok
from tests.proofs.test_stdio_e2e import server_env


@pytest.mark.slow
def test_a_server_reading_requests_from_a_regular_file_answers_in_json_rpc(tmp_path):
    requests = tmp_path / "requests.jsonl"
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "9plan_session_create", "arguments": {"task_description": "from a file"}},
        },
    ]
    requests.write_text("".join(json.dumps(m) + "\n" for m in messages))
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [PYTHON, MANAGE, "mcp"],
            check=False,
            stdin=stdin,
            capture_output=True,
            env=server_env(tmp_path / "data"),
            cwd=str(REPO),
            timeout=120,
        )
    answers = {m["id"]: m for m in map(json.loads, done.stdout.decode().splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "9plan"
    # The SDK ends a call still running when stdin ends, with an answer all the same.
    assert set(answers[2]) & {"result", "error"}
    assert done.returncode == 0


@pytest.mark.slow
@pytest.mark.anyio
async def test_integer_arguments_are_strict_over_a_real_stdio_server(tmp_path):
    params = StdioServerParameters(
        command=PYTHON, args=[MANAGE, "mcp"], env=server_env(tmp_path / "data"), cwd=str(REPO)
    )
    with anyio.fail_after(180):
        async with Client(params) as client:
            for wrong in (True, "1800"):
                for field in ("lease_seconds", "max_attempts"):
                    r = await client.call_tool("9plan_session_create", {"task_description": "t", field: wrong})
                    data = error(r, "VALIDATION_ERROR", None, field=field)
                    assert "input should be a valid integer" in data["message"]
            listed = await client.call_tool("9plan_admin_sessions", {})
            assert listed.structured_content["sessions"] == []  # no refused create made one

            r = await client.call_tool("9plan_session_create", {"task_description": "t", "lease_seconds": 1800})
            name = ok(r, r.structured_content["session_name"])["session_name"]
            r = await client.call_tool("9plan_history_search", {"query": "x", "max_results": True})
            error(r, "VALIDATION_ERROR", name, field="max_results")
            r = await client.call_tool("9plan_history_search", {"query": "x", "max_results": 3})
            ok(r, name)
