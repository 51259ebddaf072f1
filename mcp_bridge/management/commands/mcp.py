"""`manage.py mcp`: serve 9plan's MCP tools over stdio (default) or streamable HTTP.

Under stdio, stdout carries JSON-RPC and nothing else: this command never writes to
self.stdout, and every log line goes to stderr as JSON.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

log = logging.getLogger("nineplan.mcp")


class Command(BaseCommand):
    help = "Serve 9plan's MCP tools (stdio by default; --transport http for streamable HTTP at /mcp)."
    requires_system_checks: list = []  # checks cost start-up time and may print; run them in `check`
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("--transport", choices=("stdio", "http"), default=None)
        parser.add_argument("--host", default=None, help="HTTP bind address (default NINEPLAN_HTTP_HOST, 127.0.0.1)")
        parser.add_argument("--port", type=int, default=None, help="HTTP port (default NINEPLAN_HTTP_PORT, 8080)")

    def handle(self, *args, transport=None, host=None, port=None, **options):
        from mcp_bridge import readiness
        from mcp_bridge.server import build_server

        transport = transport or settings.NINEPLAN_TRANSPORT
        readiness.start()
        server = build_server()
        if transport == "stdio":
            log.info("9plan serving MCP over stdio", extra={"sessions_path": str(settings.NINEPLAN_SESSIONS_PATH)})
            server.run("stdio")
            return
        raise CommandError("The HTTP transport is not available yet; use --transport stdio.")
