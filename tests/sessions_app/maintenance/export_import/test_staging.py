"""Where an import stages its plan files (sessions_app/maintenance/export_import/staging.py): files left
in the session's folder are never overwritten, and the repair the refusal names keeps them
aside so the import goes through."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from sessions_app.maintenance import export_import
from sessions_app.models import Session
from tests.sessions_app.api_fixtures import full_session  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def test_plan_files_left_in_the_folder_are_never_overwritten(full_session, sessions_dir, rejects):
    document = export_import.export_session(full_session.name)
    Session.objects.all().delete()
    left = sorted(p.read_bytes() for p in (sessions_dir / full_session.name / "plans").iterdir())
    with rejects("VALIDATION_ERROR", field="session.name", match="already holds plan files") as refused:
        export_import.session_import(document)
    assert "no session of this database owns" in refused.value.message
    assert "Run `9plan repair --apply`, which keeps them in preserved/" in refused.value.message
    # The way out it names: the repair keeps them aside, and the import goes through.
    call_command("repair", "--apply", stdout=io.StringIO())
    kept = sessions_dir / full_session.name / "preserved"
    assert sorted(p.read_bytes() for p in kept.iterdir()) == left
    assert export_import.session_import(document).name == full_session.name
