"""The texts agents read hold together: no doubled full stop where a sentence meets a text
someone wrote, one account of a held plan (why, who releases it) in resume, a pull and
what others changed, and a call that left out its worker is told which workers hold plans."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessions_app import interventions, services
from tests.mcp_bridge.helpers import error, in_thread, ok, plan_args, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

DOUBLED = re.compile(r"(?<!\.)\.\.(?!\.)")


class Texts:
    """Every answer's text of a scenario, checked at the end."""

    def __init__(self, client) -> None:
        self.client, self.seen = client, []

    async def call(self, tool: str, args: dict):
        result = await self.client.call_tool(tool, args)
        self.seen.append((tool, text_of(result)))
        return result

    def doubled(self) -> list[tuple[str, str]]:
        return [(tool, text[max(0, m.start() - 60) : m.end() + 20]) for tool, text in self.seen for m in DOUBLED.finditer(text)]


async def test_no_answer_doubles_a_full_stop_where_texts_meet(client, sessions_dir, settings):
    settings.NINEPLAN_MAX_REJECTIONS = 1
    t = Texts(client)
    name = (await t.call("9plan_session_create", {"task_description": "Texts."})).structured_content["session_name"]
    for i in range(5):
        ok(await t.call("9plan_queue_add", plan_args(goal=f"Step {i}.")), name)
    ok(await t.call("9plan_queue_pull", {}), name)
    ok(await t.call("9plan_plan_defer", {"reason": "Not yet (3)."}), name)
    pulled = ok(await t.call("9plan_queue_pull", {}), name)
    # A plan file that is not UTF-8: its notice ends a sentence of its own.
    path = Path(pulled["plan_path"])
    path.write_bytes(path.read_bytes() + b"caf\xe9\n")
    ok(await t.call("9plan_plan_note", {"text": "Found it."}), name)
    ok(await t.call("9plan_plan_discard", {"reason": "Not needed."}), name)
    # A person discards the plan an agent holds, with a reason that ends its sentence.
    held = ok(await t.call("9plan_queue_pull", {}), name)["plan_id"]
    await in_thread(services.plan_discard_any, session_name=name, plan_id=held, reason="Superseded.", actor="user:sam")
    error(await t.call("9plan_plan_note", {"text": "more"}), "NO_ACTIVE_PLAN", name)
    error(await t.call("9plan_history_get", {"plan_id": held}), "PLAN_NOT_FOUND", name)
    ok(await t.call("9plan_session_resume", {"session_name": name}), name)
    # Review: a rejection with notes that end their sentence, which holds the plan.
    await in_thread(services.session_set_review, session_name=name, review="required", actor="user:sam")
    reviewed = ok(await t.call("9plan_queue_pull", {}), name)["plan_id"]
    ok(await t.call("9plan_plan_complete", {"outcome": "Done."}), name)
    await in_thread(
        services.plan_review, session_name=name, plan_id=reviewed, decision="reject", notes="Missing tests.", actor="user:rita"
    )
    ok(await t.call("9plan_session_resume", {"session_name": name}), name)
    ok(await t.call("9plan_admin_state", {}), name)
    # A worker whose claim a person took back, writing late; a pull while holding a plan.
    ok(await t.call("9plan_queue_add", plan_args(goal="Late.")), name)
    late = ok(await t.call("9plan_queue_pull", {"worker": "w2"}), name)["plan_id"]
    await in_thread(services.plan_reclaim, session_name=name, plan_id=late, actor="user:sam")
    error(await t.call("9plan_plan_note", {"worker": "w2", "text": "Late."}), "LEASE_LOST", name)
    ok(await t.call("9plan_queue_pull", {"worker": "w2"}), name)
    error(await t.call("9plan_queue_pull", {"worker": "w2"}), "PLAN_ALREADY_ACTIVE", name)
    ok(await t.call("9plan_plan_renew", {"worker": "w2"}), name)
    for tool, args in [
        ("9plan_queue_pull", {"worker": "w1"}),
        ("9plan_queue_pull", {}),
        ("9plan_plan_note", {"text": "x"}),
        ("9plan_admin_validate", {}),
        ("9plan_history_search", {"query": "step"}),
        ("9plan_admin_sessions", {}),
    ]:
        await t.call(tool, args)
    assert len(t.seen) > 20
    assert t.doubled() == []


async def started(client, *, review: str = "none") -> str:
    return (await client.call_tool("9plan_session_create", {"review": review})).structured_content["session_name"]


async def test_a_call_without_its_worker_is_told_which_workers_hold_plans(client):
    name = await started(client)
    for goal in ("A", "B", "C"):
        ok(await client.call_tool("9plan_queue_add", plan_args(goal=goal)), name)
    ok(await client.call_tool("9plan_queue_pull", {"worker": "alpha"}), name)
    ok(await client.call_tool("9plan_queue_pull", {"worker": "beta"}), name)
    data = error(await client.call_tool("9plan_plan_note", {"text": "found"}), "NO_ACTIVE_PLAN", name, field="worker")
    assert data["message"] == f"The default worker holds no plan in session '{name}'; other workers do: 'alpha', 'beta'."
    assert "pass worker" in data["suggestion"] and "acts for the default worker" in data["suggestion"]
    # A lone agent with nothing pulled hears what it always did.
    other = await started(client)
    data = error(await client.call_tool("9plan_plan_note", {"text": "x"}), "NO_ACTIVE_PLAN", other)
    assert data["message"] == f"Session '{other}' has no active plan."
    assert data["suggestion"] == "Pull the next plan with 9plan_queue_pull first."


async def test_a_held_plan_is_one_story_in_resume_a_pull_and_what_others_changed(client, settings):
    settings.NINEPLAN_MAX_REJECTIONS = 2
    name = await started(client, review="required")
    plan_id = ok(await client.call_tool("9plan_queue_add", plan_args(goal="Tokenizer")), name)["plan_id"]
    for notes in ("Crashes on Unicode", "Still crashes"):
        ok(await client.call_tool("9plan_queue_pull", {}), name)
        ok(await client.call_tool("9plan_plan_complete", {"outcome": "done"}), name)
        await in_thread(
            services.plan_review, session_name=name, plan_id=plan_id, decision="reject", notes=notes, actor="user:rita"
        )
    resumed = await client.call_tool("9plan_session_resume", {"session_name": name})
    data = ok(resumed, name)
    summary = text_of(resumed).split("\n")[0]
    assert "call 9plan_queue_pull" not in summary
    assert "1 plan(s) are held" in summary and "person with the manager role releases it" in summary
    assert data["held"] == [{"id": plan_id, "goal": "Tokenizer"}] and data["held_count"] == 1
    # The rejection that held it is told once, as what it did: held, not sent back.
    told = [c for c in data["changed_by_others"] if plan_id in c]
    assert len(told) == 1  # one rejection, one entry (the first came before the agent's last call)
    assert re.fullmatch(
        rf"Plan {plan_id} was rejected in review by user:rita at [0-9-]+ [0-9:]+ UTC: Still crashes\. "
        rf"It is held after 2 rejection\(s\) in review: {re.escape(interventions.HELD_UNTIL)}\.",
        told[0],
    ), told[0]
    assert "front of the queue" not in told[0]
    blocked = error(await client.call_tool("9plan_queue_pull", {}), "QUEUE_BLOCKED", name)
    assert f"1 plan(s) are held ({plan_id})" in blocked["message"]
    assert "approval completes" not in blocked["message"] and interventions.HELD_UNTIL in blocked["message"]
    assert "manager role" in blocked["suggestion"]
