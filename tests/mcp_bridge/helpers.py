"""Assertions shared by the MCP tests: the error text layout (docs/design.md, "Errors"), the
structured content, and snapshots of everything a tool call could change."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import anyio
from django.db import connection

from sessions_app.models import Event, Plan, Session

ERROR_LAYOUT = re.compile(
    r"\A\[Session: (?P<session>[^\]\n]+)\] Error: (?P<category>[A-Z_]+)\n\n"
    r"(?P<message>.+?)\n\nSuggested action: (?P<suggestion>.+)\Z",
    re.S,
)

QUEUE_ARGS = {
    "context": "Porting the billing service",
    "goal": "Model invoices",
    "approach": "1. Read the schema\n2. Write the models",
    "success_criteria": "Migrations apply; tests pass",
}


def plan_args(**overrides: Any) -> dict[str, Any]:
    return {**QUEUE_ARGS, **overrides}


def text_of(result) -> str:
    assert len(result.content) == 1, result.content
    assert result.content[0].type == "text"
    return result.content[0].text


def ok(result, session: str | None) -> dict[str, Any]:
    """A success naming ``session``: the text's JSON line and the structured content agree."""
    text = text_of(result)
    assert not result.is_error, text
    assert text.startswith(f"[Session: {session or 'none'}] "), text
    data = result.structured_content
    assert data["session_name"] == session
    assert json.loads(text.split("\n")[1]) == json.loads(json.dumps(data, default=str))
    return data


def error(result, category: str, session: str | None, *, field: Any = None) -> dict[str, Any]:
    """An error in the exact layout of docs/design.md, "Errors", with the same facts as
    structured content."""
    text = text_of(result)
    assert result.is_error, text
    data = result.structured_content
    expected = (
        f"[Session: {session or 'none'}] Error: {category}\n\n{data['message']}\n\n"
        f"Suggested action: {data['suggestion']}"
    )
    assert text == expected
    assert ERROR_LAYOUT.match(text), text
    assert data["error"] == category
    assert data["session_name"] == session
    assert data["message"].strip() and data["suggestion"].strip()
    assert "Traceback" not in text and "Error executing tool" not in text
    if field is not None:
        assert data.get("field") == field, data
    return data


def body_of(result) -> str:
    """The plan text that follows the JSON line (queue_pull)."""
    return text_of(result).split("\n\n", 1)[1]


async def in_thread(fn, /, *args, **kwargs):
    """Run ORM code from an async test: Django refuses it on the event loop's thread."""

    def run():
        try:
            return fn(*args, **kwargs)
        finally:
            connection.close()

    return await anyio.to_thread.run_sync(functools.partial(run))


def tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(Path(root).rglob("*"))}


def snapshot(sessions_dir: Path) -> dict[str, Any]:
    """Every row and every file a tool call could touch."""
    return {
        "sessions": list(Session.objects.order_by("name").values()),
        "plans": list(Plan.objects.order_by("id").values()),
        "events": list(Event.objects.order_by("id").values()),
        "files": tree(sessions_dir),
    }


def plan_row(plan_id: str) -> Plan:
    return Plan.objects.get(id=plan_id)


async def started(client, *goals: str) -> tuple[str, list[str]]:
    """A current session with the given plans queued and the first one pulled."""
    name = (await client.call_tool("9plan_session_create", {})).structured_content["session_name"]
    ids = []
    for goal in goals:
        ids.append((await client.call_tool("9plan_queue_add", plan_args(goal=goal))).structured_content["plan_id"])
    ok(await client.call_tool("9plan_queue_pull", {}), name)
    return name, ids


async def new_session(client, **args) -> str:
    """A new current session made with these arguments; its name."""
    result = await client.call_tool("9plan_session_create", args)
    return result.structured_content["session_name"]


async def add_plan(client, name: str, **fields) -> str:
    """Queues a plan in the named session; its id."""
    return ok(await client.call_tool("9plan_queue_add", {**plan_args(**fields), "session_name": name}), name)["plan_id"]
