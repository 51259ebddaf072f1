"""What the export and import tests share: a session's rows and files to compare before and
after, its removal, and (``document``) the full session's export with the session gone, so
the document imports."""

from __future__ import annotations

import json
import shutil

import pytest

from sessions_app import planfiles
from sessions_app.maintenance import export_import
from sessions_app.models import Event, Plan, Revision, Session

PLAN_COLUMNS = [f.attname for f in Plan._meta.concrete_fields]
EVENT_COLUMNS = ["session_id", "plan_id", "kind", "actor", "detail", "created_at"]
REVISION_COLUMNS = ["plan_id", "number", "kind", "actor", "sections", "undo", "created_at"]


def snapshot(session_name: str) -> dict:
    return {
        "session": list(Session.objects.filter(name=session_name).values()),
        "plans": list(Plan.objects.filter(session_id=session_name).order_by("id").values(*PLAN_COLUMNS)),
        # Ids are re-drawn on import (see sessions_app/maintenance/export_import/); order and every other column must hold.
        "events": list(Event.objects.filter(session_id=session_name).order_by("id").values_list(*EVENT_COLUMNS)),
        "revisions": list(
            Revision.objects.filter(plan__session_id=session_name)
            .order_by("plan_id", "number")
            .values_list(*REVISION_COLUMNS)
        ),
        "files": {pid: planfiles.read_plan(session_name, pid) for pid in planfiles.list_plan_files(session_name)},
    }


def wipe(session_name: str, sessions_dir) -> None:
    Session.objects.all().delete()
    shutil.rmtree(sessions_dir / session_name)
    assert not Plan.objects.exists() and not Event.objects.exists()


class Exported(dict):
    """An export document, and (``before``) the session it was exported from."""

    before: dict


@pytest.fixture
def document(full_session, sessions_dir) -> Exported:
    """The full session's export; the session itself is gone, so the document imports."""
    exported = Exported(export_import.export_session(full_session.name))
    exported.before = snapshot(full_session.name)
    wipe(full_session.name, sessions_dir)
    return exported


def written(document: dict, path, **dump) -> str:
    path.write_text(json.dumps(document, **dump), encoding="utf-8")
    return str(path)


def open_plan(document: dict) -> dict:
    return next(p for p in document["plans"] if p["status"] == "queued")


def assert_nothing_imported(sessions_dir) -> None:
    assert not Session.objects.exists() and not Plan.objects.exists() and not Event.objects.exists()
    assert sorted(p.name for p in sessions_dir.iterdir()) == []


def streamed_json(response) -> dict:
    """The export is streamed: its body comes in pieces, not as one ``content``."""
    assert response.streaming and response["Content-Type"] == "application/json"
    return json.loads(b"".join(response.streaming_content))
