"""Export and import of a session (sessions_app/export_import/): over the REST API and through
manage.py, a round trip to an equal session, documents of every version, and a bad document
refused naming the field."""

from __future__ import annotations

import copy
import io
import json
import shutil
import subprocess

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app import export_import, invariants, planfiles, queries, revisions, services
from sessions_app.models import Event, Plan, Revision, Session
from tests.conftest import MANAGE, PYTHON, REPO, plan_fields
from tests.sessions_app.api_fixtures import (  # noqa: F401  (fixtures)
    api,
    fill_session,
    full_session,
    reader,
)

pytestmark = pytest.mark.django_db

PLAN_COLUMNS = [f.attname for f in Plan._meta.concrete_fields]
EVENT_COLUMNS = ["session_id", "plan_id", "kind", "actor", "detail", "created_at"]
REVISION_COLUMNS = ["plan_id", "number", "kind", "actor", "sections", "undo", "created_at"]


def snapshot(session_name: str) -> dict:
    return {
        "session": list(Session.objects.filter(name=session_name).values()),
        "plans": list(Plan.objects.filter(session_id=session_name).order_by("id").values(*PLAN_COLUMNS)),
        # Ids are re-drawn on import (see sessions_app/export_import/); order and every other column must hold.
        "events": list(Event.objects.filter(session_id=session_name).order_by("id").values_list(*EVENT_COLUMNS)),
        "revisions": list(
            Revision.objects.filter(plan__session_id=session_name).order_by("plan_id", "number").values_list(*REVISION_COLUMNS)
        ),
        "files": {
            pid: planfiles.read_plan(session_name, pid) for pid in planfiles.list_plan_files(session_name)
        },
    }


def streamed_json(response) -> dict:
    """The export is streamed: its body comes in pieces, not as one ``content``."""
    assert response.streaming and response["Content-Type"] == "application/json"
    return json.loads(b"".join(response.streaming_content))


def wipe(session_name: str, sessions_dir) -> None:
    Session.objects.all().delete()
    shutil.rmtree(sessions_dir / session_name)
    assert not Plan.objects.exists() and not Event.objects.exists()


@pytest.fixture
def edited_session(full_session, sessions_dir):
    """Plans in every state, and an agent's edit in the active plan's file not yet absorbed."""
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
    call_command("nineplan_import", str(dump), stdout=out)
    assert out.getvalue().strip() == name

    after = snapshot(name)
    assert after == before
    assert "An edit only the file has yet." in next(
        text for text in after["files"].values() if "An edit only" in text
    )
    # The restored session works: search finds its completed plan, the queue pulls on.
    assert queries.history_search("invoices", session_name=name)
    assert invariants.check_invariants(name).valid
    completed = services.plan_complete(session_name=name, outcome="finished after the import").plan
    assert "An edit only the file has yet." in completed.notes


def test_the_export_command_writes_what_the_api_serves(api, full_session, tmp_path):
    target = tmp_path / "out.json"
    call_command("nineplan_export", full_session.name, output=str(target), stderr=io.StringIO())
    from_command = json.loads(target.read_text(encoding="utf-8"))
    from_api = streamed_json(api.get(f"/api/sessions/{full_session.name}/export/"))
    for document in (from_command, from_api):
        document.pop("exported_at")
    assert from_command == from_api
    with pytest.raises(CommandError, match="already exists"):
        call_command("nineplan_export", full_session.name, output=str(target), stderr=io.StringIO())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_export_and_import_through_manage_py_into_a_second_database(
    full_session, sessions_dir, tmp_path, subprocess_env
):
    """A real round trip between two databases: export here, import into a fresh SQLite file."""
    name = full_session.name
    exported = subprocess.run(
        [PYTHON, MANAGE, "nineplan_export", name],
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
    imported = run("nineplan_import", "-", input=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == name
    again = run("nineplan_export", name)
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
    assert json.loads(text) == {**export_import.export_session(full_session.name), "exported_at": json.loads(text)["exported_at"]}


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


# --- the import refuses a bad document and changes nothing --------------------------------


@pytest.fixture
def document(full_session) -> dict:
    return export_import.export_session(full_session.name)


def _mutations():
    def plan(doc, status):
        return next(p for p in doc["plans"] if p["status"] == status)

    yield "format", lambda d: d.update(format="something-else")
    yield "version", lambda d: d.update(version=5)
    yield "version", lambda d: d.update(version=True)
    yield "document", lambda d: d.pop("events")
    yield "document", lambda d: d.update(extra=1)
    yield "session.name", lambda d: d["session"].update(name="../../etc")
    yield "session.created_at", lambda d: d["session"].update(created_at="yesterday")
    yield "session.created_at", lambda d: d["session"].update(created_at="2025-01-01T00:00:00")
    yield "session.project", lambda d: d["session"].update(project="Not A Project")
    yield "project", lambda d: d["session"].update(project="nowhere-here")
    yield "plans[0].id", lambda d: d["plans"][0].update(id="../x")
    yield "plans[1].id", lambda d: d["plans"][1].update(id=d["plans"][0]["id"])
    yield "plans[0].status", lambda d: d["plans"][0].update(status="Completed")
    yield "plans[0].sort_key", lambda d: d["plans"][0].update(sort_key=3)
    yield "plans[0].goal", lambda d: d["plans"][0].update(goal="   ")
    yield "plans[0].notes", lambda d: d["plans"][0].update(notes="a\x00b")
    yield "plans[0].version", lambda d: d["plans"][0].update(version=0)
    yield "plans[0].file_text", lambda d: d["plans"][0].update(file_text="# Goal\nx")
    yield "plans", lambda d: d.update(plans={})
    yield "events[0].kind", lambda d: d["events"][0].update(kind="hacked")
    yield "events[1].plan", lambda d: d["events"][1].update(plan="zzzzz")
    yield "events[0].detail", lambda d: d["events"][0].update(detail=[1])
    yield "events[1].id", lambda d: d["events"][1].update(id=d["events"][0]["id"])
    yield "session.review", lambda d: d["session"].update(review="sometimes")
    yield "plans[0].review", lambda d: d["plans"][0].update(review="yes")
    yield "plans[0].rejections", lambda d: d["plans"][0].update(rejections=-1)
    yield "plans[0].revisions[0].kind", lambda d: d["plans"][0]["revisions"][0].update(kind="hacked")
    yield "plans[0].revisions[0].undo", lambda d: d["plans"][0]["revisions"][0].update(undo={"notes": [-1, "x"]})
    yield "plans[0].revisions[0].sections", lambda d: d["plans"][0]["revisions"][0].update(sections=["../x"])
    yield "plans[0].revisions[0]", lambda d: d["plans"][0]["revisions"][0].pop("actor")

    def revisions_out_of_order(d):
        rows = next(p for p in d["plans"] if len(p["revisions"]) > 1)["revisions"]
        rows[1]["number"] = rows[0]["number"]

    yield "plans[2].revisions[1].number", revisions_out_of_order

    def two_active_for_one_worker(d):
        held = plan(d, "active")
        plan(d, "queued").update(
            status="active",
            sort_key=None,
            worker=held["worker"],
            claimed_at=held["claimed_at"],
            lease_expires_at=held["lease_expires_at"],
        )

    yield "plans[3].worker", two_active_for_one_worker

    def active_without_a_claim(d):
        plan(d, "queued").update(status="active", sort_key=None)

    yield "plans[3].worker", active_without_a_claim
    yield "plans[0].worker", lambda d: d["plans"][0].update(worker="no spaces allowed")
    yield "plans[0].depends_on[0]", lambda d: d["plans"][0].update(depends_on=["../x"])
    yield "plans", lambda d: d["plans"][0].update(depends_on=[d["plans"][0]["id"]])

    def cycle(d):
        d["plans"][0]["depends_on"] = [d["plans"][1]["id"]]
        d["plans"][1]["depends_on"] = [d["plans"][0]["id"]]

    yield "plans", cycle

    def same_position(d):
        queued = [p for p in d["plans"] if p["status"] == "queued"]
        queued[1]["sort_key"] = queued[0]["sort_key"]

    yield "plans[4].sort_key", same_position


@pytest.mark.parametrize("field, mutate", list(_mutations()))
def test_a_bad_document_is_refused_naming_the_field(document, full_session, sessions_dir, rejects, field, mutate):
    Session.objects.all().delete()
    shutil.rmtree(sessions_dir / full_session.name)
    bad = copy.deepcopy(document)
    mutate(bad)
    with rejects("VALIDATION_ERROR", field=field):
        export_import.session_import(bad)


def test_an_existing_session_or_plan_is_never_overwritten(document, full_session, rejects):
    with rejects("VALIDATION_ERROR", field="session.name", match="already exists"):
        export_import.session_import(document)
    renamed = copy.deepcopy(document)
    renamed["session"]["name"] = "brave-amber-otter" if full_session.name != "brave-amber-otter" else "calm-amber-otter"
    with rejects("VALIDATION_ERROR", field="plans", match="already exist"):
        export_import.session_import(renamed)


def test_plan_files_left_in_the_folder_are_never_overwritten(document, full_session, sessions_dir, rejects):
    Session.objects.all().delete()
    left = sorted(p.read_bytes() for p in (sessions_dir / full_session.name / "plans").iterdir())
    with rejects("VALIDATION_ERROR", field="session.name", match="already holds plan files") as refused:
        export_import.session_import(document)
    assert "no session of this database owns" in refused.value.message
    assert "Run `nineplan_repair --apply`, which keeps them in preserved/" in refused.value.message
    # The way out it names: the repair keeps them aside, and the import goes through.
    call_command("nineplan_repair", "--apply", stdout=io.StringIO())
    kept = sessions_dir / full_session.name / "preserved"
    assert sorted(p.read_bytes() for p in kept.iterdir()) == left
    assert export_import.session_import(document).name == full_session.name


def test_the_import_command_reports_errors_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(CommandError, match="document: cannot be read: the file is not JSON"):
        call_command("nineplan_import", str(bad))
    bad.write_text(json.dumps({"format": "x"}), encoding="utf-8")
    with pytest.raises(CommandError, match="VALIDATION_ERROR"):
        call_command("nineplan_import", str(bad))
    with pytest.raises(CommandError, match="Could not read"):
        call_command("nineplan_import", str(tmp_path / "missing.json"))
    assert not Session.objects.exists()


def test_a_version_1_document_with_queue_position_imports(session, make_plan):
    """Exports made before the sort key had its own name call it queue_position."""
    make_plan(session)
    make_plan(session)
    document = export_import.export_session(session.name)
    Session.objects.filter(name=session.name).delete()
    shutil.rmtree(planfiles.session_dir(session.name))
    document["version"] = 1
    for key in ("lease_seconds", "max_attempts", "project"):
        del document["session"][key]
    for row in document["plans"]:
        row["queue_position"] = row.pop("sort_key")
        for key in export_import.CLAIM_KEYS:
            del row[key]
    export_import.session_import(document)
    keys = list(Plan.objects.filter(session_id=session.name).order_by("sort_key").values_list("sort_key", flat=True))
    assert keys == sorted(row["queue_position"] for row in document["plans"]) and len(keys) == 2


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
    assert {p.id: [v.after for v in revisions.versions(p, limit=None)] for p in Plan.objects.filter(session_id=name)} == texts
    assert Session.objects.get(name=name).review == "required"
    assert invariants.check_invariants(name).valid
    assert [h.plan.id for h in queries.history_search("fixed", session_name=name)] == [approved.id]


def test_a_version_2_document_imports_with_an_import_revision_per_plan(session, make_plan):
    make_plan(session)
    document = export_import.export_session(session.name)
    Session.objects.filter(name=session.name).delete()
    shutil.rmtree(planfiles.session_dir(session.name))
    document["version"] = 2
    for key in ("review", "lease_seconds", "max_attempts", "project"):
        del document["session"][key]
    for row in document["plans"]:
        for key in ("review", "rejections", "revisions", *export_import.CLAIM_KEYS):
            del row[key]
    export_import.session_import(document, actor="operator")
    plan = Plan.objects.get(session_id=session.name)
    assert list(Revision.objects.filter(plan=plan).values_list("number", "kind", "actor")) == [(1, "import", "operator")]
    assert (plan.review, plan.rejections, Session.objects.get(name=session.name).review) == (False, 0, "none")


def test_a_version_3_document_without_review_keys_imports_as_never_reviewed(sessions_dir):
    """Version 3 documents written before the review gate carry claims and dependencies only."""
    session = services.session_create(task_description="Workers only", lease_seconds=90, max_attempts=5)
    first = services.plan_enqueue(session_name=session.name, **plan_fields(goal="First")).plan
    services.plan_enqueue_many(session_name=session.name, plans=[{**plan_fields(goal="Second"), "depends_on": [first.id]}])
    services.plan_pull(session_name=session.name, worker="w1")
    document = export_import.export_session(session.name)
    Session.objects.filter(name=session.name).delete()
    shutil.rmtree(planfiles.session_dir(session.name))
    document["version"] = 3
    del document["session"]["review"], document["session"]["project"]
    for row in document["plans"]:
        for key in ("review", "rejections", "revisions"):
            del row[key]
    export_import.session_import(document, actor="operator")
    imported = Session.objects.get(name=session.name)
    assert (imported.review, imported.lease_seconds, imported.max_attempts) == ("none", 90, 5)
    plans = {p.goal: p for p in Plan.objects.filter(session_id=session.name)}
    assert (plans["First"].status, plans["First"].worker) == ("active", "w1")
    assert list(plans["Second"].depends_on.values_list("id", flat=True)) == [first.id]
    for plan in plans.values():
        assert list(Revision.objects.filter(plan=plan).values_list("number", "kind")) == [(1, "import")]
    assert invariants.check_invariants(session.name).valid


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


def test_an_import_goes_into_the_project_named_or_the_documents(full_session):
    document = export_import.export_session(full_session.name)
    services.project_create(name="billing")
    document["session"]["project"] = "billing"

    def gone():
        Session.objects.filter(name=full_session.name).delete()
        shutil.rmtree(planfiles.session_dir(full_session.name))

    gone()
    assert export_import.session_import(document).project_id == "billing"
    gone()
    services.project_create(name="search")
    assert export_import.session_import(document, project="search").project_id == "search"


def test_an_import_needs_the_agent_role_in_its_project(full_session, rejects):
    from sessions_app import access

    document = export_import.export_session(full_session.name)
    Session.objects.filter(name=full_session.name).delete()
    shutil.rmtree(planfiles.session_dir(full_session.name))
    services.project_grant(project="default", username="rita", role="reviewer")
    rita = access.caller_for_user(get_user_model().objects.get(username="rita"))
    with access.acting_as(rita), rejects("PERMISSION_DENIED", field="project"):
        export_import.session_import(document)
