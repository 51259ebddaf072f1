"""Every version of a plan's text: recorded on each kind of change, stored as small reverse
deltas, read back exactly, and restored."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from sessions_app import planfiles, services
from sessions_app.models import SECTIONS, Plan, Revision
from sessions_app.store import revisions
from tests.conftest import plan_fields
from tests.sessions_app.conftest import plan_file, revised_plan

pytestmark = pytest.mark.django_db

section_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
sections = st.fixed_dictionaries(dict.fromkeys(SECTIONS, section_text))


@given(before=sections, after=sections)
@hsettings(max_examples=300, deadline=None)
def test_a_delta_always_gives_back_the_text_before(before, after):
    assert revisions.apply_undo(after, revisions.delta(before, after)) == before


def test_an_append_stores_only_the_trailing_whitespace():
    before = dict.fromkeys(SECTIONS, "") | {"notes": "Long notes " * 1000 + "\n\n"}
    after = before | {"notes": services.compose_append(before["notes"], "one more")}
    kept = len(before["notes"].rstrip())
    assert revisions.delta(before, after) == {"notes": [kept, " \n\n"]}


def kinds(plan: Plan) -> list[tuple[int, str, list[str]]]:
    return list(Revision.objects.filter(plan=plan).order_by("number").values_list("number", "kind", "sections"))


def test_each_kind_of_change_is_a_revision(session, sessions_dir):
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Write docs"))
    plan = services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="first")
    path = plan_file(sessions_dir, plan)
    path.write_text(path.read_text().replace("Write docs", "Write the user docs"))
    services.plan_defer(session_name=session.name, reason="later")
    assert [(k, s) for _, k, s in kinds(plan)] == [
        ("add", ["context", "goal", "approach", "success_criteria"]),
        ("note", ["notes"]),
        ("file_edit", ["goal"]),
        ("defer", ["notes"]),
    ]
    versions = revisions.versions(Plan.objects.get(id=plan.id), limit=None)
    assert versions[1].before == {"goal": "Write docs"} and versions[1].after == {"goal": "Write the user docs"}
    first = revisions.text_at(Plan.objects.get(id=plan.id), 1)
    assert first == plan_fields(goal="Write docs") | {"inputs": "", "outputs": "", "notes": ""}


def test_an_added_plans_revisions_are_numbered_from_one_in_one_statement_each(session):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        plan = services.plan_enqueue(session_name=session.name, **plan_fields(goal="Write docs")).plan
    added = [q["sql"] for q in captured.captured_queries if "sessions_app_revision" in q["sql"]]
    assert len(added) == 1 and "MAX(" not in added[0]
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="first")
    services.plan_note(session_name=session.name, text="second")
    assert [n for n, _, _ in kinds(plan)] == [1, 2, 3]


def test_a_note_that_changes_nothing_records_nothing(session):
    services.plan_enqueue(session_name=session.name, **plan_fields())
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="same", mode="replace")
    services.plan_note(session_name=session.name, text="same", mode="replace")
    assert [k for _, k, _ in kinds(Plan.objects.get(session=session))] == ["add", "note"]


@pytest.mark.slow
def test_storage_grows_with_the_text_written_not_with_copies(session, settings):
    settings.NINEPLAN_MAX_FIELD_CHARS = settings.NINEPLAN_MAX_PLAN_CHARS = 10**7
    services.plan_enqueue(session_name=session.name, **plan_fields())
    plan = services.plan_pull(session_name=session.name)
    appends = 2000
    for i in range(appends):
        services.plan_note(session_name=session.name, text=f"Finding number {i}: the cache key includes the locale.")
    stored = sum(len(json.dumps(u)) for u in Revision.objects.filter(plan=plan).values_list("undo", flat=True))
    notes = Plan.objects.get(id=plan.id).notes
    # Whole copies would store about appends/2 times the notes; each revision here holds a
    # few characters.
    assert stored < 40 * appends < len(notes)
    plan = Plan.objects.get(id=plan.id)
    assert revisions.text_at(plan, 2)["notes"] == "Finding number 0: the cache key includes the locale."
    assert revisions.text_at(plan, appends + 1)["notes"] == notes


def test_restore_of_a_queued_plan_rewrites_its_file_and_refuses_what_it_cannot(session, sessions_dir, rejects):
    revised_plan(session, "kept", "gone")
    plan = services.plan_defer(session_name=session.name, reason="x").plan
    services.plan_restore(session_name=session.name, plan_id=plan.id, number=2, actor="user:sam")
    stored = Plan.objects.get(id=plan.id)
    assert stored.notes == "kept"
    assert plan_file(sessions_dir, plan).read_text() == planfiles.render(stored.sections())
    assert kinds(plan)[-1][1] == "restore"
    with rejects("VALIDATION_ERROR", field="revision"):
        services.plan_restore(session_name=session.name, plan_id=plan.id, number=99, actor="user:sam")
    with rejects("VALIDATION_ERROR", field="revision"):
        services.plan_restore(session_name=session.name, plan_id=plan.id, number="2", actor="user:sam")
    with rejects("VALIDATION_ERROR", field="revision"):
        services.plan_restore(
            session_name=session.name, plan_id=plan.id, number=5, actor="user:sam"
        )  # the current text
    services.plan_pull(session_name=session.name)
    done = services.plan_complete(session_name=session.name, outcome="done").plan
    with rejects("VALIDATION_ERROR", field="plan_id"):
        services.plan_restore(session_name=session.name, plan_id=done.id, number=2, actor="user:sam")
