"""The import (sessions_app/maintenance/export_import/restore.py): it never overwrites a session or a
plan, reads the document's keys in any order and a huge plan key by key, imports nothing
from a file changed while it is read, holds a plan to its number of dependents and the rows
of one write to a bound, and puts the session into the project named, for a caller with
the agent role there."""

from __future__ import annotations

import copy
import io
import shutil

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from sessions_app import access, planfiles, services
from sessions_app.maintenance import export_import, invariants
from sessions_app.maintenance.export_import import reader, restore
from sessions_app.maintenance.progress import Progress
from sessions_app.models import Plan, Session
from tests.sessions_app.api_fixtures import full_session  # noqa: F401  (fixture)
from tests.sessions_app.maintenance.export_import.documents import (  # noqa: F401  (fixture)
    assert_nothing_imported,
    document,
    open_plan,
    written,
)
from tests.sessions_app.maintenance.export_import.documents import snapshot as session_snapshot

pytestmark = pytest.mark.django_db


def test_an_existing_session_or_plan_is_never_overwritten(full_session, rejects):
    document = export_import.export_session(full_session.name)
    with rejects("VALIDATION_ERROR", field="session.name", match="already exists"):
        export_import.session_import(document)
    renamed = copy.deepcopy(document)
    renamed["session"]["name"] = "brave-amber-otter" if full_session.name != "brave-amber-otter" else "calm-amber-otter"
    with rejects("VALIDATION_ERROR", field="plans", match="already exist"):
        export_import.session_import(renamed)


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
    document = export_import.export_session(full_session.name)
    Session.objects.filter(name=full_session.name).delete()
    shutil.rmtree(planfiles.session_dir(full_session.name))
    services.project_grant(project="default", username="rita", role="reviewer")
    rita = access.caller_for_user(get_user_model().objects.get(username="rita"))
    with access.acting_as(rita), rejects("PERMISSION_DENIED", field="project"):
        export_import.session_import(document)


def test_the_keys_may_come_in_any_order(document, tmp_path):
    # Sorted, the header comes after the plans, and the events before them.
    call_command("import", written(document, tmp_path / "d.json", sort_keys=True), stdout=io.StringIO())
    assert session_snapshot(document["session"]["name"]) == document.before
    assert invariants.check_invariants(document["session"]["name"]).valid


def test_a_plan_too_long_to_decode_whole_is_read_key_by_key(document, tmp_path, monkeypatch):
    monkeypatch.setattr(restore, "WHOLE_PLAN_CHARS", 200)
    call_command("import", written(document, tmp_path / "d.json"), stdout=io.StringIO())
    assert session_snapshot(document["session"]["name"]) == document.before


def test_an_error_in_a_plan_read_key_by_key_names_its_revision(document, rejects, monkeypatch):
    monkeypatch.setattr(restore, "WHOLE_PLAN_CHARS", 200)
    plan = next(p for p in document["plans"] if len(p["revisions"]) > 1)
    plan["revisions"][1]["kind"] = "hacked"
    with rejects("VALIDATION_ERROR", field=f"plans[{document['plans'].index(plan)}].revisions[1].kind"):
        export_import.session_import(document)


def test_a_file_changed_between_the_two_reads_imports_nothing(document, tmp_path, sessions_dir):
    path = tmp_path / "d.json"
    written(document, path)

    class ChangesTheFile(Progress):
        def stage(self, label, total=None):
            if label == "Writing plans":
                # Past the first chunk the writing read has taken in: still the same
                # document, but not the same file.
                with open(path, "r+b") as fh:
                    fh.seek(-2, 2)
                    fh.write(b"\t\n")
            super().stage(label, total)

    path.write_text(path.read_text() + " " * (2 * reader.CHUNK) + "\n", encoding="utf-8")
    with open(path, "rb") as fh, pytest.raises(Exception, match="the file changed while it was imported"):
        export_import.import_file(fh, progress=ChangesTheFile())
    assert_nothing_imported(sessions_dir)


@pytest.mark.parametrize("extra", [0, 1], ids=["at the cap", "one over"])
def test_an_import_holds_a_plan_to_the_same_number_of_dependents(document, rejects, sessions_dir, extra):
    from sessions_app.models import MAX_DEPENDENTS, PlanDependency

    base = open_plan(document)
    dropped = next(p for p in document["plans"] if p["status"] == "discarded")
    already = sum(base["id"] in p.get("depends_on", []) for p in document["plans"])
    for i in range(MAX_DEPENDENTS - already + extra):
        document["plans"].append({**dropped, "id": f"d{i:04d}", "depends_on": [base["id"]], "file_text": None})
    if extra:
        with rejects("VALIDATION_ERROR", field="plans", match=f"plan {base['id']} has more than {MAX_DEPENDENTS}"):
            export_import.session_import(document)
        return
    export_import.session_import(document)
    assert PlanDependency.objects.filter(depends_on_id=base["id"]).count() == MAX_DEPENDENTS


def test_the_rows_held_for_one_write_are_bounded_by_their_text_as_well_as_their_count(document, monkeypatch):
    # A thousand plans near the plan limit would be a quarter of a gigabyte in one batch.
    monkeypatch.setattr(restore, "BATCH_CHARS", 50_000)
    template = open_plan(document)
    for i in range(30):
        document["plans"].append(
            {**template, "id": f"b{i:04d}", "sort_key": 10_000 + i, "context": f"{i} " + "c" * 20_000,
             "file_text": None, "revisions": []}
        )  # fmt: skip
    held, create = [], Plan.objects.bulk_create

    def counted(plans, *args, **kwargs):
        held.append(sum(len(plan.context) for plan in plans))
        return create(plans, *args, **kwargs)

    monkeypatch.setattr(Plan.objects, "bulk_create", counted)
    name = export_import.session_import(document).name
    assert len(held) > 1 and max(held) <= 50_000 + 20_010
    assert Plan.objects.filter(session_id=name, id__in=[f"b{i:04d}" for i in range(30)]).count() == 30
    assert Plan.objects.get(id="b0029").context == "29 " + "c" * 20_000
    open_plans = sum(1 for plan in document["plans"] if plan["status"] in ("queued", "active"))
    assert len(planfiles.list_plan_files(name)) == open_plans
    assert invariants.check_invariants(name).valid


def test_an_import_writes_each_files_base_so_a_later_edit_never_overwrites_newer_text(full_session):
    from django.test import override_settings

    from sessions_app.planfiles import text as plan_text

    document = export_import.export_session(full_session.name)
    Session.objects.filter(name=full_session.name).delete()
    shutil.rmtree(planfiles.session_dir(full_session.name))
    export_import.session_import(document)
    open_plans = list(Plan.objects.filter(session_id=full_session.name, status__in=["queued", "active"]))
    assert open_plans
    for plan in open_plans:
        assert planfiles.read_base(full_session.name, plan.file_stem) == planfiles.render(plan.sections())
    active = next(p for p in open_plans if p.status == "active")
    path = planfiles.plan_path(full_session.name, active.file_stem)
    # A server with files off writes the plan; then the agent edits its imported file.
    with override_settings(NINEPLAN_PLAN_FILES="off"):
        services.plan_note(session_name=full_session.name, worker=active.worker, text="Written with files off")
    text = path.read_text()
    path.write_text(text.replace("# Goal\n", "# Goal\nSharpened by the agent: ", 1))
    services.plan_note(session_name=full_session.name, worker=active.worker, text="next")
    plan = Plan.objects.get(id=active.id)
    assert "Written with files off" in plan.notes and plan_text.BOTH_KEPT not in plan.notes
    assert plan.goal.startswith("Sharpened by the agent: ")
    assert invariants.check_invariants(full_session.name).valid
