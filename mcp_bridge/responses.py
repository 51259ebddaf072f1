"""The MCP face of 9plan's results: one success shape, one error mapper (docs/design.md,
"Errors")."""

from __future__ import annotations

import json
import logging
from typing import Any

from mcp_types import CallToolResult, TextContent

from mcp_bridge import suggestions
from sessions_app.errors import DatabaseFailed, NineplanError

log = logging.getLogger("nineplan.mcp")

NO_SESSION = "none"


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def ok(session: str | None, summary: str, data: dict[str, Any], *, body: str | None = None) -> CallToolResult:
    """Success: text starts with ``[Session: name]``; the same data rides as structured content."""
    data = {"session_name": session, **data}
    text = f"[Session: {session or NO_SESSION}] {summary}\n{dumps(data)}"
    if body is not None:
        text += f"\n\n{body}"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def error_text(session: str | None, category: str, message: str, suggestion: str) -> str:
    return f"[Session: {session or NO_SESSION}] Error: {category}\n\n{message}\n\nSuggested action: {suggestion}"


def error(session: str | None, category: str, message: str, suggestion: str, **extra: Any) -> CallToolResult:
    data = {
        "session_name": session,
        "error": category,
        "message": message,
        "suggestion": suggestion,
        **extra,
    }
    return CallToolResult(
        content=[TextContent(type="text", text=error_text(session, category, message, suggestion))],
        structured_content=data,
        is_error=True,
    )


def from_exception(session: str | None, exc: NineplanError) -> CallToolResult:
    extra = {"field": exc.field} if exc.field else {}
    return error(session, exc.category, exc.message, suggestions.for_error(exc), **extra)


def unexpected(session: str | None, detail: str = "") -> CallToolResult:
    """The answer to a failure no error of 9plan's describes: never a traceback, never a
    generic "internal error"; the write it interrupted was rolled back."""
    message = f"The operation failed and was rolled back{': ' + detail if detail else ''}."
    return from_exception(session, DatabaseFailed(message, reason=suggestions.UNEXPECTED))
