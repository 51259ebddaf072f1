"""The REST API's one write, POST .../plans/ID/review/, and the revisions reads."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import Event, Plan, Revision, Role
from tests.conftest import plan_fields
from tests.sessions_app.api_fixtures import PROBLEM, make_user, token_client
from tests.sessions_app.conftest import db_rows, revised_plan

pytestmark = pytest.mark.django_db


@pytest.fixture
def in_review():
    session = services.session_create(review="required")
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Parse the config"))
    services.plan_pull(session_name=session.name)
    return services.plan_complete(session_name=session.name, outcome="Parser written").plan


@pytest.fixture
def approver():
    return token_client(make_user("ci-bot", role=Role.REVIEWER))


def url(plan: Plan, tail: str = "review/") -> str:
    return f"/api/sessions/{plan.session_id}/plans/{plan.id}/{tail}"


def etag_of(client: APIClient, plan: Plan) -> str:
    return client.get(url(plan, "")).headers["ETag"]


def problem(response, status: int, category: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["category"] == category
    return body


def test_a_bot_with_the_permission_approves_with_the_plans_etag(in_review, approver):
    tag = etag_of(approver, in_review)
    response = approver.post(
        url(in_review), {"decision": "approve", "notes": "CI green"}, format="json", HTTP_IF_MATCH=tag
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "completed"
    assert response.headers["ETag"] != tag
    assert Plan.objects.get(id=in_review.id).status == "completed"
    event = Event.objects.filter(plan=in_review).last()
    assert (event.kind, event.actor, event.detail) == (
        "plan_approved",
        "user:ci-bot",
        {"decision": "approve", "notes": "CI green"},
    )
    # The feed carries the decision too.
    feed = approver.get(f"/api/events/?session={in_review.session_id}").json()
    assert any(e["kind"] == "plan_approved" for e in feed["results"])


def test_reject_returns_it_to_the_queue(in_review, approver):
    response = approver.post(
        url(in_review),
        {"decision": "reject", "notes": "Fails on empty files"},
        format="json",
        HTTP_IF_MATCH=etag_of(approver, in_review),
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["queue_position"]) == ("queued", 1)
    assert "Fails on empty files" in Plan.objects.get(id=in_review.id).notes


def test_without_if_match_it_is_428_and_nothing_changes(in_review, approver):
    before = db_rows()
    body = problem(approver.post(url(in_review), {"decision": "approve"}, format="json"), 428, "PRECONDITION_REQUIRED")
    assert "If-Match" in body["detail"]
    assert db_rows() == before


def test_a_stale_etag_is_412_and_nothing_changes(in_review, approver):
    tag = etag_of(approver, in_review)
    # Someone else decides first; the plan changes under the old ETag.
    approver.post(
        url(in_review),
        {"decision": "reject", "notes": "x"},
        format="json",
        HTTP_IF_MATCH=tag,
    )
    services.plan_pull(session_name=in_review.session_id)
    services.plan_complete(session_name=in_review.session_id, outcome="again")
    before = db_rows()
    problem(
        approver.post(url(in_review), {"decision": "approve"}, format="json", HTTP_IF_MATCH=tag),
        412,
        "PRECONDITION_FAILED",
    )
    assert db_rows() == before


def test_a_reader_gets_403_naming_the_review_role_it_lacks(in_review, api):
    before = db_rows()
    tag = etag_of(api, in_review)
    body = problem(
        api.post(url(in_review), {"decision": "approve"}, format="json", HTTP_IF_MATCH=tag), 403, "PERMISSION_DENIED"
    )
    assert "'reviewer' or 'manager' role" in body["detail"]
    assert "view permission" not in body["detail"] + body["suggestion"]
    assert body["suggestion"] == "Ask a manager of the project, or an administrator, for the role the message names."
    assert db_rows() == before


def test_if_match_star_is_refused_and_nothing_changes(in_review, approver):
    before = db_rows()
    body = problem(
        approver.post(url(in_review), {"decision": "approve"}, format="json", HTTP_IF_MATCH="*"),
        428,
        "PRECONDITION_REQUIRED",
    )
    assert "read the plan first" in body["detail"] and body["suggestion"].startswith("GET /api/sessions/")
    assert Plan.objects.get(id=in_review.id).status == "in_review"
    assert db_rows() == before


@pytest.mark.parametrize("weak", ["W/{tag}", 'W/"other", W/{tag}'])
def test_a_weak_etag_never_matches_if_match_and_nothing_changes(in_review, approver, weak):
    tag = etag_of(approver, in_review)
    assert tag.startswith('"')  # the JSON answer's ETag is strong
    before = db_rows()
    response = approver.post(url(in_review), {"decision": "approve"}, format="json", HTTP_IF_MATCH=weak.format(tag=tag))
    assert "compares ETags strongly" in problem(response, 412, "PRECONDITION_FAILED")["detail"]
    assert db_rows() == before


def test_the_browsable_pages_weak_etag_does_not_decide(in_review, approver):
    page_tag = approver.get(url(in_review, ""), HTTP_ACCEPT="text/html")["ETag"]
    assert page_tag.startswith('W/"')
    before = db_rows()
    problem(
        approver.post(url(in_review), {"decision": "approve"}, format="json", HTTP_IF_MATCH=page_tag),
        412,
        "PRECONDITION_FAILED",
    )
    assert db_rows() == before


def test_the_strong_etag_among_others_decides(in_review, approver):
    tag = etag_of(approver, in_review)
    response = approver.post(
        url(in_review), {"decision": "approve"}, format="json", HTTP_IF_MATCH=f'W/"old", "other", {tag}'
    )
    assert response.status_code == 200, response.content
    assert response.headers["ETag"].startswith('"')
    assert Plan.objects.get(id=in_review.id).status == "completed"


def test_anonymous_gets_401(in_review):
    problem(
        APIClient().post(url(in_review), {"decision": "approve"}, format="json", HTTP_IF_MATCH="*"),
        401,
        "AUTHENTICATION_REQUIRED",
    )


def test_session_cookies_need_the_csrf_token(in_review):
    user = make_user("rita", role=Role.REVIEWER)
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(url(in_review), {"decision": "approve"}, format="json", HTTP_IF_MATCH="*")
    problem(response, 403, "PERMISSION_DENIED")
    assert Plan.objects.get(id=in_review.id).status == "in_review"


@pytest.mark.parametrize(
    "payload, parameter",
    [
        ({"decision": "maybe"}, "decision"),
        ({}, "decision"),
        ({"decision": "reject"}, "notes"),
        ({"decision": "reject", "notes": "  "}, "notes"),
    ],
)
def test_bad_decisions_are_400_and_change_nothing(in_review, approver, payload, parameter):
    before = db_rows()
    response = approver.post(url(in_review), payload, format="json", HTTP_IF_MATCH=etag_of(approver, in_review))
    assert problem(response, 400, "VALIDATION_ERROR")["parameter"] == parameter
    assert db_rows() == before


def test_a_plan_not_in_review_is_400_with_its_reason(approver, session):
    services.plan_enqueue(session_name=session.name, **plan_fields())
    plan = Plan.objects.get(session=session)
    response = approver.post(url(plan), {"decision": "approve"}, format="json", HTTP_IF_MATCH=etag_of(approver, plan))
    body = problem(response, 400, "VALIDATION_ERROR")
    assert "only a plan in review" in body["suggestion"]


def test_unknown_plans_are_404(approver, in_review):
    problem(
        approver.post(
            f"/api/sessions/{in_review.session_id}/plans/zzzzz/review/",
            {"decision": "approve"},
            format="json",
            HTTP_IF_MATCH='"whatever"',
        ),
        404,
        "PLAN_NOT_FOUND",
    )


def test_get_on_the_review_endpoint_is_405(approver, in_review):
    problem(approver.get(url(in_review)), 405, "METHOD_NOT_ALLOWED")


def test_the_rest_of_the_api_stays_read_only(approver, in_review):
    problem(approver.post(url(in_review, ""), {}, format="json"), 405, "METHOD_NOT_ALLOWED")


def test_revisions_are_paged_like_every_list(api, session):
    plan = revised_plan(session, "First finding", "Replaced", goal="Write docs")
    first = api.get(url(plan, "revisions/") + "?page_size=2").json()
    assert [r["number"] for r in first["results"]] == [3, 2] and first["count"] == 3
    second = api.get(first["next"]).json()
    assert [r["number"] for r in second["results"]] == [1] and second["next"] is None
    problem(api.get(url(plan, "revisions/") + "?page_size=0"), 400, "VALIDATION_ERROR")


def test_the_endpoint_is_in_the_schema(anonymous):
    schema = anonymous.get("/api/schema/?format=json").json()
    review = schema["paths"]["/api/sessions/{name}/plans/{plan_id}/review/"]["post"]
    assert {p["name"] for p in review["parameters"]} >= {"If-Match", "name", "plan_id"}
    assert {"200", "412", "428", "403"} <= set(review["responses"])
    assert "/api/sessions/{name}/plans/{plan_id}/revisions/{number}/" in schema["paths"]


def test_revisions_list_and_one(api, session):
    plan = revised_plan(session, "First finding", "Replaced", goal="Write docs")
    page = api.get(url(plan, "revisions/")).json()
    assert (page["count"], page["page"], page["next"]) == (3, 1, None)
    listed = page["results"]
    assert [(r["number"], r["kind"], r["sections"]) for r in listed] == [
        (3, "note", ["notes"]),
        (2, "note", ["notes"]),
        (1, "add", ["context", "goal", "approach", "success_criteria"]),
    ]
    two = api.get(url(plan, "revisions/2/")).json()
    assert (two["before"], two["text"]["notes"], two["text"]["goal"]) == ({"notes": ""}, "First finding", "Write docs")
    assert api.get(url(plan, "revisions/3/")).json()["before"] == {"notes": "First finding"}
    problem(api.get(url(plan, "revisions/9/")), 404, "PLAN_NOT_FOUND")
    assert Revision.objects.filter(plan=plan).count() == 3
    # A plan of another session, or a session that does not exist, is not found as such.
    problem(api.get(f"/api/sessions/brave-amber-otter/plans/{plan.id}/revisions/"), 404, "SESSION_NOT_FOUND")
    other = services.session_create()
    problem(api.get(f"/api/sessions/{other.name}/plans/{plan.id}/revisions/"), 404, "PLAN_NOT_FOUND")
