"""`manage.py mcp` as a real subprocess on a fresh data directory, driven over stdio by the
SDK's client: a whole session, then compaction recovery from a new process.

The server is started through a small tee that copies everything the server writes to
stdout into a file, so the test can check that stdout carried JSON-RPC and nothing else.
These tests use their own data directory, never the test database.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import MANAGE, PYTHON, REPO
from tests.mcp_bridge.helpers import body_of, error, ok, plan_args
from validation.replay import server_environment

pytestmark = pytest.mark.slow

# Copies the server's stdout to a file line by line while passing it on; the server's
# stdin is inherited, so the client's EOF reaches the server directly.
TEE = """
import subprocess, sys
out_path, err_path, *command = sys.argv[1:]
with open(out_path, "ab") as copy, open(err_path, "ab") as err:
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err)
    for line in iter(child.stdout.readline, b""):
        copy.write(line)
        copy.flush()
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    sys.exit(child.wait())
"""

LOG_KEYS = {"time", "level", "logger", "msg"}


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a user's shell: no test settings, 9plan pointed at ``data_dir``."""
    return server_environment(data_dir, log_level="info", **extra)


def teed_server(data_dir: Path, stdout_copy: Path, stderr_log: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=PYTHON,
        args=["-c", TEE, str(stdout_copy), str(stderr_log), PYTHON, MANAGE, "mcp"],
        env=server_env(data_dir, **env),
        cwd=str(REPO),
    )


def assert_only_json_rpc(stdout_copy: Path) -> list[dict]:
    raw = stdout_copy.read_bytes()
    assert raw.endswith(b"\n")
    messages = []
    for line in raw.decode("utf-8").split("\n")[:-1]:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0", line
        assert ("method" in message) or ("id" in message and ("result" in message) != ("error" in message)), line
        messages.append(message)
    return messages


def assert_json_logs(stderr_log: Path) -> list[dict]:
    entries = []
    for line in stderr_log.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        assert set(entry) >= LOG_KEYS, line
        assert entry["level"] in {"debug", "info", "warn", "error"}, line
        entries.append(entry)
    return entries


@pytest.mark.anyio
async def test_a_whole_session_over_stdio_then_recovery_from_a_new_process(tmp_path):
    data_dir = tmp_path / "data"
    stdout_copy, stderr_log = tmp_path / "stdout.jsonl", tmp_path / "stderr.log"
    params = teed_server(data_dir, stdout_copy, stderr_log)
    assert not data_dir.exists()

    with anyio.fail_after(180):  # a hung server fails the test instead of the whole run
        async with Client(params) as client:
            assert "9plan_queue_pull" in client.instructions
            assert len((await client.list_tools()).tools) == 16

            r = await client.call_tool("9plan_session_create", {"task_description": "Build a note keeper"})
            name = r.structured_content["session_name"]
            ok(r, name)
            plans = data_dir / "sessions" / name / "plans"
            assert plans.is_dir()

            a = ok(await client.call_tool("9plan_queue_add", plan_args(goal="Write the storage layer")), name)[
                "plan_id"
            ]
            batch = ok(
                await client.call_tool(
                    "9plan_queue_add_batch",
                    {
                        "plans": [plan_args(goal="Design the note schema"), plan_args(goal="Write the CLI")],
                        "position": "front",
                    },
                ),
                name,
            )
            b, c = (p["plan_id"] for p in batch["plans"])

            r = await client.call_tool("9plan_queue_pull", {})
            assert ok(r, name)["plan_id"] == b
            assert "# Goal\nDesign the note schema\n" in body_of(r)
            ok(await client.call_tool("9plan_plan_note", {"text": "Notes have a title and tags."}), name)
            path = plans / f"{b}.txt"
            path.write_text(
                path.read_text(encoding="utf-8") + "\nEdited in the file: tags are lowercase.\n", encoding="utf-8"
            )
            ok(await client.call_tool("9plan_plan_defer", {"reason": "Waiting on the tag format"}), name)

            assert ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"] == c
            ok(
                await client.call_tool(
                    "9plan_plan_complete", {"outcome": "CLI in notekeeper/cli.py with add and list"}
                ),
                name,
            )
            assert not (plans / f"{c}.txt").exists()

            assert ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"] == a
            ok(await client.call_tool("9plan_plan_discard", {"reason": "The CLI stores notes itself"}), name)

            hits = ok(await client.call_tool("9plan_history_search", {"query": "notekeeper cli"}), name)["results"]
            assert [h["id"] for h in hits] == [c]
            got = ok(await client.call_tool("9plan_history_get", {"plan_id": c}), name)
            assert got["outcome"] == "CLI in notekeeper/cli.py with add and list"
            error(await client.call_tool("9plan_history_get", {"plan_id": a}), "PLAN_NOT_FOUND", name)

            # Leave the deferred plan active, as if the agent's context were lost mid-work.
            assert ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"] == b
            assert ok(await client.call_tool("9plan_admin_validate", {}), name)["valid"] is True

        first_run = len(assert_only_json_rpc(stdout_copy))

        # A new process knows nothing of the old connection: recovery is by name. This
        # client uses the initialize handshake that older clients still send.
        async with Client(params, mode="legacy") as client:
            error(await client.call_tool("9plan_admin_state", {}), "NO_SESSION_SELECTED", None)
            sessions = ok(await client.call_tool("9plan_admin_sessions", {}), None)["sessions"]
            assert [s["name"] for s in sessions] == [name]
            state = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
            assert state["active_plan"]["id"] == b
            assert (state["queue"], state["completed_count"]) == ([], 1)
            assert state["task_description"] == "Build a note keeper"
            ok(await client.call_tool("9plan_plan_complete", {"outcome": "Schema: title, body, lowercase tags"}), name)
            notes = ok(await client.call_tool("9plan_history_get", {"plan_id": b}), name)["notes"]
            for fragment in [
                "Notes have a title and tags.",
                "Edited in the file: tags are lowercase.",
                "Waiting on the tag format",
            ]:
                assert fragment in notes
            error(await client.call_tool("9plan_queue_pull", {}), "QUEUE_EMPTY", name)
            assert ok(await client.call_tool("9plan_admin_validate", {}), name)["valid"] is True

    messages = assert_only_json_rpc(stdout_copy)
    assert len(messages) > first_run
    assert any("result" in m and "serverInfo" in m["result"] for m in messages[first_run:])  # the handshake
    assert list(plans.iterdir()) == []
    assert (data_dir / "db.sqlite3").is_file()

    logs = assert_json_logs(stderr_log)
    assert any(entry.get("session") == name and entry["msg"] == "plan completed" for entry in logs)
    assert not [entry for entry in logs if entry["level"] == "error"]


@pytest.mark.anyio
async def test_the_server_reports_an_expired_claim_leaves_it_held_and_stdout_stays_json_rpc(tmp_path):
    data_dir = tmp_path / "data"
    stdout_copy, stderr_log = tmp_path / "stdout.jsonl", tmp_path / "stderr.log"
    params = teed_server(data_dir, stdout_copy, stderr_log, NINEPLAN_RECLAIM_INTERVAL="1")
    expired_msg = "lease expired, claim still held until another worker pulls"

    with anyio.fail_after(180):
        async with Client(params) as client:
            r = await client.call_tool("9plan_session_create", {"lease_seconds": 1})
            name = r.structured_content["session_name"]
            plan_id = ok(await client.call_tool("9plan_queue_add", plan_args(goal="Thought about for long")), name)[
                "plan_id"
            ]
            pulled = ok(await client.call_tool("9plan_queue_pull", {"worker": "thinker"}), name)
            assert pulled["worker"] == "thinker" and pulled["attempt"] == 1
            # Nobody else wants the plan: the sweep reports the expired claim and leaves it.
            for _ in range(60):
                await anyio.sleep(0.25)
                if expired_msg in stderr_log.read_text():
                    break
            state = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
            assert state["queue_length"] == 0 and [w["plan_id"] for w in state["workers"]] == [plan_id]
            # The holder's write succeeds, as if its lease had not run out.
            ok(await client.call_tool("9plan_plan_note", {"worker": "thinker", "text": "still thinking"}), name)
            # Another worker's pull takes it: from then on the holder is fenced off.
            await anyio.sleep(1.5)
            again = ok(await client.call_tool("9plan_queue_pull", {"worker": "takes-over"}), name)
            assert again["plan_id"] == plan_id and again["attempt"] == 2
            refused = error(
                await client.call_tool("9plan_plan_complete", {"worker": "thinker", "outcome": "done"}),
                "LEASE_LOST",
                name,
            )
            assert plan_id in refused["message"]
    assert_only_json_rpc(stdout_copy)
    logs = assert_json_logs(stderr_log)
    reported = [entry for entry in logs if entry["msg"] == expired_msg]
    assert reported and reported[0]["plan"] == plan_id and reported[0]["worker"] == "thinker"
    # One reclaim only: the other worker's pull's.
    assert [entry["worker"] for entry in logs if entry["msg"] == "claim reclaimed"] == ["thinker"]


@pytest.mark.anyio
async def test_the_core_set_over_stdio_lists_ten_tools_and_works_a_plan_through(tmp_path):
    # `mcp --tools core` (NINEPLAN_TOOLS=core): the ten tools one agent needs, a whole plan
    # worked with them, and a tool outside the set refused.
    data_dir = tmp_path / "data"
    stdout_copy, stderr_log = tmp_path / "stdout.jsonl", tmp_path / "stderr.log"
    params = teed_server(data_dir, stdout_copy, stderr_log, NINEPLAN_TOOLS="core")
    with anyio.fail_after(180):
        async with Client(params) as client:
            assert "CORE SET" in client.instructions
            listing = await client.list_tools()
            assert len(listing.tools) == 10 and "9plan_plan_discard" not in {t.name for t in listing.tools}
            assert len(listing.model_dump_json(by_alias=True, exclude_none=True).encode()) <= 7 * 1024
            name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
            ok(await client.call_tool("9plan_queue_add", plan_args(goal="Write the parser")), name)
            ok(await client.call_tool("9plan_queue_pull", {}), name)
            ok(await client.call_tool("9plan_plan_note", {"text": "Tokens are split on blanks"}), name)
            ok(await client.call_tool("9plan_plan_complete", {"outcome": "parser.py reads the grammar"}), name)
            found = ok(await client.call_tool("9plan_history_search", {"query": "parser"}), name)
            assert found["results"][0]["goal"] == "Write the parser"
            refused = await client.call_tool("9plan_plan_renew", {})
            assert refused.is_error and "no tool named" in body_of(refused) + str(refused.structured_content)
    assert_only_json_rpc(stdout_copy)
