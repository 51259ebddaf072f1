"""9plan_admin_validate and 9plan_admin_state through the in-memory client."""

from __future__ import annotations

import os
import time

import pytest

from tests.mcp_bridge.helpers import in_thread, ok, plan_args, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

ALL_GOOD = {
    "single_active_plan": True,
    "queue_order_preserved": True,
    "files_match_database": True,
    "no_orphaned_files": True,
}


def documented(invariants: dict[str, bool]) -> dict[str, bool]:
    """The four invariants every answer names (docs/design.md, "Model and invariants");
    more may be checked besides."""
    return {key: invariants[key] for key in ALL_GOOD}


@pytest.fixture
async def busy(client, sessions_dir):
    """A current session with two queued plans, one active and one completed."""
    name = (await client.call_tool("9plan_session_create", {"task_description": "Port billing"})).structured_content[
        "session_name"
    ]
    ids = []
    for goal in ["Done", "Active", "Next", "Last"]:
        ids.append((await client.call_tool("9plan_queue_add", plan_args(goal=goal))).structured_content["plan_id"])
    await client.call_tool("9plan_queue_pull", {})
    await client.call_tool("9plan_plan_complete", {"outcome": "done"})
    await client.call_tool("9plan_queue_pull", {})
    return name, ids, sessions_dir / name / "plans"


async def test_validate_a_healthy_session(client, busy, sessions_dir):
    name, _, _ = busy
    before = await in_thread(snapshot, sessions_dir)
    r = await client.call_tool("9plan_admin_validate", {})
    data = ok(r, name)
    assert documented(data["invariants"]) == ALL_GOOD and all(data["invariants"].values())
    assert data == {
        "session_name": name,
        "valid": True,
        "invariants": data["invariants"],
        "issues": [],
        "issues_more": 0,
    }
    assert r.content[0].text.startswith(f"[Session: {name}] Valid.")
    assert await in_thread(snapshot, sessions_dir) == before


async def test_validate_reports_missing_stray_and_temporary_files(client, busy, sessions_dir):
    name, (_, active, queued, _), plans = busy
    (plans / f"{queued}.txt").unlink()
    (plans / "zzzzz.txt").write_text("# Notes\nleft behind\n")
    torn = plans / ".tmp-abc.txt"
    torn.write_text("torn")
    # Left by a write an hour ago: debris, not a write in progress.
    an_hour_ago = time.time() - 3600
    os.utime(torn, (an_hour_ago, an_hour_ago))
    before = await in_thread(snapshot, sessions_dir)
    data = ok(await client.call_tool("9plan_admin_validate", {}), name)
    assert data["valid"] is False
    assert documented(data["invariants"]) == {**ALL_GOOD, "files_match_database": False, "no_orphaned_files": False}
    issues = " | ".join(data["issues"])
    assert queued in issues and "zzzzz.txt" in issues and ".tmp-abc.txt" in issues
    assert active not in issues
    assert len(data["issues"]) == 3 and data["issues_more"] == 0
    # Validation only reports; it never repairs behind the agent's back.
    assert await in_thread(snapshot, sessions_dir) == before


async def test_admin_state_shows_queue_active_plan_and_files(client, busy, sessions_dir):
    name, (done, active, nxt, last), plans = busy
    data = ok(await client.call_tool("9plan_admin_state", {}), name)
    assert data == {
        "session_name": name,
        "task_description": "Port billing",
        "queue": [{"id": nxt, "goal": "Next", "position": 1}, {"id": last, "goal": "Last", "position": 2}],
        "queue_length": 2,
        "active_plan": {"id": active, "goal": "Active", "file_path": str(plans / f"{active}.txt")},
        "completed_count": 1,
        "plan_files": sorted([active, nxt, last]),
        "plan_files_count": 3,
        "file_db_match": True,
    }
    (plans / f"{nxt}.txt").unlink()
    data = ok(await client.call_tool("9plan_admin_state", {}), name)
    assert data["file_db_match"] is False and data["plan_files"] == sorted([active, last])


async def test_admin_tools_act_on_another_session(client, busy, other_session):
    name, _, _ = busy
    theirs = other_session.name
    data = ok(await client.call_tool("9plan_admin_state", {"session_name": theirs}), theirs)
    assert (data["queue_length"], data["active_plan"], data["completed_count"]) == (0, None, 0)
    assert ok(await client.call_tool("9plan_admin_validate", {"session_name": theirs}), theirs)["valid"] is True
    assert ok(await client.call_tool("9plan_admin_state", {}), name)["queue_length"] == 2
