"""An import's plan files, written aside while its transaction runs and moved into place
whole after the commit.

The folder aside is ``{NINEPLAN_SESSIONS_PATH}/.import-{session}-{random}``: no session's
folder, so nothing looks at it, and on the same file system as the session's folder, so
one rename moves it there as the session's ``plans/``. The files' bases wait in its
``.bases`` subfolder and go to the session's ``.bases/`` just before. A killed import thus leaves no file
where a session's files go, only this folder, which a new import does not trip on and the
repair clears (docs/design.md, "Repair"). While the import runs it holds an exclusive
``flock`` on the folder, which the kernel releases when the process ends however it ends:
a folder whose lock can be taken belongs to no running import.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from sessions_app import planfiles
from sessions_app.errors import FileSystemFailed
from sessions_app.identifiers import is_plan_id, is_session_name

try:
    import fcntl
except ImportError:  # Windows: no flock; a folder is taken as abandoned only when it is old
    HAS_FLOCK = False
else:
    HAS_FLOCK = True

log = logging.getLogger("nineplan.export_import")

PREFIX = planfiles.IMPORT_FOLDER_PREFIX
# Without flock, a folder this old (seconds) is taken as abandoned.
ABANDONED_AFTER = 24 * 3600
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _root() -> int:
    return os.open(planfiles.sessions_root(), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _locked(fd: int) -> bool:
    """Takes the folder's lock without waiting; False when a running import holds it."""
    if not HAS_FLOCK:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class ImportFolder:
    """The folder aside of one import: ``write`` while the transaction runs, ``publish``
    after its commit, ``discard`` if it fails; ``close`` releases the lock."""

    def __init__(self, session_name: str):
        if not is_session_name(session_name):
            raise ValueError(f"not a session name: {session_name!r}")
        self.session_name = session_name
        self.name = f"{PREFIX}{session_name}-{secrets.token_hex(6)}"
        self.path = planfiles.sessions_root() / self.name
        self.count = 0
        self._bases_fd: int | None = None
        planfiles.sessions_root().mkdir(parents=True, exist_ok=True)
        root = _root()
        try:
            os.mkdir(self.name, 0o700, dir_fd=root)
            self._fd = os.open(self.name, _DIR, dir_fd=root)
        except OSError as exc:
            raise FileSystemFailed(
                f"Could not make the folder {self.path} for the imported plan files: {exc.strerror or exc}."
            ) from exc
        finally:
            os.close(root)
        _locked(self._fd)  # a new folder of this process: nobody else holds it

    def write(self, plan_id: str, text: str, base: str | None = None) -> None:
        """The plan's file, and its base (the text it was written from) when given."""
        if not is_plan_id(plan_id):
            raise ValueError(f"not a plan id: {plan_id!r}")
        try:
            _new_file(self._fd, plan_id, text)
            if base is not None:
                if self._bases_fd is None:
                    os.mkdir(planfiles.BASES_DIR, 0o700, dir_fd=self._fd)
                    self._bases_fd = os.open(planfiles.BASES_DIR, _DIR, dir_fd=self._fd)
                _new_file(self._bases_fd, plan_id, base)
        except OSError as exc:
            raise FileSystemFailed(
                f"Could not write the imported plan file {self.path / plan_id}.txt: {exc.strerror or exc}."
            ) from exc
        self.count += 1

    def publish(self) -> None:
        """Moves the files into the session's plans folder: the whole folder in one rename
        when the session has no plans folder with entries yet, else file by file."""
        try:
            _take_bases(self._fd, self.session_name, replace=True)
            with planfiles.open_folder(self.session_name, plans=False, create=True) as session:
                root = _root()
                try:
                    os.rename(self.name, "plans", src_dir_fd=root, dst_dir_fd=session)
                    return
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise
                finally:
                    os.close(root)
            with planfiles.open_folder(self.session_name) as plans:
                _move_files(self._fd, plans, replace=True)
            self._remove_folder()
        except (OSError, planfiles.UnsafeFolder) as exc:
            raise FileSystemFailed(
                f"The session was imported, but its plan files could not be moved into place ({exc}); they are in "
                f"{self.path}. `9plan repair --apply` moves them there."
            ) from exc

    def discard(self) -> None:
        """Removes the folder and what was written in it (the transaction failed)."""
        try:
            _drop_bases(self._fd)
            _remove_files(self._fd)
            self._remove_folder()
        except OSError as exc:
            log.warning("imported plan files left aside", extra={"folder": str(self.path), "error": str(exc)})

    def _remove_folder(self) -> None:
        root = _root()
        try:
            os.rmdir(self.name, dir_fd=root)
        finally:
            os.close(root)

    def close(self) -> None:
        if self._bases_fd is not None:
            os.close(self._bases_fd)
        os.close(self._fd)  # and with it the lock


def _entries(fd: int) -> list[str]:
    return sorted(entry.name for entry in os.scandir(fd))


def _move_files(source: int, plans: int, *, replace: bool) -> list[str]:
    """Moves the plan files of ``source`` into ``plans`` (those it lacks, unless
    ``replace``); returns the names of the ones left behind."""
    left = []
    for name in _entries(source):
        st = os.stat(name, dir_fd=source, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or not is_plan_id(name.removesuffix(".txt")):
            left.append(name)
            continue
        if not replace:
            try:
                os.stat(name, dir_fd=plans, follow_symlinks=False)
                left.append(name)
                continue
            except FileNotFoundError:
                pass
        os.rename(name, name, src_dir_fd=source, dst_dir_fd=plans)
    return left


def _new_file(fd: int, plan_id: str, text: str) -> None:
    with os.fdopen(os.open(f"{plan_id}.txt", _NEW_FILE, 0o600, dir_fd=fd), "wb") as fh:
        fh.write(text.encode("utf-8"))


def _take_bases(fd: int, session_name: str, *, replace: bool) -> None:
    """Moves the bases waiting in the import folder ``fd`` to the session's ``.bases/`` (those
    it lacks, unless ``replace``), and removes their subfolder."""
    try:
        sub = os.open(planfiles.BASES_DIR, _DIR, dir_fd=fd)
    except FileNotFoundError:
        return
    try:
        with planfiles.open_folder(session_name, plans=False, create=True, sub=planfiles.BASES_DIR) as bases:
            _move_files(sub, bases, replace=replace)
        _remove_files(sub)
    finally:
        os.close(sub)
    os.rmdir(planfiles.BASES_DIR, dir_fd=fd)


def _drop_bases(fd: int) -> None:
    """Removes the bases waiting in the import folder ``fd`` (its import never committed)."""
    try:
        sub = os.open(planfiles.BASES_DIR, _DIR, dir_fd=fd)
    except FileNotFoundError:
        return
    try:
        _remove_files(sub)
    finally:
        os.close(sub)
    os.rmdir(planfiles.BASES_DIR, dir_fd=fd)


def _remove_files(fd: int) -> None:
    for name in _entries(fd):
        if stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            os.unlink(name, dir_fd=fd)


# --- what killed imports left --------------------------------------------------------------


@dataclass(frozen=True)
class ImportLeftover:
    """A folder aside that no running import holds."""

    name: str
    session_name: str
    files: int


def running_imports() -> set[str]:
    """The sessions an import is writing right now."""
    return {name for name, live in _folders() if live}


def import_leftovers() -> list[ImportLeftover]:
    found = []
    for name, live in _folders():
        if live:
            continue
        try:
            count = len(os.listdir(planfiles.sessions_root() / name))
        except OSError:
            count = 0
        found.append(ImportLeftover(name, _session_of(name), count))
    return found


def _session_of(name: str) -> str:
    return name[len(PREFIX) :].rpartition("-")[0]


def _folders() -> list[tuple[str, bool]]:
    """Every folder aside (a real folder named for a session) and whether an import holds it."""
    try:
        root = _root()
    except OSError:
        return []
    found = []
    try:
        for entry in os.scandir(root):
            if not entry.name.startswith(PREFIX) or not is_session_name(_session_of(entry.name)):
                continue
            if not entry.is_dir(follow_symlinks=False):
                continue
            try:
                fd = os.open(entry.name, _DIR, dir_fd=root)
            except OSError:
                continue
            try:
                if not HAS_FLOCK:
                    live = time.time() - os.fstat(fd).st_mtime < ABANDONED_AFTER
                else:
                    live = not _locked(fd)
            finally:
                os.close(fd)  # releases a lock taken just to test it
            found.append((entry.name, live))
    finally:
        os.close(root)
    return sorted(found)


def clear_import_leftover(leftover: ImportLeftover, *, imported: bool) -> dict:
    """Puts right what a killed import left. ``imported``: its session was committed, so its
    files go where they belong (those its plans folder lacks; the others, which the session's
    own work has since replaced, are kept aside in ``preserved/``). Otherwise the import never
    committed and its files are copies of a document the user still has: they are removed."""
    root = _root()
    try:
        fd = os.open(leftover.name, _DIR, dir_fd=root)
    except FileNotFoundError:
        os.close(root)
        return {}
    try:
        if not _locked(fd):
            return {}  # an import took it up meanwhile (it cannot: the names are random), or another repair
        done = {"moved": 0, "kept_aside": 0, "removed": 0}
        if imported:
            _take_bases(fd, leftover.session_name, replace=False)
        else:
            _drop_bases(fd)
        if imported:
            with planfiles.open_folder(leftover.session_name, create=True) as plans:
                before = len(_entries(fd))
                left = _move_files(fd, plans, replace=False)
                done["moved"] = before - len(left)
            for name in left:
                plan_id = name.removesuffix(".txt")
                if stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode) and is_plan_id(plan_id):
                    with open(os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd), "rb") as fh:
                        planfiles.preserve_bytes(leftover.session_name, plan_id, fh.read())
                    done["kept_aside"] += 1
        done["removed"] = len(_entries(fd))
        _remove_files(fd)
        os.rmdir(leftover.name, dir_fd=root)
        return done
    finally:
        os.close(fd)
        os.close(root)


def folder_path(name: str) -> Path:
    return planfiles.sessions_root() / name
