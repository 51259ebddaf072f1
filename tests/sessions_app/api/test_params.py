"""Query parameters: every endpoint takes exactly those its schema declares and refuses any
other name with a 400 problem naming it; one paging vocabulary (``page``, ``page_size`` up to
100) wherever answers come in pages."""

from __future__ import annotations

import pytest

from sessions_app.api import params
from sessions_app.models import Plan, Role
from tests.sessions_app.api_fixtures import PROBLEM, make_user, token_client
from tests.sessions_app.conftest import db_rows

pytestmark = pytest.mark.django_db

# Every endpoint under /api/, as (method, path, the query parameters it takes); {s} is the
# session's name, {p} a plan's id.
ENDPOINTS = [
    ("get", "/api/", set()),
    (
        "get",
        "/api/sessions/",
        {"has_active_plan", "has_queued", "search", "page", "page_size"},
    ),
    ("get", "/api/sessions/{s}/", set()),
    ("get", "/api/sessions/{s}/queue/", {"page", "page_size"}),
    ("get", "/api/sessions/{s}/plans/", {"status", "page", "page_size"}),
    ("get", "/api/sessions/{s}/plans/{p}/", set()),
    ("post", "/api/sessions/{s}/plans/{p}/review/", set()),
    ("get", "/api/sessions/{s}/plans/{p}/revisions/", set()),
    ("get", "/api/sessions/{s}/plans/{p}/revisions/1/", set()),
    ("get", "/api/sessions/{s}/validation/", set()),
    ("get", "/api/sessions/{s}/export/", set()),
    ("get", "/api/history/?q=goal", {"q", "session", "page", "page_size"}),
    ("get", "/api/events/", {"after", "session", "plan", "page_size"}),
    ("get", "/api/schema/", {"lang", "version"}),
    ("get", "/api/docs/", {"lang", "version"}),
]


def filled(path: str, session) -> str:
    plan = Plan.objects.filter(session=session).order_by("created_at").first()
    return path.format(s=session.name, p=plan.id)


def with_query(path: str, query: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}{query}"


@pytest.mark.parametrize("method, path, takes", ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_every_endpoint_refuses_a_parameter_it_does_not_take(full_session, method, path, takes):
    client = token_client(make_user("boss", role=Role.MANAGER))
    before = db_rows()
    response = getattr(client, method)(with_query(filled(path, full_session), "bogus=1"), {}, format="json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert (body["category"], body["parameter"]) == ("VALIDATION_ERROR", "bogus")
    assert "'bogus'" in body["detail"]
    # The message lists what the endpoint does take: the names its schema declares.
    for name in takes:
        assert name in body["detail"]
    assert db_rows() == before


def test_the_schema_declares_what_each_endpoint_takes(anonymous):
    schema = anonymous.get("/api/schema/?format=json").json()
    for method, path, takes in ENDPOINTS:
        bare = path.split("?")[0].replace("{s}", "{name}").replace("{p}", "{plan_id}").replace("/1/", "/{number}/")
        if bare in ("/api/schema/", "/api/docs/"):
            continue
        operation = schema["paths"][bare][method]
        declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        assert declared == takes, bare
        assert "400" in operation["responses"], bare


def test_format_is_always_taken(api, full_session):
    assert api.get(f"/api/sessions/{full_session.name}/?format=json").status_code == 200
    assert api.get("/api/sessions/?format=json&page_size=1").status_code == 200


def test_a_misspelt_filter_does_not_answer_everything(api, full_session):
    response = api.get(f"/api/sessions/{full_session.name}/plans/?stauts=queued")
    assert response.status_code == 400 and response.json()["parameter"] == "stauts"


def test_credentials_are_checked_before_the_parameters(anonymous, full_session):
    response = anonymous.get("/api/sessions/?bogus=1")
    assert response.status_code == 401 and response.json()["category"] == "AUTHENTICATION_REQUIRED"


def test_a_hostile_parameter_name_is_echoed_cut_short(api):
    body = api.get("/api/sessions/?" + "x" * 5000 + "=1").json()
    assert body["parameter"] == "x" * 63 + "…" and len(body["detail"]) < 300


def test_a_method_the_endpoint_lacks_is_405_whatever_the_query(api):
    response = api.post("/api/sessions/?bogus=1", {}, format="json")
    assert response.status_code == 405 and response.json()["category"] == "METHOD_NOT_ALLOWED"


@pytest.mark.parametrize(
    "path",
    [
        "/api/sessions/",
        "/api/sessions/{s}/queue/",
        "/api/sessions/{s}/plans/",
        "/api/history/?q=goal",
        "/api/events/",
    ],
)
def test_every_paged_answer_takes_page_size_up_to_100(api, full_session, path):
    url = filled(path, full_session)
    assert api.get(with_query(url, "page_size=1")).status_code == 200
    assert api.get(with_query(url, f"page_size={params.MAX_PAGE_SIZE}")).status_code == 200
    refused = api.get(with_query(url, f"page_size={params.MAX_PAGE_SIZE + 1}"))
    assert refused.status_code == 400 and refused.json()["parameter"] == "page_size"
    assert "1 to 100" in refused.json()["detail"]


def test_page_size_is_honoured_by_the_feed_and_the_lists(api, full_session):
    assert len(api.get("/api/events/?page_size=2").json()["results"]) == 2
    assert len(api.get(f"/api/sessions/{full_session.name}/plans/?page_size=2").json()["results"]) == 2
    assert len(api.get("/api/history/?q=goal&page_size=1").json()["results"]) == 1


def test_a_choice_outside_the_list_is_named_once_as_exact():
    status = params.ChoiceParam("status", ("queued", "active"), "Plans in this state.")

    class Request:
        class query_params:  # the attribute DRF's request has
            @staticmethod
            def getlist(name):
                return ["Queued"] if name == "status" else []

    with pytest.raises(params.ValidationFailed) as refused:
        status.parse(Request())
    assert refused.value.message == "status must be exactly one of 'queued', 'active'; got 'Queued'."
