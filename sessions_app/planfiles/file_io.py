"""Reading, writing and removing a plan's file, and keeping the bytes of one that cannot be
taken in aside."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from sessions_app import errors
from sessions_app.errors import FileSystemFailed
from sessions_app.planfiles import bases, displaced
from sessions_app.planfiles.folders import (
    BASES_DIR,
    MISSING,
    OK,
    PRESERVED_DIR,
    REFUSED,
    TEMP_PREFIX,
    FileRead,
    UnsafeFolder,
    enabled,
    file_name,
    hold,
    identity_of,
    in_unsafe_folder,
    kind,
    open_folder,
    plain,
    plan_path,
    plans_dir,
    read_cap,
    read_in,
    remove_in,
    session_dir,
    write_in,
)
from sessions_app.planfiles.text import render

log = logging.getLogger("nineplan.planfiles")


def read_plan_file(session_name: str, plan_id: str) -> FileRead:
    """Reads a plan file safely: a regular file directly in the session's real plans
    folder, at most ``read_cap()`` bytes, strictly UTF-8, never blocking."""
    if not enabled():
        return FileRead(MISSING)
    name = file_name(plan_id)
    try:
        with open_folder(session_name) as folder:
            return read_in(folder, name)
    except FileNotFoundError:
        return FileRead(MISSING)
    except UnsafeFolder as exc:
        return in_unsafe_folder(exc)
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
    if not enabled():
        return None
    try:
        with open_folder(session_name) as folder:
            return identity_of(os.stat(file_name(plan_id), dir_fd=folder, follow_symlinks=False))
    except (OSError, UnsafeFolder):
        return None


def probe(session_name: str, plan_id: str) -> FileRead:
    """Whether the plan's file is there as a regular file, without opening it."""
    if not enabled():
        return FileRead(MISSING)
    name = file_name(plan_id)
    try:
        with open_folder(session_name) as folder:
            st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return FileRead(MISSING)
    except UnsafeFolder as exc:
        return in_unsafe_folder(exc)
    except OSError as exc:
        return FileRead(REFUSED, problem=f"cannot be checked ({exc.strerror or exc})")
    if not plain(st):
        return FileRead(REFUSED, problem=f"is {kind(st)}, not a regular file", identity=identity_of(st))
    return FileRead(OK, identity=identity_of(st), size=st.st_size)


def _bytes(text: str | bytes | None) -> bytes | None:
    return text.encode("utf-8") if isinstance(text, str) else text


def write_file(
    session_name: str,
    plan_id: str,
    content: str | bytes,
    before_replace: Callable[[int], None] | None = None,
    *,
    found: str | bytes | None = None,
) -> displaced.Late:
    """Writes a plan file atomically, creating the session's folders as needed; refuses
    (FileSystemFailed) a folder that is a link or a non-regular entry in the file's place.
    ``before_replace``: see ``folders.write_in``. ``found``: the file as the caller last read
    it (None: it found none). What the file this one replaces holds beyond that is never lost
    (``displaced``): lines added at its end since are added at the end of the new file, and
    any other change keeps the old file aside; the returned ``Late`` says which."""
    if not enabled():
        return displaced.NOTHING
    name = file_name(plan_id)
    data = content.encode("utf-8") if isinstance(content, str) else content
    late = displaced.NOTHING

    def after_replace(old: int | None, inode: int) -> None:
        nonlocal late
        late = displaced.settle(
            old,
            _bytes(found),
            data,
            lambda chunks: displaced.add_at_end(folder, name, inode, chunks, read_cap()),
            lambda chunks: preserve_bytes(session_name, plan_id, chunks),
        )
        if late.kept_as:
            log.warning(
                "plan file changed while it was written; kept aside",
                extra={"session": session_name, "plan": plan_id, "kept_as": late.kept_as, "problem": late.problem},
            )

    try:
        with open_folder(session_name, create=True) as folder:
            write_in(folder, name, data, before_replace, after_replace)
        return late
    except UnsafeFolder as exc:
        path = plan_path(session_name, plan_id)
        log.error("plan folder unsafe", extra={"session": session_name, "plan": plan_id, "folder": str(exc.path)})
        raise FileSystemFailed(
            f"Could not write the plan file {path}: {exc.path} is {exc.what}, not a real folder; 9plan writes only "
            "into real folders inside the sessions folder and leaves it alone.",
            reason=errors.UNSAFE_FOLDER,
        ) from None
    except OSError as exc:
        log.error("plan file write failed", extra={"session": session_name, "plan": plan_id, "error": str(exc)})
        path = plan_path(session_name, plan_id)
        raise FileSystemFailed(f"Could not write the plan file {path}: {exc.strerror or exc}.") from exc


def write_plan(
    session_name: str,
    plan_id: str,
    sections: dict[str, str],
    *,
    version: int | None = None,
    stored: str | None = None,
    before: FileRead | None = None,
) -> displaced.Late:
    """Writes the plan's file from ``sections``, its base first: the same text, kept where
    the agent does not edit it. With ``version`` (the plan's, once the write commits) the
    base is a record of the write (``bases``), over ``stored`` (the base as it was) and
    ``before`` (the file as the write found it): a process killed before the commit, with
    the file written or not, then leaves nothing the next write takes for the agent's edit,
    and loses no edit the killed write had taken in. Without it the base is the plain text:
    for the first file of a plan (a record would read the same, with nothing found before
    it), and the repair's re-render of a plan file the database holds. What the file gained
    after ``before`` was read is not lost (``write_file``)."""
    text = render(sections)

    def put_base(inode: int) -> None:
        if version is None:
            write_base(session_name, plan_id, text)
            return
        found = before.text if before is not None and before.usable else None
        found_inode = before.inode if before is not None and found is not None else None
        write_base(
            session_name, plan_id, bases.dump(bases.file_write(version, text, inode, stored, found, found_inode))
        )

    found = None if before is None else before.text if before.usable else before.data
    return write_file(session_name, plan_id, text, before_replace=put_base, found=found)


def put_back(
    session_name: str,
    plan_id: str,
    content: str | bytes,
    stored: str | None,
    inode: int | None,
    version: int,
    left: str | bytes | None = None,
) -> displaced.Late:
    """Puts a plan file back as a write found it (``content``, once of inode ``inode``) with
    its base as stored then (``bases.moved``): the undo of a write, which would have made
    the plan ``version``, whose transaction failed. ``left``: what that write left in the
    file (None: not known); anything added to the file since is kept (``write_file``)."""

    def put_base(new_inode: int) -> None:
        write_base(session_name, plan_id, bases.moved(stored, inode, new_inode, version))

    return write_file(session_name, plan_id, content, before_replace=put_base, found=left)


def write_base(session_name: str, plan_id: str, text: str | None) -> None:
    """Sets (or, with None, removes) the base of the plan's file."""
    if not enabled():
        return
    name = file_name(plan_id)
    try:
        with open_folder(session_name, plans=False, create=text is not None, sub=BASES_DIR) as folder:
            if text is None:
                remove_in(folder, name)
            else:
                write_in(folder, name, text.encode("utf-8"))
    except FileNotFoundError:
        return
    except UnsafeFolder as exc:
        raise FileSystemFailed(f"Could not keep the plan file's base: {exc}.") from None
    except OSError as exc:
        raise FileSystemFailed(f"Could not keep the plan file's base: {exc.strerror or exc}.") from exc


def read_base(session_name: str, plan_id: str) -> str | None:
    """The plan file's base as stored (``bases`` reads it); None when there is none (a file
    an older 9plan or an import wrote, or one 9plan did not write here) or it is unusable."""
    if not enabled():
        return None
    try:
        with open_folder(session_name, plans=False, sub=BASES_DIR) as folder:
            # A record holds up to three texts of a plan, and more after writes killed in turn.
            found = read_in(folder, file_name(plan_id), cap=(2 + 2 * bases.MOST_UNCOMMITTED) * read_cap())
    except (OSError, UnsafeFolder):
        return None
    return found.text if found.usable else None


def file_and_base(session_name: str, stem: str, read: FileRead, version: int | None) -> tuple[str | None, str | None]:
    """The plan file ``read`` (usable) as the agent left it, and the text to read it against:
    what 9plan wrote it from, with any write that never committed undone (``bases.as_committed``;
    ``version``: the plan's in the database, None when unknown)."""
    return bases.as_committed(bases.load(read_base(session_name, stem)), read.text, read.inode, version)


def untouched(session_name: str, stem: str, version: int | None = None, read: FileRead | None = None) -> bool:
    """Whether the file (``read``, when the caller has just read it) is exactly the text 9plan
    wrote it from: a copy nobody edited."""
    if read is None:
        read = read_plan_file(session_name, stem)
    if not read.usable:
        return False
    base, text = file_and_base(session_name, stem, read, version)
    return text == base


def _forget_base(session_name: str, plan_id: str) -> None:
    try:
        write_base(session_name, plan_id, None)
    except FileSystemFailed as exc:
        log.warning(
            "plan file base not removed", extra={"session": session_name, "plan": plan_id, "error": exc.message}
        )


def remove_file(session_name: str, plan_id: str) -> None:
    """Removes the plan's file if it is a regular file; anything else raises FileSystemFailed
    and is left alone."""
    _forget_base(session_name, plan_id)
    try:
        with open_folder(session_name) as folder:
            found = remove_in(folder, file_name(plan_id))
    except FileNotFoundError:
        return
    except UnsafeFolder as exc:
        raise FileSystemFailed(f"{exc}; it was left alone.") from None
    if found:
        raise FileSystemFailed(f"{plan_path(session_name, plan_id)} is {found}; it was left alone.")


def delete_plan(session_name: str, plan_id: str, found: str | bytes | None = None) -> displaced.Late:
    """Removes the plan's file (a regular file only) and its base; ``found``: the file as the
    caller last read it (None: it found none). Anything the file holds beyond that is never
    lost: the removed file is read once it has left the path, and kept aside when it holds
    more (``displaced``; the returned ``Late`` says where)."""
    # Called after the database has committed; a file left behind by a failure here is
    # reported by 9plan_admin_validate and cleaned up by the repair, never fatal. A link,
    # FIFO or device in the file's place is left alone (validate reports it).
    if not enabled():
        return displaced.NOTHING
    name = file_name(plan_id)
    late = displaced.NOTHING
    try:
        _forget_base(session_name, plan_id)
        with open_folder(session_name) as folder:
            old = hold(folder, name)
            try:
                what = remove_in(folder, name)
                if what:
                    log.warning("plan file left alone", extra={"session": session_name, "plan": plan_id, "found": what})
                elif old is not None:
                    late = displaced.settle(
                        old, _bytes(found), None, None, lambda chunks: preserve_bytes(session_name, plan_id, chunks)
                    )
            finally:
                if old is not None:
                    os.close(old)
    except FileNotFoundError:
        pass
    except (OSError, UnsafeFolder, FileSystemFailed) as exc:
        log.warning("plan file delete failed", extra={"session": session_name, "plan": plan_id, "error": str(exc)})
    if late.kept_as:
        log.warning(
            "plan file changed before it was removed; kept aside",
            extra={"session": session_name, "plan": plan_id, "kept_as": late.kept_as, "problem": late.problem},
        )
    return late


def remove_temp(session_name: str, name: str) -> None:
    """Removes a temporary file of an interrupted write (a regular file only)."""
    if not name.startswith(TEMP_PREFIX) or "/" in name:
        raise ValueError(f"not a temporary file name: {name!r}")
    with open_folder(session_name) as folder:
        found = remove_in(folder, name)
    if found:
        raise FileSystemFailed(f"{plans_dir(session_name) / name} is {found}; it was left alone.")


def _preserved_name(folder: int, stem: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    name, n = f"{stem}-{stamp}.txt", 1
    while True:
        try:
            os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return name
        n += 1
        name = f"{stem}-{stamp}-{n}.txt"


def preserve_bytes(session_name: str, plan_id: str, data: bytes | Iterable[bytes]) -> str:
    """Keeps ``data`` (bytes, or its chunks in order) exactly as it was in the session's
    ``preserved/`` folder; returns the copy's path relative to the session folder."""
    file_name(plan_id)
    try:
        with open_folder(session_name, plans=False, create=True, sub=PRESERVED_DIR) as folder:
            name = _preserved_name(folder, plan_id)
            write_in(folder, name, data)
    except UnsafeFolder as exc:
        raise FileSystemFailed(f"Could not keep the plan file's bytes aside: {exc}.") from None
    except OSError as exc:
        raise FileSystemFailed(f"Could not keep the plan file's bytes aside: {exc.strerror or exc}.") from exc
    return f"{PRESERVED_DIR}/{name}"


def preserve_file(session_name: str, plan_id: str) -> str:
    """Moves the plan's file (a regular file only) into the session's ``preserved/`` folder;
    returns its new path relative to the session folder."""
    source = file_name(plan_id)
    try:
        with (
            open_folder(session_name) as plans,
            open_folder(session_name, plans=False, create=True, sub=PRESERVED_DIR) as kept,
        ):
            st = os.stat(source, dir_fd=plans, follow_symlinks=False)
            if not plain(st):
                raise FileSystemFailed(f"{plan_path(session_name, plan_id)} is {kind(st)}; it was left alone.")
            name = _preserved_name(kept, plan_id)
            os.rename(source, name, src_dir_fd=plans, dst_dir_fd=kept)
        _forget_base(session_name, plan_id)
    except UnsafeFolder as exc:
        raise FileSystemFailed(f"Could not move the plan file aside: {exc}.") from None
    except OSError as exc:
        raise FileSystemFailed(f"Could not move the plan file aside: {exc.strerror or exc}.") from exc
    return f"{PRESERVED_DIR}/{name}"


def ensure_session_dir(session_name: str) -> Path:
    if not enabled():
        return session_dir(session_name)
    path = plans_dir(session_name)
    try:
        with open_folder(session_name, create=True):
            pass
    except UnsafeFolder as exc:
        raise FileSystemFailed(f"Could not create the session folder {path}: {exc}.") from None
    except OSError as exc:
        raise FileSystemFailed(f"Could not create the session folder {path}: {exc.strerror or exc}.") from exc
    return session_dir(session_name)
