"""What a session's plans folder holds, from its entries' types alone."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from sessions_app.planfiles.folders import (
    TEMP_PREFIX,
    UnsafeFolder,
    describe_entry,
    enabled,
    open_folder,
    plans_dir,
    split_stem,
)


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
    if not enabled():
        return found
    now = time.time()
    try:
        with open_folder(session_name) as folder:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    is_temp = name.startswith(TEMP_PREFIX)
                    stem, dot, ext = name.rpartition(".")
                    is_plan = dot and ext == "txt" and split_stem(stem) is not None
                    if not (is_temp or is_plan):
                        continue
                    try:
                        # The entry's type comes with the listing; a regular file is stat'ed for
                        # its links (a hard link is refused like a symbolic one). No file is opened.
                        plain = entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_nlink == 1
                        what = "" if plain else describe_entry(name, folder)
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
