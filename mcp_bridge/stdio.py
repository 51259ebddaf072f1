"""The stdio transport's two ends, without a thread hop for each line.

The SDK's stdio transport reads each line of stdin in a worker thread and writes and
flushes each answer in two more: three hand-overs between threads per tool call, which
cost more than the call's own work does (docs/benchmarks.md). Here the event loop reads
stdin when it becomes readable (a read of a blocking pipe that select reports readable
returns at once, so the descriptor's mode is left alone), and writes each answer
straight to the pipe, without blocking: when the client has stopped reading, the writer
waits on the loop while requests are still read and calls still run.

The server loop is handed these ends as its message streams (``streams``): a line is
parsed when the loop asks for the next message, and an answer is written when the loop
sends it. The SDK's transport puts a task and a memory stream between each pipe and the
loop, two more hand-overs per call, each a turn of the event loop.

As in the SDK, the process's own descriptors 0 and 1 point elsewhere while serving (the
null device, stderr), so that nothing a library prints can reach the protocol's stream;
the transport keeps private duplicates of them, and puts them back on exit.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import sys
from contextlib import asynccontextmanager

import anyio
import mcp_types
from mcp.shared.message import SessionMessage


def usable() -> bool:
    """Whether stdin and stdout are descriptors the event loop can wait on (pipes,
    sockets, terminals; not a regular file, which epoll refuses)."""
    try:
        fds = (sys.stdin.fileno(), sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    if fds != (0, 1):
        return False
    poller = select.epoll()
    try:
        for fd in fds:
            poller.register(fd, select.EPOLLIN if fd == 0 else select.EPOLLOUT)
    except OSError:
        return False
    finally:
        poller.close()
    return True


class _Diverted:
    """Descriptor ``fd`` served from a private duplicate, ``fd`` itself diverted."""

    def __init__(self, fd: int, diversion: int):
        self.fd = fd
        self.private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        os.dup2(diversion, fd)
        os.close(diversion)

    def release(self) -> None:
        os.dup2(self.private, self.fd)


async def _ready(fd: int, *, reading: bool) -> None:
    """Waits for the loop to report ``fd`` readable (or writable), without blocking it."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    add, remove = (loop.add_reader, loop.remove_reader) if reading else (loop.add_writer, loop.remove_writer)
    add(fd, lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        remove(fd)


class LineReader:
    """``async for line in reader``: stdin's lines as text, read when the loop says so."""

    def __init__(self, fd: int):
        self.fd = fd
        self.lines: list[bytes] = []
        self.partial = b""
        self.eof = False

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while not self.lines:
            if self.eof:
                if self.partial:
                    line, self.partial = self.partial, b""
                    return line.decode("utf-8", errors="replace")
                raise StopAsyncIteration
            await _ready(self.fd, reading=True)
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                self.eof = True
                continue
            *complete, self.partial = (self.partial + chunk).split(b"\n")
            self.lines = [line + b"\n" for line in complete]
            self.lines.reverse()
        return self.lines.pop().decode("utf-8", errors="replace")


class LineWriter:
    """``await writer.write(text)``: straight to the pipe, whole.

    The descriptor does not block: when the client stops reading and the pipe fills, the
    write waits for the loop to report it writable, so the loop goes on reading requests
    and the calls already running finish and commit meanwhile. One write at a time:
    asyncio keeps one writable callback per descriptor (MessageWriter takes turns)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)

    def release(self) -> None:
        os.set_blocking(self.fd, self.was_blocking)

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(self.fd, data) :]
            except BlockingIOError:
                await _ready(self.fd, reading=False)


class _Closable:
    """A stream the server loop closes (``aclose``, or leaving ``async with``); it then
    reads or sends nothing more."""

    closed = False

    async def aclose(self) -> None:
        self.closed = True

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()


class MessageReader(_Closable):
    """The server's read stream: each line of stdin parsed into a JSON-RPC message as the
    server asks for it (a line that is not one is handed on as its parse error, which the
    SDK answers), with no task or memory stream between the pipe and the server."""

    def __init__(self, lines: LineReader):
        self.lines = lines

    async def receive(self) -> SessionMessage | Exception:
        if self.closed:
            raise anyio.EndOfStream
        try:
            line = await self.lines.__anext__()
        except StopAsyncIteration:
            raise anyio.EndOfStream from None
        try:
            return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except Exception as exc:  # handed to the server, as the SDK's own stdio transport does
            return exc

    def __aiter__(self) -> MessageReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class MessageWriter(_Closable):
    """The server's write stream: each message written to stdout as it is sent, one at a
    time (a lock keeps two answers of concurrent calls from interleaving in the pipe)."""

    def __init__(self, lines: LineWriter):
        self.lines = lines
        self.turn = asyncio.Lock()

    async def send(self, item: SessionMessage) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        text = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        async with self.turn:
            await self.lines.write(text)


@asynccontextmanager
async def streams():
    """(read, write) message streams over stdin and stdout for the SDK's server loop,
    descriptors 0 and 1 diverted meanwhile."""
    sys.stdout.flush()
    stdin = _Diverted(0, os.open(os.devnull, os.O_RDONLY))
    try:
        stdout = _Diverted(1, os.dup(2))
    except OSError:
        stdin.release()
        raise
    writer = LineWriter(stdout.private)
    try:
        yield MessageReader(LineReader(stdin.private)), MessageWriter(writer)
    finally:
        writer.release()
        stdout.release()
        stdin.release()
