"""`serve` (sessions_app/management/commands/serve.py): refuses a bad port or worker count
before doing anything, collects the static files, writes the banner naming the first login
to make, then hands the process to gunicorn with 9plan's settings. (Serving for real, from an
installed package, is in tests/test_packaging.py.)"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


class Exec(Exception):
    """Raised in place of gunicorn taking over the test's process."""


@pytest.fixture
def execv(monkeypatch) -> list:
    """What `serve` would hand the process to: gunicorn takes the process over, so the
    call is caught and recorded instead; the banner is written just before."""
    calls: list = []

    def instead_of_gunicorn(*args):
        calls.append(args)
        raise Exec(args)

    monkeypatch.setattr("os.execv", instead_of_gunicorn)
    return calls


def test_the_serve_banner_names_the_first_login_that_sees_everything(execv):
    out = io.StringIO()
    with pytest.raises(Exec):
        call_command("serve", port=8123, workers=1, stdout=out)
    banner = out.getvalue()
    assert "http://127.0.0.1:8123/admin/" in banner
    assert "createsuperuser" in banner and "create_reviewer" not in banner


@pytest.mark.parametrize(
    ("options", "message"),
    [({"port": 0}, "--port 0 is not a port"), ({"workers": 0}, "--workers 0 is not accepted")],
)
def test_serve_refuses_a_bad_port_or_worker_count_before_doing_anything(db, options, message):
    with pytest.raises(CommandError, match=message):
        call_command("serve", **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [({"port": 65536}, "--port 65536 is not a port"), ({"workers": 65}, "--workers 65 is not accepted")],
)
def test_a_refused_serve_starts_nothing(execv, options, message):
    out = io.StringIO()
    with pytest.raises(CommandError, match=message):
        call_command("serve", stdout=out, **options)
    assert execv == [] and out.getvalue() == ""


def test_gunicorn_gets_the_bind_the_workers_and_9plans_server_hooks(execv):
    with pytest.raises(Exec):
        call_command("serve", host="0.0.0.0", port=9001, workers=3, stdout=io.StringIO())
    [(program, argv)] = execv
    assert program == sys.executable
    assert argv[:4] == [sys.executable, "-m", "gunicorn", "nineplan.wsgi:application"]

    def value(option: str) -> str:
        return argv[argv.index(option) + 1]

    assert value("--bind") == "0.0.0.0:9001" and value("--workers") == "3"
    assert value("--config") == "python:sessions_app.management.serving"
    assert "--no-control-socket" in argv
    # The static files were collected first, for whitenoise to serve.
    assert (Path(settings.STATIC_ROOT) / "sessions_app" / "admin.css").is_file()


def test_an_ipv6_address_is_bracketed_in_the_bind_and_the_banner(execv):
    out = io.StringIO()
    with pytest.raises(Exec):
        call_command("serve", host="::1", port=8124, workers=1, stdout=out)
    [(_, argv)] = execv
    assert argv[argv.index("--bind") + 1] == "[::1]:8124"
    assert "http://[::1]:8124/admin/" in out.getvalue()
