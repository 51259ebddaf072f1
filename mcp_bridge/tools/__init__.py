"""9plan's MCP tools: thin typed wrappers. Each validates, calls one service or query (and
the queries its answer needs), and formats the answer; nothing here changes state by itself.
This package's face is the list of tools the server registers (``TOOLS``), the read-only
ones among them, and the connection state the server keeps.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp_types import CallToolResult

from mcp_bridge.tools.history import history_get, history_search
from mcp_bridge.tools.inspection import admin_sessions, admin_state, admin_validate
from mcp_bridge.tools.plans import plan_read
from mcp_bridge.tools.queue import plan_renew, queue_add, queue_add_batch, queue_pull
from mcp_bridge.tools.runner import ConnectionState
from mcp_bridge.tools.sessions import session_create, session_resume
from mcp_bridge.tools.worker import plan_complete, plan_defer, plan_discard, plan_note

__all__ = ["CORE", "READ_ONLY", "TOOLS", "ConnectionState", "offered"]

READ_ONLY = {
    session_resume,
    plan_read,
    history_search,
    history_get,
    admin_validate,
    admin_sessions,
    admin_state,
}

TOOLS: list[tuple[str, Callable[..., CallToolResult], str]] = [
    ("9plan_session_create", session_create, "Create session"),
    ("9plan_session_resume", session_resume, "Resume session"),
    ("9plan_queue_add", queue_add, "Add plan"),
    ("9plan_queue_add_batch", queue_add_batch, "Add plans in order"),
    ("9plan_queue_pull", queue_pull, "Pull next plan"),
    ("9plan_plan_defer", plan_defer, "Defer plan"),
    ("9plan_plan_complete", plan_complete, "Complete plan"),
    ("9plan_plan_discard", plan_discard, "Discard active plan"),
    ("9plan_plan_note", plan_note, "Write notes"),
    ("9plan_plan_renew", plan_renew, "Renew the lease"),
    ("9plan_plan_read", plan_read, "Read a plan"),
    ("9plan_history_search", history_search, "Search history"),
    ("9plan_history_get", history_get, "Read a completed plan"),
    ("9plan_admin_validate", admin_validate, "Check invariants"),
    ("9plan_admin_sessions", admin_sessions, "List sessions"),
    ("9plan_admin_state", admin_state, "Session state dump"),
]

# The core set (NINEPLAN_TOOLS=core), for clients that pay for every byte of tools/list on
# every model turn: what one agent needs to create or resume a session, queue, work, note,
# finish and search.
CORE = {
    "9plan_session_create",
    "9plan_session_resume",
    "9plan_queue_add",
    "9plan_queue_add_batch",
    "9plan_queue_pull",
    "9plan_plan_read",
    "9plan_plan_note",
    "9plan_plan_complete",
    "9plan_plan_defer",
    "9plan_history_search",
}


def offered(which: str) -> list[tuple[str, Callable[..., CallToolResult], str]]:
    """The tools a server lists: every one ('all'), or the core set ('core')."""
    return [tool for tool in TOOLS if which == "all" or tool[0] in CORE]
