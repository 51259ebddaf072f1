"""A setting 9plan cannot use stops it before it starts: the message names the variable,
the value and what is accepted; nothing is written to stdout (the MCP protocol's stream)
and nothing is initialised from a configuration that was refused."""

from __future__ import annotations

import subprocess

import pytest

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
