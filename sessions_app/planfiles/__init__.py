"""Plan files: a local, plain-text copy of each queued or active plan, for agents on this
machine to read and edit (docs/design.md, "Plan files").

Layout: ``{NINEPLAN_SESSIONS_PATH}/{session}/plans/{plan_id}.txt``, and beside each file its
base, ``{session}/.bases/{plan_id}.txt``: the text the file was written from, against which
an agent's edits are told apart from text others wrote since, kept as a record of the last
write so that a write killed before its commit is read as never having happened. The database holds the plan;
a file is only ever merged into it, never taken as the whole truth. NINEPLAN_PLAN_FILES=off
(the default of ``mcp --transport http``) keeps no files at all.

One module per idea: ``folders`` (where files live, and reaching them safely), ``file_io``
(reading, writing and removing one plan's file and its base), ``bases`` (what a base
records, and reading a file against it), ``displaced`` (what another process wrote in a
file after 9plan read it, taken on when the file is replaced or removed) and ``listing``
(what a session's plans folder holds). This package's face is the list below.
"""

from sessions_app.models import SECTION_TITLES
from sessions_app.planfiles.bases import unreadable as unreadable_base
from sessions_app.planfiles.displaced import Late
from sessions_app.planfiles.file_io import (
    delete_plan,
    ensure_session_dir,
    file_and_base,
    file_identity,
    preserve_bytes,
    preserve_file,
    probe,
    put_back,
    read_base,
    read_plan,
    read_plan_file,
    remove_file,
    remove_temp,
    untouched,
    write_base,
    write_file,
    write_plan,
)
from sessions_app.planfiles.folders import (
    BASES_DIR,
    IMPORT_FOLDER_PREFIX,
    LEFT_ALONE,
    MISSING,
    NOT_UTF8,
    OK,
    PRESERVED_DIR,
    REFUSED,
    TEMP_FILE_GRACE_SECONDS,
    TEMP_PREFIX,
    TOO_LARGE,
    FileRead,
    UnsafeFolder,
    base_path,
    enabled,
    kind_of,
    open_folder,
    plan_path,
    plans_dir,
    read_cap,
    session_dir,
    sessions_root,
    split_stem,
    stem_plan_id,
)
from sessions_app.planfiles.listing import Scan, list_plan_files, list_temp_files, scan
from sessions_app.planfiles.text import HEADINGS, ParsedFile, parse, render

__all__ = [
    "BASES_DIR",
    "HEADINGS",
    "IMPORT_FOLDER_PREFIX",
    "LEFT_ALONE",
    "MISSING",
    "NOT_UTF8",
    "OK",
    "PRESERVED_DIR",
    "REFUSED",
    "SECTION_TITLES",
    "TEMP_FILE_GRACE_SECONDS",
    "TEMP_PREFIX",
    "TOO_LARGE",
    "FileRead",
    "Late",
    "ParsedFile",
    "Scan",
    "UnsafeFolder",
    "base_path",
    "delete_plan",
    "enabled",
    "ensure_session_dir",
    "file_and_base",
    "file_identity",
    "kind_of",
    "list_plan_files",
    "list_temp_files",
    "open_folder",
    "parse",
    "plan_path",
    "plans_dir",
    "preserve_bytes",
    "preserve_file",
    "probe",
    "put_back",
    "read_base",
    "read_cap",
    "read_plan",
    "read_plan_file",
    "remove_file",
    "remove_temp",
    "render",
    "scan",
    "session_dir",
    "sessions_root",
    "split_stem",
    "stem_plan_id",
    "unreadable_base",
    "untouched",
    "write_base",
    "write_file",
    "write_plan",
]
