"""A setting 9plan cannot use stops it before it starts: the message names the variable,
the value and what is accepted; nothing is written to stdout (the MCP protocol's stream)
and nothing is initialised from a configuration that was refused."""

from __future__ import annotations

import subprocess

import pytest
from django.core.exceptions import ImproperlyConfigured

from nineplan.config import env_public_url
from tests.conftest import MANAGE, PYTHON, REPO
from validation.replay import server_environment

REFUSED = [
    # (command, variable, value, what the message says is accepted)
    ("mcp", "NINEPLAN_LOG_LEVEL", "loud", "debug|info|warn|error"),
    ("mcp", "NINEPLAN_TRANSPORT", "ftp", "stdio|http"),
    ("mcp", "NINEPLAN_HTTP_PORT", "abc", "whole number"),
    ("check", "NINEPLAN_LOGIN_FAILURE_LIMIT", "0", "is not accepted"),
    ("check", "NINEPLAN_LOGIN_COOLOFF_MINUTES", "soon", "is not accepted"),
    ("check", "NINEPLAN_LOGIN_LOCKOUT", "maybe", "is not accepted"),
    ("check", "DJANGO_SECURE_HSTS_SECONDS", "a year", "whole number"),
    ("check", "DATABASE_URL", "mysql://db/nineplan", "must name SQLite (sqlite:///PATH) or PostgreSQL"),
    # A claim must outlast an attempt and the margin, or a second loop could send a message
    # while the first is still sending it.
    ("check", "NINEPLAN_WEBHOOKS_CLAIM_SECONDS", "14", "at least NINEPLAN_WEBHOOKS_TIMEOUT (10) + 5"),
    ("check", "NINEPLAN_PUBLIC_URL", "9plan.example.com", "the server's public address"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("command", "variable", "value", "accepted"), REFUSED, ids=[r[1] for r in REFUSED])
def test_a_refused_setting_stops_9plan_before_it_starts(tmp_path, command, variable, value, accepted):
    data_dir = tmp_path / "data"
    result = subprocess.run(
        [PYTHON, MANAGE, command],
        env=server_environment(data_dir, **{variable: value}),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert result.stdout == b""
    message = result.stderr.decode()
    assert variable in message and accepted in message and "Traceback" not in message, message
    if variable != "DATABASE_URL":  # a URL may hold a password: it is never echoed
        assert repr(value) in message, message
    assert not data_dir.exists()


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ("", None),
        ("  ", None),
        ("https://9plan.example.com", "https://9plan.example.com"),
        ("https://9plan.example.com/", "https://9plan.example.com"),
        ("http://127.0.0.1:8000/team/", "http://127.0.0.1:8000/team"),
    ],
)
def test_the_public_url_is_the_servers_address_without_a_trailing_slash(raw, parsed):
    assert env_public_url("NINEPLAN_PUBLIC_URL", {"NINEPLAN_PUBLIC_URL": raw}) == parsed
    assert env_public_url("NINEPLAN_PUBLIC_URL", {}) is None


@pytest.mark.parametrize(
    "raw",
    [
        "9plan.example.com",
        "ftp://9plan.example.com",
        "https://",
        "https://x.example/?a=1",
        "https://x.example/#top",
        "https://u:p@x.example",
        "https://x.example:port",
        "https://x.example/a b",
    ],
)
def test_a_public_url_that_is_not_an_http_address_is_refused(raw):
    with pytest.raises(ImproperlyConfigured, match=r"NINEPLAN_PUBLIC_URL=.* is not accepted; use the server's public"):
        env_public_url("NINEPLAN_PUBLIC_URL", {"NINEPLAN_PUBLIC_URL": raw})


def test_group_roles_are_read_as_pairs_and_a_bad_one_fails():
    from django.core.exceptions import ImproperlyConfigured

    from nineplan.config import env_group_roles

    roles = ("reader", "agent", "reviewer", "manager")
    read = env_group_roles("G", roles, {"G": "devs=billing:agent, leads=billing:manager,leads=ops:reader"})
    assert read == {"devs": [("billing", "agent")], "leads": [("billing", "manager"), ("ops", "reader")]}
    assert env_group_roles("G", roles, {}) == {}
    with pytest.raises(ImproperlyConfigured, match="GROUP=PROJECT:ROLE"):
        env_group_roles("G", roles, {"G": "devs=billing:owner"})
