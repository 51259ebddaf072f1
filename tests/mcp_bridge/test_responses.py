"""The MCP face of 9plan's results (mcp_bridge/responses.py): one success shape and one
error shape, each text starting with the session, with the same data as structured content."""

from __future__ import annotations

import json

from mcp_bridge import responses
from sessions_app.errors import PlanNotFound


def test_ok_starts_with_the_session_and_carries_the_data_twice():
    result = responses.ok("calm-blue-heron", "Queued 1 plan.", {"plan_id": "ab12z", "goal": "Café"}, body="the plan")
    assert not result.is_error
    assert result.structured_content == {"session_name": "calm-blue-heron", "plan_id": "ab12z", "goal": "Café"}
    summary, data, body = result.content[0].text.split("\n", 2)
    assert summary == "[Session: calm-blue-heron] Queued 1 plan."
    assert json.loads(data) == result.structured_content and "Café" in data
    assert body == "\nthe plan"
    assert responses.ok(None, "Listed.", {}).content[0].text == '[Session: none] Listed.\n{"session_name":null}'


def test_an_error_names_its_category_message_and_suggestion():
    result = responses.error("calm-blue-heron", "QUEUE_EMPTY", "Nothing is queued.", "Add a plan.", field="x")
    assert result.is_error
    assert result.structured_content == {
        "session_name": "calm-blue-heron",
        "error": "QUEUE_EMPTY",
        "message": "Nothing is queued.",
        "suggestion": "Add a plan.",
        "field": "x",
    }
    assert result.content[0].text == (
        "[Session: calm-blue-heron] Error: QUEUE_EMPTY\n\nNothing is queued.\n\nSuggested action: Add a plan."
    )


def test_an_exception_and_an_unexpected_failure_become_errors():
    result = responses.from_exception(None, PlanNotFound("No plan 'ab12z' exists.", field="plan_id"))
    assert result.is_error and result.structured_content["error"] == "PLAN_NOT_FOUND"
    assert result.structured_content["field"] == "plan_id" and result.structured_content["suggestion"]
    failed = responses.unexpected("calm-blue-heron", "disk full")
    assert (
        failed.is_error
        and failed.structured_content["message"] == "The operation failed and was rolled back: disk full."
    )
    assert "Traceback" not in failed.content[0].text
