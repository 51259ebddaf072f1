"""The active plan's tools: 9plan_plan_defer, _plan_complete, _plan_discard and _plan_note,
and the agent's own edits to a plan file surviving all of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessions_app.models import Event, Plan
from tests.mcp_bridge.helpers import body_of, error, in_thread, ok, plan_args, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def started(client, *goals: str) -> tuple[str, list[str]]:
    """A current session with the given plans queued and the first one pulled."""
    name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    ids = []
    for goal in goals:
        ids.append((await client.call_tool("9plan_queue_add", plan_args(goal=goal))).structured_content["plan_id"])
    ok(await client.call_tool("9plan_queue_pull", {}), name)
    return name, ids


def path_of(sessions_dir: Path, name: str, plan_id: str) -> Path:
    return sessions_dir / name / "plans" / f"{plan_id}.txt"


def kinds(plan_id: str) -> list[str]:
    return list(Event.objects.filter(plan_id=plan_id).order_by("id").values_list("kind", flat=True))


async def test_defer_returns_the_plan_to_the_back_with_the_reason_in_notes(client, sessions_dir):
    name, (a, b, c) = await started(client, "A", "B", "C")
    data = ok(await client.call_tool("9plan_plan_defer", {"reason": "Needs the schema first"}), name)
    path = path_of(sessions_dir, name, a)
    assert data == {"session_name": name, "plan_id": a, "plan_path": str(path), "queue_position": 3}
    plan = await in_thread(Plan.objects.get, id=a)
    assert plan.status == "queued"
    assert re.fullmatch(r"Deferred \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: Needs the schema first", plan.notes)
    assert path.read_text().endswith(f"# Notes\n{plan.notes}\n")
    assert await in_thread(kinds, a) == ["plan_created", "plan_pulled", "plan_deferred"]
    assert ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"] == b


async def test_defer_to_the_front_is_pulled_again_next(client):
    name, (a, _) = await started(client, "A", "B")
    assert ok(await client.call_tool("9plan_plan_defer", {"reason": "r", "position": "front"}), name)["queue_position"] == 1
    assert ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"] == a


async def test_defer_rejects_bad_input_and_changes_nothing(client, sessions_dir):
    name, _ = await started(client, "A", "B")
    before = await in_thread(snapshot, sessions_dir)
    for args, field in [
        ({"reason": "r", "position": "Front"}, "position"),
        ({"reason": "r", "position": "BACK"}, "position"),
        ({"reason": "\u00a0\u2003\n"}, "reason"),
        ({"reason": ""}, "reason"),
    ]:
        data = error(await client.call_tool("9plan_plan_defer", args), "VALIDATION_ERROR", name, field=field)
        if field == "position":
            assert "'front' or 'back'" in data["message"]
    assert await in_thread(snapshot, sessions_dir) == before


async def test_complete_stores_the_outcome_deletes_the_file_and_reports_the_queue(client, sessions_dir):
    name, (a, b) = await started(client, "Model invoices", "Write the views")
    r = await client.call_tool("9plan_plan_complete", {"outcome": "Invoice model in billing/models.py"})
    assert "Next: 9plan_queue_pull." in r.content[0].text
    data = ok(r, name)
    assert data == {
        "session_name": name,
        "plan_id": a,
        "queue_length": 1,
        "completed_count": 1,
        "next": {"id": b, "goal": "Write the views"},
    }
    plan = await in_thread(Plan.objects.get, id=a)
    assert (plan.status, plan.outcome) == ("completed", "Invoice model in billing/models.py")
    assert plan.completed_at is not None
    assert not path_of(sessions_dir, name, a).exists()
    hits = ok(await client.call_tool("9plan_history_search", {"query": "invoice"}), name)["results"]
    assert [h["id"] for h in hits] == [a]


async def test_completing_the_last_plan_says_the_task_is_complete(client):
    name, _ = await started(client, "Only")
    r = await client.call_tool("9plan_plan_complete", {"outcome": "done"})
    data = ok(r, name)
    assert data["next"] is None and data["queue_length"] == 0
    assert "task complete! 🎉" in r.content[0].text
    error(await client.call_tool("9plan_queue_pull", {}), "QUEUE_EMPTY", name)


async def test_complete_without_an_active_plan_or_outcome_changes_nothing(client, sessions_dir):
    name, _ = await started(client, "A")
    before = await in_thread(snapshot, sessions_dir)
    error(await client.call_tool("9plan_plan_complete", {"outcome": "\u2029\t"}), "VALIDATION_ERROR", name, field="outcome")
    error(await client.call_tool("9plan_plan_complete", {}), "VALIDATION_ERROR", name, field="outcome")
    assert await in_thread(snapshot, sessions_dir) == before
    ok(await client.call_tool("9plan_plan_complete", {"outcome": "done"}), name)
    before = await in_thread(snapshot, sessions_dir)
    data = error(await client.call_tool("9plan_plan_complete", {"outcome": "again"}), "NO_ACTIVE_PLAN", name)
    assert "9plan_queue_pull" in data["suggestion"]
    assert await in_thread(snapshot, sessions_dir) == before


async def test_discard_drops_the_plan_from_queue_and_search(client, sessions_dir):
    name, (a, b) = await started(client, "Obsolete invoice export", "Keep")
    data = ok(await client.call_tool("9plan_plan_discard", {"reason": "Superseded by the new export"}), name)
    assert data == {"session_name": name, "plan_id": a, "queue_length": 1}
    plan = await in_thread(Plan.objects.get, id=a)
    assert (plan.status, plan.discard_reason, plan.sort_key) == ("discarded", "Superseded by the new export", None)
    assert not path_of(sessions_dir, name, a).exists()
    assert await in_thread(kinds, a) == ["plan_created", "plan_pulled", "plan_discarded"]
    assert ok(await client.call_tool("9plan_history_search", {"query": "invoice export"}), name)["results"] == []
    error(await client.call_tool("9plan_history_get", {"plan_id": a}), "PLAN_NOT_FOUND", name)
    assert ok(await client.call_tool("9plan_queue_pull", {}), name)["plan_id"] == b


async def test_discard_rejections_change_nothing(client, sessions_dir):
    name, _ = await started(client, "A")
    before = await in_thread(snapshot, sessions_dir)
    error(await client.call_tool("9plan_plan_discard", {"reason": " \u3000"}), "VALIDATION_ERROR", name, field="reason")
    assert await in_thread(snapshot, sessions_dir) == before
    ok(await client.call_tool("9plan_plan_discard", {"reason": "no longer needed"}), name)
    before = await in_thread(snapshot, sessions_dir)
    error(await client.call_tool("9plan_plan_discard", {"reason": "again"}), "NO_ACTIVE_PLAN", name)
    assert await in_thread(snapshot, sessions_dir) == before


async def test_note_appends_by_default_and_replaces_on_request(client, sessions_dir):
    name, (a,) = await started(client, "A")
    path = path_of(sessions_dir, name, a)
    data = ok(await client.call_tool("9plan_plan_note", {"text": "First finding"}), name)
    assert data == {"session_name": name, "plan_id": a, "mode": "append", "notes_chars": 13, "plan_path": str(path)}
    data = ok(await client.call_tool("9plan_plan_note", {"text": "\n  \n  Second, indented", "mode": "append"}), name)
    assert (await in_thread(Plan.objects.get, id=a)).notes == "First finding\n\n  Second, indented"
    assert data["notes_chars"] == len("First finding\n\n  Second, indented")
    assert path.read_text().endswith("# Notes\nFirst finding\n\n  Second, indented\n")
    ok(await client.call_tool("9plan_plan_note", {"text": "Only this", "mode": "replace"}), name)
    assert (await in_thread(Plan.objects.get, id=a)).notes == "Only this"
    assert path.read_text().endswith("# Notes\nOnly this\n")
    assert (await in_thread(kinds, a))[-3:] == ["plan_note", "plan_note", "plan_note"]


async def test_note_rejects_wrong_case_modes_and_blank_text_writing_nothing(client, sessions_dir):
    name, _ = await started(client, "A")
    ok(await client.call_tool("9plan_plan_note", {"text": "kept"}), name)
    before = await in_thread(snapshot, sessions_dir)
    for mode in ["Append", "REPLACE", "overwrite", ""]:
        data = error(await client.call_tool("9plan_plan_note", {"text": "x", "mode": mode}), "VALIDATION_ERROR", name, field="mode")
        assert "'append'" in data["message"] and "'replace'" in data["message"]
    for blank in ["", "\u2003\u3000", "\n\n\t", "\u0085"]:
        error(await client.call_tool("9plan_plan_note", {"text": blank}), "VALIDATION_ERROR", name, field="text")
    assert await in_thread(snapshot, sessions_dir) == before


async def test_note_without_an_active_plan(client, sessions_dir):
    name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    before = await in_thread(snapshot, sessions_dir)
    error(await client.call_tool("9plan_plan_note", {"text": "x"}), "NO_ACTIVE_PLAN", name)
    error(await client.call_tool("9plan_plan_defer", {"reason": "x"}), "NO_ACTIVE_PLAN", name)
    assert await in_thread(snapshot, sessions_dir) == before


async def test_agent_edits_to_the_file_survive_defer_pull_and_complete(client, sessions_dir):
    name, (a,) = await started(client, "Model invoices")
    path = path_of(sessions_dir, name, a)
    # The agent works in the file: it writes Notes and sharpens the approach.
    text = path.read_text()
    text = text.replace("# Notes\n", "# Notes\nFound: amounts are stored in cents.\n")
    text = text.replace("2. Write the models", "2. Write the models\n3. Add a cents-to-decimal helper")
    path.write_text(text)

    ok(await client.call_tool("9plan_plan_defer", {"reason": "Waiting for the currency decision"}), name)
    plan = await in_thread(Plan.objects.get, id=a)
    assert plan.notes.startswith("Found: amounts are stored in cents.\n\nDeferred ")
    assert plan.approach.endswith("3. Add a cents-to-decimal helper")
    assert "file_edits_kept" in await in_thread(kinds, a)

    r = await client.call_tool("9plan_queue_pull", {})
    assert ok(r, name)["plan_id"] == a
    assert "Found: amounts are stored in cents." in body_of(r)
    assert "Waiting for the currency decision" in body_of(r)

    # More edits after the re-pull, then a note through the tool: both are kept.
    path.write_text(path.read_text().rstrip("\n") + "\n\nDecided: Decimal(12, 2).\n")
    ok(await client.call_tool("9plan_plan_note", {"text": "Migration 0003 written."}), name)
    path.write_text(path.read_text().rstrip("\n") + "\n\nAll tests green.\n")
    ok(await client.call_tool("9plan_plan_complete", {"outcome": "Invoice model with cents-to-decimal helper"}), name)
    assert not path.exists()

    data = ok(await client.call_tool("9plan_history_get", {"plan_id": a}), name)
    notes = data["notes"]
    for fragment in [
        "Found: amounts are stored in cents.",
        "Waiting for the currency decision",
        "Decided: Decimal(12, 2).",
        "Migration 0003 written.",
        "All tests green.",
    ]:
        assert fragment in notes, fragment
    assert notes.index("Found") < notes.index("Waiting") < notes.index("Decided") < notes.index("Migration") < notes.index("All tests")
    assert data["approach"].endswith("3. Add a cents-to-decimal helper")
    assert data["outcome"] == "Invoice model with cents-to-decimal helper"


async def test_a_deleted_plan_file_does_not_lose_the_database_copy(client, sessions_dir):
    name, (a,) = await started(client, "A")
    ok(await client.call_tool("9plan_plan_note", {"text": "Important finding"}), name)
    path_of(sessions_dir, name, a).unlink()
    ok(await client.call_tool("9plan_plan_complete", {"outcome": "done"}), name)
    assert ok(await client.call_tool("9plan_history_get", {"plan_id": a}), name)["notes"] == "Important finding"


async def test_active_plan_tools_act_on_another_session_without_selecting_it(client, other_session, sessions_dir):
    mine, (m,) = await started(client, "Mine")
    theirs = other_session.name
    t1 = ok(await client.call_tool("9plan_queue_add", plan_args(goal="T1", session_name=theirs)), theirs)["plan_id"]
    t2 = ok(await client.call_tool("9plan_queue_add", plan_args(goal="T2", session_name=theirs)), theirs)["plan_id"]
    ok(await client.call_tool("9plan_queue_pull", {"session_name": theirs}), theirs)
    ok(await client.call_tool("9plan_plan_note", {"text": "theirs", "session_name": theirs}), theirs)
    ok(await client.call_tool("9plan_plan_defer", {"reason": "r", "session_name": theirs}), theirs)
    ok(await client.call_tool("9plan_queue_pull", {"session_name": theirs}), theirs)
    ok(await client.call_tool("9plan_plan_complete", {"outcome": "T2 done", "session_name": theirs}), theirs)
    ok(await client.call_tool("9plan_queue_pull", {"session_name": theirs}), theirs)
    ok(await client.call_tool("9plan_plan_discard", {"reason": "gone", "session_name": theirs}), theirs)
    statuses = await in_thread(lambda: dict(Plan.objects.filter(session_id=theirs).values_list("id", "status")))
    assert statuses == {t1: "discarded", t2: "completed"}
    # My session and my active plan were never touched.
    mine_plan = await in_thread(Plan.objects.get, id=m)
    assert (mine_plan.status, mine_plan.notes) == ("active", "")
    assert ok(await client.call_tool("9plan_admin_state", {}), mine)["active_plan"]["id"] == m
