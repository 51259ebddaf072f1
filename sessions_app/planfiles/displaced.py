"""The file a write or a delete takes off a plan file's path, read once it has left the path:
what another process wrote in it after 9plan read it is never unlinked unread
(docs/design.md, "Plan files").

A call reads the plan file (and takes the agent's edits in), then, later in the same call,
puts a new file in its place or removes it. Another process may write to the file in between
(an agent's ``>>``, an editor saving in place), and a rename or an unlink alone would drop
that text with the old file. So the old file is opened just before it leaves the path
(``folders.write_in``, ``file_io.delete_plan``) and read through that descriptor afterwards:
once the path names the new file (or nothing), no open of the path reaches the old one, so
the read sees every write made to it by path. What it gained after the caller's read is then
taken on:

- only added at its end (what the caller read is where it starts): those bytes are added at
  the end of the new file, where the next read takes them in as the agent's edit, through
  the usual merge against the file's base;
- anything else (an edit in place, a file where the caller found none, a file removed as its
  plan left the queue): the old file is kept whole in the session's ``preserved/`` folder,
  and the caller reports it.

No hard link is made: the old file never has a second name, so nothing here can be taken for
(or be made to pass for) a hard link, which 9plan refuses to read. A file is held only when
it is a plain file (a regular file with one name), as ``folders.read_in`` requires, and the
new file is added to only while it is still the one the write put there.

Not closed, as no rename that only replaces can close them:

- a write through a descriptor opened before the file left the path that lands after this
  read goes into a file with no name left (as with any file replaced under an open one);
- a file another process renames onto the path between the open and the rename (or the
  unlink) goes unread: keeping it would need the two names exchanged in one step, which no
  portable call offers;
- a 9plan process killed between the rename and the end of this read takes what it had not
  yet added or kept aside with it, and so does a disk too full to hold a copy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from sessions_app.planfiles.folders import plain

_CHUNK = 1 << 20
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

# Why an old file was kept aside, after the file's path in a sentence.
CHANGED = "was edited after 9plan read it (not only by lines added at its end)"
APPEARED = "appeared after 9plan had found no file there"
REPLACED = "had lines added after 9plan read it that could not join the file 9plan wrote (replaced since, say)"
REMOVED = "changed after 9plan read it, before it was removed"


@dataclass(frozen=True)
class Late:
    """What the old file held that the caller had not read: nothing, bytes added at its end
    (``moved``: now at the end of the new file), or a change of any other kind (the old file
    kept whole as ``kept_as``, a path relative to the session folder, ``problem`` saying
    why)."""

    moved: bytes | None = b""  # None: more than ``add_at_end`` holds in memory, moved all the same
    kept_as: str = ""
    problem: str = ""


NOTHING = Late()


def chunks(fd: int, offset: int = 0) -> Iterator[bytes]:
    """The bytes of the file ``fd`` from ``offset`` to its end, a chunk at a time."""
    while chunk := os.pread(fd, _CHUNK, offset):
        yield chunk
        offset += len(chunk)


def _read_at(fd: int, offset: int, size: int) -> bytes:
    """Up to ``size`` bytes of ``fd`` from ``offset`` (fewer only at its end)."""
    parts: list[bytes] = []
    while size > 0 and (chunk := os.pread(fd, min(size, _CHUNK), offset)):
        parts.append(chunk)
        offset += len(chunk)
        size -= len(chunk)
    return b"".join(parts)


def settle(
    old: int | None,
    found: bytes | None,
    written: bytes | None,
    add_to_new: Callable[[Iterable[bytes]], bytes | None] | None,
    keep: Callable[[Iterable[bytes]], str],
) -> Late:
    """Takes on what the old file ``old`` (a descriptor, after the file left the path; None:
    there was none) holds beyond ``found``, the file as the caller read it (None: it found
    none). ``written``: what took its place (None: nothing did), which the old file may hold
    without loss. ``add_to_new`` adds bytes at the end of the new file and returns them (None
    when there were more than it holds); it raises OSError when it cannot (no new file, or
    not the one written). Both are None when the file was removed, not replaced. ``keep``
    keeps the whole old file aside and returns where."""
    if old is None:
        return NOTHING
    if found is not None and _read_at(old, 0, len(found)) == found:
        if not _read_at(old, len(found), 1):
            return NOTHING
        if add_to_new is None:
            problem = REMOVED
        else:
            try:
                return Late(moved=add_to_new(chunks(old, len(found))))
            except OSError:
                problem = REPLACED
    elif written is not None and _read_at(old, 0, len(written) + 1) == written:
        return NOTHING  # the text written in its place: nothing is lost
    else:
        problem = APPEARED if found is None else CHANGED if add_to_new is not None else REMOVED
    return Late(kept_as=keep(chunks(old)), problem=problem)


def add_at_end(folder: int, name: str, inode: int, data: Iterable[bytes], most: int) -> bytes | None:
    """Adds ``data`` at the end of ``name`` in ``folder`` when it is still the plain file of
    ``inode`` (OSError otherwise); returns the bytes added, or None when there were more than
    ``most``. Appended like any other writer's line, so a line an agent adds at the same time
    is never cut through."""
    fd = os.open(name, _APPEND_FLAGS, dir_fd=folder)
    try:
        st = os.fstat(fd)
        if st.st_ino != inode or not plain(st):
            raise FileExistsError(f"{name} is no longer the file 9plan wrote")
        held: list[bytes] | None = []
        size = 0
        for chunk in data:
            left = memoryview(chunk)
            while left:
                left = left[os.write(fd, left) :]
            size += len(chunk)
            if held is not None and size <= most:
                held.append(chunk)
            else:
                held = None
        return None if held is None else b"".join(held)
    finally:
        os.close(fd)
