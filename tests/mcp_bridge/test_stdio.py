"""A server whose stdin is a regular file, not a pipe, still answers in JSON-RPC."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import MANAGE, PYTHON, REPO
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
