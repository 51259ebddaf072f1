"""Fixtures for the MCP tests: a real 9plan server behind the SDK's in-memory client."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_bridge.server import build_server
from sessions_app import services


@pytest.fixture
async def client(transactional_db, sessions_dir):
    """A client connected to a fresh server: no session is current yet."""
    async with Client(build_server()) as connected:
        yield connected


@pytest.fixture
def other_session(transactional_db, sessions_dir):
    """A session that exists but is not the connection's current one."""
    return services.session_create(task_description="Somebody else's task")
