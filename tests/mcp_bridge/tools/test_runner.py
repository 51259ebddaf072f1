"""What every tool call shares (mcp_bridge/tools/runner.py): a write sent again with the same
request_id has exactly one effect, whatever the tool; a reused request_id with other
arguments, or a bad one, is refused; a refusal is not kept; kept answers are forgotten."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sessions_app import clock, services
from sessions_app.models import Event, Plan, Session, WriteRequest
from tests.mcp_bridge.helpers import add_plan, error, in_thread, new_session, ok, plan_args, snapshot, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


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
    (
        "9plan_queue_add_batch",
        lambda name: {"plans": [plan_args(goal="R1"), plan_args(goal="R2")], "session_name": name},
    ),
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
    await add_plan(client, name, goal="Held")
    await add_plan(client, name, goal="Queued")
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
        await client.call_tool(
            "9plan_queue_add", {**plan_args(goal="A"), "request_id": "add-1", "session_name": other}
        ),
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
    assert (
        result.structured_content.get("field") == "request_id"
        or result.structured_content["error"] == "VALIDATION_ERROR"
    )
    assert await in_thread(snapshot, sessions_dir) == before
    del name


async def test_a_refusal_is_not_kept_so_the_retry_can_succeed(client, sessions_dir):
    name = await new_session(client)
    error(await client.call_tool("9plan_queue_pull", {"request_id": "pull-1"}), "QUEUE_EMPTY", name)
    assert await in_thread(WriteRequest.objects.count) == 0
    plan_id = await add_plan(client, name)
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
    await add_plan(client, name)
    ok(await client.call_tool("9plan_queue_pull", {}), name)
    before = await in_thread(snapshot, sessions_dir)
    refused = await client.call_tool("9plan_plan_note", {"text": "\ud800", "request_id": "0"})
    assert refused.is_error and refused.structured_content["error"] == "VALIDATION_ERROR", text_of(refused)
    assert await in_thread(snapshot, sessions_dir) == before
