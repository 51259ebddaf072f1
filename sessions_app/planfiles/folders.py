"""Where plan files live and how they are reached: every folder below the sessions root is
opened without following a link, and only a plain regular file is ever read or replaced
(docs/design.md, "Plan files")."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from django.conf import settings

from sessions_app.identifiers import is_plan_id, is_session_name

TEMP_PREFIX = ".tmp-"
# A younger temporary file may be a write in progress in another process: it is neither
# reported nor removed until it is this old.
TEMP_FILE_GRACE_SECONDS = 60
PRESERVED_DIR = "preserved"
# Beside the plans folder: for each plan file, the text 9plan wrote it from (its base).
BASES_DIR = ".bases"
# What 9plan does with anything in the sessions folder that is not what it wrote there (a
# link, a FIFO, a device, a folder in a file's place): in every report that names one.
LEFT_ALONE = "9plan neither reads, writes, moves nor deletes it"
# An import's plan files, written aside in the sessions folder until its commit (export_import/staging.py).
IMPORT_FOLDER_PREFIX = ".import-"


def enabled() -> bool:
    """Whether this process keeps plan files (NINEPLAN_PLAN_FILES). When it does not, every
    read finds no file and every write, delete and scan does nothing: the database's text is
    the plan, as it always is for agents on other machines."""
    return settings.NINEPLAN_PLAN_FILES != "off"


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


def plan_path(session_name: str, stem: str) -> Path:
    return plans_dir(session_name) / file_name(stem)


def base_path(session_name: str, stem: str) -> Path:
    return session_dir(session_name) / BASES_DIR / file_name(stem)


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


def plain(st: os.stat_result) -> bool:
    """A regular file with no other name: the only kind of entry 9plan reads or replaces."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def kind(st: os.stat_result) -> str:
    return kind_of(st.st_mode, st.st_nlink)


def describe_entry(name: str, dir_fd: int) -> str:
    try:
        return kind(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
    except OSError:
        return "not a folder"


def _open_below(parent: int, name: str, shown, *, create: bool) -> int:
    """The folder ``name`` below ``parent``, opened without following a link (and made first
    when ``create`` and missing). ``shown()`` gives its path, for the error only."""
    try:
        return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        _refuse(exc, parent, name, shown)
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
    except FileExistsError:
        pass  # made meanwhile by another writer, or something that is not a folder (refused below)
    try:
        return os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        raise
    except OSError as exc:
        _refuse(exc, parent, name, shown)


def _refuse(exc: OSError, parent: int, name: str, shown) -> NoReturn:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        raise UnsafeFolder(shown(), describe_entry(name, parent)) from None
    raise exc


def _open_root(*, create: bool) -> int:
    root = settings.NINEPLAN_SESSIONS_PATH
    try:
        return os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        if not create:
            raise
    Path(root).mkdir(parents=True, exist_ok=True, mode=0o700)
    return os.open(root, _DIR_FLAGS)


@contextmanager
def open_folder(
    session_name: str, *, plans: bool = True, create: bool = False, sub: str | None = None
) -> Iterator[int]:
    """A descriptor of the session's folder (or its ``plans``/``sub`` folder), reached from the
    sessions root without following a link. Raises FileNotFoundError when a folder is
    missing (unless ``create``: then it is made), UnsafeFolder when one is a link or not a
    folder. A folder that is there is opened, never made: one open per level."""
    # Defends against path traversal: only a name of the exact generated shape
    # (three lowercase words) ever becomes a path component.
    if not is_session_name(session_name):
        raise ValueError(f"not a session name: {session_name!r}")
    names = [session_name, *(["plans"] if plans else []), *([sub] if sub else [])]
    # The root itself is the operator's choice and may be a link; everything below is not.
    fds = [_open_root(create=create)]
    try:
        for depth, name in enumerate(names, start=1):
            fds.append(
                _open_below(fds[-1], name, lambda depth=depth: sessions_root().joinpath(*names[:depth]), create=create)
            )
        yield fds[-1]
    finally:
        for fd in fds:
            os.close(fd)


def file_name(stem: str) -> str:
    """A plan file's name: its plan's id, and after a reclaim the claim's number
    (``k3x9q-1``), so the new holder's file is never the one the old holder still has."""
    plan_id, dash, number = stem.partition("-")
    if not is_plan_id(plan_id) or (dash and not (number.isdigit() and number.isascii() and number[0] != "0")):
        raise ValueError(f"not a plan file's name: {stem!r}")
    return f"{stem}.txt"


def split_stem(stem: str) -> tuple[str, int] | None:
    """The plan id and claim number a plan file's name (without .txt) stands for; None if
    it is not one."""
    try:
        file_name(stem)
    except ValueError:
        return None
    plan_id, _, number = stem.partition("-")
    return plan_id, int(number or 0)


def stem_plan_id(stem: str) -> str:
    """The plan id of a plan file's name (without .txt), as a scan lists them; ValueError
    if it is not one."""
    split = split_stem(stem)
    if split is None:
        raise ValueError(f"{stem!r} is not a plan file's name")
    return split[0]


def identity_of(st: os.stat_result) -> tuple[int, int, int, int, int]:
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

    @property
    def inode(self) -> int | None:
        """The inode of the entry that was read (None: not known, as for a missing file)."""
        return self.identity[1] if self.identity else None


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


def read_in(folder: int, name: str, cap: int | None = None) -> FileRead:
    """Reads ``name`` inside ``folder``: a regular file of at most ``cap`` bytes (by default
    ``read_cap()``), strictly UTF-8, never blocking."""
    try:
        before = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return FileRead(MISSING)
    if not plain(before):
        return FileRead(REFUSED, problem=f"is {kind(before)}, not a regular file", identity=identity_of(before))
    cap = read_cap() if cap is None else cap
    if before.st_size > cap:
        return FileRead(
            TOO_LARGE, problem=f"is {before.st_size} bytes", size=before.st_size, identity=identity_of(before)
        )
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        return FileRead(MISSING)
    except OSError as exc:
        # ELOOP: the name became a link between the check and the open.
        return FileRead(REFUSED, problem=f"cannot be opened ({exc.strerror or exc})")
    try:
        st = os.fstat(fd)
        if not plain(st):
            return FileRead(REFUSED, problem=f"is {kind(st)}, not a regular file", identity=identity_of(st))
        data = _read_fd(fd, cap)
    except OSError as exc:
        return FileRead(REFUSED, problem=f"cannot be read ({exc.strerror or exc})")
    finally:
        os.close(fd)
    identity = identity_of(st)
    if len(data) > cap:
        size = max(st.st_size, len(data))
        return FileRead(TOO_LARGE, problem=f"is over {cap} bytes", size=size, identity=identity)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return FileRead(
            NOT_UTF8,
            data=data,
            problem=f"holds bytes that are not UTF-8 text (at byte {exc.start})",
            size=len(data),
            identity=identity,
        )
    if "\x00" in text:
        # Valid UTF-8, but no database column can hold it (PostgreSQL refuses NUL).
        at = data.index(b"\x00")
        return FileRead(
            NOT_UTF8, data=data, problem=f"holds a NUL byte (at byte {at})", size=len(data), identity=identity
        )
    return FileRead(OK, text=text, size=len(data), identity=identity)


def in_unsafe_folder(exc: UnsafeFolder) -> FileRead:
    # A folder that is a link may lead to anything (another user's files): refused. A
    # folder that is not a folder at all (a regular file in its place) holds no plan file.
    if exc.what == "a symbolic link":
        return FileRead(REFUSED, problem=f"is inside {exc.path}, which is {exc.what}, not a real folder")
    return FileRead(MISSING, problem=f"{exc.path} is {exc.what}, not a folder")


def write_in(
    folder: int,
    name: str,
    data: bytes | Iterable[bytes],
    before_replace: Callable[[int], None] | None = None,
    after_replace: Callable[[int | None, int], None] | None = None,
) -> None:
    """Atomic write of ``name`` inside ``folder``: readers see the old file or the new one,
    never none. ``data`` is the bytes, or its chunks in order. ``before_replace`` is called
    with the new file's inode once its data is written, before it takes the name; if it
    raises, nothing is put in place. ``after_replace`` is called once the new file has the
    name, with a descriptor of the file it replaced, held open from just before the replace
    (None: there was none, or not a plain file), and the new file's inode: the old file can
    still be read there after it has left the path (``planfiles.displaced`` says why).

    Not fsynced: a plan file is as durable as the commit it goes with, which runs with
    synchronous=NORMAL and may itself be lost to a power cut; the database's copy is the
    one that counts (docs/design.md, "Plan files")."""
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if not plain(st):
            raise FileExistsError(errno.EEXIST, f"{kind(st)} is in its place, and 9plan leaves it alone")
    tmp = f"{TEMP_PREFIX}{secrets.token_hex(6)}.txt"
    fd = os.open(tmp, _CREATE_FLAGS, 0o600, dir_fd=folder)
    old = None
    try:
        try:
            # Straight to the descriptor: a file object around it would first ask whether
            # it is a terminal and where it stands (two more system calls a file).
            for chunk in (data,) if isinstance(data, bytes) else data:
                written = memoryview(chunk)
                while written:
                    written = written[os.write(fd, written) :]
            wanted = before_replace is not None or after_replace is not None
            inode = os.fstat(fd).st_ino if wanted else 0
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace(inode)
        if after_replace is not None:
            # Looked for even when the stat above found nothing: a file another process put
            # there since is replaced all the same, and is not to go unread either.
            old = hold(folder, name)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        if old is not None:
            os.close(old)
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
        raise
    if after_replace is None:
        return
    try:
        after_replace(old, inode)
    finally:
        if old is not None:
            os.close(old)


def hold(folder: int, name: str) -> int | None:
    """``name`` opened for reading when it is a plain file (a descriptor to close), else None:
    nothing there, or what 9plan never reads (a link swapped in since it was looked at is
    not followed, a hard link is not read through)."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=folder)
    except OSError:
        return None
    try:
        if plain(os.fstat(fd)):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def remove_in(folder: int, name: str) -> str:
    """Unlinks ``name`` if it is a regular file; returns what was found instead ("": removed)."""
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return ""
    if not plain(st):
        return kind(st)
    os.unlink(name, dir_fd=folder)
    return ""
