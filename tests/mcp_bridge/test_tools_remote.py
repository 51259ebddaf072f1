"""What an agent on any machine needs from the tools: reading its plan back (9plan_plan_read),
what a pulled plan's dependencies produced, a completion's next ready plan, and writes that a
retry with the same request_id can never apply twice."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sessions_app import clock, services
from sessions_app.models import Event, Plan, Session, WriteRequest
from tests.mcp_bridge.helpers import (
    body_of,
    error,
    in_thread,
    ok,
    plan_args,
    snapshot,
    text_of,
)

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def new_session(client, **args) -> str:
    result = await client.call_tool("9plan_session_create", args)
    return result.structured_content["session_name"]


async def add(client, name: str, **fields) -> str:
    return ok(await client.call_tool("9plan_queue_add", {**plan_args(**fields), "session_name": name}), name)["plan_id"]


# --- reading a plan back -------------------------------------------------------------------


async def test_plan_read_gives_the_held_plan_with_every_note(client, sessions_dir):
    name = await new_session(client)
    plan_id = await add(client, name, goal="Model invoices")
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
    ids = {goal: await add(client, name, goal=goal) for goal in ("done", "dropped", "reviewed", "held", "active", "queued")}
    for goal, action in (("done", "complete"), ("dropped", "discard")):
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
    assert "# Outcome\nFinished: billing/models.py" in body_of(await client.call_tool("9plan_plan_read", {"plan_id": ids["done"]}))


async def test_plan_read_refusals_change_nothing(client, sessions_dir, other_session):
    name = await new_session(client)
    await add(client, name)
    before = await in_thread(snapshot, sessions_dir)
    nothing = error(await client.call_tool("9plan_plan_read", {}), "NO_ACTIVE_PLAN", name)
    assert "holds no plan" in nothing["message"] and "plan_id" in nothing["message"]
    error(await client.call_tool("9plan_plan_read", {"plan_id": "zzzzz"}), "PLAN_NOT_FOUND", name)
    error(await client.call_tool("9plan_plan_read", {"plan_id": "NOT AN ID"}), "VALIDATION_ERROR", name, field="plan_id")
    theirs = await in_thread(lambda: services.plan_enqueue(session_name=other_session.name, **_fields()).plan.id)
    before = await in_thread(snapshot, sessions_dir)
    error(await client.call_tool("9plan_plan_read", {"plan_id": theirs}), "PLAN_NOT_FOUND", name)
    assert await in_thread(snapshot, sessions_dir) == before


def _fields():
    from tests.conftest import plan_fields

    return plan_fields(goal="Their plan")


# --- dependencies and what comes next --------------------------------------------------------


async def test_a_pulled_plan_carries_its_dependencies_outcomes_bounded(client, sessions_dir):
    name = await new_session(client)
    long_outcome = "Invoice model in billing/models.py. " + "Detail. " * 400
    batch = ok(
        await client.call_tool(
            "9plan_queue_add_batch",
            {"plans": [plan_args(goal="Schema"), plan_args(goal="Models"), plan_args(goal="API", depends_on=[0, 1])]},
        ),
        name,
    )
    schema, models, api = (p["plan_id"] for p in batch["plans"])
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


async def test_next_in_a_completion_is_a_ready_plan_or_says_what_blocks(client, sessions_dir):
    name = await new_session(client)
    batch = ok(
        await client.call_tool(
            "9plan_queue_add_batch",
            {"plans": [plan_args(goal="Base"), plan_args(goal="Needs base", depends_on=[0]), plan_args(goal="Free")]},
        ),
        name,
    )
    base, needs, free = (p["plan_id"] for p in batch["plans"])
    ok(await client.call_tool("9plan_queue_pull", {"worker": "w1"}), name)  # holds Base
    ok(await client.call_tool("9plan_queue_pull", {"worker": "w2"}), name)  # skips the blocked one: Free
    done = ok(await client.call_tool("9plan_plan_complete", {"worker": "w2", "outcome": "Free done"}), name)
    # The front of the queue waits for Base, held by w1: next is not it.
    assert done["next"] is None and done["queue_length"] == 1
    assert any(needs in b and base in b for b in done["blocked"])
    done = ok(await client.call_tool("9plan_plan_complete", {"worker": "w1", "outcome": "Base done"}), name)
    assert done["next"] == {"id": needs, "goal": "Needs base"} and "blocked" not in done


# --- retry-safe writes -------------------------------------------------------------------------


def effects() -> dict:
    return {
        "sessions": Session.objects.count(),
        "plans": list(Plan.objects.order_by("id").values_list("id", "status", "notes", "version")),
        "events": Event.objects.count(),
    }


WRITES = [
    ("9plan_session_create", lambda name: {"task_description": "retried"}),
    ("9plan_queue_add", lambda name: {**plan_args(goal="Retried add"), "session_name": name}),
    ("9plan_queue_add_batch", lambda name: {"plans": [plan_args(goal="R1"), plan_args(goal="R2")], "session_name": name}),
    ("9plan_queue_pull", lambda name: {"session_name": name, "worker": "r"}),
    ("9plan_plan_renew", lambda name: {"session_name": name, "worker": "h"}),
    ("9plan_plan_note", lambda name: {"session_name": name, "worker": "h", "text": "appended once"}),
    ("9plan_plan_defer", lambda name: {"session_name": name, "worker": "h", "reason": "later"}),
    ("9plan_plan_complete", lambda name: {"session_name": name, "worker": "h", "outcome": "done once"}),
    ("9plan_plan_discard", lambda name: {"session_name": name, "worker": "h", "reason": "dropped once"}),
]


@pytest.mark.parametrize(("tool", "arguments"), WRITES, ids=[w[0] for w in WRITES])
async def test_every_write_replayed_with_its_request_id_has_one_effect(client, sessions_dir, tool, arguments):
    name = await new_session(client)
    await add(client, name, goal="Held")
    await add(client, name, goal="Queued")
    ok(await client.call_tool("9plan_queue_pull", {"worker": "h"}), name)
    args = {**arguments(name), "request_id": f"{tool}:1"}

    first = await client.call_tool(tool, args)
    assert not first.is_error, text_of(first)
    after_first = await in_thread(effects)
    second = await client.call_tool(tool, args)

    assert text_of(second) == text_of(first) and second.structured_content == first.structured_content
    assert await in_thread(effects) == after_first
    kept = await in_thread(lambda: list(WriteRequest.objects.values_list("request_id", flat=True)))
    assert kept == [f"{tool}:1"]


async def test_a_reused_request_id_with_other_arguments_is_refused_and_changes_nothing(client, sessions_dir):
    name = await new_session(client)
    ok(await client.call_tool("9plan_queue_add", {**plan_args(goal="A"), "request_id": "add-1"}), name)
    before = await in_thread(snapshot, sessions_dir)
    refused = error(
        await client.call_tool("9plan_queue_add", {**plan_args(goal="B"), "request_id": "add-1"}),
        "VALIDATION_ERROR",
        name,
        field="request_id",
    )
    assert "already used for a different call" in refused["message"]
    assert await in_thread(snapshot, sessions_dir) == before
    # The same arguments in another session are another call too.
    other = await new_session(client)
    error(
        await client.call_tool("9plan_queue_add", {**plan_args(goal="A"), "request_id": "add-1", "session_name": other}),
        "VALIDATION_ERROR",
        other,
        field="request_id",
    )


@pytest.mark.parametrize("bad", ["", "x" * 65, "two words", "é", 7])
async def test_a_bad_request_id_is_refused(client, sessions_dir, bad):
    name = await new_session(client)
    before = await in_thread(snapshot, sessions_dir)
    result = await client.call_tool("9plan_queue_add", {**plan_args(), "request_id": bad})
    assert result.is_error
    assert result.structured_content.get("field") == "request_id" or result.structured_content["error"] == "VALIDATION_ERROR"
    assert await in_thread(snapshot, sessions_dir) == before
    del name


async def test_a_refusal_is_not_kept_so_the_retry_can_succeed(client, sessions_dir):
    name = await new_session(client)
    error(await client.call_tool("9plan_queue_pull", {"request_id": "pull-1"}), "QUEUE_EMPTY", name)
    assert await in_thread(WriteRequest.objects.count) == 0
    plan_id = await add(client, name)
    pulled = ok(await client.call_tool("9plan_queue_pull", {"request_id": "pull-1"}), name)
    assert pulled["plan_id"] == plan_id
    assert ok(await client.call_tool("9plan_queue_pull", {"request_id": "pull-1"}), name)["plan_id"] == plan_id


async def test_kept_answers_are_forgotten_after_two_days(client, sessions_dir, monkeypatch):
    name = await new_session(client)
    ok(await client.call_tool("9plan_queue_add", {**plan_args(), "request_id": "old"}), name)
    ok(await client.call_tool("9plan_queue_add", {**plan_args(goal="newer"), "request_id": "new"}), name)

    def age_and_forget():
        WriteRequest.objects.filter(request_id="old").update(created_at=clock.now() - timedelta(hours=49))
        WriteRequest.objects.filter(request_id="new").update(created_at=clock.now() - timedelta(hours=23))
        return services.forget_old_requests()

    assert await in_thread(age_and_forget) == 1
    assert await in_thread(lambda: list(WriteRequest.objects.values_list("request_id", flat=True))) == ["new"]


async def test_a_call_with_a_request_id_and_text_no_database_can_hold_is_refused_as_bad_input(client, sessions_dir):
    """A lone surrogate has no UTF-8 form: the call's fingerprint is still made, and the text
    is refused as any argument would be, with nothing kept."""
    name = await new_session(client)
    await add(client, name)
    ok(await client.call_tool("9plan_queue_pull", {}), name)
    before = await in_thread(snapshot, sessions_dir)
    refused = await client.call_tool("9plan_plan_note", {"text": "\ud800", "request_id": "0"})
    assert refused.is_error and refused.structured_content["error"] == "VALIDATION_ERROR", text_of(refused)
    assert await in_thread(snapshot, sessions_dir) == before
