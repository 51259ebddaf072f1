"""Builds 9plan's MCP server: registers the tools and the prompt; no logic here."""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, ToolAnnotations
from mcp_types import Tool as ListedTool
from pydantic import ValidationError

from mcp_bridge import prompts, readiness, responses, suggestions
from sessions_app import inputs
from sessions_app.errors import NineplanError, ValidationFailed
from sessions_app.identifiers import is_session_name
from sessions_app.version import version

if TYPE_CHECKING:
    from mcp_bridge.tools.runner import ConnectionState

log = logging.getLogger("nineplan.mcp")


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
    The tools themselves run as the SDK runs any plain ``def`` tool, in its worker threads.

    Only the SDK's public methods are overridden: tools/list advertises each tool's
    arguments more tersely than the SDK derives them (``advertised``), and call_tool
    refuses what the advertised schema does not accept before the SDK runs the tool.
    """

    # Each tool as tools/list advertises it, by name: made from the SDK's own listing
    # when first needed, and again after a tool is added or removed.
    listed: dict[str, ListedTool] | None = None
    # Which session each connection has selected: set by add_tools.
    nineplan_state: ConnectionState

    def add_tool(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        super().add_tool(fn, *args, **kwargs)
        self.listed = None

    def remove_tool(self, name: str) -> None:
        super().remove_tool(name)
        self.listed = None

    async def advertised_tools(self) -> dict[str, ListedTool]:
        listed = self.listed
        if listed is None:
            listed = self.listed = {tool.name: advertised(tool) for tool in await super().list_tools()}
        return listed

    async def list_tools(self) -> list[ListedTool]:
        try:
            await _tools_loaded()
        except NineplanError as exc:
            raise MCPError(INTERNAL_ERROR, exc.message) from exc
        return list((await self.advertised_tools()).values())

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None):
        try:
            await _tools_loaded()
        except NineplanError as exc:
            return responses.from_exception(_shown_session(None, arguments), exc)
        tool = (await self.advertised_tools()).get(name)
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
        accepted = tool.input_schema.get("properties", {})
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
        try:
            return await super().call_tool(name, arguments or {}, context)
        except ToolError as exc:  # UnexpectedToolError too: it is one
            if isinstance(exc.__cause__, ValidationError):
                return _bad_arguments(session, exc.__cause__)
            # never a traceback or a generic "internal error" to the agent
            log.error("tool raised outside the error mapper", extra={"tool": name, "session": session}, exc_info=exc)
            return responses.unexpected(session)


SHOWN_PROBLEMS = 10


def _bad_arguments(session: str | None, exc: ValidationError):
    """Arguments of the wrong type or shape, as VALIDATION_ERROR naming each field."""
    errors = exc.errors()
    shown = errors[:SHOWN_PROBLEMS]
    problems = [f"{inputs.clip(_field_name(err['loc']))}: {err['msg'].lower()}" for err in shown]
    # The fields named are those whose problem the message shows, so every one is explained.
    fields = sorted({inputs.clip(_field_name(err["loc"])) for err in shown})
    more = f" ({len(errors) - len(shown)} more problems not shown)" if len(errors) > len(shown) else ""
    return responses.from_exception(
        session,
        ValidationFailed(
            "Invalid arguments: " + "; ".join(problems) + more + ".",
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


def build_server(**options: Any) -> NineplanServer:
    """The server with its tools; ``options`` go to MCPServer (the OAuth resource server's
    ``auth`` and ``token_verifier``, mcp_bridge.oauth)."""
    server = new_server(**options)
    add_tools(server)
    return server


def new_server(**options: Any) -> NineplanServer:
    """The server with its instructions and prompt but no tools yet: it needs none of
    Django's apps, so it can answer `initialize` while they load (then add_tools)."""
    from django.conf import settings

    server = NineplanServer(
        "9plan", instructions=prompts.instructions(settings.NINEPLAN_TOOLS), version=version(), **options
    )
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
    Every tool call then names its caller (tools/runner.py), and a call that does not is
    refused (sessions_app/access.py)."""
    from mcp_bridge import tools
    from sessions_app import access

    access.serve_requests()
    server.nineplan_state = tools.ConnectionState()
    from django.conf import settings

    for name, fn, title in tools.offered(settings.NINEPLAN_TOOLS):
        read_only = fn in tools.READ_ONLY
        server.add_tool(
            fn,
            name=name,
            title=title,
            description=description(fn),
            # Hints left at the protocol's defaults are not sent (idempotent: false; and, for a
            # read-only tool, destructive, which only means anything for a tool that writes).
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False)
            if read_only
            else ToolAnnotations(destructive_hint=name == "9plan_plan_discard", open_world_hint=False),
            structured_output=False,
        )


def advertised(tool: ListedTool) -> ListedTool:
    """``tool`` as tools/list shows it: no arguments beyond the declared ones (what
    call_tool enforces), no titles, optional arguments as their type alone. A copy: the
    SDK validates arguments against the function's signature, not against this schema."""
    schema = copy.deepcopy(tool.input_schema)
    schema["additionalProperties"] = False
    _drop_titles(schema)
    _optional_as_plain(schema)
    return tool.model_copy(update={"input_schema": schema})


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
