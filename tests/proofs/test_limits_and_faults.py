"""Limits and file-system faults as an agent meets them through the MCP tools.

Every configured limit, exceeded, is a VALIDATION_ERROR naming the field and giving both
the actual and the allowed size, and nothing is written. A sessions folder that cannot be
written gives FILE_SYSTEM_ERROR with the database and the files exactly as they were.
(Root ignores permission bits, so an unwritable folder is a regular file in its place.)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import break_plans_folder
from tests.mcp_bridge.helpers import error, in_thread, ok, plan_args, snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def current_session(client, *, active: bool = False) -> str:
    name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    if active:
        ok(await client.call_tool("9plan_queue_add", plan_args(goal="The active one")), name)
        ok(await client.call_tool("9plan_queue_pull", {}), name)
    return name


def says_sizes(message: str, actual: int, allowed: int) -> None:
    assert re.search(rf"\b{actual}\b", message), message
    assert re.search(rf"\b{allowed}\b", message), message


async def refused(client, sessions_dir: Path, name: str, tool: str, args: dict, category: str, field=None) -> dict:
    """The call fails with ``category`` and leaves every row and file as it was."""
    before = await in_thread(snapshot, sessions_dir)
    data = error(await client.call_tool(tool, args), category, name, field=field)
    assert await in_thread(snapshot, sessions_dir) == before
    return data


# --- limits ---------------------------------------------------------------------------------


async def test_a_field_over_its_limit(client, sessions_dir, settings):
    settings.NINEPLAN_MAX_FIELD_CHARS = 100
    name = await current_session(client)
    data = await refused(
        client, sessions_dir, name, "9plan_queue_add", plan_args(goal="g" * 101), "VALIDATION_ERROR", field="goal"
    )
    says_sizes(data["message"], 101, 100)
    ok(await client.call_tool("9plan_queue_add", plan_args(goal="g" * 100)), name)


async def test_a_plan_over_the_total_limit(client, sessions_dir, settings):
    settings.NINEPLAN_MAX_PLAN_CHARS = 60
    name = await current_session(client)
    args = {"context": "c" * 20, "goal": "g" * 20, "approach": "a" * 20, "success_criteria": "s" * 20}
    data = await refused(client, sessions_dir, name, "9plan_queue_add", args, "VALIDATION_ERROR", field="plan")
    says_sizes(data["message"], 80, 60)


async def test_a_queue_at_its_length_limit(client, sessions_dir, settings):
    settings.NINEPLAN_MAX_QUEUE_LENGTH = 2
    name = await current_session(client)
    for goal in ("A", "B"):
        ok(await client.call_tool("9plan_queue_add", plan_args(goal=goal)), name)
    data = await refused(client, sessions_dir, name, "9plan_queue_add", plan_args(), "VALIDATION_ERROR", field="queue")
    says_sizes(data["message"], 3, 2)
    # Pulling makes room again.
    ok(await client.call_tool("9plan_queue_pull", {}), name)
    ok(await client.call_tool("9plan_queue_add", plan_args(goal="C")), name)


async def test_a_batch_that_would_overflow_the_queue_adds_none_of_it(client, sessions_dir, settings):
    settings.NINEPLAN_MAX_QUEUE_LENGTH = 3
    name = await current_session(client)
    ok(await client.call_tool("9plan_queue_add", plan_args(goal="A")), name)
    batch = {"plans": [plan_args(goal=g) for g in ("B", "C", "D")]}
    data = await refused(client, sessions_dir, name, "9plan_queue_add_batch", batch, "VALIDATION_ERROR", field="queue")
    says_sizes(data["message"], 4, 3)


async def test_a_batch_over_its_limit(client, sessions_dir, settings):
    settings.NINEPLAN_MAX_BATCH = 3
    name = await current_session(client)
    batch = {"plans": [plan_args(goal=f"G{i}") for i in range(4)]}
    data = await refused(client, sessions_dir, name, "9plan_queue_add_batch", batch, "VALIDATION_ERROR", field="plans")
    says_sizes(data["message"], 4, 3)


async def test_a_search_query_over_its_limit(client, sessions_dir, settings):
    settings.NINEPLAN_MAX_QUERY_CHARS = 10
    name = await current_session(client)
    data = await refused(
        client, sessions_dir, name, "9plan_history_search", {"query": "q" * 11}, "VALIDATION_ERROR", field="query"
    )
    says_sizes(data["message"], 11, 10)
    ok(await client.call_tool("9plan_history_search", {"query": "q" * 10}), name)


async def test_a_notes_append_is_measured_after_composing(client, sessions_dir, settings):
    settings.NINEPLAN_MAX_FIELD_CHARS = 50
    name = await current_session(client, active=True)
    ok(await client.call_tool("9plan_plan_note", {"text": "x" * 30}), name)
    # The fragment fits; the stored 30 + the blank line + 30 does not.
    data = await refused(
        client, sessions_dir, name, "9plan_plan_note", {"text": "y" * 30}, "VALIDATION_ERROR", field="notes"
    )
    says_sizes(data["message"], 62, 50)


async def test_a_defer_reason_that_overflows_the_plan(client, sessions_dir, settings):
    name = await current_session(client, active=True)
    size = len("".join(plan_args(goal="The active one").values()))
    settings.NINEPLAN_MAX_PLAN_CHARS = size + 20
    data = await refused(
        client, sessions_dir, name, "9plan_plan_defer", {"reason": "r" * 30}, "VALIDATION_ERROR", field="reason"
    )
    composed = size + len("Deferred 2000-01-01 00:00:00 UTC: ") + 30
    says_sizes(data["message"], composed, size + 20)


async def test_an_outcome_over_its_limit(client, sessions_dir, settings):
    settings.NINEPLAN_MAX_FIELD_CHARS = 40
    name = await current_session(client, active=True)
    data = await refused(
        client, sessions_dir, name, "9plan_plan_complete", {"outcome": "o" * 41}, "VALIDATION_ERROR", field="outcome"
    )
    says_sizes(data["message"], 41, 40)


# --- file-system faults ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool, args, active",
    [
        ("9plan_queue_add", plan_args(goal="Never added"), False),
        (
            "9plan_queue_add_batch",
            {"plans": [plan_args(goal="One"), plan_args(goal="Two")], "position": "front"},
            False,
        ),
        ("9plan_plan_defer", {"reason": "Blocked"}, True),
        ("9plan_plan_note", {"text": "A finding"}, True),
        ("9plan_plan_note", {"text": "All new", "mode": "replace"}, True),
    ],
    ids=["add", "add_batch", "defer", "note", "note-replace"],
)
async def test_an_unwritable_plans_folder_gives_file_system_error(client, sessions_dir, tool, args, active):
    name = await current_session(client, active=active)
    break_plans_folder(sessions_dir, name)
    data = await refused(client, sessions_dir, name, tool, args, "FILE_SYSTEM_ERROR")
    assert "plans" in data["message"]
    # The session still answers, and what it reports is true.
    ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)


async def test_a_sessions_folder_under_a_file_gives_file_system_error(client, sessions_dir, settings, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    settings.NINEPLAN_SESSIONS_PATH = blocker / "sessions"
    before = await in_thread(snapshot, sessions_dir)
    error(await client.call_tool("9plan_session_create", {}), "FILE_SYSTEM_ERROR", None)
    assert await in_thread(snapshot, sessions_dir) == before
    assert blocker.read_text() == "a file, not a folder"


# --- plan files that cannot be used ---------------------------------------------------------
#
# The service-level cases (every step, every kind of file) are in
# tests/sessions_app/planfiles/test_folders.py; these check what the agent reads.


def _active_file(sessions_dir: Path, name: str) -> Path:
    (path,) = (sessions_dir / name / "plans").iterdir()
    return path


async def test_a_pull_never_carries_the_text_behind_a_link(client, sessions_dir, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("TOP-SECRET-hunter2")
    name = await current_session(client)
    ok(await client.call_tool("9plan_queue_add", plan_args(goal="Mine")), name)
    path = _active_file(sessions_dir, name)
    path.unlink()
    os.symlink(secret, path)

    result = await client.call_tool("9plan_queue_pull", {})

    data = ok(result, name)
    text = result.content[0].text
    assert "TOP-SECRET" not in text and "# Goal\nMine" in text
    assert "symbolic link" in data["plan_file_notice"]
    assert "About the plan file: see plan_file_notice" in text
    validated = ok(await client.call_tool("9plan_admin_validate", {}), name)
    assert validated["valid"] is False and "symbolic link" in validated["issues"][0]
    data = error(await client.call_tool("9plan_plan_complete", {"outcome": "done"}), "FILE_SYSTEM_ERROR", name)
    assert "symbolic link" in data["message"] and "TOP-SECRET" not in data["message"]


async def test_a_huge_plan_file_is_named_as_what_is_too_large(client, sessions_dir):
    name = await current_session(client, active=True)
    path = _active_file(sessions_dir, name)
    with path.open("ab") as fh:
        fh.write(b"n" * (50 * 1024 * 1024))

    data = await refused(
        client, sessions_dir, name, "9plan_plan_note", {"text": "small"}, "VALIDATION_ERROR", field="plan_file"
    )
    assert "plan file" in data["message"] and "too large" in data["message"]
    assert "database kept" in data["message"] and "notes is" not in data["message"]

    discarded = ok(await client.call_tool("9plan_plan_discard", {"reason": "too big"}), name)
    assert "too large" in discarded["plan_file_notice"] and "preserved" in discarded["plan_file_notice"]
    assert len(discarded["plan_file_notice"].encode()) <= 600


async def test_bytes_that_are_not_utf8_are_reported_in_the_answer(client, sessions_dir):
    name = await current_session(client, active=True)
    path = _active_file(sessions_dir, name)
    written = path.read_bytes() + b"caf\xe9\n"
    path.write_bytes(written)

    data = ok(await client.call_tool("9plan_plan_note", {"text": "a finding"}), name)

    assert "not UTF-8" in data["plan_file_notice"] and "preserved" in data["plan_file_notice"]
    (kept,) = (sessions_dir / name / "preserved").iterdir()
    assert kept.read_bytes() == written
