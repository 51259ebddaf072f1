"""A manager's forms that put work in (admin/work_pages.py): a new session, a plan, several
plans at once, an open plan's text. Valid input is the service's write, logged as
``user:<name>``; bad input gets the form back with the field named and nothing written;
a reader or an agent-role member is refused and nothing is written."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from sessions_app import services
from sessions_app.models import DEFAULT_PROJECT, Event, Plan, Revision, Role, Session
from tests.conftest import plan_fields
from tests.sessions_app.admin_fixtures import (  # noqa: F401 - fixtures
    PASSWORD,
    client_for,
    enqueue,
    fast_hashing,
    staff,
    staff_client,
    superuser,
    text_of,
)

pytestmark = pytest.mark.django_db


def member(username: str, role: str):
    user = get_user_model().objects.create_user(username, password=PASSWORD, is_staff=True)
    services.project_grant(project=DEFAULT_PROJECT, username=username, role=role)
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture
def outsiders(db, settings):
    """A reader and an agent-role member of the default project: no hands in the admin."""
    fast_hashing(settings)
    return [client_for(member("rhea", Role.READER)), client_for(member("abe", Role.AGENT))]


def snapshot() -> tuple:
    return (
        list(Session.objects.order_by("name").values_list("name", "review", "lease_seconds")),
        list(Plan.objects.order_by("id").values_list("id", "status", "goal", "sort_key", "version", "notes")),
        Revision.objects.count(),
        Event.objects.count(),
    )


def form_errors(response, field: str) -> str:
    assert response.status_code == 200
    return " ".join(response.context["form"].errors.get(field, []))


PLAN_FORM = {
    **plan_fields(goal="Add the refund endpoint"),
    "inputs": "",
    "outputs": "",
    "notes": "Ask ops first",
    "position": "back",
}


# --- a new session ---------------------------------------------------------------------------


def test_a_manager_creates_a_session_with_its_review_policy_and_lease(staff_client):
    response = staff_client.post(
        reverse("admin:sessions_app_session_new"),
        {
            "project": DEFAULT_PROJECT,
            "task_description": "Port billing",
            "review": "required",
            "lease_seconds": "600",
            "max_attempts": "2",
        },
    )
    session = Session.objects.get()
    assert response.status_code == 302 and response.url == reverse("admin:sessions_app_board", args=[session.name])
    assert (
        session.project_id,
        session.task_description,
        session.review,
        session.lease_seconds,
        session.max_attempts,
    ) == (
        DEFAULT_PROJECT,
        "Port billing",
        "required",
        600,
        2,
    )
    assert Event.objects.get(session=session).actor == "user:sam"


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("lease_seconds", "0", "lease_seconds must be a whole number from 1"),
        ("project", "elsewhere", "valid choice"),
        ("lease_seconds", "soon", "whole number"),
    ],
)
def test_a_bad_session_form_comes_back_with_the_field_named(staff_client, field, value, words):
    before = snapshot()
    data = {"project": DEFAULT_PROJECT, "review": "none", field: value}
    response = staff_client.post(reverse("admin:sessions_app_session_new"), data)
    assert words in form_errors(response, field)
    assert snapshot() == before


# --- one plan, several plans -------------------------------------------------------------------


def test_a_manager_adds_a_plan_with_dependencies_at_the_front_for_review(staff_client, session):
    first = enqueue(session, "Model the invoices")
    data = {**PLAN_FORM, "position": "front", "depends_on": [first.id], "review": "on"}
    response = staff_client.post(reverse("admin:sessions_app_plan_add_form", args=[session.name]), data)
    assert response.status_code == 302
    added = Plan.objects.get(goal="Add the refund endpoint")
    assert (added.status, added.review, added.notes) == ("queued", True, "Ask ops first")
    assert list(added.depends_on.values_list("id", flat=True)) == [first.id]
    assert Plan.objects.filter(session=session, status="queued").order_by("sort_key").first().id == added.id
    assert Revision.objects.get(plan=added).actor == "user:sam"
    event = Event.objects.get(plan=added)
    assert (event.kind, event.actor, event.detail) == (
        "plan_created",
        "user:sam",
        {"position": "front", "depends_on": [first.id]},
    )


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"goal": ""}, "goal", "goal is empty or only whitespace"),
        ({"success_criteria": "   "}, "success_criteria", "success_criteria"),
        ({"depends_on": ["zzzzz"]}, "depends_on", "valid choice"),
        ({"position": "middle"}, "position", "valid choice"),
    ],
)
def test_a_bad_plan_form_comes_back_with_the_field_named_and_nothing_written(
    staff_client, session, change, field, words
):
    before = snapshot()
    response = staff_client.post(
        reverse("admin:sessions_app_plan_add_form", args=[session.name]), {**PLAN_FORM, **change}
    )
    assert words in form_errors(response, field)
    assert snapshot() == before


def test_a_plan_over_the_size_limit_is_refused_in_the_services_words(staff_client, session, settings):
    settings.NINEPLAN_MAX_PLAN_CHARS = 200
    before = snapshot()
    response = staff_client.post(
        reverse("admin:sessions_app_plan_add_form", args=[session.name]), {**PLAN_FORM, "approach": "x" * 300}
    )
    assert "at most 200 are allowed" in " ".join(response.context["form"].non_field_errors())
    assert snapshot() == before


PASTED = """# Notes
Ask ops first
# Context
Billing port
# Goal
Write the parser
# Approach
Table driven
# Success Criteria
Tests pass
# Context
Billing port
# Goal
Document the parser
# Approach
One page
# Success Criteria
Reviewed
"""


def test_several_plans_are_added_from_pasted_plan_file_texts(staff_client, session):
    response = staff_client.post(
        reverse("admin:sessions_app_plan_batch_form", args=[session.name]), {"text": PASTED, "position": "back"}
    )
    assert response.status_code == 302
    goals = list(Plan.objects.filter(session=session).order_by("sort_key").values_list("goal", "approach"))
    assert goals == [("Write the parser", "Table driven"), ("Document the parser", "One page")]
    assert Plan.objects.get(goal="Write the parser").notes == "Ask ops first"
    assert set(Event.objects.filter(kind="plan_created").values_list("actor", flat=True)) == {"user:sam"}


def test_several_plans_are_added_from_a_list_with_their_dependencies(staff_client, session):
    plans = [plan_fields(goal="Part A"), plan_fields(goal="Merge", depends_on=[0])]
    response = staff_client.post(
        reverse("admin:sessions_app_plan_batch_form", args=[session.name]),
        {"text": json.dumps(plans), "position": "back", "review": "on"},
    )
    assert response.status_code == 302
    part, merge = Plan.objects.filter(session=session).order_by("sort_key")
    assert list(merge.depends_on.values_list("id", flat=True)) == [part.id]
    assert (part.review, merge.review) == (True, True)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (PASTED.replace("Document the parser", ""), "plans[1].goal"),
        ('[{"goal": "x"}', "not one"),
        ("Just some words", "text begins above any heading"),
        (json.dumps([plan_fields(depends_on=[3])]), "depends_on[0]"),
        (PASTED * 26, "plans has 52 entries; at most 50 are allowed in one call"),
    ],
)
def test_a_bad_batch_comes_back_naming_the_plan_and_field_and_adds_none(staff_client, session, text, words):
    before = snapshot()
    response = staff_client.post(
        reverse("admin:sessions_app_plan_batch_form", args=[session.name]), {"text": text, "position": "back"}
    )
    assert words in form_errors(response, "text")
    assert snapshot() == before


# --- a plan's text -----------------------------------------------------------------------------


def edit_url(plan: Plan) -> str:
    return reverse("admin:sessions_app_plan_edit_form", args=[plan.session_id, plan.id])


def test_a_manager_edits_a_queued_plans_text_as_a_revision(staff_client, session):
    plan = enqueue(session, "Model the invoices")
    page = staff_client.get(edit_url(plan))
    assert page.context["form"].initial["goal"] == "Model the invoices"
    data = {**plan.sections(), "goal": "Model invoices and credit notes", "version": plan.version}
    response = staff_client.post(edit_url(plan), data)
    assert response.status_code == 302
    stored = Plan.objects.get(id=plan.id)
    assert stored.goal == "Model invoices and credit notes"
    assert Revision.objects.filter(plan=plan).last().kind == "edit"
    assert Event.objects.filter(plan=plan).last().actor == "user:sam"


def test_an_edit_from_a_stale_page_is_refused_and_changes_nothing(staff_client, session):
    plan = enqueue(session, "Model the invoices")
    stale = plan.version
    services.plan_edit(session_name=session.name, plan_id=plan.id, sections={"notes": "meanwhile"}, actor="user:ann")
    before = snapshot()
    response = staff_client.post(edit_url(plan), {**plan.sections(), "goal": "Mine", "version": stale})
    assert "changed since you opened it" in form_errors(response, "version")
    assert 'id="np-error-version"' in text_of(response)
    assert snapshot() == before


def test_an_active_plans_edit_page_says_its_worker_is_told(staff_client, session):
    plan = enqueue(session, "Write the parser")
    services.plan_pull(session_name=session.name)
    assert "its worker (default) is told of your edit" in text_of(staff_client.get(edit_url(plan)))


# --- who may -----------------------------------------------------------------------------------


def test_readers_and_agent_members_get_no_buttons_and_a_403(outsiders, session):
    plan = enqueue(session, "Model the invoices")
    before = snapshot()
    posts = [
        (reverse("admin:sessions_app_session_new"), {"project": DEFAULT_PROJECT, "review": "none"}),
        (reverse("admin:sessions_app_plan_add_form", args=[session.name]), PLAN_FORM),
        (reverse("admin:sessions_app_plan_batch_form", args=[session.name]), {"text": PASTED, "position": "back"}),
        (edit_url(plan), {**plan.sections(), "goal": "x", "version": plan.version}),
        (reverse("admin:sessions_app_board_move", args=[session.name]), {"plan_id": plan.id, "position": "front"}),
        (reverse("admin:sessions_app_board_discard", args=[session.name]), {"plan_id": plan.id, "reason": "no"}),
    ]
    for client in outsiders:
        for url, data in posts:
            assert client.post(url, data).status_code == 403, url
        for page in (
            reverse("admin:sessions_app_session_change", args=[session.name]),
            reverse("admin:sessions_app_board", args=[session.name]),
        ):
            html = text_of(client.get(page))
            assert "np-add-plan" not in html and "draggable" not in html and "np-discard-zone" not in html
        html = text_of(client.get(reverse("admin:sessions_app_session_changelist")))
        assert "np-new-session" not in html
    assert snapshot() == before


def test_a_superuser_has_the_forms_too(superuser, session):
    client = client_for(superuser)
    html = text_of(client.get(reverse("admin:sessions_app_session_changelist")))
    assert "np-new-session" in html
    response = client.post(reverse("admin:sessions_app_plan_add_form", args=[session.name]), PLAN_FORM)
    assert response.status_code == 302
    assert Event.objects.get(kind="plan_created").actor == "user:root"


def test_the_plan_page_offers_the_edit_to_managers_only(staff_client, outsiders, session):
    plan = enqueue(session, "Model the invoices")
    page = reverse("admin:sessions_app_plan_change", args=[plan.id])
    assert f'href="{edit_url(plan)}"' in text_of(staff_client.get(page))
    for client in outsiders:
        assert edit_url(plan) not in text_of(client.get(page))
        assert client.get(edit_url(plan)).status_code == 403
