"""The REST API's exception handler (sessions_app/api/errors.py): each error becomes a
problem document (RFC 9457) with a status, a category and the API's own suggestion; what is
not the API's to answer is left to DRF."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.db import OperationalError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from sessions_app import errors
from sessions_app.api import errors as api_errors
from sessions_app.api.errors import _translate, exception_handler
from tests.sessions_app.api_fixtures import PROBLEM


@pytest.mark.parametrize(
    "error",
    [
        errors.SessionNotFound.named("brave-amber-otter"),
        errors.PlanNotFound("Plan k3x9q is queued, not completed.", reason=errors.NOT_COMPLETED),
        errors.DatabaseFailed("collided", reason=errors.COLLIDED),
        errors.ValidationFailed("plans[0].id: bad", field="plans[0].id", reason=errors.BAD_DOCUMENT),
        errors.NoActivePlan("none"),
        errors.QueueBlocked("1 plan(s) await review", reason=errors.AWAITING_REVIEW),
    ],
)
def test_the_rest_answer_names_endpoints_never_mcp_tools(error):
    _, body, _ = _translate(error)
    assert body["category"] == error.category and body["detail"] == error.message
    assert body["suggestion"] and "9plan_" not in body["suggestion"]


def test_every_domain_category_has_a_status():
    assert set(api_errors.DOMAIN_STATUS) == set(errors.CATEGORIES)


@pytest.mark.parametrize(
    ("error", "status", "title"),
    [
        (errors.SessionNotFound.named("brave-amber-otter"), 404, "Not Found"),
        (errors.ValidationFailed("goal: empty", field="goal"), 400, "Bad Request"),
        (errors.LeaseLost("the claim ran out"), 409, "Conflict"),
        (errors.NotPermitted.lacking(project="billing", role="reviewer", what="review"), 403, "Forbidden"),
        (errors.DatabaseFailed("locked"), 503, "Service Unavailable"),
    ],
)
def test_a_domain_error_keeps_its_message_and_field(error, status, title):
    code, body, headers = _translate(error)
    assert code == status and headers == {}
    assert body == {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": error.message,
        "category": error.category,
        "suggestion": api_errors.API_SUGGESTIONS[error.category],
        **({"parameter": error.field} if error.field else {}),
    }


def test_a_reason_picks_a_more_precise_suggestion_than_its_category():
    waiting = errors.QueueBlocked("a plan waits for a person", reason=errors.WAITING_FOR_PERSON)
    _, body, _ = _translate(waiting)
    assert body["suggestion"] == api_errors.API_SUGGESTIONS_BY_REASON[errors.WAITING_FOR_PERSON]
    assert body["suggestion"] != api_errors.API_SUGGESTIONS["QUEUE_BLOCKED"]
    # A category without a suggestion of its own answers without one.
    _, bare, _ = _translate(errors.NoSessionSelected("no session"))
    assert "suggestion" not in bare and bare["status"] == 400


@pytest.mark.parametrize(
    ("exc", "status", "category"),
    [
        (Http404(), 404, "NOT_FOUND"),
        (PermissionDenied(), 403, "PERMISSION_DENIED"),
        (exceptions.NotAuthenticated(), 401, "AUTHENTICATION_REQUIRED"),
        (exceptions.MethodNotAllowed("DELETE"), 405, "METHOD_NOT_ALLOWED"),
        (exceptions.NotAcceptable(), 406, "NOT_ACCEPTABLE"),
        (exceptions.UnsupportedMediaType("text/plain"), 415, "UNSUPPORTED_MEDIA_TYPE"),
        (exceptions.ParseError(), 400, "VALIDATION_ERROR"),
        (api_errors.PreconditionRequired(), 428, "PRECONDITION_REQUIRED"),
        (api_errors.WildcardRefused(), 428, "PRECONDITION_REQUIRED"),
        (api_errors.PreconditionFailed(), 412, "PRECONDITION_FAILED"),
        (api_errors.WeakValidator(), 412, "PRECONDITION_FAILED"),
    ],
)
def test_what_only_http_has_gets_a_category_of_its_own(exc, status, category):
    code, body, _ = _translate(exc)
    assert (code, body["status"], body["category"]) == (status, status, category)
    assert body["suggestion"] and "9plan_" not in body["suggestion"]
    if isinstance(exc, exceptions.APIException):
        assert body["detail"] == str(exc.detail)


def test_a_wildcard_and_a_weak_etag_say_why_they_were_refused():
    assert "If-Match: *" in _translate(api_errors.WildcardRefused())[1]["detail"]
    assert 'W/"' in _translate(api_errors.WeakValidator())[1]["detail"]


def test_a_throttled_request_is_told_when_to_come_back():
    code, body, headers = _translate(exceptions.Throttled(wait=7))
    assert (code, body["category"], headers) == (429, "THROTTLED", {"Retry-After": "7"})


def test_a_missing_csrf_token_is_not_a_missing_role():
    _, body, _ = _translate(exceptions.PermissionDenied("CSRF Failed: CSRF token missing."))
    assert body["category"] == "PERMISSION_DENIED" and "CSRF token" in body["suggestion"]
    _, other, _ = _translate(exceptions.PermissionDenied())
    assert other["suggestion"] == api_errors.API_SUGGESTIONS["PERMISSION_DENIED"]


@pytest.mark.parametrize(
    ("detail", "message", "parameter"),
    [
        ({"limit": ["Ensure this value is at most 500."]}, "limit: Ensure this value is at most 500.", "limit"),
        ({"non_field_errors": ["Pick one."]}, "non_field_errors: Pick one.", None),
        (["first", "second"], "first", None),
        ("plain words", "plain words", None),
    ],
)
def test_a_validation_error_is_flattened_to_one_message_naming_its_parameter(detail, message, parameter):
    code, body, _ = _translate(exceptions.ValidationError(detail))
    assert (code, body["category"], body["detail"]) == (400, "VALIDATION_ERROR", message)
    assert body.get("parameter") == parameter


def test_a_database_outage_is_a_503_to_retry():
    code, body, headers = _translate(OperationalError("database is locked"))
    assert (code, body["category"], headers) == (503, "DATABASE_ERROR", {"Retry-After": "1"})
    # The database's own words stay in the log.
    assert "locked" not in body["detail"]


def test_the_handler_answers_a_problem_document_for_the_request_and_leaves_the_rest_to_drf():
    request = Request(APIRequestFactory().get("/api/sessions/brave-amber-otter/"))
    response = exception_handler(errors.SessionNotFound.named("brave-amber-otter"), {"request": request})
    assert response.status_code == 404 and response.content_type == PROBLEM
    assert response.data["instance"] == "/api/sessions/brave-amber-otter/"
    assert response.data["category"] == "SESSION_NOT_FOUND"
    assert exception_handler(ValueError("a bug"), {"request": request}) is None
    # Without a request (no path to name) the document has no instance.
    bare = exception_handler(exceptions.NotFound(), {})
    assert bare.status_code == 404 and "instance" not in bare.data and bare.content_type == PROBLEM


def test_a_suggestion_names_the_session_and_plan_of_the_request(api, session):
    missing = api.get(f"/api/sessions/{session.name}/plans/k3x9q/").json()
    assert missing["category"] == "PLAN_NOT_FOUND"
    assert (
        missing["suggestion"]
        == f"List the session's plans at /api/sessions/{session.name}/plans/ and use one of their ids."
    )
    feed = api.get("/api/events/?plan=k3x9q").json()
    assert "{" not in feed.get("suggestion", "")


def test_a_suggestion_fills_in_only_well_formed_values():
    request = Request(APIRequestFactory().get("/api/events/?session=<b>"))
    text = "Read the session's state at /api/sessions/{name}/ to see which plan is active."
    assert (
        api_errors.filled(text, {}, request)
        == "Read the session's state at /api/sessions/<session name>/ to see which plan is active."
    )
    assert api_errors.filled(text, {"name": "brave-amber-otter"}, request).endswith(
        "/api/sessions/brave-amber-otter/ to see which plan is active."
    )
