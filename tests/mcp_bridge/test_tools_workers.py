"""Parallel work through the MCP tools: workers named per call, dependencies queued in one
batch, QUEUE_BLOCKED, leases renewed, LEASE_LOST with the late text shown to the next
holder, and resume showing every worker (docs/design.md, "The edges")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app import clock
from sessions_app.models import Plan
from tests.mcp_bridge.helpers import error, in_thread, ok, plan_args, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def create(client, **args) -> str:
    return (await client.call_tool("9plan_session_create", args)).structured_content["session_name"]


async def test_a_lead_queues_parallel_parts_and_a_merge_that_waits_for_both(client, sessions_dir):
    name = await create(client, task_description="parallel")
    batch = ok(
        await client.call_tool(
            "9plan_queue_add_batch",
            {"plans": [plan_args(goal="Part A"), plan_args(goal="Part B"), plan_args(goal="Merge", depends_on=[0, 1])]},
        ),
        name,
    )
    a, b, merge = (p["plan_id"] for p in batch["plans"])

    first = ok(await client.call_tool("9plan_queue_pull", {"worker": "sub-1"}), name)
    second = ok(await client.call_tool("9plan_queue_pull", {"worker": "sub-2"}), name)
    assert (first["plan_id"], first["worker"], first["attempt"]) == (a, "sub-1", 1)
    assert second["plan_id"] == b and second["lease_until"]

    before = await in_thread(snapshot, sessions_dir)
    blocked = error(await client.call_tool("9plan_queue_pull", {"worker": "sub-3"}), "QUEUE_BLOCKED", name)
    assert merge in blocked["message"] and "sub-1" in blocked["message"]
    assert "9plan_queue_pull" in blocked["suggestion"]
    assert await in_thread(snapshot, sessions_dir) == before

    resumed = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert {w["worker"]: w["plan_id"] for w in resumed["workers"]} == {"sub-1": a, "sub-2": b}
    assert resumed["active_plan"] is None  # the lead (the default worker) holds nothing
    assert merge in resumed["blocked"][0]

    ok(await client.call_tool("9plan_plan_note", {"worker": "sub-2", "text": "B's finding"}), name)
    ok(await client.call_tool("9plan_plan_complete", {"worker": "sub-2", "outcome": "B done"}), name)
    ok(await client.call_tool("9plan_plan_complete", {"worker": "sub-1", "outcome": "A done"}), name)
    assert ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"] == merge
    rows = await in_thread(lambda: {p.id: (p.worker, p.notes) for p in Plan.objects.filter(session_id=name)})
    assert rows[b] == ("sub-2", "B's finding") and rows[a] == ("sub-1", "")


async def test_a_bad_worker_name_is_a_validation_error(client, sessions_dir):
    name = await create(client)
    error(await client.call_tool("9plan_queue_pull", {"worker": "two words"}), "VALIDATION_ERROR", name, field="worker")
    error(
        await client.call_tool("9plan_queue_add", plan_args(depends_on=["zzzzz"])),
        "VALIDATION_ERROR",
        name,
        field="depends_on[0]",
    )


async def test_renew_then_lease_lost_and_the_next_holder_sees_the_late_text(client, sessions_dir, monkeypatch):
    name = await create(client, lease_seconds=60)
    ok(await client.call_tool("9plan_queue_add", plan_args(goal="Long job")), name)
    pulled = ok(await client.call_tool("9plan_queue_pull", {"worker": "slow"}), name)
    renewed = ok(await client.call_tool("9plan_plan_renew", {"worker": "slow"}), name)
    assert renewed["plan_id"] == pulled["plan_id"] and renewed["lease_until"] >= pulled["lease_until"]

    later = timezone.now() + timedelta(seconds=120)
    monkeypatch.setattr(clock, "now", lambda: later)
    again = ok(await client.call_tool("9plan_queue_pull", {"worker": "fast"}), name)
    assert again["plan_id"] == pulled["plan_id"] and again["attempt"] == 2
    lost = error(await client.call_tool("9plan_plan_note", {"worker": "slow", "text": "my late finding"}), "LEASE_LOST", name)
    assert pulled["plan_id"] in lost["message"] and "9plan_queue_pull" in lost["suggestion"]
    error(await client.call_tool("9plan_plan_renew", {"worker": "slow"}), "LEASE_LOST", name)

    # The next holder is shown the late text.
    ok(await client.call_tool("9plan_plan_defer", {"worker": "fast", "reason": "handing over"}), name)
    handed = ok(await client.call_tool("9plan_queue_pull", {"worker": "third"}), name)
    assert [(w["worker"], w["text"]) for w in handed["late_writes"]] == [("slow", "my late finding")]


async def test_completing_the_last_queued_plan_while_others_work_is_not_task_complete(client):
    name = await create(client, task_description="two at once")
    ok(await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args(goal="A"), plan_args(goal="B")]}), name)
    ok(await client.call_tool("9plan_queue_pull", {"worker": "sub-1"}), name)
    ok(await client.call_tool("9plan_queue_pull", {"worker": "sub-2"}), name)

    first = await client.call_tool("9plan_plan_complete", {"outcome": "A done", "worker": "sub-1"})
    data = ok(first, name)
    assert data["next"] is None and data["unfinished_count"] == 1
    assert "task complete" not in first.content[0].text.lower()
    assert "1 plan(s) are still active with other workers or await review" in first.content[0].text

    last = await client.call_tool("9plan_plan_complete", {"outcome": "B done", "worker": "sub-2"})
    assert "unfinished_count" not in ok(last, name)
    assert "task complete! 🎉" in last.content[0].text
