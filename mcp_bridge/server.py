"""Builds 9plan's MCP server: registers the tools and the prompt; no logic here."""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import ValidationError

from mcp_bridge import prompts, responses, tools

log = logging.getLogger("nineplan.mcp")


def _field_name(loc: tuple) -> str:
    parts = [str(p) for p in loc]
    name = parts[0] if parts else "arguments"
    for p in parts[1:]:
        name += f"[{p}]" if p.isdigit() else f".{p}"
    return name


class NineplanServer(MCPServer):
    """MCPServer whose argument errors carry a category, like every other 9plan error.

    The SDK rejects arguments of the wrong type before our code runs, with its own text;
    here they become VALIDATION_ERROR naming the field, in the SPEC §6 format.
    """

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            session = self.nineplan_state.get(context)
            if isinstance(exc.__cause__, ValidationError):
                problems = []
                for err in exc.__cause__.errors():
                    field = _field_name(err["loc"])
                    problems.append(f"{field}: {err['msg'].lower()}")
                fields = sorted({_field_name(err["loc"]) for err in exc.__cause__.errors()})
                return responses.error(
                    session,
                    "VALIDATION_ERROR",
                    "Invalid arguments: " + "; ".join(problems[:10]) + ".",
                    "Correct the named argument(s) as the tool's schema describes and call again; nothing was changed.",
                    field=fields[0] if len(fields) == 1 else fields,
                )
            known = sorted(t.name for t in self._tool_manager.list_tools())
            if name not in known:
                return responses.error(
                    session,
                    "VALIDATION_ERROR",
                    f"There is no tool named {name!r}.",
                    "Use one of the 9plan_* tools from tools/list.",
                    field="name",
                )
            return responses.error(session, "VALIDATION_ERROR", str(exc), "Check the arguments and call again.")


def build_server() -> NineplanServer:
    server = NineplanServer("9plan", instructions=prompts.INSTRUCTIONS, version="1.0.0")
    server.nineplan_state = tools.ConnectionState()  # type: ignore[attr-defined]
    for name, fn, title in tools.TOOLS:
        read_only = fn in tools.READ_ONLY
        server.add_tool(
            fn,
            name=name,
            title=title,
            annotations=ToolAnnotations(
                readOnlyHint=read_only,
                destructiveHint=False if read_only else name == "9plan_plan_discard",
                idempotentHint=read_only,
                openWorldHint=False,
            ),
            structured_output=False,
        )
    server.prompt(name="bootstrap", title="Set up a 9plan session")(prompts.bootstrap)
    return server
