"""The import command: errors reported without a traceback, and stdin read as a
stream like a file."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session
from tests.sessions_app.api_fixtures import full_session  # noqa: F401  (fixture)
from tests.sessions_app.maintenance.export_import.documents import document, written  # noqa: F401  (fixture)
from tests.sessions_app.maintenance.export_import.documents import snapshot as session_snapshot

pytestmark = pytest.mark.django_db


def test_the_import_command_reports_errors_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(CommandError, match="document: cannot be read: the file is not JSON"):
        call_command("import", str(bad))
    bad.write_text(json.dumps({"format": "x"}), encoding="utf-8")
    with pytest.raises(CommandError, match="VALIDATION_ERROR"):
        call_command("import", str(bad))
    with pytest.raises(CommandError, match="Could not read"):
        call_command("import", str(tmp_path / "missing.json"))
    assert not Session.objects.exists()


def test_stdin_is_read_as_a_stream_too(document, tmp_path, monkeypatch):
    path = written(document, tmp_path / "d.json")
    with open(path, "rb") as fh:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(fh))
        out = io.StringIO()
        call_command("import", "-", stdout=out)
    assert out.getvalue().strip() == document["session"]["name"]
    assert session_snapshot(document["session"]["name"]) == document.before
    shutil.rmtree(tmp_path / "sessions" / document["session"]["name"])
