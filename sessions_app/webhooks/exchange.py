"""One POST to a webhook receiver, finished by one deadline for the whole exchange:
connecting, the TLS handshake, sending and reading the answer (docs/design.md, "Webhooks").

A socket's timeout bounds each wait, not the exchange: a receiver that answers one byte
every few seconds never trips it and would hold the attempt, and the delivery loop, for as
long as it likes. Here every wait is given what is left of the attempt's deadline, so such a
receiver is cut at the deadline like a silent one. http.client does the HTTP; the socket it
is given (``DeadlineSocket``) offers only the three methods it calls (sendall, makefile,
close), each of them checking the deadline.
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
import time

from sessions_app.webhooks.addresses import Target


class DeadlinePassed(TimeoutError):
    """The attempt's deadline passed before the exchange was over."""


def left(deadline: float) -> float:
    """Seconds left before ``deadline`` (a time.monotonic() value); DeadlinePassed if none."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlinePassed("the attempt's deadline passed")
    return remaining


class DeadlineSocket:
    """A connected socket as http.client uses it, each wait bounded by the deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline

    def sendall(self, data: bytes) -> None:
        # sendall's own timeout restarts on every send of a TLS socket: sent piece by piece
        # instead, each piece given what is left.
        view = memoryview(data)
        while view:
            self.sock.settimeout(left(self.deadline))
            sent = self.sock.send(view)
            view = view[sent:]

    def makefile(self, mode: str = "rb", *args, **kwargs) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self))

    def close(self) -> None:
        self.sock.close()


class _DeadlineReader(io.RawIOBase):
    """The answer's bytes as they arrive, read only while the deadline has not passed."""

    def __init__(self, owner: DeadlineSocket) -> None:
        self.owner = owner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self.owner.sock.settimeout(left(self.owner.deadline))
        return self.owner.sock.recv_into(buffer)


class _Pinned(http.client.HTTPConnection):
    """Connects to the address that was checked (whatever a new lookup of the name would
    say), within the deadline, over TLS for https."""

    def __init__(self, target: Target, deadline: float) -> None:
        super().__init__(target.host, target.port)
        self.target = target
        self.deadline = deadline

    def connect(self) -> None:
        sock = socket.create_connection((self.target.address, self.target.port), left(self.deadline))
        try:
            if self.target.scheme == "https":
                # The handshake's reads are bounded as one whole by the socket's timeout.
                sock.settimeout(left(self.deadline))
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.target.host)
        except BaseException:
            sock.close()
            raise
        self.sock = DeadlineSocket(sock, self.deadline)


def post(target: Target, body: bytes, headers: dict[str, str], deadline: float) -> int:
    """The status the receiver answered to the POST of ``body``. Its answer's body is not
    read: only the status counts. Raises OSError (DeadlinePassed among them) or
    http.client.HTTPException when there is no answer by the deadline."""
    conn = _Pinned(target, deadline)
    try:
        conn.request("POST", target.path, body=body, headers=headers)
        return conn.getresponse().status
    finally:
        conn.close()
