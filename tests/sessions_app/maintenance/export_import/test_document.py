"""What an import checks of the document (sessions_app/maintenance/export_import/document.py): a bad
field refused naming it, plan text from the file held to the limits every other path holds
it to, and documents of every earlier version read as they were written."""

from __future__ import annotations

import copy
import shutil

import pytest

from sessions_app import planfiles, services
from sessions_app.maintenance import export_import, invariants
from sessions_app.models import Plan, Revision, Session
from tests.conftest import plan_fields
from tests.sessions_app.api_fixtures import full_session  # noqa: F401  (fixture)
from tests.sessions_app.maintenance.export_import.documents import document, open_plan  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


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
def test_a_bad_document_is_refused_naming_the_field(document, rejects, field, mutate):
    bad = copy.deepcopy(document)
    mutate(bad)
    with rejects("VALIDATION_ERROR", field=field):
        export_import.session_import(bad)


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
    assert list(Revision.objects.filter(plan=plan).values_list("number", "kind", "actor")) == [
        (1, "import", "operator")
    ]
    assert (plan.review, plan.rejections, Session.objects.get(name=session.name).review) == (False, 0, "none")


def test_a_version_3_document_without_review_keys_imports_as_never_reviewed(sessions_dir):
    """Version 3 documents written before the review gate carry claims and dependencies only."""
    session = services.session_create(task_description="Workers only", lease_seconds=90, max_attempts=5)
    first = services.plan_enqueue(session_name=session.name, **plan_fields(goal="First")).plan
    services.plan_enqueue_many(
        session_name=session.name, plans=[{**plan_fields(goal="Second"), "depends_on": [first.id]}]
    )
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


@pytest.mark.parametrize(
    ("size", "said"),
    [
        # Longer than any plan's text could be, escaped: the reader stops at its bound.
        (15 * 1024 * 1024, "holds a value of more than 1,638,400 characters"),
        # Within that, but more bytes than 9plan reads of a plan file.
        (1_100_000, "'s file is 1,100,"),
    ],
    ids=["15 MB", "1.1 MB"],
)
def test_a_file_text_over_what_a_plan_file_may_hold_is_refused_naming_the_plan(document, rejects, size, said):
    plan = open_plan(document)
    plan["file_text"] = planfiles.render({"goal": "Kept", "notes": "x" * size})
    at = f"plans[{document['plans'].index(plan)}].file_text"
    with rejects("VALIDATION_ERROR", field=at, match=said) as refused:
        export_import.session_import(document)
    assert f"plan {plan['id']}" in refused.value.message


def test_a_file_text_section_over_the_field_limit_is_refused(document, rejects, settings):
    plan = open_plan(document)
    settings.NINEPLAN_MAX_FIELD_CHARS = 1000
    plan["file_text"] = planfiles.render({**{k: plan[k] for k in ("goal", "context")}, "approach": "a" * 1001})
    at = f"plans[{document['plans'].index(plan)}].file_text"
    with rejects("VALIDATION_ERROR", field=at, match=f"plan {plan['id']}'s file has a Approach of 1,001 characters"):
        export_import.session_import(document)


def test_a_file_text_whose_plan_would_be_over_the_plan_limit_is_refused(document, rejects, settings):
    plan = open_plan(document)
    settings.NINEPLAN_MAX_PLAN_CHARS = 2000
    # Every section within its limit, but text above the first heading joins the Notes.
    plan["file_text"] = "p" * 1700 + "\n" + planfiles.render({"goal": plan["goal"], "notes": "n" * 400})
    at = f"plans[{document['plans'].index(plan)}].file_text"
    with rejects("VALIDATION_ERROR", field=at, match="holds a plan of"):
        export_import.session_import(document)


def test_a_file_text_within_the_limits_is_restored_and_taken_in_by_the_next_note(document, sessions_dir):
    active = next(p for p in document["plans"] if p["status"] == "active")
    active["file_text"] = planfiles.render(
        {**{k: active[k] for k in ("context", "goal")}, "notes": "edited in the file"}
    )
    export_import.session_import(document)

    noted = services.plan_note(session_name=document["session"]["name"], text="and noted").plan
    assert noted.notes == "edited in the file\n\nand noted"


def test_a_revision_whose_earlier_text_is_over_the_field_limit_is_refused(document, rejects, settings):
    settings.NINEPLAN_MAX_FIELD_CHARS = 1000
    plan = next(p for p in document["plans"] if len(p["revisions"]) > 1)
    plan["revisions"][1]["undo"] = {"notes": [600, "n" * 401]}
    at = f"plans[{document['plans'].index(plan)}].revisions[1].undo"
    with rejects(
        "VALIDATION_ERROR", field=at, match="gives notes an earlier text of 1,001 characters; a section holds"
    ):
        export_import.session_import(document)
