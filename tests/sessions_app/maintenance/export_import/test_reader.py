"""The streaming reader of an import (sessions_app/maintenance/export_import/reader.py): bounds a hostile
document cannot pass (nesting, numbers, text), a file that is not one JSON document, and
chunk boundaries anywhere reading the same document. What the import does with what it
reads is in test_restore.py and test_document.py."""

from __future__ import annotations

import io
import json
import subprocess

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.maintenance.export_import import reader
from tests.conftest import MANAGE, PYTHON, REPO
from tests.sessions_app.api_fixtures import full_session  # noqa: F401  (fixture)
from tests.sessions_app.maintenance.export_import.documents import assert_nothing_imported, document, written  # noqa: F401  (fixture)
from tests.sessions_app.maintenance.export_import.documents import snapshot as session_snapshot

pytestmark = pytest.mark.django_db


# --- bounds: a clear refusal, never a traceback --------------------------------------------

DEEP = 200_000


def deep_detail(document: dict) -> None:
    document["events"][0]["detail"] = {"x": "PLACEHOLDER"}


def long_number(document: dict) -> None:
    document["plans"][0]["version"] = "PLACEHOLDER"


HOSTILE = {
    # (how the document is made hostile, the text put in place of the placeholder, field, message)
    "nested 200,000 deep": (
        deep_detail,
        "[" * DEEP + "]" * DEEP,
        "events[0]",
        "nests arrays or objects more than 32 deep",
    ),
    "a number of 100,001 digits": (long_number, "1" * 100_001, "plans[0]", "holds a number of more than 20 digits"),
    "an infinite number": (long_number, "1e999999", "plans[0]", "holds the number 1e999999, too large to hold"),
    "NaN": (long_number, "NaN", "plans[0]", "holds NaN, which is not a JSON number"),
}


def hostile_file(document: dict, tmp_path, case: str) -> str:
    make, replacement, _, _ = HOSTILE[case]
    make(document)
    path = tmp_path / "hostile.json"
    text = json.dumps(document)
    path.write_text(text.replace('"PLACEHOLDER"', replacement, 1), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_document_is_refused_naming_the_piece_and_writes_nothing(document, tmp_path, sessions_dir, case):
    _, _, field, message = HOSTILE[case]
    with pytest.raises(CommandError) as refused:
        call_command("import", hostile_file(document, tmp_path, case), stdout=io.StringIO())
    assert str(refused.value).startswith(f"VALIDATION_ERROR: {field}: cannot be read: the file ")
    assert message in str(refused.value) and "nothing was imported" in str(refused.value)
    assert_nothing_imported(sessions_dir)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", ["nested 200,000 deep", "a number of 100,001 digits"])
def test_the_import_command_refuses_a_hostile_document_like_any_other(
    document, tmp_path, subprocess_env, sessions_dir, case
):
    done = subprocess.run(
        [PYTHON, MANAGE, "import", hostile_file(document, tmp_path, case)],
        cwd=REPO,
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Exit status 1 and one line, as for every other refusal (an unknown key, say).
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr and "ValueError" not in done.stderr
    assert done.stderr.startswith("CommandError: VALIDATION_ERROR: ") and HOSTILE[case][3] in done.stderr
    assert_nothing_imported(sessions_dir)


@pytest.mark.slow
def test_on_a_fresh_data_directory_the_refusal_is_still_the_one_line_on_stderr(document, tmp_path):
    from tests.sessions_app.management.test_person_command import run

    # At the default log level, where making the tables logs a line at info.
    done = run(tmp_path / "data", "import", hostile_file(document, tmp_path, "nested 200,000 deep"),
               log_level="info")  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("CommandError: VALIDATION_ERROR: events[0]: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON: expected a key in double quotes (line 1, column 2)"),
        ('{"format": 1, "format": 2}', "gives the key 'format' twice in one object"),
        ("\ufeff{}", "starts with a byte order mark (U+FEFF); save it as UTF-8 without one"),
        ("", "is empty: an export is one JSON object"),
        ("  \n", "is empty: an export is one JSON object"),
        ("[1, 2]", "must be a JSON object"),
        (b"{\xff}", "is not UTF-8 text (at byte 1)"),
    ],
)
def test_a_file_that_is_not_one_json_document_is_refused(tmp_path, sessions_dir, text, message):
    path = tmp_path / "bad.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(CommandError, match="VALIDATION_ERROR: document: ") as refused:
        call_command("import", str(path), stdout=io.StringIO())
    assert message in str(refused.value)
    assert_nothing_imported(sessions_dir)


def test_text_after_the_document_is_refused(document, tmp_path, sessions_dir):
    path = tmp_path / "d.json"
    written(document, path)
    path.write_text(path.read_text(encoding="utf-8") + '\n{"format": "again"}\n', encoding="utf-8")
    with pytest.raises(CommandError, match="document: cannot be read: the file is not JSON: more text follows"):
        call_command("import", str(path), stdout=io.StringIO())
    assert_nothing_imported(sessions_dir)


def test_chunk_boundaries_anywhere_read_the_same_document(document, tmp_path, monkeypatch):
    # Seven bytes at a time: every string, number, key and escape is cut somewhere.
    monkeypatch.setattr(reader, "CHUNK", 7)
    call_command("import", written(document, tmp_path / "d.json", indent=1), stdout=io.StringIO())
    assert session_snapshot(document["session"]["name"]) == document.before
