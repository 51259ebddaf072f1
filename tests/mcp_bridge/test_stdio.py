"""The stdio transport's ends (mcp_bridge/stdio.py): lines split across reads and many lines
in one read arrive whole and in order, an answer is written whole, the server loop's
message streams parse each line (handing a bad one on as its error) and never interleave
two answers, and a server whose stdin is a regular file (which the event loop cannot wait
on) still answers, over the SDK's own ends."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading

import anyio
import mcp_types
import pytest
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_bridge import stdio
from tests.conftest import MANAGE, PYTHON, REPO
from tests.proofs.test_stdio_e2e import server_env


def test_lines_arrive_whole_and_in_order_however_the_pipe_cuts_them():
    read_fd, write_fd = os.pipe()
    pieces = [b'{"a": 1}\n{"b"', b': 2}\n', b'{"c": "', "é".encode()[:1], "é".encode()[1:] + b'"}\n{"d": 4}\n{"e": 5}']

    def feed() -> None:
        for piece in pieces:
            os.write(write_fd, piece)
            threading.Event().wait(0.02)
        os.close(write_fd)

    async def read_all() -> list[str]:
        return [line async for line in stdio.LineReader(read_fd)]

    feeder = threading.Thread(target=feed)
    feeder.start()
    lines = asyncio.run(read_all())
    feeder.join()
    os.close(read_fd)
    assert lines == ['{"a": 1}\n', '{"b": 2}\n', '{"c": "é"}\n', '{"d": 4}\n', '{"e": 5}']


def test_an_answer_larger_than_the_pipe_is_written_whole():
    read_fd, write_fd = os.pipe()
    text = json.dumps({"filler": "x" * 300_000}) + "\n"
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 1 << 16):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    asyncio.run(stdio.LineWriter(write_fd).write(text))
    os.close(write_fd)
    reader.join()
    os.close(read_fd)
    assert received.decode() == text


def test_the_server_reads_each_line_as_a_message_and_a_line_that_is_not_one_as_its_error():
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}\nnot json\n{"jsonrpc": "2.0", "method": "x/y"}\n')
    os.close(write_fd)

    async def read_all():
        reader = stdio.MessageReader(stdio.LineReader(read_fd))
        items = [item async for item in reader]
        with pytest.raises(anyio.EndOfStream):
            await reader.receive()
        return items

    items = asyncio.run(read_all())
    os.close(read_fd)
    assert len(items) == 3
    assert isinstance(items[0], SessionMessage)
    assert isinstance(items[0].message, mcp_types.JSONRPCRequest)
    assert (items[0].message.id, items[0].message.method) == (7, "ping")
    assert isinstance(items[1], ValidationError)
    assert isinstance(items[2].message, mcp_types.JSONRPCNotification)
    assert items[2].message.method == "x/y"


def test_answers_sent_at_once_reach_the_pipe_whole_one_after_the_other():
    # Each answer is larger than the pipe: the first waits for the client to read while
    # the second is sent; without the writer's turn their pieces would interleave.
    read_fd, write_fd = os.pipe()
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_fd, 4096):
            received.extend(chunk)
            threading.Event().wait(0.001)

    def answer(number: int) -> SessionMessage:
        return SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id=number, result={"filler": str(number) * 200_000}))

    async def send_both() -> None:
        writer = stdio.MessageWriter(stdio.LineWriter(write_fd))
        await asyncio.wait_for(asyncio.gather(writer.send(answer(1)), writer.send(answer(2))), timeout=30)
        await writer.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await writer.send(answer(3))

    reader = threading.Thread(target=drain)
    reader.start()
    asyncio.run(send_both())
    os.close(write_fd)
    reader.join()
    os.close(read_fd)
    lines = received.decode().split("\n")
    assert lines[-1] == ""
    answers = [json.loads(line) for line in lines[:-1]]
    assert [a["id"] for a in answers] == [1, 2]
    assert [a["result"]["filler"] for a in answers] == ["1" * 200_000, "2" * 200_000]


@pytest.mark.slow
def test_a_server_reading_requests_from_a_regular_file_answers_in_json_rpc(tmp_path):
    requests = tmp_path / "requests.jsonl"
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "9plan_session_create", "arguments": {"task_description": "from a file"}}},
    ]
    requests.write_text("".join(json.dumps(m) + "\n" for m in messages))
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [PYTHON, MANAGE, "mcp"], check=False, stdin=stdin, capture_output=True, env=server_env(tmp_path / "data"),
            cwd=str(REPO), timeout=120,
        )
    answers = {m["id"]: m for m in map(json.loads, done.stdout.decode().splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "9plan"
    # The SDK ends a call still running when stdin ends, with an answer all the same.
    assert set(answers[2]) & {"result", "error"}
    assert done.returncode == 0
