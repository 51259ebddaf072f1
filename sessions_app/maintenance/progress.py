"""Progress of a long command, for a person watching a terminal.

A command that may run for minutes on a big database (an export, an import, a backup, a
repair) shows one line on stderr that it rewrites as it goes, like "Exporting plans:
41,000/100,000 (41%)". When stderr is not a terminal (a pipe, a file, a service's log, a
test) nothing is written: a log would only fill with carriage returns.
"""

from __future__ import annotations

import time
from typing import Protocol

# Redrawn at most this often: a redraw per row would cost more than the work it reports.
REDRAW_SECONDS = 0.1


class Stream(Protocol):
    """What the lines are written to: a text stream (a terminal's, or Django's wrapper of one)."""

    def write(self, text: str, /) -> object: ...

    def flush(self) -> object: ...


class Progress:
    """Stages of one command, each a line rewritten in place while it advances.

    ``stage(label, total)`` starts a stage (``total`` may be unknown), ``advance(n)``
    counts work done, ``finish()`` ends the line. A Progress on a stream that is not a
    terminal does nothing, so callers never have to ask.
    """

    def __init__(self, stream: Stream | None = None):
        self.stream = stream
        self.shown = bool(stream is not None and _isatty(stream))
        self.label = ""
        self.total: int | None = None
        self.done = 0
        self._drawn_at = 0.0
        self._width = 0

    def stage(self, label: str, total: int | None = None) -> None:
        self.finish()
        self.label, self.total, self.done = label, total, 0
        self._draw(force=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def finish(self) -> None:
        """Ends the current stage's line (showing its final count)."""
        if self.label:
            self._draw(force=True)
            if self.shown and self.stream is not None:
                self.stream.write("\n")
                self.stream.flush()
        self.label, self._width = "", 0

    def _draw(self, force: bool = False) -> None:
        if not self.shown or not self.label or self.stream is None:
            return
        now = time.monotonic()
        if not force and now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        if self.total is None and not self.done:
            line = f"{self.label}..."
        else:
            line = f"{self.label}: {self.done:,}"
        if self.total:
            line += f"/{self.total:,} ({min(100, self.done * 100 // self.total)}%)"
        elif self.total == 0:
            line += " (nothing to do)"
        pad = " " * max(0, self._width - len(line))
        self._width = len(line)
        self.stream.write(f"\r{line}{pad}")
        self.stream.flush()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False
