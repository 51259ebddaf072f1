"""The queue's tools (mcp_bridge/tools/queue.py) through the in-memory client: 9plan_queue_add,
_add_batch, _pull and _renew; parallel work with workers named per call, dependencies queued
in one batch, QUEUE_BLOCKED, leases renewed, LEASE_LOST with the late text shown to the next
holder, a pulled plan carrying what its dependencies produced (docs/design.md, "The edges")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app import clock
from sessions_app.models import Plan
from tests.mcp_bridge.helpers import body_of, error, in_thread, new_session, ok, plan_args, snapshot, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def create(client, **args) -> str:
    """A new current session, for "Port billing" unless other arguments are given."""
    return await new_session(client, **(args or {"task_description": "Port billing"}))


async def two_parts_and_a_merge(client, name: str, first: str, second: str, merge: str) -> tuple[str, str, str]:
    """Queues two plans and a third that depends on both, in one batch; their ids."""
    batch = ok(
        await client.call_tool(
            "9plan_queue_add_batch",
            {"plans": [plan_args(goal=first), plan_args(goal=second), plan_args(goal=merge, depends_on=[0, 1])]},
        ),
        name,
    )
    return tuple(p["plan_id"] for p in batch["plans"])


def queue_ids(name: str) -> list[str]:
    return list(
        Plan.objects.filter(session_id=name, status=Plan.Status.QUEUED)
        .order_by("sort_key")
        .values_list("id", flat=True)
    )


async def test_add_writes_the_plan_and_its_file(client, sessions_dir):
    name = await create(client)
    r = await client.call_tool(
        "9plan_queue_add",
        plan_args(goal="Model invoices", inputs="- schema: from the schema plan", outputs="models.py"),
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
        "9plan_queue_add_batch",
        {"plans": [plan_args(goal="A"), plan_args(goal="B"), plan_args(goal="C")], "position": "front"},
    )
    data = ok(r, name)
    front = [p["plan_id"] for p in data["plans"]]
    assert [p["queue_position"] for p in data["plans"]] == [1, 2, 3]
    assert data["added"] == 3 and data["plans_dir"] == str(sessions_dir / name / "plans")
    data = ok(
        await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args(goal="Y"), plan_args(goal="Z")]}), name
    )
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
    data = ok(
        await client.call_tool("9plan_queue_add_batch", {"plans": [plan_args(goal=f"G{i}") for i in range(40)]}), name
    )
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


async def test_a_lead_queues_parallel_parts_and_a_merge_that_waits_for_both(client, sessions_dir):
    name = await create(client, task_description="parallel")
    a, b, merge = await two_parts_and_a_merge(client, name, "Part A", "Part B", "Merge")

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
    lost = error(
        await client.call_tool("9plan_plan_note", {"worker": "slow", "text": "my late finding"}), "LEASE_LOST", name
    )
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


async def test_a_pulled_plan_carries_its_dependencies_outcomes_bounded(client, sessions_dir):
    name = await new_session(client)
    long_outcome = "Invoice model in billing/models.py. " + "Detail. " * 400
    schema, models, api = await two_parts_and_a_merge(client, name, "Schema", "Models", "API")
    for outcome in (long_outcome, "Models done"):
        ok(await client.call_tool("9plan_queue_pull", {}), name)
        ok(await client.call_tool("9plan_plan_complete", {"outcome": outcome}), name)

    pulled = await client.call_tool("9plan_queue_pull", {})

    data = ok(pulled, name)
    assert data["plan_id"] == api
    deps = {d["id"]: d for d in data["dependencies"]}
    assert set(deps) == {schema, models} and deps[models]["outcome"] == "Models done"
    assert deps[schema]["goal"] == "Schema" and deps[schema]["outcome"].startswith("Invoice model in billing")
    assert len(deps[schema]["outcome"].encode()) < 600 < len(long_outcome)
    assert "9plan_plan_read" in text_of(pulled).split("\n")[0]
    whole = await client.call_tool("9plan_plan_read", {"plan_id": schema})
    assert long_outcome.strip() in body_of(whole)
