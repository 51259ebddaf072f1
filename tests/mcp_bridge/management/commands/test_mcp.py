"""`mcp` (mcp_bridge/management/commands/mcp.py): an unknown transport or a port that is no
number is refused before anything starts, and a bad --host or --port for HTTP stops the
server with a clear message and exit code 2, on stderr only. (Serving over each transport:
tests/mcp_bridge/test_stdio.py and tests/proofs/test_http_server.py.)"""

from __future__ import annotations

import io
import socket
import subprocess
import threading

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.conftest import MANAGE, PYTHON, REPO
from tests.mcp_bridge.http_server import start_server  # noqa: F401 (a fixture)

# The threads the command starts: the database's preparation, the sweep, the webhooks.
STARTED = {"nineplan-prepare", "nineplan-sweep", "nineplan-webhooks"}


def running() -> set[str]:
    return {thread.name for thread in threading.enumerate()} & STARTED


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--transport", "ftp"), "argument --transport: invalid choice: 'ftp' (choose from"),
        (("--transport", "HTTP"), "argument --transport: invalid choice: 'HTTP'"),
        (("--transport", "http", "--port", "eighty"), "argument --port: invalid int value: 'eighty'"),
    ],
)
def test_a_bad_option_is_refused_before_anything_starts(db, args, message):
    before = running()
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as info:
        call_command("mcp", *args, stdout=out, stderr=err)
    assert message in str(info.value) and "Traceback" not in str(info.value)
    if "--transport" in message:
        # Which transports exist is said (quoted or not, as the Python version has it).
        said = str(info.value).partition("choose from")[2]
        assert "stdio" in said and "http" in said
    assert running() == before and (out.getvalue(), err.getvalue()) == ("", "")


@pytest.mark.slow
def test_an_unknown_transport_leaves_stdout_empty_and_says_which_exist(subprocess_env):
    done = subprocess.run(
        [PYTHON, MANAGE, "mcp", "--transport", "sse"],
        check=False,
        cwd=REPO,
        env=subprocess_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    said = done.stderr.partition("invalid choice: 'sse' (choose from ")[2]
    assert "stdio" in said and "http" in said and "Traceback" not in done.stderr
    # Under stdio stdout carries JSON-RPC only: a refusal writes nothing there.
    assert done.stdout == ""


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "args,message",
    [
        (("--host", "http://0.0.0.0"), "--host='http://0.0.0.0' is not accepted"),
        (("--host", "127.0.0.1:80"), "--host='127.0.0.1:80' is not accepted"),
        (("--port", "0"), "--port=0 is not accepted"),
    ],
)
def test_bad_options_stop_the_server_with_a_clear_message(start_server, args, message):
    server = start_server(*args, wait=False)
    assert server.wait_exit() == 2
    assert message in server.stderr
    assert "Traceback" not in server.stderr
    # Nothing listens on the port it would have served.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
