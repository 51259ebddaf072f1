"""Builds 9plan's MCP server: registers the tools and the prompt; no logic here."""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, ToolAnnotations
from pydantic import ValidationError

from mcp_bridge import prompts, readiness, responses, suggestions
from sessions_app.version import version
from sessions_app import inputs
from sessions_app.errors import NineplanError, ValidationFailed
from sessions_app.identifiers import is_session_name

log = logging.getLogger("nineplan.mcp")
SWITCH_INTERVAL = 0.0005  # seconds, over stdio (see NineplanServer.run_stdio_async)


def _field_name(loc: tuple) -> str:
    parts = [str(p) for p in loc]
    name = parts[0] if parts else "arguments"
    for p in parts[1:]:
        name += f"[{p}]" if p.isdigit() else f".{p}"
    return name


class NineplanServer(MCPServer):
    """MCPServer whose argument errors carry a category, like every other 9plan error.

    The SDK rejects arguments of the wrong type before our code runs, with its own text,
    and quietly drops arguments a tool does not declare; here both become VALIDATION_ERROR
    naming the field, in the layout of docs/design.md, "Errors", as does an unknown tool name.

    Over stdio the tools run on the event loop's own thread (``tools_inline``); elsewhere
    (HTTP, in-process clients) the SDK runs them in worker threads.
    """

    tools_inline = False

    async def run_stdio_async(self) -> None:
        """The SDK's server loop over mcp_bridge/stdio.py's message streams, which read and
        write the pipes on the event loop itself; over the SDK's own stdio transport where
        the loop cannot wait on stdin or stdout (a regular file). Either way the tools run
        inline (call_tool)."""
        from mcp_bridge import stdio

        self.tools_inline = True
        if not stdio.usable():
            return await super().run_stdio_async()
        # At start-up Django's apps load in a background thread while the loop answers
        # `initialize`, and the first calls wait for them in worker threads: each hand-over
        # waited up to the interpreter's switch interval (5 ms) for the other thread to let
        # go of the interpreter lock, which doubled a call's time on a busy machine.
        sys.setswitchinterval(SWITCH_INTERVAL)
        lowlevel = self._lowlevel_server
        async with stdio.streams() as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    async def list_tools(self):
        try:
            await _tools_loaded()
        except NineplanError as exc:
            raise MCPError(INTERNAL_ERROR, exc.message) from exc
        return await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None):
        try:
            await _tools_loaded()
        except NineplanError as exc:
            return responses.from_exception(_shown_session(None, arguments), exc)
        tool = self._tool_manager.get_tool(name)
        session = _shown_session(self.nineplan_state.get(context), arguments)
        if tool is None:
            return responses.from_exception(
                session,
                ValidationFailed(
                    f"There is no tool named {inputs.shown(name, 60)}.", field="name", reason=suggestions.UNKNOWN_TOOL
                ),
            )
        # The SDK ignores arguments a tool does not declare; a misspelt optional argument
        # ("postion") would then silently fall back to its default, so it is refused.
        accepted = tool.parameters.get("properties", {})
        unknown = sorted(str(key) for key in (arguments or {}) if key not in accepted)
        if unknown:
            names = ", ".join(repr(inputs.clip(k)) for k in unknown[:5])
            allowed = ", ".join(accepted) or "none"
            return responses.from_exception(
                session,
                ValidationFailed(
                    f"Unknown argument(s) {names}: {name} accepts {allowed}.",
                    field=inputs.clip(unknown[0]) if len(unknown) == 1 else [inputs.clip(k) for k in unknown[:5]],
                    reason=suggestions.UNKNOWN_ARGUMENT,
                ),
            )
        if self.tools_inline:
            # A call made in-process, outside a request, gets the context the SDK would give it.
            return await _call_inline(tool, arguments or {}, context or Context(mcp_server=self), session)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return _bad_arguments(session, exc.__cause__)
            log.error("tool raised outside the error mapper", extra={"tool": name, "session": session}, exc_info=exc)
            return responses.unexpected(session)


async def _call_inline(tool: Tool, arguments: dict[str, Any], context: Context, session: str | None):
    """Run a tool on the event loop's thread, as a synchronous call.

    A stdio server has one client, whose calls come one after another: handing each to a
    worker thread and its answer back cost about 0.2 ms of every call (docs/design.md, "The
    edges"). While the tool runs the loop waits, so nothing else of this connection runs
    meanwhile. The tool runs outside the loop (``synchronously``):
    Django refuses its ORM where an event loop runs, and there keeps a database connection
    per task, which would open a new one for every call.
    """
    if not readiness.ready():
        # The first calls may come while the database is being prepared: they wait in a
        # worker thread, so the loop keeps answering meanwhile (a failure is reported by
        # the tool itself, through its error mapper).
        await anyio.to_thread.run_sync(readiness.settle)
    try:
        validated = tool.fn_metadata.validate_arguments(arguments)
    except ValidationError as exc:
        return _bad_arguments(session, exc)
    passed = {tool.context_kwarg: context} if tool.context_kwarg else {}
    try:
        with synchronously():
            return tool.fn(**validated, **passed)
    except Exception as exc:  # never a traceback or a generic "internal error" to the agent
        log.error("tool raised outside the error mapper", extra={"tool": tool.name, "session": session}, exc_info=exc)
        return responses.unexpected(session)


@contextmanager
def synchronously() -> Iterator[None]:
    """Synchronous code on the event loop's thread, seen as a plain synchronous caller: no
    loop is running inside. The loop itself is blocked meanwhile (it is this thread)."""
    loop = asyncio.get_running_loop()
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(loop)


def _bad_arguments(session: str | None, exc: ValidationError):
    """Arguments of the wrong type or shape, as VALIDATION_ERROR naming each field."""
    errors = exc.errors()
    problems = [f"{inputs.clip(_field_name(err['loc']))}: {err['msg'].lower()}" for err in errors[:10]]
    fields = sorted({inputs.clip(_field_name(err["loc"])) for err in errors})
    return responses.from_exception(
        session,
        ValidationFailed(
            "Invalid arguments: " + "; ".join(problems) + ".",
            field=fields[0] if len(fields) == 1 else fields,
            reason=suggestions.BAD_ARGUMENTS,
        ),
    )


async def _tools_loaded() -> None:
    # Over stdio the server answers `initialize` while Django's apps and the tools load
    # in the background (readiness.start); a request that needs the tools waits for them
    # in a worker thread, so the event loop keeps serving meanwhile.
    if not readiness.apps_ready():
        await anyio.to_thread.run_sync(readiness.wait_apps)
    readiness.wait_apps()  # raises if loading failed


def _shown_session(current: str | None, arguments: dict[str, Any] | None) -> str | None:
    requested = (arguments or {}).get("session_name")
    return requested if is_session_name(requested) else current


def build_server() -> NineplanServer:
    server = new_server()
    add_tools(server)
    return server


def new_server() -> NineplanServer:
    """The server with its instructions and prompt but no tools yet: it needs none of
    Django's apps, so it can answer `initialize` while they load (then add_tools)."""
    server = NineplanServer("9plan", instructions=prompts.INSTRUCTIONS, version=version())
    server.prompt(name="bootstrap", title="Set up a 9plan session", description=description(prompts.bootstrap))(
        prompts.bootstrap
    )
    return server


def description(fn) -> str:
    """``fn``'s docstring without its source indentation, which would otherwise be sent to
    every client in tools/list and spent from the model's context each time."""
    return inspect.cleandoc(fn.__doc__ or "")


def add_tools(server: NineplanServer) -> None:
    """Registers the tools; Django's apps must be loaded, as the tools import the models.
    Every tool call then names its caller (tools/calls.py), and a call that does not is
    refused (sessions_app/access.py)."""
    from mcp_bridge import tools
    from sessions_app import access

    access.serve_requests()
    server.nineplan_state = tools.ConnectionState()  # type: ignore[attr-defined]
    for name, fn, title in tools.TOOLS:
        read_only = fn in tools.READ_ONLY
        server.add_tool(
            fn,
            name=name,
            title=title,
            description=description(fn),
            # Hints left at the protocol's defaults are not sent (idempotent: false; and, for a
            # read-only tool, destructive, which only means anything for a tool that writes).
            annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False)
            if read_only
            else ToolAnnotations(destructiveHint=name == "9plan_plan_discard", openWorldHint=False),
            structured_output=False,
        )
        parameters = server._tool_manager.get_tool(name).parameters
        # Advertise what call_tool enforces: no arguments beyond the declared ones.
        parameters["additionalProperties"] = False
        _drop_titles(parameters)
        _optional_as_plain(parameters)


def _optional_as_plain(schema: dict) -> None:
    """An optional argument is advertised as its type alone, not "that type or null, default
    null": leaving it out says the same, and tools/list is sent to every client and spent
    from the model's context. An explicit null is still accepted (the SDK validates against
    the function's own signature)."""
    for name, prop in (schema.get("properties") or {}).items():
        options = prop.get("anyOf")
        if not options or prop.get("default", ...) is not None or name in schema.get("required", ()):
            continue
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) != 1:
            continue
        del prop["anyOf"], prop["default"]
        prop.update({**kept[0], **prop})
    for sub in (schema.get("$defs") or {}).values():
        _optional_as_plain(sub)


def _drop_titles(schema: Any) -> None:
    """Remove the titles pydantic derives from argument names ("session_name" becomes
    "Session Name"): they repeat the names, and tools/list is sent to every client and
    spent from the model's context (docs/design.md, "The edges")."""
    if not isinstance(schema, dict):
        return
    schema.pop("title", None)
    for sub in (schema.get("properties") or {}).values():
        _drop_titles(sub)
    for sub in (schema.get("$defs") or {}).values():
        _drop_titles(sub)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            _drop_titles(sub)
    _drop_titles(schema.get("items"))
