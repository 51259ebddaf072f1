"""The yardstick: a bare MCPServer over stdio (or, with ``--http PORT``, streamable HTTP),
started the way `manage.py mcp` is.

With no arguments it has no tools (the start-up baseline). With ``--noop`` it has a tool
that does nothing (the round-trip baseline) and one that does nothing but return a
result of a given size, shaped like 9plan's (the data as JSON text and as structured
content): what the SDK alone costs for an answer as large as a real tool's. Plain
``def`` tools, as 9plan's are, so both sides pay for the SDK's worker-thread hop.
"""

import json
import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

server = MCPServer("bare")

if "--noop" in sys.argv:

    @server.tool(name="noop", structured_output=False)
    def noop(value: str = "") -> str:
        """Does nothing."""
        return value

    @server.tool(name="sized", structured_output=False)
    def sized(size: int) -> CallToolResult:
        """Returns about ``size`` bytes of result, half as text and half as structured content."""
        data = {"filler": "x" * max(0, size // 2 - 16)}
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(data))], structured_content=data)


if "--http" in sys.argv:
    # Streamable HTTP on loopback, stateless, as `manage.py mcp --transport http` serves it
    # to a stateless client: the yardstick for an HTTP round trip.
    import anyio
    import uvicorn

    port = int(sys.argv[sys.argv.index("--http") + 1])
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1", stateless_http=True)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    anyio.run(uvicorn.Server(config).serve)
else:
    server.run("stdio")
