import pytest
from mcp import Client

from mcp_bridge.server import build_server

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_create_add_pull():
    async with Client(build_server()) as client:
        r = await client.call_tool("9plan_session_create", {"task_description": "t"})
        assert not r.is_error, r
        name = r.structured_content["session_name"]
        r = await client.call_tool(
            "9plan_queue_add",
            {"context": "c", "goal": "g", "approach": "a", "success_criteria": "s"},
        )
        assert not r.is_error, r
        assert r.content[0].text.startswith(f"[Session: {name}]")
        r = await client.call_tool("9plan_queue_pull", {})
        assert "# Goal\ng" in r.content[0].text
        r = await client.call_tool("9plan_queue_pull", {})
        assert r.is_error and "Error: PLAN_ALREADY_ACTIVE" in r.content[0].text
        r = await client.call_tool("9plan_plan_defer", {"reason": "x", "position": "Front"})
        assert r.is_error and "VALIDATION_ERROR" in r.content[0].text, r.content[0].text
        r = await client.call_tool("9plan_history_search", {"query": 5})
        assert r.is_error and "VALIDATION_ERROR" in r.content[0].text, r.content[0].text
        print(r.content[0].text)
