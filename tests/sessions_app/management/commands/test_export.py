"""`export` (sessions_app/management/commands/export.py): a session's JSON
document on stdout or into a new file, the same document the REST API serves; an unknown
session, a file that exists or cannot be written is refused and nothing is written. (What
the document holds, and a round trip between two databases, are in
tests/sessions_app/maintenance/export_import/test_export.py.)"""

from __future__ import annotations

import io
import json
import os
import stat

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.conftest import manage
from tests.sessions_app.api_fixtures import api, full_session, reader  # noqa: F401  (fixtures)
from tests.sessions_app.maintenance.export_import.documents import streamed_json

pytestmark = pytest.mark.django_db


def test_the_export_command_writes_what_the_api_serves(api, full_session, tmp_path):
    target = tmp_path / "out.json"
    call_command("export", full_session.name, output=str(target), stderr=io.StringIO())
    from_command = json.loads(target.read_text(encoding="utf-8"))
    from_api = streamed_json(api.get(f"/api/sessions/{full_session.name}/export/"))
    for document in (from_command, from_api):
        document.pop("exported_at")
    assert from_command == from_api
    # Every plan's text is in it: readable by its owner alone, whatever the umask.
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    with pytest.raises(CommandError, match="already exists"):
        call_command("export", full_session.name, output=str(target), stderr=io.StringIO())


def test_without_output_the_document_goes_to_stdout_alone(full_session, capsys):
    manage("export", full_session.name)
    written = capsys.readouterr()
    document = json.loads(written.out)
    assert document["session"]["name"] == full_session.name
    assert {plan["status"] for plan in document["plans"]} == {"completed", "discarded", "active", "queued"}


def test_a_written_file_is_named_on_stderr(full_session, tmp_path):
    target = tmp_path / "out.json"
    out, err = manage("export", full_session.name, output=str(target))
    assert out == "" and err == f"Exported session {full_session.name} to {target}.\n"
    assert json.loads(target.read_text(encoding="utf-8"))["session"]["name"] == full_session.name


def test_an_unknown_session_is_refused_by_its_category_and_writes_nothing(db, tmp_path, capsys):
    target = tmp_path / "out.json"
    with pytest.raises(CommandError, match="SESSION_NOT_FOUND: No session named 'quiet-green-heron' exists."):
        manage("export", "quiet-green-heron", output=str(target))
    assert not target.exists() and capsys.readouterr().out == ""


def test_a_file_that_cannot_be_written_is_refused(full_session, tmp_path):
    target = tmp_path / "no-such-folder" / "out.json"
    with pytest.raises(CommandError, match=f"Could not write {target}"):
        manage("export", full_session.name, output=str(target))
    assert not target.parent.exists()
