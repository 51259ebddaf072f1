"""A plan file's base: the text 9plan wrote the file from, against which the agent's edits
are told apart from text others wrote since (docs/design.md, "Plan files").

A write of a plan file and the commit of the plan's row are two steps, and a process can be
killed between them. So a write puts its base in place first, as a record of the write: the
text it is about to put in the file, the plan's version once the write commits, the inode of
the new file, and the file and the base as the write found them. Whoever reads the base next
knows from the plan's version whether that write committed, and from the file's inode
whether the new file went in place; a write that never committed is then undone in the
reading: its text is not taken for the agent's, and the agent's edits it had taken in are
not lost.

A base that is plain text (written by an older 9plan, by the repair, or when a reclaimed
worker's edits were set aside) is the text the file was written from, nothing more.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from sessions_app.models import SECTIONS
from sessions_app.planfiles.text import parse, rebase_section, render

# How many writes in a row that never committed a record remembers. Past that the oldest is
# taken as committed: its text becomes a base, so its own text is never taken in, but an
# edit of the agent's that it had taken in is lost with it (five kills in a row, each
# between a file and its commit, on one plan).
MOST_UNCOMMITTED = 4


@dataclass(frozen=True)
class FileWrite:
    """One write of a plan file, as its base keeps it."""

    version: int  # the plan's version once the write commits
    written: str  # the text the write put in the file
    inode: int  # the new file's inode
    earlier: FileWrite | str | None = None  # the base the file was read against before the write
    before: str | None = None  # the file as the write found it (None: none, or not text)
    before_inode: int | None = None


def dump(record: FileWrite) -> str:
    return json.dumps(_as_dict(record), ensure_ascii=False, separators=(",", ":"))


def _as_dict(record: FileWrite | str | None) -> dict | str | None:
    if not isinstance(record, FileWrite):
        return record
    return {
        "version": record.version,
        "written": record.written,
        "inode": record.inode,
        "earlier": _as_dict(record.earlier),
        "before": record.before,
        "before_inode": record.before_inode,
    }


def load(stored: str | None) -> FileWrite | str | None:
    """The base as stored: a record of the last write, or plain text (see the module's
    docstring; a rendered plan starts with its first heading, never with "{", and text that
    is not JSON is taken as plain text: a fenced file's, say). JSON that is no record this
    module wrote (a number past a float's range, nesting deeper than the decoder goes, a
    field of the wrong kind) is unreadable: it is no base at all, so nothing is merged
    against what it claims (``unreadable`` says so for the checks)."""
    if stored is None or not stored.startswith("{"):
        return stored
    try:
        value = json.loads(stored)
    except RecursionError:
        return None
    except ValueError:
        return stored
    try:
        return _from(value)
    except (ValueError, TypeError, KeyError, OverflowError, RecursionError):
        return None


def unreadable(stored: str | None) -> bool:
    """Whether ``stored`` looks like a record but cannot be read as one (``load`` takes it
    for no base)."""
    return stored is not None and stored.startswith("{") and load(stored) is None


def _from(value: object) -> FileWrite | str | None:
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise TypeError(f"a base record is an object, not {type(value).__name__}")
    if not isinstance(value["version"], int) or not isinstance(value["inode"], int):
        raise TypeError("a base record's version and inode are whole numbers")
    if not isinstance(value["written"], str):
        raise TypeError("a base record's text is text")
    record = FileWrite(
        int(value["version"]),
        str(value["written"]),
        int(value["inode"]),
        _from(value.get("earlier")),
        value.get("before"),
        value.get("before_inode"),
    )
    if not isinstance(record.before, str | None) or not isinstance(record.before_inode, int | None):
        raise TypeError("a base record's file is text and its inode a number")
    return record


def file_write(
    version: int, written: str, inode: int, stored: str | None, before: str | None, before_inode: int | None
) -> FileWrite:
    """The record of a write that makes the plan ``version``, over a base ``stored``. The
    base it replaces is kept whole only while its write may not have committed (its version
    is not below this one's: writes of one plan are one at a time, and each moves the
    version on by one); else only its text is."""
    earlier = load(stored)
    if isinstance(earlier, FileWrite) and earlier.version < version:
        earlier = earlier.written
    return FileWrite(version, written, inode, _trimmed(earlier, MOST_UNCOMMITTED - 1), before, before_inode)


def _trimmed(record: FileWrite | str | None, most: int) -> FileWrite | str | None:
    """``record`` with at most ``most`` records in its chain, the oldest taken as committed."""
    if not isinstance(record, FileWrite):
        return record
    if most == 0:
        return record.written
    return replace(record, earlier=_trimmed(record.earlier, most - 1))


def moved(stored: str | None, inode: int | None, new_inode: int, version: int) -> str | None:
    """``stored`` for a file put back in its place under a new inode (the undo of a write
    that would have made the plan ``version``): a record of a write that never committed
    (which the undone one had found) names the new inode where it named the file's old one,
    so the file reads as it did. Anything else is ``stored`` as it was."""
    found = load(stored)
    if not isinstance(found, FileWrite) or inode is None or found.version < version:
        return stored
    return dump(_renamed(found, inode, new_inode))


def _renamed(record: FileWrite, inode: int, new_inode: int) -> FileWrite:
    earlier = record.earlier
    return replace(
        record,
        inode=new_inode if record.inode == inode else record.inode,
        earlier=_renamed(earlier, inode, new_inode) if isinstance(earlier, FileWrite) else earlier,
    )


def as_committed(
    stored: FileWrite | str | None, text: str | None, inode: int | None, version: int | None
) -> tuple[str | None, str | None]:
    """The file's text and the base to read it against, as if every write that never
    committed had not happened: ``text`` and ``inode`` are the file's now (None: no file),
    ``version`` the plan's in the database (None: unknown, every write taken as committed).

    A write whose version the plan reached committed (or the plan moved on since, on another
    server, and the file is a stale copy either way): its text is the base. One that never
    committed and never put its file in place leaves the file as it found it. One that did
    put it in place left its own text in the file: the file is read as the file it found,
    with what was written in the file since the kill moved onto it."""
    if not isinstance(stored, FileWrite):
        return stored, text
    if version is None or version >= stored.version:
        return stored.written, text
    if inode != stored.inode:
        return as_committed(stored.earlier, text, inode, version)
    base, before = as_committed(stored.earlier, stored.before, stored.before_inode, version)
    if text is None or before is None:
        # No file now, or none before the write (it wrote the first): its text is the base.
        return stored.written, text
    if text == stored.written:
        return base, before
    return base, _rebased(stored.written, before, text)


def _rebased(written: str, before: str, text: str) -> str:
    """``text``, an edit of ``written``, moved onto ``before``, section by section."""
    was, onto, edited = parse(written), parse(before), parse(text)
    sections = dict(onto.sections)
    for name in SECTIONS:
        if name not in edited.sections:
            continue
        base = was.sections.get(name, "")
        if name not in onto.sections and edited.sections[name] == base:
            continue  # a heading the agent had removed stays removed (its section keeps the database's text)
        sections[name] = rebase_section(base, onto.sections.get(name, ""), edited.sections[name])
    preamble = onto.preamble
    if edited.preamble and edited.preamble != was.preamble:
        preamble = f"{preamble}\n\n{edited.preamble}" if preamble else edited.preamble
    return render(sections, every=False, preamble=preamble)
