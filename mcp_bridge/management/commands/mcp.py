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
    help = "Serve 9plan's MCP tools to agents. Over stdio by default; --transport http for streamable HTTP at /mcp."
    requires_system_checks: list = []  # checks cost start-up time and may print; run them in `check`
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("--transport", choices=("stdio", "http"), default=None)
        parser.add_argument("--host", default=None, help="HTTP bind address (default NINEPLAN_HTTP_HOST, 127.0.0.1)")
        parser.add_argument("--port", type=int, default=None, help="HTTP port (default NINEPLAN_HTTP_PORT, 8080)")
        parser.add_argument(
            "--tools",
            choices=("all", "core"),
            default=None,
            help="the tools listed: all, or the core set of ten (default NINEPLAN_TOOLS, all)",
        )

    def handle(self, *args, transport=None, host=None, port=None, tools=None, **options):
        import django

        from mcp_bridge import readiness, sweep
        from mcp_bridge.server import add_tools, build_server, new_server

        transport = transport or settings.NINEPLAN_TRANSPORT
        if tools:
            settings.NINEPLAN_TOOLS = tools
        _keep_sqlite_connections()
        if transport == "stdio":
            # manage.py runs this command before Django loads its apps: loading them takes
            # longer than the MCP SDK's own start, and the client waits for `initialize`.
            # The server answers it at once; the apps and tools load in the background.
            server = new_server()

            def setup() -> None:
                django.setup()
                add_tools(server)

            readiness.start(setup=setup)
            sweep.start()
            log.info("9plan serving MCP over stdio", extra={"sessions_path": str(settings.NINEPLAN_SESSIONS_PATH)})
            server.run("stdio")
            return
        if settings.NINEPLAN_PLAN_FILES == "auto":
            # Agents over HTTP are on other machines: a file here is one they cannot read.
            settings.NINEPLAN_PLAN_FILES = "off"
        django.setup()
        readiness.start()
        sweep.start()
        from sessions_app.webhooks import sender as webhook_sender

        # Webhooks go out from long-running servers only (docs/design.md, "Webhooks").
        webhook_sender.start(wait_for=readiness.wait_ready)
        from mcp_bridge import http, oauth

        server = build_server(**oauth.server_options())

        try:
            http.start(server, host=host, port=port)
        except http.RefusedToStart as exc:
            raise CommandError(str(exc)) from exc


def _keep_sqlite_connections() -> None:
    """Each worker thread keeps its SQLite connection between tool calls (closed only when
    broken), instead of opening one per call.

    A connection closed after every call is, for an agent working alone, the last one open
    on the database file: SQLite then checkpoints and deletes the WAL, and the next call's
    commit creates it again, both with fsyncs: a cost every write call paid, and a large
    one while other work keeps the disk busy (docs/benchmarks.md).
    """
    from django.db import connections

    for alias in connections:
        if connections.settings[alias]["ENGINE"].endswith("sqlite3"):
            connections.settings[alias]["CONN_MAX_AGE"] = None
