"""Fixtures for the MCP tests: a real 9plan server behind the SDK's in-memory client."""

from __future__ import annotations

import threading

import pytest
from mcp import Client

from mcp_bridge import readiness
from mcp_bridge.server import build_server
from sessions_app import services


@pytest.fixture
async def client(transactional_db, sessions_dir):
    """A client connected to a fresh server: no session is current yet."""
    async with Client(build_server()) as connected:
        yield connected


@pytest.fixture
def fresh(monkeypatch):
    """A server that has not started yet (the module keeps one start-up per process)."""
    for name, value in {
        "_ready": threading.Event(),
        "_apps_ready": threading.Event(),
        "_error": [],
        "_setup_error": [],
        "_thread": None,
    }.items():
        monkeypatch.setattr(readiness, name, value)
    yield readiness
    if readiness._thread is not None:
        readiness._thread.join(timeout=60)


@pytest.fixture
def other_session(transactional_db, sessions_dir):
    """A session that exists but is not the connection's current one."""
    return services.session_create(task_description="Somebody else's task")
