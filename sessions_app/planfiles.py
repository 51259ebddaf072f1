"""Plan files: the agent's plain-text working copy of a queued or active plan.

Layout: ``{NINEPLAN_SESSIONS_PATH}/{session}/plans/{plan_id}.txt``. The database is the
source of truth for structure; the file is where an agent reads the plan and may edit it
(typically its Notes), so the services read it back before a plan leaves the queue.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

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


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that readers see the old file or the new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".txt", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_plan(session_name: str, plan_id: str, sections: dict[str, str]) -> Path:
    path = plan_path(session_name, plan_id)
    try:
        write_atomic(path, render(sections))
    except OSError as exc:
        log.error("plan file write failed", extra={"session": session_name, "plan": plan_id, "error": str(exc)})
        raise FileSystemFailed(f"Could not write the plan file {path}: {exc.strerror or exc}.") from exc
    return path


def read_plan(session_name: str, plan_id: str) -> str | None:
    """The file's text, or None when it is missing or unreadable (the database copy stands)."""
    path = plan_path(session_name, plan_id)
    try:
        # newline="" keeps a "\r" in the text as it was written, not turned into "\n".
        with path.open(encoding="utf-8", errors="replace", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeError) as exc:
        log.warning("plan file unreadable", extra={"session": session_name, "plan": plan_id, "error": str(exc)})
        return None


def delete_plan(session_name: str, plan_id: str) -> None:
    # Called after the database has committed; a file left behind by a failure here is
    # reported by 9plan_admin_validate and cleaned up by the repair, never fatal.
    try:
        plan_path(session_name, plan_id).unlink(missing_ok=True)
    except OSError as exc:
        log.warning("plan file delete failed", extra={"session": session_name, "plan": plan_id, "error": str(exc)})


def list_plan_files(session_name: str) -> list[str]:
    """Plan ids that have a file in the session's plans folder (temp files excluded)."""
    try:
        names = os.listdir(plans_dir(session_name))
    except (FileNotFoundError, NotADirectoryError):
        return []
    ids = []
    for name in names:
        stem, dot, ext = name.rpartition(".")
        if dot and ext == "txt" and is_plan_id(stem):
            ids.append(stem)
    return sorted(ids)


def list_temp_files(session_name: str, *, min_age: float = 0) -> list[Path]:
    """Temporary files in the session's plans folder, those at least ``min_age`` seconds old."""
    now = time.time()
    found = []
    try:
        candidates = [p for p in plans_dir(session_name).iterdir() if p.name.startswith(TEMP_PREFIX)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    for path in candidates:
        try:
            age = now - path.stat().st_mtime
        except FileNotFoundError:
            continue  # its write finished (renamed) or was cleaned up meanwhile
        if age >= min_age:
            found.append(path)
    return sorted(found)


def ensure_session_dir(session_name: str) -> Path:
    path = plans_dir(session_name)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileSystemFailed(f"Could not create the session folder {path}: {exc.strerror or exc}.") from exc
    return session_dir(session_name)
