"""`9plan serve` (or `manage.py serve`): the admin and the REST API under gunicorn.

The database is migrated and the static files collected first, quietly, so that a fresh
install serves at once; whitenoise serves the static files from STATIC_ROOT.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

from sessions_app.management.person_command import PersonCommand


class Command(PersonCommand):
    help = (
        "Serve the admin and the REST API with gunicorn. Static files are served by whitenoise; the "
        "database is migrated and the static files collected first."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")

    def handle(self, *args, host: str, port: int, workers: int, **options):
        if not 1 <= port <= 65535:
            raise CommandError(f"--port {port} is not a port; use a whole number from 1 to 65535.")
        if not 1 <= workers <= 64:
            raise CommandError(f"--workers {workers} is not accepted; use a whole number from 1 to 64.")
        # The tables were made before handle (sessions_app/management/person_command.py).
        Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
        call_command("collectstatic", interactive=False, verbosity=0, stdout=io.StringIO())
        # The workers open their own connections; none of ours may be inherited.
        connections.close_all()
        bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        shown = f"[{host}]" if ":" in host else host
        prog = _how_to_run_a_command()
        self.stdout.write(
            f"9plan admin: http://{shown}:{port}/admin/  (your first login, who sees and may do everything: "
            f"{prog} createsuperuser; example data: {prog} nineplan_demo)"
        )
        self.stdout.flush()
        argv = [
            sys.executable,
            "-m",
            "gunicorn",
            # gunicorn takes "module:name"; Django's setting is "module.name".
            ":".join(settings.WSGI_APPLICATION.rsplit(".", 1)),
            "--bind",
            bind,
            "--workers",
            str(workers),
            "--access-logfile",
            "-",
            # 9plan never uses gunicorn's control interface, whose one socket per user
            # would be contended by a second server on the same machine.
            "--no-control-socket",
            # Each worker starts a webhook delivery loop once it is up (sessions_app/management/serving.py).
            "--config",
            "python:sessions_app.management.serving",
        ]
        # gunicorn takes over this process, so that a signal sent to `9plan serve` (a
        # terminal's Ctrl-C, a service manager's stop) reaches gunicorn's master itself.
        os.execv(sys.executable, argv)


def _how_to_run_a_command() -> str:
    """`9plan` when installed; in a checkout, the virtualenv's Python and manage.py."""
    if os.path.basename(sys.argv[0]) != "manage.py":
        return "9plan"
    python = sys.executable
    try:
        relative = os.path.relpath(python)
    except ValueError:  # another drive, on Windows
        relative = python
    return f"{relative if not relative.startswith('..') else python} manage.py"
