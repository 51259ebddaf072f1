"""The nineplan_mcp_token command: it prints a new token once, lists the tokens without
them, and revokes one by name."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from mcp_bridge import auth


@pytest.mark.django_db
def test_the_command_prints_the_token_once_and_lists_without_it():
    call_command("project", "create", "billing", stdout=io.StringIO(), stderr=io.StringIO())
    call_command("project", "grant", "billing", "ci-bot", "agent", stdout=io.StringIO(), stderr=io.StringIO())
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "nineplan_mcp_token",
        "create",
        "build-server",
        "--user",
        "ci-bot",
        "--project",
        "billing",
        stdout=out,
        stderr=err,
    )
    token = out.getvalue().strip()
    assert auth.token_check(token).name == "build-server"
    assert auth.token_check(token).caller.roles == {"billing": "agent"}
    assert "shown only this once" in err.getvalue() and "'ci-bot' (projects billing)" in err.getvalue()

    listing = io.StringIO()
    call_command("nineplan_mcp_token", "list", stdout=listing, stderr=io.StringIO())
    lines = listing.getvalue().splitlines()
    assert lines[0].split() == ["NAME", "USER", "PROJECTS", "STATUS", "CREATED", "LAST_USED"]
    assert lines[1].split()[:4] == ["build-server", "ci-bot", "billing", "active"]
    assert token not in listing.getvalue() and auth.digest(token) not in listing.getvalue()

    call_command("nineplan_mcp_token", "revoke", "build-server", stdout=io.StringIO(), stderr=io.StringIO())
    assert auth.token_check(token) is None
    with pytest.raises(CommandError, match="No active token"):
        call_command("nineplan_mcp_token", "revoke", "build-server", stdout=io.StringIO(), stderr=io.StringIO())
