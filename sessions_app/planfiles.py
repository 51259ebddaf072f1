"""Plan files: the agent's plain-text working copy of a queued or active plan.

Layout: ``{NINEPLAN_SESSIONS_PATH}/{session}/plans/{plan_id}.txt``. The database is the
source of truth for structure; the file is where an agent reads the plan and may edit it
(typically its Notes), so the services read it back before a plan leaves the queue.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from django.conf import settings

from sessions_app import errors
from sessions_app.errors import FileSystemFailed
from sessions_app.identifiers import is_plan_id, is_session_name
from sessions_app.models import SECTION_TITLES, SECTIONS

log = logging.getLogger("nineplan.planfiles")

HEADINGS = {f"# {title}": name for name, title in SECTION_TITLES.items()}
TEMP_PREFIX = ".tmp-"
# A younger temporary file may be a write in progress in another process: it is neither
# reported nor removed until it is this old.
TEMP_FILE_GRACE_SECONDS = 60
PRESERVED_DIR = "preserved"
# What 9plan does with anything in the sessions folder that is not what it wrote there (a
# link, a FIFO, a device, a folder in a file's place): in every report that names one.
LEFT_ALONE = "9plan neither reads, writes, moves nor deletes it"
# An import's plan files, written aside in the sessions folder until its commit (export_import/staging.py).
IMPORT_FOLDER_PREFIX = ".import-"


def sessions_root() -> Path:
    return Path(settings.NINEPLAN_SESSIONS_PATH)


def session_dir(session_name: str) -> Path:
    # Defends against path traversal: only a name of the exact generated shape
    # (three lowercase words) ever becomes a path component.
    if not is_session_name(session_name):
        raise ValueError(f"not a session name: {session_name!r}")
    return sessions_root() / session_name


def plans_dir(session_name: str) -> Path:
    return session_dir(session_name) / "plans"


def plan_path(session_name: str, plan_id: str) -> Path:
    if not is_plan_id(plan_id):
        raise ValueError(f"not a plan id: {plan_id!r}")
    return plans_dir(session_name) / f"{plan_id}.txt"


def _heading_like(line: str) -> bool:
    """A heading, or a heading behind any number of escaping backslashes."""
    return line.lstrip("\\").rstrip() in HEADINGS


def _escape(body: str) -> str:
    # A body line that reads as a heading ("# Goal" in an agent's Notes) would start a
    # section when read back and move or drop the agent's text. It gets one more leading
    # backslash on the way out and loses one on the way in, so any text survives.
    if "# " not in body:
        return body
    return "\n".join("\\" + line if _heading_like(line) else line for line in body.split("\n"))


def render(sections: dict[str, str]) -> str:
    parts = []
    for name in SECTIONS:
        body = _escape((sections.get(name) or "").strip("\r\n"))
        parts.append(f"# {SECTION_TITLES[name]}\n{body}\n" if body else f"# {SECTION_TITLES[name]}\n")
    return "\n".join(parts)


@dataclass
class ParsedFile:
    sections: dict[str, str] = field(default_factory=dict)
    # Text above the first heading: not part of any section, but an agent wrote it.
    preamble: str = ""


def parse(text: str) -> ParsedFile:
    """Split a plan file into its sections, losing nothing.

    Only a line that is exactly one of the seven headings starts a section, so a
    Markdown heading inside a section ("# Step 1") stays text, and "\\# Goal" is the text
    "# Goal" (see ``_escape``). A heading that appears twice gets both bodies, joined by a
    blank line.
    """
    parsed = ParsedFile()
    current: str | None = None
    buffers: dict[str, list[str]] = {}
    preamble: list[str] = []
    # Lines end at "\n" only: str.splitlines() would also break at form feeds, NEL and
    # U+2028, and a round trip through the file would then rewrite the agent's text.
    for line in text.split("\n"):
        name = HEADINGS.get(line.rstrip())
        if name is not None:
            current = name
            if name in buffers:
                buffers[name].append("")
            else:
                buffers[name] = []
            continue
        if line.startswith("\\") and _heading_like(line):
            line = line[1:]
        (buffers[current] if current is not None else preamble).append(line)
    parsed.sections = {name: "\n".join(lines).strip("\r\n") for name, lines in buffers.items()}
    parsed.preamble = "\n".join(preamble).strip()
    return parsed


# --- reaching the files ---------------------------------------------------------------------
#
# Plan files live where agents, and anything else running as the same user, can write, so
# whatever is found there is hostile input (docs/design.md, "Plan files"). Every folder
# below the sessions root is opened without following a symbolic link, and every name is
# resolved relative to the folder's descriptor, so a link swapped in anywhere below the
# root can neither lead a read to a file outside it nor a write, move or delete into a
# folder outside it. Only regular files are opened, without blocking: a FIFO or a device
# never stalls a caller (which may hold the database's write lock). Anything else found is
# reported and left alone.

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NONBLOCK
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

MISSING = "missing"
OK = "ok"
REFUSED = "refused"  # not a regular file, in a folder that is not real, or unreadable
TOO_LARGE = "too_large"
NOT_UTF8 = "not_utf8"


def read_cap() -> int:
    """The most bytes of a plan file ever read.

    Four bytes for each character the plan size limit allows (UTF-8's widest), plus room
    for the headings and escapes: a file 9plan rendered from any plan the database accepts
    is always under it, and anything over it could never be stored anyway.
    """
    return 4 * settings.NINEPLAN_MAX_PLAN_CHARS + 4096


def kind_of(mode: int, links: int = 1) -> str:
    """What a directory entry that is not a plain regular file is, in words."""
    if stat.S_ISREG(mode) and links > 1:
        # A hard link is a regular file that is also some other file, perhaps outside the
        # sessions folder: treated like a symbolic link.
        return f"a hard link ({links} names for one file)"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


class UnsafeFolder(Exception):
    """A folder below the sessions root is a link, or not a folder at all."""

    def __init__(self, path: Path, what: str):
        super().__init__(f"{path} is {what}, not a real folder")
        self.path = path
        self.what = what


def _plain(st: os.stat_result) -> bool:
    """A regular file with no other name: the only kind of entry 9plan reads or replaces."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def _kind(st: os.stat_result) -> str:
    return kind_of(st.st_mode, st.st_nlink)


def _describe_entry(name: str, dir_fd: int) -> str:
    try:
        return _kind(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
    except OSError:
        return "not a folder"


def _open_below(parent: int, name: str, shown: Path, *, create: bool) -> int:
    if create:
        try:
            os.mkdir(name, dir_fd=parent)
        except FileExistsError:
            pass
    try:
        return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise UnsafeFolder(shown, _describe_entry(name, parent)) from None
        raise


@contextmanager
def open_folder(session_name: str, *, plans: bool = True, create: bool = False, sub: str | None = None) -> Iterator[int]:
    """A descriptor of the session's folder (or its ``plans``/``sub`` folder), reached from the
    sessions root without following a link. Raises FileNotFoundError when a folder is
    missing (unless ``create``), UnsafeFolder when one is a link or not a folder."""
    root = sessions_root()
    path = session_dir(session_name)  # checks the name's shape
    if create:
        root.mkdir(parents=True, exist_ok=True)
    # The root itself is the operator's choice and may be a link; everything below is not.
    fds = [os.open(root, _DIR_FLAGS)]
    try:
        fds.append(_open_below(fds[-1], session_name, path, create=create))
        for name in (["plans"] if plans else []) + ([sub] if sub else []):
            path = path / name
            fds.append(_open_below(fds[-1], name, path, create=create))
        yield fds[-1]
    finally:
        for fd in fds:
            os.close(fd)


def _file_name(plan_id: str) -> str:
    if not is_plan_id(plan_id):
        raise ValueError(f"not a plan id: {plan_id!r}")
    return f"{plan_id}.txt"


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    # Any write changes the size or a time; 9plan's own writes also change the inode.
    return (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True)
class FileRead:
    """What reading a plan file found. Only ``state == OK`` carries text to use."""

    state: str
    text: str | None = None
    data: bytes | None = None  # the bytes as written, when they are not UTF-8 text
    problem: str = ""  # in words, for answers and reports: "is a symbolic link"
    size: int = 0
    identity: tuple | None = None

    @property
    def usable(self) -> bool:
        return self.state == OK


def _read_fd(fd: int, cap: int) -> bytes:
    chunks: list[bytes] = []
    left = cap + 1  # one byte more than allowed tells "too large" from "exactly the cap"
    while left > 0:
        try:
            chunk = os.read(fd, min(left, 1 << 20))
        except BlockingIOError:
            break  # only a regular file is read, and it never blocks; this is belt and braces
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_in(folder: int, name: str) -> FileRead:
    try:
        before = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return FileRead(MISSING)
    if not _plain(before):
        return FileRead(REFUSED, problem=f"is {_kind(before)}, not a regular file", identity=_identity(before))
    cap = read_cap()
    if before.st_size > cap:
        return FileRead(TOO_LARGE, problem=f"is {before.st_size} bytes", size=before.st_size, identity=_identity(before))
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        return FileRead(MISSING)
    except OSError as exc:
        # ELOOP: the name became a link between the check and the open.
        return FileRead(REFUSED, problem=f"cannot be opened ({exc.strerror or exc})")
    try:
        st = os.fstat(fd)
        if not _plain(st):
            return FileRead(REFUSED, problem=f"is {_kind(st)}, not a regular file", identity=_identity(st))
        data = _read_fd(fd, cap)
    except OSError as exc:
        return FileRead(REFUSED, problem=f"cannot be read ({exc.strerror or exc})")
    finally:
        os.close(fd)
    identity = _identity(st)
    if len(data) > cap:
        size = max(st.st_size, len(data))
        return FileRead(TOO_LARGE, problem=f"is over {cap} bytes", size=size, identity=identity)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return FileRead(NOT_UTF8, data=data, problem=f"holds bytes that are not UTF-8 text (at byte {exc.start})",
                        size=len(data), identity=identity)
    if "\x00" in text:
        # Valid UTF-8, but no database column can hold it (PostgreSQL refuses NUL).
        at = data.index(b"\x00")
        return FileRead(NOT_UTF8, data=data, problem=f"holds a NUL byte (at byte {at})", size=len(data), identity=identity)
    return FileRead(OK, text=text, size=len(data), identity=identity)


def _in_unsafe_folder(exc: UnsafeFolder) -> FileRead:
    # A folder that is a link may lead to anything (another user's files): refused. A
    # folder that is not a folder at all (a regular file in its place) holds no plan file.
    if exc.what == "a symbolic link":
        return FileRead(REFUSED, problem=f"is inside {exc.path}, which is {exc.what}, not a real folder")
    return FileRead(MISSING, problem=f"{exc.path} is {exc.what}, not a folder")


def read_plan_file(session_name: str, plan_id: str) -> FileRead:
    """Reads a plan file safely: a regular file directly in the session's real plans
    folder, at most ``read_cap()`` bytes, strictly UTF-8, never blocking."""
    name = _file_name(plan_id)
    try:
        with open_folder(session_name) as folder:
            return _read_in(folder, name)
    except FileNotFoundError:
        return FileRead(MISSING)
    except UnsafeFolder as exc:
        return _in_unsafe_folder(exc)
    except OSError as exc:
        log.warning("plan file unreadable", extra={"session": session_name, "plan": plan_id, "error": str(exc)})
        return FileRead(REFUSED, problem=f"cannot be read ({exc.strerror or exc})")


def read_plan(session_name: str, plan_id: str) -> str | None:
    """The file's text when it is safe and whole UTF-8 text; None otherwise (the database
    copy stands)."""
    read = read_plan_file(session_name, plan_id)
    return read.text if read.usable else None


def file_identity(session_name: str, plan_id: str) -> tuple | None:
    """The file's identity and times (None: no such entry), without opening it."""
    try:
        with open_folder(session_name) as folder:
            return _identity(os.stat(_file_name(plan_id), dir_fd=folder, follow_symlinks=False))
    except (OSError, UnsafeFolder):
        return None


def probe(session_name: str, plan_id: str) -> FileRead:
    """Whether the plan's file is there as a regular file, without opening it."""
    name = _file_name(plan_id)
    try:
        with open_folder(session_name) as folder:
            st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return FileRead(MISSING)
    except UnsafeFolder as exc:
        return _in_unsafe_folder(exc)
    except OSError as exc:
        return FileRead(REFUSED, problem=f"cannot be checked ({exc.strerror or exc})")
    if not _plain(st):
        return FileRead(REFUSED, problem=f"is {_kind(st)}, not a regular file", identity=_identity(st))
    return FileRead(OK, identity=_identity(st), size=st.st_size)


def _write_in(folder: int, name: str, data: bytes) -> None:
    """Atomic write of ``name`` inside ``folder``: readers see the old file or the new one.

    Not fsynced: a plan file is as durable as the commit it goes with, which runs with
    synchronous=NORMAL and may itself be lost to a power cut; the database's copy is the
    one that counts (docs/design.md, "Plan files")."""
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if not _plain(st):
            raise FileExistsError(errno.EEXIST, f"{_kind(st)} is in its place, and 9plan leaves it alone")
    tmp = f"{TEMP_PREFIX}{secrets.token_hex(6)}.txt"
    fd = os.open(tmp, _CREATE_FLAGS, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
        raise


def write_file(session_name: str, plan_id: str, content: str | bytes) -> Path:
    """Writes a plan file atomically, creating the session's folders as needed; refuses
    (FileSystemFailed) a folder that is a link or a non-regular entry in the file's place."""
    path = plan_path(session_name, plan_id)
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        with open_folder(session_name, create=True) as folder:
            _write_in(folder, path.name, data)
    except UnsafeFolder as exc:
        log.error("plan folder unsafe", extra={"session": session_name, "plan": plan_id, "folder": str(exc.path)})
        raise FileSystemFailed(
            f"Could not write the plan file {path}: {exc.path} is {exc.what}, not a real folder; 9plan writes only "
            "into real folders inside the sessions folder and leaves it alone.",
            reason=errors.UNSAFE_FOLDER,
        ) from None
    except OSError as exc:
        log.error("plan file write failed", extra={"session": session_name, "plan": plan_id, "error": str(exc)})
        raise FileSystemFailed(f"Could not write the plan file {path}: {exc.strerror or exc}.") from exc
    return path


def write_plan(session_name: str, plan_id: str, sections: dict[str, str]) -> Path:
    return write_file(session_name, plan_id, render(sections))


def _remove_in(folder: int, name: str) -> str:
    """Unlinks ``name`` if it is a regular file; returns what was found instead ("": removed)."""
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return ""
    if not _plain(st):
        return _kind(st)
    os.unlink(name, dir_fd=folder)
    return ""


def remove_file(session_name: str, plan_id: str) -> None:
    """Removes the plan's file if it is a regular file; anything else raises FileSystemFailed
    and is left alone."""
    try:
        with open_folder(session_name) as folder:
            found = _remove_in(folder, _file_name(plan_id))
    except FileNotFoundError:
        return
    except UnsafeFolder as exc:
        raise FileSystemFailed(f"{exc}; it was left alone.") from None
    if found:
        raise FileSystemFailed(f"{plan_path(session_name, plan_id)} is {found}; it was left alone.")


def delete_plan(session_name: str, plan_id: str) -> None:
    # Called after the database has committed; a file left behind by a failure here is
    # reported by 9plan_admin_validate and cleaned up by the repair, never fatal. A link,
    # FIFO or device in the file's place is left alone (validate reports it).
    try:
        with open_folder(session_name) as folder:
            found = _remove_in(folder, _file_name(plan_id))
        if found:
            log.warning("plan file left alone", extra={"session": session_name, "plan": plan_id, "found": found})
    except FileNotFoundError:
        pass
    except (OSError, UnsafeFolder) as exc:
        log.warning("plan file delete failed", extra={"session": session_name, "plan": plan_id, "error": str(exc)})


def remove_temp(session_name: str, name: str) -> None:
    """Removes a temporary file of an interrupted write (a regular file only)."""
    if not name.startswith(TEMP_PREFIX) or "/" in name:
        raise ValueError(f"not a temporary file name: {name!r}")
    with open_folder(session_name) as folder:
        found = _remove_in(folder, name)
    if found:
        raise FileSystemFailed(f"{plans_dir(session_name) / name} is {found}; it was left alone.")


def _preserved_name(folder: int, stem: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    name, n = f"{stem}-{stamp}.txt", 1
    while True:
        try:
            os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return name
        n += 1
        name = f"{stem}-{stamp}-{n}.txt"


def preserve_bytes(session_name: str, plan_id: str, data: bytes) -> str:
    """Keeps ``data`` exactly as it was in the session's ``preserved/`` folder; returns the
    copy's path relative to the session folder."""
    _file_name(plan_id)
    try:
        with open_folder(session_name, plans=False, create=True, sub=PRESERVED_DIR) as folder:
            name = _preserved_name(folder, plan_id)
            _write_in(folder, name, data)
    except UnsafeFolder as exc:
        raise FileSystemFailed(f"Could not keep the plan file's bytes aside: {exc}.") from None
    except OSError as exc:
        raise FileSystemFailed(f"Could not keep the plan file's bytes aside: {exc.strerror or exc}.") from exc
    return f"{PRESERVED_DIR}/{name}"


def preserve_file(session_name: str, plan_id: str) -> str:
    """Moves the plan's file (a regular file only) into the session's ``preserved/`` folder;
    returns its new path relative to the session folder."""
    source = _file_name(plan_id)
    try:
        with open_folder(session_name) as plans, open_folder(
            session_name, plans=False, create=True, sub=PRESERVED_DIR
        ) as kept:
            st = os.stat(source, dir_fd=plans, follow_symlinks=False)
            if not _plain(st):
                raise FileSystemFailed(f"{plan_path(session_name, plan_id)} is {_kind(st)}; it was left alone.")
            name = _preserved_name(kept, plan_id)
            os.rename(source, name, src_dir_fd=plans, dst_dir_fd=kept)
    except UnsafeFolder as exc:
        raise FileSystemFailed(f"Could not move the plan file aside: {exc}.") from None
    except OSError as exc:
        raise FileSystemFailed(f"Could not move the plan file aside: {exc.strerror or exc}.") from exc
    return f"{PRESERVED_DIR}/{name}"


@dataclass
class Scan:
    """What a session's plans folder holds, from its entries' types alone (nothing opened)."""

    problem: str = ""  # the session or plans folder is a link or not a folder
    files: dict[str, str] = field(default_factory=dict)  # plan id -> "" (regular file) or what it is
    temp: list[tuple[str, float, str]] = field(default_factory=list)  # name, age in seconds, "" or what it is

    def regular(self) -> set[str]:
        return {plan_id for plan_id, what in self.files.items() if not what}


def scan(session_name: str) -> Scan:
    found = Scan()
    now = time.time()
    try:
        with open_folder(session_name) as folder:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    is_temp = name.startswith(TEMP_PREFIX)
                    stem, dot, ext = name.rpartition(".")
                    is_plan = dot and ext == "txt" and is_plan_id(stem)
                    if not (is_temp or is_plan):
                        continue
                    try:
                        # The entry's type comes with the listing; a regular file is stat'ed for
                        # its links (a hard link is refused like a symbolic one). No file is opened.
                        plain = entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_nlink == 1
                        what = "" if plain else _describe_entry(name, folder)
                        age = now - entry.stat(follow_symlinks=False).st_mtime if is_temp else 0.0
                    except FileNotFoundError:
                        continue  # renamed or removed meanwhile
                    if is_temp:
                        found.temp.append((name, age, what))
                    else:
                        found.files[stem] = what
    except FileNotFoundError:
        pass
    except UnsafeFolder as exc:
        found.problem = f"{exc.path} is {exc.what}, not a real folder"
    found.temp.sort()
    return found


def list_plan_files(session_name: str) -> list[str]:
    """Plan ids that have an entry in the session's plans folder (temp files excluded)."""
    return sorted(scan(session_name).files)


def list_temp_files(session_name: str, *, min_age: float = 0) -> list[Path]:
    """Temporary files in the session's plans folder, those at least ``min_age`` seconds old."""
    folder = plans_dir(session_name)
    return [folder / name for name, age, _ in scan(session_name).temp if age >= min_age]


def ensure_session_dir(session_name: str) -> Path:
    path = plans_dir(session_name)
    try:
        with open_folder(session_name, create=True):
            pass
    except UnsafeFolder as exc:
        raise FileSystemFailed(f"Could not create the session folder {path}: {exc}.") from None
    except OSError as exc:
        raise FileSystemFailed(f"Could not create the session folder {path}: {exc.strerror or exc}.") from exc
    return session_dir(session_name)
