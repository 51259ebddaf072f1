"""9plan_session_create, 9plan_session_resume and 9plan_admin_sessions, through the SDK's
in-memory client. The bootstrap prompt and the server instructions are in test_prompts.py."""

from __future__ import annotations

import pytest

from sessions_app.models import Event, Session
from tests.mcp_bridge.helpers import error, in_thread, ok, plan_args, snapshot, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

SESSION_TOOLS = [
    ("9plan_queue_add", plan_args()),
    ("9plan_queue_add_batch", {"plans": [plan_args()]}),
    ("9plan_queue_pull", {}),
    ("9plan_plan_defer", {"reason": "later"}),
    ("9plan_plan_complete", {"outcome": "done"}),
    ("9plan_plan_discard", {"reason": "obsolete"}),
    ("9plan_plan_note", {"text": "a finding"}),
    ("9plan_history_search", {"query": "invoice"}),
    ("9plan_history_get", {"plan_id": "abcde"}),
    ("9plan_admin_validate", {}),
    ("9plan_admin_state", {}),
]


async def test_create_makes_a_session_with_its_folder_and_selects_it(client, sessions_dir):
    r = await client.call_tool("9plan_session_create", {"task_description": "Port billing to Django"})
    name = r.structured_content["session_name"]
    data = ok(r, name)
    assert data == {"session_name": name, "project": "default", "session_path": str(sessions_dir / name)}
    assert (sessions_dir / name / "plans").is_dir()
    session = await in_thread(Session.objects.get, name=name)
    assert session.task_description == "Port billing to Django"
    kinds = await in_thread(lambda: list(Event.objects.filter(session_id=name).values_list("kind", flat=True)))
    assert kinds == ["session_created"]
    # The new session is current: a call without session_name acts on it.
    ok(await client.call_tool("9plan_admin_state", {}), name)


async def test_create_without_a_description(client):
    r = await client.call_tool("9plan_session_create", {})
    name = r.structured_content["session_name"]
    ok(r, name)
    assert (await in_thread(Session.objects.get, name=name)).task_description is None


async def test_create_gives_a_new_name_each_time(client):
    first = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    second = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    assert first != second
    ok(await client.call_tool("9plan_admin_state", {}), second)


async def test_create_rejects_a_bad_description_and_writes_nothing(client, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    r = await client.call_tool("9plan_session_create", {"task_description": 12})
    error(r, "VALIDATION_ERROR", None, field="task_description")
    r = await client.call_tool("9plan_session_create", {"task_description": "x" * 70_000})
    data = error(r, "VALIDATION_ERROR", None, field="task_description")
    assert "70000 characters" in data["message"]
    assert await in_thread(snapshot, sessions_dir) == before


async def test_resume_returns_the_whole_state_and_selects_the_session(client, other_session, sessions_dir):
    name = other_session.name
    add = lambda goal: client.call_tool("9plan_queue_add", plan_args(goal=goal, session_name=name))  # noqa: E731
    a = (await add("Write the models")).structured_content["plan_id"]
    b = (await add("Write the views")).structured_content["plan_id"]
    c = (await add("Write the templates")).structured_content["plan_id"]
    await client.call_tool("9plan_queue_pull", {"session_name": name})
    await client.call_tool("9plan_plan_complete", {"outcome": "Models done", "session_name": name})
    await client.call_tool("9plan_queue_pull", {"session_name": name})

    data = ok(await client.call_tool("9plan_session_resume", {"session_name": name}), name)
    assert data == {
        "session_name": name,
        "session_path": str(sessions_dir / name),
        "task_description": "Somebody else's task",
        "queue": [{"id": c, "goal": "Write the templates", "queue_position": 1}],
        "queue_length": 1,
        "queue_more": 0,
        "active_plan": {
            "id": b,
            "goal": "Write the views",
            "file_path": str(sessions_dir / name / "plans" / f"{b}.txt"),
        },
        "completed_count": 1,
    }
    assert a not in text_of(await client.call_tool("9plan_session_resume", {"session_name": name}))
    # Resuming made it current.
    ok(await client.call_tool("9plan_admin_state", {}), name)


async def test_resume_of_an_unknown_or_malformed_name(client, sessions_dir):
    error(
        await client.call_tool("9plan_session_resume", {"session_name": "ghost-grey-owl"}),
        "SESSION_NOT_FOUND",
        "ghost-grey-owl",
    )
    for bad in ["../../etc", "Brave-Amber-Otter", "brave_amber_otter", "", "a-b"]:
        r = await client.call_tool("9plan_session_resume", {"session_name": bad})
        data = error(r, "VALIDATION_ERROR", None, field="session_name")
        assert "three lowercase words" in data["message"]
    # Nothing became current, and nothing was created on disk.
    error(await client.call_tool("9plan_admin_state", {}), "NO_SESSION_SELECTED", None)
    assert list(sessions_dir.iterdir()) == []


async def test_a_failed_resume_keeps_the_current_session(client):
    name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    error(
        await client.call_tool("9plan_session_resume", {"session_name": "ghost-grey-owl"}),
        "SESSION_NOT_FOUND",
        "ghost-grey-owl",
    )
    ok(await client.call_tool("9plan_admin_state", {}), name)


async def test_no_session_selected_on_every_tool_that_needs_one(client, other_session, sessions_dir):
    before = await in_thread(snapshot, sessions_dir)
    for tool, args in SESSION_TOOLS:
        data = error(await client.call_tool(tool, args), "NO_SESSION_SELECTED", None)
        assert "session_name" in data["suggestion"] and "9plan_session_resume" in data["suggestion"], tool
    assert await in_thread(snapshot, sessions_dir) == before


async def test_admin_sessions_lists_newest_first_with_counts(client, other_session):
    name = (await client.call_tool("9plan_session_create", {"task_description": "Mine"})).structured_content[
        "session_name"
    ]
    await client.call_tool("9plan_queue_add", plan_args())
    await client.call_tool("9plan_queue_add", plan_args())
    await client.call_tool("9plan_queue_pull", {})

    data = ok(await client.call_tool("9plan_admin_sessions", {}), name)
    assert data["total"] == 2 and data["more"] == 0
    rows = data["sessions"]
    assert [row["name"] for row in rows] == [name, other_session.name]
    mine = rows[0]
    assert mine["task_description"] == "Mine"
    assert (mine["queue_length"], mine["completed_count"], mine["has_active_plan"]) == (1, 0, True)
    theirs = rows[1]
    assert (theirs["queue_length"], theirs["completed_count"], theirs["has_active_plan"]) == (0, 0, False)
    assert set(mine) == {"name", "created", "task_description", "queue_length", "completed_count", "has_active_plan"}


async def test_admin_sessions_without_a_current_session(client, other_session):
    data = ok(await client.call_tool("9plan_admin_sessions", {}), None)
    assert [row["name"] for row in data["sessions"]] == [other_session.name]


async def test_admin_sessions_takes_no_session_name_and_selects_nothing(client, other_session):
    listing = await client.list_tools()
    (tool,) = [t for t in listing.tools if t.name == "9plan_admin_sessions"]
    assert tool.input_schema.get("properties", {}) == {}
    data = error(
        await client.call_tool("9plan_admin_sessions", {"session_name": other_session.name}),
        "VALIDATION_ERROR",
        other_session.name,
        field="session_name",
    )
    assert data["message"] == "Unknown argument(s) 'session_name': 9plan_admin_sessions accepts none."
    # The listing names the connection's current session in its header, and selects none.
    ok(await client.call_tool("9plan_admin_sessions", {}), None)
    error(await client.call_tool("9plan_admin_state", {}), "NO_SESSION_SELECTED", None)


async def test_admin_sessions_caps_the_list_and_counts_the_rest(client, transactional_db):
    from sessions_app import services

    await in_thread(lambda: [services.session_create() for _ in range(13)])
    data = ok(await client.call_tool("9plan_admin_sessions", {}), None)
    assert len(data["sessions"]) == 8
    assert data["total"] == 13 and data["more"] == 5
