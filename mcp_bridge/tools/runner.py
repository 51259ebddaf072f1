"""What every tool call shares: the connection's current session, who is calling (the
token's holder over HTTP), and ``run``, which resolves the session, runs the tool's body and
maps every failure to the error text (docs/design.md, "Errors").

Tools are plain ``def`` functions: the SDK runs them in its worker threads, over stdio as
over HTTP, where the ORM may be used (an ``async def`` tool touching the ORM would fail).
A worker thread keeps its database connection from one call to the next, so ``run`` closes
the ones Django considers old or broken before and after each call.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Literal, overload

from django.db import close_old_connections
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult

from mcp_bridge import auth, responses
from mcp_bridge.readiness import wait_ready
from sessions_app import access, inputs, planfiles, services
from sessions_app.errors import STATELESS_CONNECTION, NineplanError, NoSessionSelected
from sessions_app.identifiers import is_session_name

log = logging.getLogger("nineplan.mcp")


class ConnectionState:
    """The current session of each connection (set by create/resume).

    Over stdio one process is one connection. Over HTTP the MCP session id
    (``mcp-session-id``, protocol versions with an initialize handshake) tells
    connections apart. A stateless HTTP request (protocol 2026-07-28, which the SDK's
    ``mcp.client.Client`` speaks) carries no such id, so nothing is remembered between its calls: the client
    passes ``session_name`` on every call. Remembering "the last session" per process
    instead would hand one agent's session to every other agent of that process.

    The id is only a header: the SDK checks that it belongs to the caller's token on the
    handshake protocols of a stateful server, but a stateless request (or a stateless
    server) passes whatever id the client sends. So the state is keyed on the token as
    well as the id: a request bearing another token's id finds nothing of it.
    """

    # Stateful HTTP sessions come and go (the SDK ends idle ones); the oldest entries are
    # dropped beyond this many, so a long-running server does not grow without bound.
    MAX_CONNECTIONS = 10_000

    def __init__(self) -> None:
        self._current: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(ctx: Context | None) -> str | None:
        try:
            headers = ctx.headers if ctx is not None else None
        except Exception:  # outside a request (in-process calls) there are no headers
            headers = None
        if headers is None:
            return "local"
        sid = headers.get("mcp-session-id")
        if not sid:
            return None
        found = holder(ctx)
        owner = "anonymous" if found is None else found.caller.claimant
        return f"http:{owner}:{sid}"

    def remembers(self, ctx: Context | None) -> bool:
        """Whether this connection keeps a current session between calls."""
        return self._key(ctx) is not None

    def get(self, ctx: Context | None) -> str | None:
        key = self._key(ctx)
        if key is None:
            return None
        with self._lock:
            name = self._current.get(key)
            if name is not None:
                self._current.move_to_end(key)
            return name

    def set(self, ctx: Context | None, name: str) -> None:
        key = self._key(ctx)
        if key is None:
            return
        with self._lock:
            self._current[key] = name
            self._current.move_to_end(key)
            while len(self._current) > self.MAX_CONNECTIONS:
                self._current.popitem(last=False)


STATELESS_HINT = " This connection keeps no current session (stateless HTTP): pass session_name='{name}' on every call."


def connection_state(ctx: Context) -> ConnectionState:
    return ctx.mcp_server.nineplan_state  # type: ignore[attr-defined]


def _request(ctx: Context | None):
    try:
        return ctx.request_context.request if ctx is not None else None
    except ValueError:  # outside a request (in-process calls)
        return None


def holder(ctx: Context | None) -> auth.Holder | None:
    """The bearer token's holder of this call's HTTP request; None over stdio or without a token."""
    return auth.holder_of(_request(ctx))


def files_for(ctx: Context | None) -> bool:
    """Whether this call's agent reads this server's plan files: an agent over stdio runs on
    the server's machine, one over HTTP does not (its answers name no server path and never
    ask it to edit a file)."""
    return planfiles.enabled() and _request(ctx) is None


def caller(ctx: Context | None) -> access.Caller:
    """Who is calling: the token's holder with its rights, or (stdio, or HTTP without a
    token) the local user, who may do everything."""
    found = holder(ctx)
    return access.LOCAL if found is None else found.caller


def actor(ctx: Context | None) -> str:
    """What the events of this call name: "agent" locally, "agent:<user>/<token>" with a token."""
    return caller(ctx).label


def asked(tool: str, **arguments: Any) -> dict[str, Any]:
    """A write tool's call, as its request_id is matched on: the tool and its arguments as
    the caller sent them (each passed by name), without the connection or the request_id."""

    def plain(value: Any) -> Any:
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value.model_dump() if hasattr(value, "model_dump") else value

    return {"tool": tool, **{k: plain(v) for k, v in arguments.items()}}


def _once(
    request_id: str,
    call: dict[str, Any],
    shown: str | None,
    body: Callable[[], CallToolResult],
) -> CallToolResult:
    """A write tool's body, applied once per request_id (sessions_app/services/retries.py).
    A refusal is answered but not kept: it changed nothing, so a retry may succeed."""

    def write() -> tuple[dict, bool]:
        try:
            result = body()
        except NineplanError as exc:
            result = responses.from_exception(shown, exc)
        return result.model_dump(mode="json", by_alias=True, exclude_none=True), not result.is_error

    answer = services.write_once(request_id=request_id, call=call, write=write, session_of=_session_of)
    return CallToolResult.model_validate(answer)


def _session_of(answer: dict) -> str | None:
    """The session a kept answer is about (every success names it), whose access a replay
    checks again."""
    structured = answer.get("structuredContent")
    name = structured.get("session_name") if isinstance(structured, dict) else None
    return name if isinstance(name, str) else None


@overload
def run(
    ctx: Context,
    session_name: str | None,
    body: Callable[[str], CallToolResult],
    *,
    needs_session: Literal[True] = True,
    request_id: str | None = None,
    call: dict[str, Any] | None = None,
) -> CallToolResult: ...


@overload
def run(
    ctx: Context,
    session_name: str | None,
    body: Callable[[str | None], CallToolResult],
    *,
    needs_session: Literal[False],
    request_id: str | None = None,
    call: dict[str, Any] | None = None,
) -> CallToolResult: ...


def run(
    ctx: Context,
    session_name: str | None,
    # A body that needs a session is given its name, one that does not may be given None:
    # the overloads above say which.
    body: Callable[[Any], CallToolResult],
    *,
    needs_session: bool = True,
    request_id: str | None = None,
    call: dict[str, Any] | None = None,
) -> CallToolResult:
    """Resolve the session, run the body (once per ``request_id``, when the caller gives one:
    ``call`` is what a retry must repeat), and map every failure to the error text
    (docs/design.md, "Errors")."""
    requested = session_name if session_name is not None else connection_state(ctx).get(ctx)
    shown = requested if is_session_name(requested) else connection_state(ctx).get(ctx)
    try:
        wait_ready()
        close_old_connections()
        if needs_session:
            if requested is None:
                if not connection_state(ctx).remembers(ctx):
                    raise NoSessionSelected(
                        "No session_name was given, and this connection keeps no current session between "
                        "calls (stateless HTTP), so every call must name its session.",
                        reason=STATELESS_CONNECTION,
                    )
                raise NoSessionSelected("No session is selected on this connection and no session_name was given.")
            inputs.session_name(requested)
        with access.acting_as(caller(ctx)):
            if request_id is None:
                return body(requested)
            # A session tool's call is made in its session, however it was named; a create
            # is one call whatever session was current.
            session = {"session": requested} if needs_session else {}
            return _once(request_id, {**(call or {}), **session}, shown, lambda: body(requested))
    except NineplanError as exc:
        return responses.from_exception(shown, exc)
    except Exception as exc:  # never a traceback or a generic "internal error" to the agent
        log.exception("tool failed unexpectedly", extra={"session": shown})
        return responses.unexpected(shown, type(exc).__name__)
    finally:
        close_old_connections()
