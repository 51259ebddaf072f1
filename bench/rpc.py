"""Raw JSON-RPC over a server's stdin/stdout: write one line, read one line.

No MCP client library sits between the clock and the server, so a figure is the server's
cost plus a pipe round trip, the same for 9plan and for the bare SDK server it is compared
with.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time

PROTOCOL_VERSION = "2025-11-25"


class RpcError(RuntimeError):
    pass


class StdioServer:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None = None):
        # stderr goes to a file: an unread pipe would fill up and stall the server.
        self._stderr = tempfile.TemporaryFile()
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=cwd,
        )
        # stdout is buffered: an unbuffered pipe's readline() reads one byte per system
        # call, which would add the client's cost, growing with the answer's size, to every
        # answer (docs/benchmarks.md).
        self._next_id = 0
        self.maxrss_kb: int | None = None

    def request(self, method: str, params: dict | None = None) -> dict:
        """Send one request and wait for its answer; returns the whole response object."""
        self._next_id += 1
        msg = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RpcError(f"server closed stdout; stderr: {self.stderr_text()[-2000:]}")
            reply = json.loads(line)
            # Notifications (logging, progress) may come first; they carry no id.
            if reply.get("id") == self._next_id:
                return reply

    def notify(self, method: str, params: dict | None = None) -> None:
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    def _send(self, msg: dict) -> None:
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def initialize(self) -> dict:
        reply = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "9plan-bench", "version": "1"},
            },
        )
        if "result" not in reply:
            raise RpcError(f"initialize failed: {reply}")
        self.notify("notifications/initialized")
        return reply

    def call_tool(self, name: str, arguments: dict) -> dict:
        reply = self.request("tools/call", {"name": name, "arguments": arguments})
        result = reply.get("result")
        if result is None or result.get("isError"):
            raise RpcError(f"{name} failed: {json.dumps(reply)[:800]}")
        return result

    def timed_call(self, name: str, arguments: dict) -> tuple[float, dict]:
        t0 = time.perf_counter()
        result = self.call_tool(name, arguments)
        return time.perf_counter() - t0, result

    def stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def close(self, timeout: float = 20.0) -> int | None:
        """Close stdin (the server exits on EOF), reap it and keep its peak memory in KB."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        deadline = time.monotonic() + timeout
        while True:
            # wait4, not wait: it also returns the child's own resource usage.
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.maxrss_kb = usage.ru_maxrss  # kilobytes on Linux
                break
            if time.monotonic() > deadline:
                self.proc.kill()
                deadline = time.monotonic() + timeout
            time.sleep(0.005)
        self.proc.stdout.close()
        self._stderr.close()
        return self.maxrss_kb

    def __enter__(self) -> StdioServer:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None and self.maxrss_kb is None:
            self.close()


def structured(result: dict) -> dict:
    return result.get("structuredContent") or {}
