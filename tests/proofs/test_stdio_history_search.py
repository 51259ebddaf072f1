"""`9plan_history_search` with `scope: "project"` over a real `manage.py mcp` subprocess and
the SDK's stdio client: hits of two sessions of the project, each naming its session, and
never a plan of another project's session in the same database."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import MANAGE, PYTHON, REPO
from tests.mcp_bridge.helpers import ok, plan_args
from tests.proofs.test_stdio_e2e import server_env

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


def server(data_dir: Path, project: str) -> StdioServerParameters:
    # The local user's new sessions go into NINEPLAN_PROJECT.
    return StdioServerParameters(
        command=PYTHON, args=[MANAGE, "mcp"], env=server_env(data_dir, NINEPLAN_PROJECT=project), cwd=str(REPO)
    )


async def finish(client: Client, name: str, goal: str, outcome: str) -> str:
    plan_id = ok(await client.call_tool("9plan_queue_add", plan_args(goal=goal)), name)["plan_id"]
    assert ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"] == plan_id
    ok(await client.call_tool("9plan_plan_note", {"text": f"{goal}: caching the header row"}), name)
    ok(await client.call_tool("9plan_plan_complete", {"outcome": outcome}), name)
    return plan_id


async def new_session(client: Client) -> str:
    return (await client.call_tool("9plan_session_create", {"task_description": "CSV import"})).structured_content[
        "session_name"
    ]


async def test_scope_project_finds_the_projects_sessions_and_never_another_project(tmp_path):
    data_dir = tmp_path / "data"
    with anyio.fail_after(240):  # a hung server fails the test instead of the whole run
        async with Client(server(data_dir, "beta")) as client:
            theirs = await new_session(client)
            foreign = await finish(client, theirs, "Read the CSV header", "header read")

        async with Client(server(data_dir, "alpha")) as client:
            first = await new_session(client)
            a = await finish(client, first, "Parse the CSV header", "parser in csvimport/header.py")
            second = await new_session(client)
            b = await finish(client, second, "Validate header names", "names checked")

            # The Notes are searched: "cache header" is only in them.
            own = ok(await client.call_tool("9plan_history_search", {"query": "cache header"}), second)["results"]
            assert [h["id"] for h in own] == [b]
            data = ok(
                await client.call_tool("9plan_history_search", {"query": "cache header", "scope": "project"}), second
            )
            assert {h["id"]: h["session"] for h in data["results"]} == {a: first, b: second}
            assert foreign not in {h["id"] for h in data["results"]}
