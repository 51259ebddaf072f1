"""What every REST endpoint shares (sessions_app/api/endpoint.py): who may call it (401 for a
caller without credentials or with a wrong token, 403 for one without a role), answers no
cache keeps and that vary with the caller, the query parameters it takes, and conditional
reads under an ETag that a stranger never gets a 304 from."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.models import Event, Plan, Session
from tests.sessions_app.api_fixtures import ENDPOINTS, assert_problem, completed_plan

pytestmark = pytest.mark.django_db


# --- who may call ----------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_every_endpoint_refuses_a_caller_without_credentials(anonymous, full_session, endpoint):
    response = anonymous.get(ENDPOINTS[endpoint](full_session, completed_plan(full_session)))
    body = assert_problem(response, 401, "AUTHENTICATION_REQUIRED")
    assert response["WWW-Authenticate"] == "Token"
    # Nothing of the session leaks into the error.
    assert full_session.name not in body["detail"]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_every_endpoint_refuses_a_wrong_token(full_session, endpoint):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token 0123456789abcdef0123456789abcdef01234567")
    assert_problem(
        client.get(ENDPOINTS[endpoint](full_session, completed_plan(full_session))), 401, "AUTHENTICATION_REQUIRED"
    )


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_every_endpoint_forbids_a_user_without_view_permission(outsider_api, full_session, endpoint):
    response = outsider_api.get(ENDPOINTS[endpoint](full_session, completed_plan(full_session)))
    body = assert_problem(response, 403, "PERMISSION_DENIED")
    assert full_session.name not in body["detail"]


def test_a_stranger_is_refused_before_its_query_parameters_are_read(anonymous, outsider_api, full_session):
    url = f"/api/sessions/{full_session.name}/plans/?no_such_parameter=1"
    # Whoever may not call the endpoint learns nothing of what it takes.
    assert_problem(anonymous.get(url), 401, "AUTHENTICATION_REQUIRED")
    assert_problem(outsider_api.get(url), 403, "PERMISSION_DENIED")


# --- answers ---------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_no_cache_keeps_an_answer_and_answers_vary_with_the_caller(api, full_session, endpoint):
    response = api.get(ENDPOINTS[endpoint](full_session, completed_plan(full_session)))
    assert response.status_code == 200, response.content
    assert set(response["Cache-Control"].replace(" ", "").split(",")) == {"private", "no-cache", "no-store"}
    assert {"Authorization", "Cookie"} <= {v.strip() for v in response["Vary"].split(",")}


def test_a_problem_document_is_not_cached_either(anonymous, full_session):
    response = anonymous.get(f"/api/sessions/{full_session.name}/")
    assert response.status_code == 401
    assert "no-store" in response["Cache-Control"]


def test_a_query_parameter_the_endpoint_does_not_take_is_a_400_naming_it(api, full_session):
    before = (Session.objects.count(), Plan.objects.count(), Event.objects.count())
    body = assert_problem(
        api.get(f"/api/sessions/{full_session.name}/plans/?stauts=queued"), 400, "VALIDATION_ERROR", "stauts"
    )
    assert "stauts" in body["detail"]
    assert (Session.objects.count(), Plan.objects.count(), Event.objects.count()) == before


def test_a_method_the_endpoint_does_not_have_is_a_405_whatever_the_query(api, full_session):
    response = api.delete(f"/api/sessions/{full_session.name}/?no_such_parameter=1")
    assert_problem(response, 405, "METHOD_NOT_ALLOWED")
    assert Session.objects.filter(name=full_session.name).exists()


# --- conditional requests ----------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ["session", "queue", "plans", "plan"])
def test_a_matching_etag_gets_304_and_a_change_gets_a_new_one(api, full_session, endpoint):
    plan = Plan.objects.get(session=full_session, status="active")
    url = ENDPOINTS[endpoint](full_session, plan)
    first = api.get(url)
    etag = first["ETag"]
    assert etag.startswith('"')  # strong: a JSON answer is the same bytes for the same state
    again = api.get(url, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    assert api.get(url, HTTP_IF_NONE_MATCH=f'"other", {etag}').status_code == 304
    assert api.get(url, HTTP_IF_NONE_MATCH=f"W/{etag}").status_code == 304  # If-None-Match compares weakly
    page = api.get(url, HTTP_ACCEPT="text/html")
    assert page.status_code == 200 and page["ETag"].startswith('W/"') and page["ETag"] != f"W/{etag}"
    assert api.get(url, HTTP_ACCEPT="text/html", HTTP_IF_NONE_MATCH=page["ETag"]).status_code == 304
    assert api.get(url, HTTP_IF_NONE_MATCH='W/"stale"').status_code == 200

    services.plan_note(session_name=full_session.name, text="one more line")
    changed = api.get(url, HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag


def test_the_plan_etag_moves_when_the_plan_is_completed(api, full_session):
    plan = Plan.objects.get(session=full_session, status="active")
    url = f"/api/sessions/{full_session.name}/plans/{plan.id}/"
    etag = api.get(url)["ETag"]
    services.plan_complete(session_name=full_session.name, outcome="Done")
    response = api.get(url, HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 200 and response.json()["outcome"] == "Done"


def test_a_304_is_never_given_to_a_stranger(api, anonymous, outsider_api, full_session):
    url = f"/api/sessions/{full_session.name}/"
    etag = api.get(url)["ETag"]
    assert anonymous.get(url, HTTP_IF_NONE_MATCH=etag).status_code == 401
    assert outsider_api.get(url, HTTP_IF_NONE_MATCH=etag).status_code == 403
