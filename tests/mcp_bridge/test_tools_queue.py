"""9plan_queue_add, 9plan_queue_add_batch and 9plan_queue_pull through the in-memory client."""

from __future__ import annotations

import pytest

from sessions_app.models import Plan
from tests.mcp_bridge.helpers import body_of, error, in_thread, ok, plan_args, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def create(client) -> str:
    return (await client.call_tool("9plan_session_create", {"task_description": "Port billing"})).structured_content[
        "session_name"
    ]


def queue_ids(name: str) -> list[str]:
    return list(
        Plan.objects.filter(session_id=name, status=Plan.Status.QUEUED)
        .order_by("sort_key")
        .values_list("id", flat=True)
    )


async def test_add_writes_the_plan_and_its_file(client, sessions_dir):
    name = await create(client)
    r = await client.call_tool(
        "9plan_queue_add", plan_args(goal="Model invoices", inputs="- schema: from the schema plan", outputs="models.py")
    )
    data = ok(r, name)
    plan_id = data["plan_id"]
    path = sessions_dir / name / "plans" / f"{plan_id}.txt"
    assert data == {"session_name": name, "plan_id": plan_id, "plan_path": str(path), "queue_position": 1}
    assert path.read_text() == (
        "# Context\nPorting the billing service\n\n# Goal\nModel invoices\n\n"
        "# Inputs\n- schema: from the schema plan\n\n# Outputs\nmodels.py\n\n"
        "# Approach\n1. Read the schema\n2. Write the models\n\n# Success Criteria\nMigrations apply; tests pass\n\n"
        "# Notes\n"
    )
    plan = await in_thread(Plan.objects.get, id=plan_id)
    assert (plan.status, plan.goal, plan.inputs, plan.outputs) == (
        "queued",
        "Model invoices",
        "- schema: from the schema plan",
        "models.py",
    )


async def test_front_is_blocking_and_back_is_eventual(client):
    name = await create(client)
    add = lambda goal, **kw: client.call_tool("9plan_queue_add", plan_args(goal=goal, **kw))  # noqa: E731
    a = ok(await add("A"), name)
    b = ok(await add("B", position="back"), name)
    c = ok(await add("C", position="front"), name)
    d = ok(await add("D", position="front"), name)
    assert [x["queue_position"] for x in (a, b, c, d)] == [1, 2, 1, 1]
    # One by one at the front reverses: D was added last, so it is worked first.
    assert await in_thread(queue_ids, name) == [d["plan_id"], c["plan_id"], a["plan_id"], b["plan_id"]]


async def test_add_rejects_bad_input_naming_the_field_and_changes_nothing(client, sessions_dir):
    name = await create(client)
    ok(await client.call_tool("9plan_queue_add", plan_args()), name)
    before = await in_thread(snapshot, sessions_dir)
    cases = [
        (plan_args(goal="\u3000\u2028\x85 \t"), "goal", "empty or only whitespace"),
        (plan_args(context=""), "context", "empty or only whitespace"),
        (plan_args(approach="x" * 70_000), "approach", "70000 characters"),
        (plan_args(success_criteria="a\x00b"), "success_criteria", "NUL"),
        (plan_args(position="Front"), "position", "'front' or 'back'"),
        (plan_args(position="BACK"), "position", "'front' or 'back'"),
        (plan_args(position="top"), "position", "'front' or 'back'"),
    ]
    for args, field, needle in cases:
        data = error(await client.call_tool("9plan_queue_add", args), "VALIDATION_ERROR", name, field=field)
        assert needle in data["message"], data["message"]
    assert await in_thread(snapshot, sessions_dir) == before


async def test_batch_keeps_the_given_order_at_the_front_and_the_back(client, sessions_dir):
    name = await create(client)
    old = ok(await client.call_tool("9plan_queue_add", plan_args(goal="Old")), name)["plan_id"]
    r = await client.call_tool(
        "9plan_queue_add_batch", {"plans": [plan_args(goal="A"), plan_args(goal="B"), plan_args(goal="C")], "position": "front"}
    )
    data = ok(r, name)
    front = [p["plan_id"] for p in data["plans"]]
    assert [p["queue_position"] for p in data["plans"]] == [1, 2, 3]
    assert data["added"] == 3 and data["plans_dir"] == str(sessions_dir / name / "plans")
    data = ok(await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args(goal="Y"), plan_args(goal="Z")]}), name)
    back = [p["plan_id"] for p in data["plans"]]
    assert [p["queue_position"] for p in data["plans"]] == [5, 6]
    assert await in_thread(queue_ids, name) == [*front, old, *back]
    goals = await in_thread(lambda: {p.id: p.goal for p in Plan.objects.filter(session_id=name)})
    assert [goals[i] for i in front + back] == ["A", "B", "C", "Y", "Z"]
    for plan_id in front + back:
        assert (sessions_dir / name / "plans" / f"{plan_id}.txt").is_file()


async def test_batch_is_all_or_nothing(client, sessions_dir):
    name = await create(client)
    before = await in_thread(snapshot, sessions_dir)
    r = await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args(goal="A"), plan_args(goal=" ")]})
    data = error(r, "VALIDATION_ERROR", name, field="plans[1].goal")
    assert "plans[1].goal" in data["message"]
    error(await client.call_tool("9plan_queue_add_batch", {"plans": []}), "VALIDATION_ERROR", name, field="plans")
    r = await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args()] * 51})
    assert "at most 50" in error(r, "VALIDATION_ERROR", name, field="plans")["message"]
    r = await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args()], "position": "Back"})
    error(r, "VALIDATION_ERROR", name, field="position")
    r = await client.call_tool("9plan_queue_add_batch", {"plans": [{"goal": "only a goal"}]})
    data = error(r, "VALIDATION_ERROR", name)
    assert "plans[0].context" in data["message"] and "plans[0].approach" in data["message"]
    assert await in_thread(snapshot, sessions_dir) == before


async def test_batch_caps_its_answer_but_adds_every_plan(client):
    name = await create(client)
    data = ok(await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args(goal=f"G{i}") for i in range(40)]}), name)
    assert data["added"] == 40 and len(data["plans"]) == 15
    assert len(await in_thread(queue_ids, name)) == 40


async def test_pull_activates_the_front_plan_and_returns_its_text(client, sessions_dir):
    name = await create(client)
    first = ok(await client.call_tool("9plan_queue_add", plan_args(goal="First", outputs="invoice models")), name)
    ok(await client.call_tool("9plan_queue_add", plan_args(goal="Second")), name)
    r = await client.call_tool("9plan_queue_pull", {})
    data = ok(r, name)
    path = sessions_dir / name / "plans" / f"{first['plan_id']}.txt"
    assert data == {
        "session_name": name,
        "plan_id": first["plan_id"],
        "plan_path": str(path),
        "goal": "First",
        "queue_remaining": 1,
    }
    assert body_of(r) == path.read_text()
    assert "# Goal\nFirst\n" in body_of(r) and "# Outputs\ninvoice models\n" in body_of(r)
    plan = await in_thread(Plan.objects.get, id=first["plan_id"])
    assert plan.status == "active" and plan.sort_key is None


async def test_pull_with_a_plan_active_changes_nothing(client, sessions_dir):
    name = await create(client)
    ok(await client.call_tool("9plan_queue_add", plan_args()), name)
    ok(await client.call_tool("9plan_queue_add", plan_args()), name)
    active = ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"]
    before = await in_thread(snapshot, sessions_dir)
    data = error(await client.call_tool("9plan_queue_pull", {}), "PLAN_ALREADY_ACTIVE", name)
    assert active in data["message"]
    assert "9plan_plan_complete" in data["suggestion"]
    assert await in_thread(snapshot, sessions_dir) == before


async def test_pull_on_a_new_session_says_nothing_was_added_yet(client, sessions_dir):
    name = await create(client)
    before = await in_thread(snapshot, sessions_dir)
    data = error(await client.call_tool("9plan_queue_pull", {}), "QUEUE_EMPTY", name)
    assert "no plan was added" in data["message"] and "Task complete" not in data["message"]
    assert "9plan_queue_add" in data["suggestion"]
    assert await in_thread(snapshot, sessions_dir) == before


async def test_pull_once_every_plan_is_done_says_the_task_is_complete(client, sessions_dir):
    name = await create(client)
    ok(await client.call_tool("9plan_queue_add", plan_args()), name)
    ok(await client.call_tool("9plan_queue_pull", {}), name)
    ok(await client.call_tool("9plan_plan_complete", {"outcome": "done"}), name)
    before = await in_thread(snapshot, sessions_dir)
    data = error(await client.call_tool("9plan_queue_pull", {}), "QUEUE_EMPTY", name)
    assert "Task complete! 🎉" in data["message"]
    assert await in_thread(snapshot, sessions_dir) == before


async def test_queue_tools_act_on_another_session_without_selecting_it(client, other_session, sessions_dir):
    mine = await create(client)
    theirs = other_session.name
    r = await client.call_tool("9plan_queue_add", plan_args(session_name=theirs))
    plan_id = ok(r, theirs)["plan_id"]
    assert r.structured_content["plan_path"] == str(sessions_dir / theirs / "plans" / f"{plan_id}.txt")
    ok(await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args()], "session_name": theirs}), theirs)
    assert ok(await client.call_tool("9plan_queue_pull", {"session_name": theirs}), theirs)["plan_id"] == plan_id
    # The current session is still mine, and mine is untouched.
    error(await client.call_tool("9plan_queue_pull", {}), "QUEUE_EMPTY", mine)
    assert await in_thread(queue_ids, mine) == []
    assert len(await in_thread(queue_ids, theirs)) == 1


async def test_queue_add_to_an_unknown_session(client, sessions_dir):
    mine = await create(client)
    before = await in_thread(snapshot, sessions_dir)
    r = await client.call_tool("9plan_queue_add", plan_args(session_name="ghost-grey-owl"))
    error(r, "SESSION_NOT_FOUND", "ghost-grey-owl")
    # A malformed name is never echoed as a session: the answer names the current one.
    r = await client.call_tool("9plan_queue_add", plan_args(session_name="../../tmp"))
    error(r, "VALIDATION_ERROR", mine, field="session_name")
    assert await in_thread(snapshot, sessions_dir) == before
    assert not (sessions_dir / "ghost-grey-owl").exists()
