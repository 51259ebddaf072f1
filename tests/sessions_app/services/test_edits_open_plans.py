"""A person's edit of an open plan's text (services/edits.py): a revision, the plan
file rewritten, and an active plan's worker told on its next write and on resume."""

from __future__ import annotations

import pytest

from sessions_app import access, planfiles, services
from sessions_app.errors import NotPermitted, ValidationFailed
from sessions_app.models import Event, Plan, Revision, Role
from sessions_app.reads import interventions
from tests.conftest import plan_fields
from tests.sessions_app.conftest import plan_file

pytestmark = pytest.mark.django_db


def test_an_edit_of_a_queued_plan_is_a_revision_and_rewrites_its_file(session, make_plan, sessions_dir):
    plan = make_plan(session, goal="Model invoices")
    written = services.plan_edit(
        session_name=session.name,
        plan_id=plan.id,
        sections={"goal": "Model invoices and credit notes", "outputs": "models.py"},
        actor="user:sam",
    )
    stored = Plan.objects.get(id=plan.id)
    assert written.plan.goal == stored.goal == "Model invoices and credit notes"
    assert (stored.outputs, stored.version) == ("models.py", plan.version + 1)
    assert list(Revision.objects.filter(plan=plan).values_list("number", "kind", "actor")) == [
        (1, "add", "agent"),
        (2, "edit", "user:sam"),
    ]
    event = Event.objects.filter(plan=plan).last()
    assert (event.kind, event.actor, event.detail) == (
        "plan_edited",
        "user:sam",
        {"sections": ["goal", "outputs"], "new_revision": 2},
    )
    assert plan_file(sessions_dir, plan).read_text() == planfiles.render(stored.sections())


def test_an_edit_of_an_active_plan_is_told_to_its_worker_once(session, make_plan):
    plan = make_plan(session, goal="Write the parser")
    services.plan_pull(session_name=session.name)
    services.plan_edit(
        session_name=session.name, plan_id=plan.id, sections={"approach": "Use a table"}, actor="user:sam"
    )
    told = interventions.interventions(session.name)
    assert told[0].describe().startswith(f"Plan {plan.id} had its text edited (approach) by user:sam at ")
    written = services.plan_note(session_name=session.name, text="Carrying on")
    assert len(written.changed_by_others) == 1
    assert written.changed_by_others[0].startswith(f"Plan {plan.id} had its text edited (approach) by user:sam")
    assert Plan.objects.get(id=plan.id).approach == "Use a table"
    assert services.plan_note(session_name=session.name, text="More").changed_by_others == ()


@pytest.mark.parametrize(
    ("sections", "version", "field", "words"),
    [
        ({"goal": ""}, None, "goal", "goal"),
        ({"title": "x"}, None, "title", "is not a section of a plan"),
        ({}, None, "sections", "Nothing to change"),
        ({"goal": "New"}, 0, "version", "changed since you opened it"),
    ],
)
def test_a_refused_edit_names_the_field_and_changes_nothing(session, make_plan, sections, version, field, words):
    plan = make_plan(session, goal="Model invoices")
    with pytest.raises(ValidationFailed, match=words) as refused:
        services.plan_edit(
            session_name=session.name, plan_id=plan.id, sections=sections, expected_version=version, actor="user:sam"
        )
    assert refused.value.field == field
    assert Plan.objects.get(id=plan.id).version == plan.version
    assert Revision.objects.filter(plan=plan).count() == 1


def test_only_an_open_plan_is_edited(session, make_plan):
    make_plan(session)
    services.plan_pull(session_name=session.name)
    done = services.plan_complete(session_name=session.name, outcome="Done").plan
    with pytest.raises(ValidationFailed, match="only a queued plan's text or place, or an active plan's text"):
        services.plan_edit(session_name=session.name, plan_id=done.id, sections={"goal": "x"}, actor="user:sam")


def test_the_same_text_again_changes_nothing(session, make_plan):
    plan = make_plan(session, goal="Model invoices")
    written = services.plan_edit(
        session_name=session.name, plan_id=plan.id, sections={"goal": "Model invoices"}, actor="user:sam"
    )
    assert written.plan.version == plan.version and Revision.objects.filter(plan=plan).count() == 1


def test_an_agent_role_may_add_and_correct_a_queued_plan_but_not_edit_an_active_one(session, make_plan):
    make_plan(session)
    services.plan_pull(session_name=session.name)
    queued = make_plan(session, goal="Still queued")
    plan = Plan.objects.get(session=session, status=Plan.Status.ACTIVE)
    agent = access.Caller(label="agent:bot", roles={session.project_id: Role.AGENT})
    with access.acting_as(agent):
        services.plan_edit(session_name=session.name, plan_id=queued.id, sections={"goal": "Fixed"}, actor="agent:bot")
    assert Plan.objects.get(id=queued.id).goal == "Fixed"
    manager = access.Caller(label="user:sam", roles={session.project_id: Role.MANAGER})
    reader = access.Caller(label="user:rea", roles={session.project_id: Role.READER})
    with access.acting_as(agent), pytest.raises(NotPermitted, match="'manager' role"):
        services.plan_edit(session_name=session.name, plan_id=plan.id, sections={"goal": "x"}, actor="agent:bot")
    with access.acting_as(manager):
        added = services.plan_enqueue(session_name=session.name, actor="user:sam", **plan_fields(goal="By a manager"))
    assert added.plan.goal == "By a manager"
    with access.acting_as(reader), pytest.raises(NotPermitted, match="'agent' or 'manager' role"):
        services.plan_enqueue(session_name=session.name, actor="user:rea", **plan_fields())
    assert Plan.objects.filter(session=session).count() == 3
