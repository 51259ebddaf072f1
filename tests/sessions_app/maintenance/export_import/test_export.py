"""The export of a session (sessions_app/maintenance/export_import/export.py): over the REST API and
through manage.py, streamed, and round trips through an import to an equal session. What
the import checks and refuses is in test_document.py, test_restore.py and test_staging.py."""

from __future__ import annotations

import io
import json
import subprocess

import pytest
from django.core.management import call_command

from sessions_app import planfiles, services
from sessions_app.maintenance import export_import, invariants
from sessions_app.models import Event, Plan, Revision, Session
from sessions_app.reads import queries
from sessions_app.store import revisions
from tests.conftest import MANAGE, PYTHON, REPO, plan_fields
from tests.sessions_app.api_fixtures import (  # noqa: F401  (fixtures)
    api,
    fill_session,
    full_session,
    reader,
)
from tests.sessions_app.maintenance.export_import.documents import snapshot, streamed_json, wipe

pytestmark = pytest.mark.django_db


@pytest.fixture
def edited_session(full_session, sessions_dir):
    """Plans in every state, and an agent's edit in the active plan's file not yet taken_in."""
    active = Plan.objects.get(session=full_session, status="active")
    path = planfiles.plan_path(full_session.name, active.id)
    path.write_text(path.read_text() + "\nAn edit only the file has yet.\n", encoding="utf-8")
    return full_session


def test_export_over_the_api_then_import_into_an_empty_database_restores_everything(
    api, edited_session, sessions_dir, tmp_path
):
    name = edited_session.name
    before = snapshot(name)
    response = api.get(f"/api/sessions/{name}/export/")
    assert response.status_code == 200
    document = streamed_json(response)
    assert document["format"] == "9plan-session-export" and document["version"] == 4
    assert document["session"]["project"] == "default"
    assert {p["status"] for p in document["plans"]} == {"queued", "active", "completed", "discarded"}
    assert len(document["events"]) == Event.objects.filter(session_id=name).count()
    dump = tmp_path / "export.json"
    dump.write_text(json.dumps(document), encoding="utf-8")

    wipe(name, sessions_dir)
    out = io.StringIO()
    call_command("import", str(dump), stdout=out)
    assert out.getvalue().strip() == name

    after = snapshot(name)
    assert after == before
    assert "An edit only the file has yet." in next(text for text in after["files"].values() if "An edit only" in text)
    # The restored session works: search finds its completed plan, the queue pulls on.
    assert queries.history_search("invoices", session_name=name)
    assert invariants.check_invariants(name).valid
    completed = services.plan_complete(session_name=name, outcome="finished after the import").plan
    assert "An edit only the file has yet." in completed.notes


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_export_and_import_through_manage_py_into_a_second_database(
    full_session, sessions_dir, tmp_path, subprocess_env
):
    """A real round trip between two databases: export here, import into a fresh SQLite file."""
    name = full_session.name
    exported = subprocess.run(
        [PYTHON, MANAGE, "export", name],
        cwd=REPO,
        env={**subprocess_env, "DJANGO_SETTINGS_MODULE": "nineplan.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert exported.returncode == 0, exported.stderr
    other_dir = tmp_path / "elsewhere" / "sessions"
    other_dir.mkdir(parents=True)
    env = {
        **subprocess_env,
        "DJANGO_SETTINGS_MODULE": "nineplan.settings",
        "NINEPLAN_SESSIONS_PATH": str(other_dir),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'elsewhere' / 'second.sqlite3'}",
    }
    run = lambda *args, **kw: subprocess.run(  # noqa: E731
        [PYTHON, MANAGE, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, **kw
    )
    assert run("migrate", "--noinput", "-v0").returncode == 0
    imported = run("import", "-", input=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == name
    again = run("export", name)
    first, second = json.loads(exported.stdout), json.loads(again.stdout)
    for document in (first, second):
        document.pop("exported_at")
        for event in document["events"]:
            event.pop("id")
    assert first == second
    for plan in Plan.objects.filter(session=full_session, status__in=["queued", "active"]):
        restored = other_dir / name / "plans" / f"{plan.id}.txt"
        assert restored.read_text(encoding="utf-8") == planfiles.read_plan(name, plan.id)


# --- the export is streamed ----------------------------------------------------------------


def test_the_export_comes_in_pieces_one_plan_or_event_a_line(full_session):
    pieces = list(export_import.export_stream(full_session.name))
    plans = Plan.objects.filter(session=full_session).count()
    events = Event.objects.filter(session=full_session).count()
    # Nothing holds the whole document: each plan and each event is a piece of its own.
    assert len(pieces) >= plans + events
    assert max(len(piece) for piece in pieces) < 4096
    text = "".join(pieces)
    assert text.count("\n  {") == plans + events
    assert json.loads(text) == {
        **export_import.export_session(full_session.name),
        "exported_at": json.loads(text)["exported_at"],
    }


def test_a_session_without_plans_exports_and_imports(session, sessions_dir):
    document = export_import.export_session(session.name)
    assert document["plans"] == [] and document["session"]["name"] == session.name
    wipe(session.name, sessions_dir)
    assert export_import.session_import(document).name == session.name


def test_work_done_while_the_export_runs_never_breaks_the_document(full_session, sessions_dir):
    """Events written after the export began are left out, so every event's plan is there."""
    events_before = Event.objects.filter(session=full_session).count()
    pieces = export_import.export_stream(full_session.name)
    late = services.plan_enqueue(session_name=full_session.name, **plan_fields(goal="Added during the export")).plan
    document = json.loads("".join(pieces))
    assert len(document["events"]) == events_before
    assert all(e["plan"] is None or e["plan"] in {p["id"] for p in document["plans"]} for e in document["events"])
    assert late.id in {p["id"] for p in document["plans"]}
    wipe(full_session.name, sessions_dir)
    assert export_import.session_import(document).name == full_session.name
    assert Plan.objects.filter(id=late.id, status="queued").exists()


def test_the_rest_export_of_a_missing_session_is_a_404_problem(api):
    response = api.get("/api/sessions/calm-green-heron/export/")
    assert response.status_code == 404
    assert response.json()["category"] == "SESSION_NOT_FOUND"


def test_the_rest_export_is_an_attachment_no_cache_keeps(api, full_session):
    response = api.get(f"/api/sessions/{full_session.name}/export/")
    assert response.streaming
    assert response["Content-Disposition"] == f'attachment; filename="{full_session.name}.json"'
    assert "no-store" in response["Cache-Control"]
    b"".join(response.streaming_content)


def test_a_reviewed_revised_session_round_trips_to_an_equal_one(sessions_dir):
    session = services.session_create(task_description="Reviewed", review="required")
    name = session.name
    for goal in ("Approved one", "Rejected one", "Waiting one"):
        services.plan_enqueue(session_name=name, **plan_fields(goal=goal))
    services.plan_pull(session_name=name)
    services.plan_note(session_name=name, text="Found the cause")
    approved = services.plan_complete(session_name=name, outcome="Fixed").plan
    services.plan_review(session_name=name, plan_id=approved.id, decision="approve", actor="user:ada")
    services.plan_pull(session_name=name)
    rejected = services.plan_complete(session_name=name, outcome="Half").plan
    services.plan_review(session_name=name, plan_id=rejected.id, decision="reject", notes="Finish it", actor="user:ada")
    services.plan_pull(session_name=name)
    services.plan_note(session_name=name, text="second try")
    services.plan_defer(session_name=name, reason="waiting on review of the other")
    services.plan_pull(session_name=name)
    services.plan_complete(session_name=name, outcome="Waiting")
    before = snapshot(name)
    texts = {p.id: [v.after for v in revisions.versions(p, limit=None)] for p in Plan.objects.filter(session_id=name)}
    document = export_import.export_session(name)
    assert sum(len(p["revisions"]) for p in document["plans"]) == Revision.objects.count() > 3

    wipe(name, sessions_dir)
    export_import.session_import(json.loads(json.dumps(document)))

    assert snapshot(name) == before
    assert {
        p.id: [v.after for v in revisions.versions(p, limit=None)] for p in Plan.objects.filter(session_id=name)
    } == texts
    assert Session.objects.get(name=name).review == "required"
    assert invariants.check_invariants(name).valid
    assert [h.plan.id for h in queries.history_search("fixed", session_name=name)] == [approved.id]


def test_the_export_gives_each_plan_of_a_batch_its_own_revisions(session):
    # A batch shares one creation time: the export must not rely on the order of their ids.
    services.plan_enqueue_many(session_name=session.name, plans=[plan_fields(goal=f"Batch {i}") for i in range(6)])
    for _ in range(6):
        services.plan_pull(session_name=session.name)
        services.plan_note(session_name=session.name, text="noted")
        services.plan_defer(session_name=session.name, reason="later")
    document = export_import.export_session(session.name)
    for row in document["plans"]:
        stored = list(Revision.objects.filter(plan_id=row["id"]).order_by("number").values_list("number", "kind"))
        assert [(r["number"], r["kind"]) for r in row["revisions"]] == stored == [(1, "add"), (2, "note"), (3, "defer")]
