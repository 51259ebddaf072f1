"""The domain's errors (sessions_app/errors.py): one category each, a message, the field it
concerns and a reason; the named constructors word what the services refuse."""

from __future__ import annotations

import pytest

from sessions_app import access, errors, services
from sessions_app.models import Plan, Role


def test_every_error_has_a_category_of_its_own_and_categories_lists_them_all():
    kinds = errors.NineplanError.__subclasses__()
    assert len(errors.CATEGORIES) == len(set(errors.CATEGORIES)) == len(kinds)
    assert {cls.category for cls in kinds} == set(errors.CATEGORIES)
    # The base's category is what an unexpected error is, never a domain answer.
    assert errors.NineplanError.category == "INTERNAL_ERROR"
    assert "INTERNAL_ERROR" not in errors.CATEGORIES
    assert {"SESSION_NOT_FOUND", "PLAN_NOT_FOUND", "VALIDATION_ERROR", "PERMISSION_DENIED"} <= set(errors.CATEGORIES)


def test_an_error_carries_its_message_field_and_reason():
    error = errors.ValidationFailed("queue: full", field="queue", reason=errors.QUEUE_FULL)
    assert (str(error), error.message, error.field, error.reason) == (
        "queue: full",
        "queue: full",
        "queue",
        "queue_full",
    )
    assert error.category == "VALIDATION_ERROR" and isinstance(error, errors.NineplanError)
    plain = errors.NoActivePlan("none held")
    assert (plain.field, plain.reason) == (None, None)


def test_the_named_errors_word_what_was_not_found_or_not_allowed():
    assert errors.SessionNotFound.named("brave-amber-otter").message == "No session named 'brave-amber-otter' exists."
    assert errors.PlanNotFound.in_session("k3x9q", "brave-amber-otter").message == (
        "No plan k3x9q in session 'brave-amber-otter'."
    )
    denied = errors.NotPermitted.lacking(project="billing", role="manager", what="manage")
    assert denied.field == "project" and denied.category == "PERMISSION_DENIED"
    assert denied.message == (
        "Your role in project 'billing' does not allow this: to manage its sessions you need the 'manager' role "
        "there. Nothing was changed."
    )


@pytest.mark.django_db
def test_the_services_answer_with_the_named_errors_and_change_nothing(session, make_plan, rejects):
    with rejects("SESSION_NOT_FOUND", match="No session named 'quiet-green-heron' exists."):
        services.plan_pull(session_name="quiet-green-heron")
    with rejects("PLAN_NOT_FOUND", match=f"No plan zz999 in session '{session.name}'."):
        services.plan_discard_any(session_name=session.name, plan_id="zz999", reason="x", actor="user:sam")
    plan = make_plan(session)
    with access.acting_as(access.Caller(label="user:rita", roles={session.project_id: Role.READER})):
        with rejects("PERMISSION_DENIED", field="project", match="you need the 'agent' role there"):
            services.plan_pull(session_name=session.name)
    assert Plan.objects.get(id=plan.id).status == "queued"
