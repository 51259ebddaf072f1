"""What the tools' answers tell an agent (mcp_bridge/tools/answers.py): texts that hold together
(no doubled full stop where a sentence meets a text someone wrote, one account of a held
plan in resume, a pull and what others changed, a call that left out its worker told which
workers hold plans), and what a person or an integration did to its plans: the next call
that finds its plan gone, and resume, say what happened, who did it and why."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessions_app import services
from sessions_app.models import Plan
from sessions_app.reads import interventions
from tests.mcp_bridge.helpers import error, in_thread, ok, plan_args, snapshot, started, text_of

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
        return [
            (tool, text[max(0, m.start() - 60) : m.end() + 20])
            for tool, text in self.seen
            for m in DOUBLED.finditer(text)
        ]


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
        services.plan_review,
        session_name=name,
        plan_id=reviewed,
        decision="reject",
        notes="Missing tests.",
        actor="user:rita",
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


async def created(client, *, review: str = "none") -> str:
    return (await client.call_tool("9plan_session_create", {"review": review})).structured_content["session_name"]


async def test_a_call_without_its_worker_is_told_which_workers_hold_plans(client):
    name = await created(client)
    for goal in ("A", "B", "C"):
        ok(await client.call_tool("9plan_queue_add", plan_args(goal=goal)), name)
    ok(await client.call_tool("9plan_queue_pull", {"worker": "alpha"}), name)
    ok(await client.call_tool("9plan_queue_pull", {"worker": "beta"}), name)
    data = error(await client.call_tool("9plan_plan_note", {"text": "found"}), "NO_ACTIVE_PLAN", name, field="worker")
    assert (
        data["message"] == f"The default worker holds no plan in session '{name}'; other workers do: 'alpha', 'beta'."
    )
    assert "pass worker" in data["suggestion"] and "acts for the default worker" in data["suggestion"]
    # A lone agent with nothing pulled hears what it always did.
    other = await created(client)
    data = error(await client.call_tool("9plan_plan_note", {"text": "x"}), "NO_ACTIVE_PLAN", other)
    assert data["message"] == f"Session '{other}' has no active plan."
    assert data["suggestion"] == "Pull the next plan with 9plan_queue_pull first."


async def test_a_held_plan_is_one_story_in_resume_a_pull_and_what_others_changed(client, settings):
    settings.NINEPLAN_MAX_REJECTIONS = 2
    name = await created(client, review="required")
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
        f"Plan {held} had its text restored to revision 2 by user:sam at " in line
        for line in resumed["changed_by_others"]
    )
    # ...and so does the worker's next answer, which still succeeds on the restored text.
    data = ok(await client.call_tool("9plan_plan_note", {"text": "Carrying on"}), name)
    assert len(data["changed_by_others"]) == 1
    told = data["changed_by_others"][0]
    assert told.startswith(f"Plan {held} had its text restored to revision 2 by user:sam at ") and told.endswith(
        " UTC."
    )
    stored = await in_thread(Plan.objects.get, id=held)
    assert stored.notes == "First findings\n\nCarrying on"
    # Told once: the answer after that is plain again.
    data = ok(await client.call_tool("9plan_plan_note", {"text": "More"}), name)
    assert "changed_by_others" not in data


async def test_a_persons_edit_of_the_plan_a_worker_holds_is_told_in_its_next_answer_and_on_resume(client):
    name, (held,) = await started(client, "Write the parser")
    edited = await in_thread(
        services.plan_edit,
        session_name=name,
        plan_id=held,
        sections={"approach": "Use the table-driven design"},
        actor="user:sam",
    )
    assert edited.plan.approach == "Use the table-driven design"
    resumed = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert any(
        line.startswith(f"Plan {held} had its text edited (approach) by user:sam at ")
        for line in resumed["changed_by_others"]
    )
    data = ok(await client.call_tool("9plan_plan_note", {"text": "Switched to the table"}), name)
    assert len(data["changed_by_others"]) == 1
    assert data["changed_by_others"][0].startswith(f"Plan {held} had its text edited (approach) by user:sam at ")
    stored = await in_thread(Plan.objects.get, id=held)
    assert (stored.approach, stored.notes) == ("Use the table-driven design", "Switched to the table")
    data = ok(await client.call_tool("9plan_plan_note", {"text": "More"}), name)
    assert "changed_by_others" not in data
