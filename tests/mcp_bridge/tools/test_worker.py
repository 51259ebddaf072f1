"""The active plan's tools (mcp_bridge/tools/worker.py): 9plan_plan_defer, _plan_complete,
_plan_discard and _plan_note, the agent's own edits to a plan file surviving all of them, a
completion's next ready plan, and the review loop through MCP: complete, in review, rejected,
pulled again with the notes, completed, approved, searchable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessions_app import services
from sessions_app.models import Event, Plan
from tests.mcp_bridge.helpers import body_of, error, in_thread, new_session, ok, plan_args, snapshot, started

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


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
    assert (
        ok(await client.call_tool("9plan_plan_defer", {"reason": "r", "position": "front"}), name)["queue_position"]
        == 1
    )
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
    error(
        await client.call_tool("9plan_plan_complete", {"outcome": "\u2029\t"}),
        "VALIDATION_ERROR",
        name,
        field="outcome",
    )
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
        data = error(
            await client.call_tool("9plan_plan_note", {"text": "x", "mode": mode}),
            "VALIDATION_ERROR",
            name,
            field="mode",
        )
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
    assert (
        notes.index("Found")
        < notes.index("Waiting")
        < notes.index("Decided")
        < notes.index("Migration")
        < notes.index("All tests")
    )
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
        session_name=name,
        plan_id=plan_id,
        decision="reject",
        notes="Unicode input crashes it.",
        actor="user:rita",
    )
    pulled = await client.call_tool("9plan_queue_pull", {})
    data = ok(pulled, name)
    assert data["plan_id"] == plan_id
    assert (
        pulled.content[0]
        .text.split("\n")[0]
        .endswith(
            "This plan was sent back in review by user:rita: read review_notes first (they are also at the end of its "
            "Notes). Plan pulled; its full text follows. Edit the file's Notes as you work."
        )
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
