"""The review loop through MCP: complete → in review → rejected → pulled again with the
notes → completed → approved → searchable."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.models import Plan
from tests.mcp_bridge.helpers import in_thread, ok, plan_args

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_the_whole_review_loop(client, sessions_dir):
    created = await client.call_tool("9plan_session_create", {"task_description": "Reviewed", "review": "required"})
    name = ok(created, created.structured_content["session_name"])["session_name"]
    plan_id = ok(await client.call_tool("9plan_queue_add", plan_args(goal="Write the tokenizer")), name)["plan_id"]
    ok(await client.call_tool("9plan_queue_pull", {}), name)

    done = await client.call_tool("9plan_plan_complete", {"outcome": "Tokenizer in lexer.py"})
    data = ok(done, name)
    assert data["status"] == "in_review"
    assert "submitted for review" in done.content[0].text
    # Its own review is what is left: the task is not done yet.
    assert data["unfinished_count"] == 1 and "task is not done yet" in done.content[0].text
    assert ok(await client.call_tool("9plan_history_search", {"query": "tokenizer"}), name)["results"] == []
    resumed = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert resumed["in_review"] == [{"id": plan_id, "goal": "Write the tokenizer"}]
    assert resumed["in_review_count"] == 1
    assert ok(await client.call_tool("9plan_admin_state", {}), name)["in_review_count"] == 1
    # Its worker is free: nothing is active.
    assert resumed["active_plan"] is None

    await in_thread(
        services.plan_review,
        session_name=name, plan_id=plan_id, decision="reject", notes="Unicode input crashes it.", actor="user:rita",
    )
    pulled = await client.call_tool("9plan_queue_pull", {})
    data = ok(pulled, name)
    assert data["plan_id"] == plan_id
    assert pulled.content[0].text.split("\n")[0].endswith(
        "This plan was sent back in review by user:rita: read review_notes first (they are also at the end of its "
        "Notes). Plan pulled; its full text follows. Edit the file's Notes as you work."
    )
    assert data["review_notes"]["notes"] == "Unicode input crashes it."
    assert data["review_notes"]["rejections"] == 1
    assert "### Rejected in review by user:rita" in (sessions_dir / name / "plans" / f"{plan_id}.txt").read_text()

    ok(await client.call_tool("9plan_plan_complete", {"outcome": "Tokenizer handles Unicode"}), name)
    await in_thread(
        services.plan_review, session_name=name, plan_id=plan_id, decision="approve", notes="", actor="user:rita"
    )
    found = ok(await client.call_tool("9plan_history_search", {"query": "tokenizer"}), name)["results"]
    assert [r["id"] for r in found] == [plan_id]
    got = ok(await client.call_tool("9plan_history_get", {"plan_id": plan_id}), name)
    assert "Unicode input crashes it." in got["notes"]
    assert (await in_thread(Plan.objects.get, id=plan_id)).status == "completed"


async def test_add_with_review_and_bad_options(client):
    created = await client.call_tool("9plan_session_create", {})
    name = created.structured_content["session_name"]
    plan_id = ok(await client.call_tool("9plan_queue_add", plan_args(review=True)), name)["plan_id"]
    assert (await in_thread(Plan.objects.get, id=plan_id)).review is True
    batch = await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args(goal="A")], "review": True})
    batch_id = ok(batch, name)["plans"][0]["plan_id"]
    assert (await in_thread(Plan.objects.get, id=batch_id)).review is True
    bad = await client.call_tool("9plan_session_create", {"review": "always"})
    assert bad.is_error
    assert "review must be exactly 'none' or 'required'" in bad.content[0].text


async def test_resume_tells_the_agent_about_review_decisions(client):
    created = await client.call_tool("9plan_session_create", {"review": "required"})
    name = created.structured_content["session_name"]
    plan_id = ok(await client.call_tool("9plan_queue_add", plan_args()), name)["plan_id"]
    ok(await client.call_tool("9plan_queue_pull", {}), name)
    ok(await client.call_tool("9plan_plan_complete", {"outcome": "done"}), name)
    await in_thread(
        services.plan_review, session_name=name, plan_id=plan_id, decision="reject", notes="No tests", actor="user:rita"
    )
    resumed = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert resumed["changed_by_others"][0].startswith(
        f"Plan {plan_id} was sent back in review to the front of the queue by user:rita at "
    )
    assert resumed["changed_by_others"][0].endswith(": No tests.")
