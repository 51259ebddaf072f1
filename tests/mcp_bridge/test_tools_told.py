"""An agent is told what a person (or an integration) did to its plans: the next call that
finds its plan gone, and resume, say what happened, who did it and why."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.models import Plan
from tests.mcp_bridge.helpers import error, in_thread, ok, plan_args, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def started(client, *goals: str) -> tuple[str, list[str]]:
    name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    ids = [
        (await client.call_tool("9plan_queue_add", plan_args(goal=goal))).structured_content["plan_id"]
        for goal in goals
    ]
    ok(await client.call_tool("9plan_queue_pull", {}), name)
    return name, ids


async def test_a_plan_discarded_by_staff_is_named_with_who_and_why(client, sessions_dir):
    name, (held, _) = await started(client, "Export invoices", "Keep")
    await in_thread(
        services.plan_discard_any,
        session_name=name,
        plan_id=held,
        reason="Superseded by the reporting service",
        actor="user:sam",
    )
    before = await in_thread(snapshot, sessions_dir)

    for tool, args in [("9plan_plan_complete", {"outcome": "done"}), ("9plan_plan_note", {"text": "more"})]:
        data = error(await client.call_tool(tool, args), "NO_ACTIVE_PLAN", name)
        assert f"Plan {held} was discarded by user:sam" in data["message"]
        assert "Superseded by the reporting service" in data["message"]
    assert await in_thread(snapshot, sessions_dir) == before

    resumed = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert len(resumed["changed_by_others"]) == 1
    assert f"Plan {held} was discarded by user:sam" in resumed["changed_by_others"][0]

    got = error(await client.call_tool("9plan_history_get", {"plan_id": held}), "PLAN_NOT_FOUND", name)
    assert "discarded by user:sam" in got["message"] and "Superseded" in got["message"]


async def test_a_plan_taken_back_by_staff_says_it_is_queued_again(client):
    name, (held, _) = await started(client, "A", "B")
    await in_thread(services.plan_requeue, session_name=name, plan_id=held, position="back", actor="user:ann")
    data = error(await client.call_tool("9plan_plan_defer", {"reason": "r"}), "NO_ACTIVE_PLAN", name)
    assert f"Plan {held} was taken back and returned to the queue by user:ann" in data["message"]
    assert (await in_thread(Plan.objects.get, id=held)).status == "queued"


async def test_an_agent_that_just_finished_its_own_plan_is_told_nothing_extra(client):
    name, _ = await started(client, "A")
    ok(await client.call_tool("9plan_plan_complete", {"outcome": "done"}), name)
    data = error(await client.call_tool("9plan_plan_complete", {"outcome": "again"}), "NO_ACTIVE_PLAN", name)
    assert data["message"] == f"Session '{name}' has no active plan."
    resumed = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert "changed_by_others" not in resumed


async def test_resume_lists_only_what_others_did_since_the_agent_last_acted(client):
    name, (held, queued) = await started(client, "A", "B")
    await in_thread(services.plan_move, session_name=name, plan_id=queued, position="front", actor="user:sam")
    resumed = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert len(resumed["changed_by_others"]) == 1
    assert f"Plan {queued} was moved in the queue by user:sam" in resumed["changed_by_others"][0]
    # Once the agent acts again, what happened before is no longer news.
    ok(await client.call_tool("9plan_plan_note", {"text": "seen it"}), name)
    resumed = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert "changed_by_others" not in resumed


async def test_a_restore_of_the_plan_a_worker_holds_is_told_in_its_next_answer_and_on_resume(client, sessions_dir):
    name, (held,) = await started(client, "Write the parser")
    ok(await client.call_tool("9plan_plan_note", {"text": "First findings"}), name)
    ok(await client.call_tool("9plan_plan_note", {"text": "Wrong turn", "mode": "replace"}), name)
    restored = await in_thread(services.plan_restore, session_name=name, plan_id=held, number=2, actor="user:sam")
    assert restored.plan.notes == "First findings"

    # Resume says it before the agent acts again...
    resumed = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert any(
        f"Plan {held} had its text restored to revision 2 by user:sam at " in line for line in resumed["changed_by_others"]
    )
    # ...and so does the worker's next answer, which still succeeds on the restored text.
    data = ok(await client.call_tool("9plan_plan_note", {"text": "Carrying on"}), name)
    assert len(data["changed_by_others"]) == 1
    told = data["changed_by_others"][0]
    assert told.startswith(f"Plan {held} had its text restored to revision 2 by user:sam at ") and told.endswith(" UTC.")
    stored = await in_thread(Plan.objects.get, id=held)
    assert stored.notes == "First findings\n\nCarrying on"
    # Told once: the answer after that is plain again.
    data = ok(await client.call_tool("9plan_plan_note", {"text": "More"}), name)
    assert "changed_by_others" not in data
