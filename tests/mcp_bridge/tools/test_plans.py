"""Reading a plan back (mcp_bridge/tools/plans.py, 9plan_plan_read): the held plan with every
note, any plan of the session in any state, and refusals that change nothing."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.models import Plan
from tests.mcp_bridge.helpers import add_plan, body_of, error, in_thread, new_session, ok, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_plan_read_gives_the_held_plan_with_every_note(client, sessions_dir):
    name = await new_session(client)
    plan_id = await add_plan(client, name, goal="Model invoices")
    ok(await client.call_tool("9plan_queue_pull", {"worker": "remote-7"}), name)
    for note in ("First finding", "Second finding"):
        ok(await client.call_tool("9plan_plan_note", {"worker": "remote-7", "text": note}), name)
    before = await in_thread(snapshot, sessions_dir)

    read = await client.call_tool("9plan_plan_read", {"worker": "remote-7"})

    data = ok(read, name)
    assert (data["plan_id"], data["status"], data["worker"]) == (plan_id, "active", "remote-7")
    assert data["lease_until"]
    body = body_of(read)
    assert "# Goal\nModel invoices" in body and "First finding\n\nSecond finding" in body
    assert await in_thread(snapshot, sessions_dir) == before  # a read changes nothing

    again = error(await client.call_tool("9plan_queue_pull", {"worker": "remote-7"}), "PLAN_ALREADY_ACTIVE", name)
    assert "9plan_plan_read" in again["suggestion"]


async def test_plan_read_reads_any_plan_of_the_session_in_any_state(client, sessions_dir):
    name = await new_session(client)
    ids = {
        goal: await add_plan(client, name, goal=goal)
        for goal in ("done", "dropped", "reviewed", "held", "active", "queued")
    }
    for action in ("complete", "discard"):
        ok(await client.call_tool("9plan_queue_pull", {}), name)
        args = {"outcome": "Finished: billing/models.py"} if action == "complete" else {"reason": "obsolete"}
        ok(await client.call_tool(f"9plan_plan_{action}", args), name)

    def gate_and_hold():
        services.session_set_review(session_name=name, review="required", actor="staff/admin")

    await in_thread(gate_and_hold)
    for _ in ("reviewed", "held"):
        ok(await client.call_tool("9plan_queue_pull", {}), name)
        ok(await client.call_tool("9plan_plan_complete", {"outcome": "For review"}), name)

    def hold(plan_id):
        for _ in range(3):
            services.plan_review(session_name=name, plan_id=plan_id, decision="reject", notes="no", actor="staff/admin")
            if Plan.objects.get(id=plan_id).status == Plan.Status.HELD:
                return
            services.plan_pull(session_name=name)
            services.plan_complete(session_name=name, outcome="Again")

    await in_thread(hold, ids["held"])
    ok(await client.call_tool("9plan_queue_pull", {}), name)
    expected = {
        "done": "completed", "dropped": "discarded", "reviewed": "in_review", "held": "held",
        "active": "active", "queued": "queued",
    }  # fmt: skip
    for goal, status in expected.items():
        read = await client.call_tool("9plan_plan_read", {"plan_id": ids[goal]})
        data = ok(read, name)
        assert (data["plan_id"], data["status"]) == (ids[goal], status), goal
        assert f"# Goal\n{goal}" in body_of(read)
    assert "# Outcome\nFinished: billing/models.py" in body_of(
        await client.call_tool("9plan_plan_read", {"plan_id": ids["done"]})
    )


async def test_plan_read_refusals_change_nothing(client, sessions_dir, other_session):
    name = await new_session(client)
    await add_plan(client, name)
    before = await in_thread(snapshot, sessions_dir)
    nothing = error(await client.call_tool("9plan_plan_read", {}), "NO_ACTIVE_PLAN", name)
    assert "has no active plan" in nothing["message"] and "plan_id" in nothing["message"]
    # Reading is not a reason to take new work: the agent is told how to find what it holds.
    assert "9plan_session_resume" in nothing["suggestion"] and "worker" in nothing["suggestion"]
    error(await client.call_tool("9plan_plan_read", {"plan_id": "zzzzz"}), "PLAN_NOT_FOUND", name)
    error(
        await client.call_tool("9plan_plan_read", {"plan_id": "NOT AN ID"}), "VALIDATION_ERROR", name, field="plan_id"
    )
    theirs = await in_thread(lambda: services.plan_enqueue(session_name=other_session.name, **_fields()).plan.id)
    before = await in_thread(snapshot, sessions_dir)
    error(await client.call_tool("9plan_plan_read", {"plan_id": theirs}), "PLAN_NOT_FOUND", name)
    assert await in_thread(snapshot, sessions_dir) == before


async def test_plan_read_without_worker_names_the_workers_that_hold_plans(client, sessions_dir):
    # An agent that lost its context calls plan_read without the worker name it pulled as:
    # the answer names the workers holding plans, and does not send it to pull new work.
    name = await new_session(client)
    await add_plan(client, name, goal="First")
    await add_plan(client, name, goal="Second")
    ok(await client.call_tool("9plan_queue_pull", {"worker": "tests-1"}), name)
    before = await in_thread(snapshot, sessions_dir)
    lost = error(await client.call_tool("9plan_plan_read", {}), "NO_ACTIVE_PLAN", name, field="worker")
    assert "other workers do: 'tests-1'" in lost["message"]
    assert "pass worker" in lost["suggestion"] and "pull" not in lost["suggestion"].split(";")[0].lower()
    assert await in_thread(snapshot, sessions_dir) == before
    found = await client.call_tool("9plan_plan_read", {"worker": "tests-1"})
    assert ok(found, name)["worker"] == "tests-1" and "# Goal\nFirst" in body_of(found)


def _fields():
    from tests.conftest import plan_fields

    return plan_fields(goal="Their plan")
