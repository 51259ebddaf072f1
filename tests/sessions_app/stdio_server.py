"""A `manage.py mcp` subprocess driven with raw JSON-RPC lines over its pipes.

Raw lines, not the SDK client, so a test can send a request and kill the process before
the answer comes, and see exactly which answers arrived before the kill.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

from tests.conftest import MANAGE, PYTHON

PROTOCOL_VERSION = "2025-06-18"
ANSWER_TIMEOUT = 120  # generous: a loaded machine can be slow, and no test measures time


class StdioServer:
    def __init__(self, env: dict[str, str], stderr_path: Path):
        self._stderr = open(stderr_path, "ab")
        self.proc = subprocess.Popen(
            [PYTHON, MANAGE, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0
        self.answers: dict[int, dict[str, Any]] = {}

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def send(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        request_id = None
        if not notify:
            self._next_id += 1
            request_id = message["id"] = self._next_id
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        return request_id

    def _take(self, line: bytes) -> None:
        # Every line on stdout must be a JSON-RPC message: anything else corrupts the stream.
        message = json.loads(line)
        assert message.get("jsonrpc") == "2.0", line
        if "id" in message:
            self.answers[message["id"]] = message

    def wait_answer(self, request_id: int) -> dict[str, Any]:
        while request_id not in self.answers:
            line = self._lines.get(timeout=ANSWER_TIMEOUT)
            if line is None:
                raise AssertionError(f"server exited before answering request {request_id}")
            self._take(line)
        return self.answers[request_id]

    def initialize(self) -> dict[str, Any]:
        answer = self.wait_answer(
            self.send(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "tests", "version": "1"},
                },
            )
        )
        self.send("notifications/initialized", notify=True)
        return answer

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool's result: ``{"content": [...], "isError": bool, "structuredContent": {...}}``."""
        answer = self.wait_answer(self.start_call(tool, arguments))
        assert "result" in answer, answer
        return answer["result"]

    def start_call(self, tool: str, arguments: dict[str, Any]) -> int:
        return self.send("tools/call", {"name": tool, "arguments": arguments})

    def kill(self) -> None:
        """SIGKILL, then collect every answer that was written before the process died."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.close()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=ANSWER_TIMEOUT)
        self._reader.join(timeout=ANSWER_TIMEOUT)
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                break
            try:
                self._take(line)
            except json.JSONDecodeError:
                # A line cut off by the kill is only a lost answer, not a corrupt stream.
                if line.endswith(b"\n"):
                    raise
        self.proc.stdout.close()
        self._stderr.close()


def result_text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]
