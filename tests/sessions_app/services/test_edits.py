"""plan_edit (sessions_app/services/edits.py): a queued plan's text and place corrected in one
write, as a revision its agent is told of; refusals change nothing."""

from __future__ import annotations

import pytest

from sessions_app import access, planfiles, services
from sessions_app.errors import NotPermitted, ValidationFailed
from sessions_app.models import Event, Plan, Revision, Role
from sessions_app.reads import interventions
from tests.sessions_app.conftest import db_rows

pytestmark = pytest.mark.django_db


def test_it_changes_the_sections_given_as_a_revision_and_rewrites_the_file(session, make_plan):
    plan = make_plan(session, goal="Model invoices")
    written = services.plan_edit(
        session_name=session.name,
        plan_id=plan.id,
        sections={"goal": "Model invoices and credit notes"},
        actor="user:lee",
    )
    stored = Plan.objects.get(id=plan.id)
    assert written.place is None and stored.goal == "Model invoices and credit notes"
    assert stored.context == plan.context and stored.version == plan.version + 1
    revision = Revision.objects.filter(plan=plan).order_by("-number").first()
    assert (revision.number, revision.kind, revision.actor, revision.sections) == (2, "edit", "user:lee", ["goal"])
    event = Event.objects.get(plan=plan, kind="plan_edited")
    assert (event.actor, event.detail) == ("user:lee", {"sections": ["goal"], "new_revision": 2})
    read = planfiles.read_plan_file(session.name, stored.file_stem)
    assert "# Goal\nModel invoices and credit notes" in read.text
    told = interventions.latest_intervention(stored)
    assert told is not None and "had its text edited (goal) by user:lee" in told.describe()


def test_it_moves_the_plan_and_changes_its_text_in_one_write(session, make_plan):
    first, plan = make_plan(session), make_plan(session)
    written = services.plan_edit(
        session_name=session.name, plan_id=plan.id, sections={"notes": "Start here"}, position="front", actor="user:lee"
    )
    assert written.place == 1
    order = list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("id", flat=True)
    )
    assert order == [plan.id, first.id]
    assert Plan.objects.get(id=plan.id).notes == "Start here"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"sections": {"goal": ""}}, "goal"),
        ({"sections": {"status": "completed"}}, "status"),
        ({"sections": {}}, "sections"),
        ({"sections": {"goal": "x" * 100_000}}, "goal"),
        ({"position": "middle"}, "position"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_changes_nothing(session, make_plan, arguments, field):
    plan = make_plan(session)
    before = db_rows()
    with pytest.raises(ValidationFailed) as refused:
        services.plan_edit(session_name=session.name, plan_id=plan.id, actor="user:lee", **arguments)
    assert refused.value.field == field
    assert db_rows() == before


def test_an_active_plan_keeps_its_place_and_a_finished_one_its_text(session, make_plan):
    make_plan(session)
    active = services.plan_pull(session_name=session.name)
    before = db_rows()
    with pytest.raises(ValidationFailed, match="only a queued plan's text or place, or an active plan's text"):
        services.plan_edit(session_name=session.name, plan_id=active.id, position="front", actor="user:lee")
    done = services.plan_complete(session_name=session.name, outcome="Done").plan
    before = db_rows()
    with pytest.raises(ValidationFailed, match="is completed"):
        services.plan_edit(session_name=session.name, plan_id=done.id, sections={"goal": "x"}, actor="user:lee")
    assert db_rows() == before


@pytest.mark.parametrize(
    ("role", "allowed"), [(Role.READER, False), (Role.REVIEWER, False), (Role.AGENT, True), (Role.MANAGER, True)]
)
def test_agents_and_managers_edit_readers_and_reviewers_do_not(session, make_plan, role, allowed):
    plan = make_plan(session)
    before = db_rows()
    with access.acting_as(access.Caller(label=f"user:{role}", roles={session.project_id: role})):
        if allowed:
            services.plan_edit(session_name=session.name, plan_id=plan.id, sections={"goal": "Fixed"}, actor="x")
        else:
            with pytest.raises(NotPermitted, match="'agent' or 'manager' role"):
                services.plan_edit(session_name=session.name, plan_id=plan.id, sections={"goal": "Fixed"}, actor="x")
    if allowed:
        assert Plan.objects.get(id=plan.id).goal == "Fixed"
    else:
        assert db_rows() == before


def test_a_failed_precondition_changes_nothing(session, make_plan):
    plan = make_plan(session)
    before = db_rows()

    def refuse(found):
        raise ValidationFailed("changed meanwhile", field="If-Match")

    with pytest.raises(ValidationFailed, match="changed meanwhile"):
        services.plan_edit(
            session_name=session.name, plan_id=plan.id, sections={"goal": "x"}, actor="x", precondition=refuse
        )
    assert db_rows() == before
