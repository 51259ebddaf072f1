"""`manage.py mcp --transport http` as a real subprocess, and plain HTTP requests to it,
for the HTTP transport tests."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.conftest import MANAGE, PYTHON, REPO

# Guards against a wedged server hanging the suite; not speed assertions.
START_TIMEOUT = 120
STOP_TIMEOUT = 30
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """One `manage.py mcp --transport http` process; stdout and stderr go to files."""

    def __init__(self, env: dict[str, str], logs: Path, *args: str, port: int | None = None, options: bool = True):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        logs.mkdir(parents=True, exist_ok=True)
        self.stdout_path = logs / f"mcp-{self.port}.out"
        self.stderr_path = logs / f"mcp-{self.port}.err"
        self._out = self.stdout_path.open("w")
        self._err = self.stderr_path.open("w")
        # Without options the environment must choose the transport and the port.
        chosen = ["--transport", "http", "--port", str(self.port)] if options else []
        command = [PYTHON, MANAGE, "mcp", *chosen, *args]
        self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=self._out, stderr=self._err)

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.stderr}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"server did not listen on port {self.port}:\n{self.stderr}")

    def wait_exit(self) -> int:
        try:
            return self.proc.wait(timeout=START_TIMEOUT)
        finally:
            self._close_logs()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._close_logs()

    def _close_logs(self) -> None:
        self._out.close()
        self._err.close()


@pytest.fixture
def start_server(subprocess_env, tmp_path):
    """``start(*args, wait=True, **env)`` starts a server on the test's database and
    sessions folder; every server is stopped after the test."""
    started: list[ServerProcess] = []

    def start(
        *args: str, wait: bool = True, port: int | None = None, options: bool = True, **env: str
    ) -> ServerProcess:
        server = ServerProcess({**subprocess_env, **env}, tmp_path / "logs", *args, port=port, options=options)
        started.append(server)
        if wait:
            server.wait_listening()
        return server

    yield start
    for server in started:
        server.stop()
        # Under HTTP stdout carries nothing either: every log line is JSON on stderr.
        assert server.stdout_path.read_text() == ""


def post_tool(url: str, name: str, arguments: dict, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    """One stateless (protocol 2026-07-28) tools/call as a plain HTTP POST: the status,
    headers and body, whatever the status."""
    params = {"name": name, "arguments": arguments, "_meta": META}
    payload = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    sent = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name, **(headers or {})}
    return post_json(url, payload, sent)


def post_json(url: str, payload: dict, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    body = json.dumps(payload).encode()
    sent = {"content-type": "application/json", "accept": "application/json, text/event-stream", **(headers or {})}
    request = urllib.request.Request(url, data=body, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@asynccontextmanager
async def http_client(url: str, token: str | None = None, mode: str = "auto"):
    """The SDK's client over streamable HTTP, sending ``token`` as a bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


@asynccontextmanager
async def legacy_session(url: str, token: str | None = None):
    """The SDK's client on a handshake protocol, which opens an MCP session: yields the
    client and the ``mcp-session-id`` the server gave it."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    session_ids: list[str] = []

    async def remember(response):
        if "mcp-session-id" in response.headers:
            session_ids.append(response.headers["mcp-session-id"])

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(
        headers=headers, event_hooks={"response": [remember]}, timeout=httpx2.Timeout(60, read=120)
    ) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            await client.call_tool("9plan_admin_sessions", {})
            yield client, session_ids[0]
