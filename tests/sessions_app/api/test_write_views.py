"""The REST writes that put work in (api/write_views.py): a session, plans, a queued plan's
correction under If-Match; Idempotency-Key; the roles that may write and a reader's attempt
changing nothing; a token sent as Bearer."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import Event, Plan, Revision, Role, Session
from tests.conftest import plan_fields
from tests.sessions_app.api_fixtures import PROBLEM, make_user, token_client
from tests.sessions_app.conftest import db_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent():
    return token_client(make_user("ticket-bot", role=Role.AGENT))


@pytest.fixture
def manager():
    return token_client(make_user("lead", role=Role.MANAGER))


def problem(response, status: int, category: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["category"] == category
    return body


def test_an_agent_creates_a_session_in_its_project(agent):
    response = agent.post("/api/sessions/", {"task_description": "BILL-142", "review": "required"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    session = Session.objects.get(name=body["name"])
    assert (session.project_id, session.task_description, session.review) == ("default", "BILL-142", "required")
    assert response.headers["Location"].endswith(f"/api/sessions/{session.name}/")
    assert Event.objects.get(session=session, kind="session_created").actor == "user:ticket-bot"


def test_a_manager_adds_one_plan_and_then_a_batch_in_order(session, manager):
    one = manager.post(f"/api/sessions/{session.name}/plans/", plan_fields(goal="Model invoices"), format="json")
    assert one.status_code == 201, one.content
    first = one.json()["plans"][0]
    assert (first["goal"], first["status"], first["queue_position"]) == ("Model invoices", "queued", 1)
    batch = manager.post(
        f"/api/sessions/{session.name}/plans/",
        {
            "plans": [plan_fields(goal="A"), {**plan_fields(goal="B"), "depends_on": [0, first["id"]]}],
            "position": "front",
            "review": True,
        },
        format="json",
    )
    assert batch.status_code == 201, batch.content
    ids = [p["id"] for p in batch.json()["plans"]]
    queue = list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("goal", "review")
    )
    assert queue == [("A", True), ("B", True), ("Model invoices", False)]
    deps = set(Plan.objects.get(id=ids[1]).dependency_links.values_list("depends_on_id", flat=True))
    assert deps == {ids[0], first["id"]}
    as_list = manager.post(f"/api/sessions/{session.name}/plans/", [plan_fields(goal="C")], format="json")
    assert as_list.status_code == 201 and as_list.json()["added"] == 1


@pytest.mark.parametrize(
    ("body", "parameter"),
    [
        ({**plan_fields(), "goal": ""}, "goal"),
        ({**plan_fields(), "priority": 3}, "priority"),
        ({"plans": [plan_fields(), {"goal": "x"}]}, "plans[1].context"),
        ({"plans": [], "position": "front"}, "plans"),
        ({**plan_fields(), "position": "middle"}, "position"),
        ("just text", "body"),
    ],
)
def test_a_bad_plan_is_a_400_naming_the_field_and_adds_nothing(session, agent, body, parameter):
    before = db_rows()
    response = agent.post(f"/api/sessions/{session.name}/plans/", body, format="json")
    assert problem(response, 400, "VALIDATION_ERROR")["parameter"] == parameter
    assert db_rows() == before


@pytest.mark.parametrize("role", [Role.READER, Role.REVIEWER])
def test_a_reader_or_reviewer_is_refused_every_write_with_the_role_named(session, make_plan, role, sessions_dir):
    plan = make_plan(session)
    client = token_client(make_user("someone", role=role))
    tag = client.get(f"/api/sessions/{session.name}/plans/{plan.id}/").headers["ETag"]
    before = db_rows()
    attempts = [
        client.post("/api/sessions/", {}, format="json"),
        client.post(f"/api/sessions/{session.name}/plans/", plan_fields(), format="json"),
        client.patch(
            f"/api/sessions/{session.name}/plans/{plan.id}/", {"goal": "Mine"}, format="json", HTTP_IF_MATCH=tag
        ),
    ]
    for response in attempts:
        body = problem(response, 403, "PERMISSION_DENIED")
        assert "'agent' or 'manager' role" in body["detail"] and "Nothing was changed" in body["detail"]
    assert db_rows() == before


def test_a_role_in_another_project_only_is_refused_there_by_the_service(session):
    services.project_create(name="billing")
    client = token_client(make_user("elsewhere", role=Role.AGENT, project="billing"))
    client_reader = make_user("reads-default", role=Role.READER)
    services.project_grant(project="billing", username=client_reader.username, role=Role.AGENT)
    mixed = token_client(client_reader)
    before = db_rows()
    assert client.post(f"/api/sessions/{session.name}/plans/", plan_fields(), format="json").status_code == 404
    refused = mixed.post(f"/api/sessions/{session.name}/plans/", plan_fields(), format="json")
    assert "project 'default'" in problem(refused, 403, "PERMISSION_DENIED")["detail"]
    assert db_rows() == before


def test_the_same_idempotency_key_and_body_answer_once(session, agent):
    url = f"/api/sessions/{session.name}/plans/"
    first = agent.post(url, plan_fields(goal="Once"), format="json", HTTP_IDEMPOTENCY_KEY="ticket-142-a")
    again = agent.post(url, plan_fields(goal="Once"), format="json", HTTP_IDEMPOTENCY_KEY="ticket-142-a")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert Plan.objects.filter(session=session, goal="Once").count() == 1
    before = db_rows()
    other = agent.post(url, plan_fields(goal="Another"), format="json", HTTP_IDEMPOTENCY_KEY="ticket-142-a")
    body = problem(other, 422, "VALIDATION_ERROR")
    assert "Idempotency-Key 'ticket-142-a' was already used for a different call" in body["detail"]
    assert body["parameter"] == "Idempotency-Key"
    assert db_rows() == before
    # Keys are each user's own: another user's same key is a new write.
    manager = token_client(make_user("lead", role=Role.MANAGER))
    theirs = manager.post(url, plan_fields(goal="Another"), format="json", HTTP_IDEMPOTENCY_KEY="ticket-142-a")
    assert theirs.status_code == 201
    bad = agent.post(url, plan_fields(), format="json", HTTP_IDEMPOTENCY_KEY="not a key!")
    assert problem(bad, 400, "VALIDATION_ERROR").get("parameter") == "Idempotency-Key", bad.json()


def test_a_session_created_twice_with_one_key_is_one_session(agent):
    made = [
        agent.post("/api/sessions/", {"task_description": "BILL-7"}, format="json", HTTP_IDEMPOTENCY_KEY="bill-7")
        for _ in range(2)
    ]
    assert [r.status_code for r in made] == [201, 201]
    assert made[0].json()["name"] == made[1].json()["name"]
    assert made[1].headers["Location"] == made[0].headers["Location"]
    assert Session.objects.count() == 1


def test_patch_corrects_a_queued_plans_text_and_place_under_its_etag(session, make_plan, agent):
    first, plan = make_plan(session), make_plan(session, goal="Model invoices")
    url = f"/api/sessions/{session.name}/plans/{plan.id}/"
    tag = agent.get(url).headers["ETag"]
    response = agent.patch(
        url, {"goal": "Model invoices and credit notes", "position": "front"}, format="json", HTTP_IF_MATCH=tag
    )
    assert response.status_code == 200, response.content
    assert response.json()["goal"] == "Model invoices and credit notes" and response.headers["ETag"] != tag
    stored = Plan.objects.get(id=plan.id)
    assert stored.goal == "Model invoices and credit notes"
    order = list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("id", flat=True)
    )
    assert order == [plan.id, first.id]
    assert Revision.objects.filter(plan=plan).order_by("-number").first().kind == "edit"
    assert Event.objects.filter(plan=plan, kind="plan_edited", actor="user:ticket-bot").exists()
    # The file an agent reads holds the new text.
    from sessions_app import planfiles

    assert "Model invoices and credit notes" in planfiles.read_plan_file(session.name, stored.file_stem).text

    before = db_rows()
    stale = agent.patch(url, {"goal": "Again"}, format="json", HTTP_IF_MATCH=tag)
    assert "nothing was changed" in problem(stale, 412, "PRECONDITION_FAILED")["detail"]
    missing = agent.patch(url, {"goal": "Again"}, format="json")
    problem(missing, 428, "PRECONDITION_REQUIRED")
    assert db_rows() == before


def test_patch_refuses_a_plan_not_queued_and_a_field_it_does_not_take(session, make_plan, agent):
    make_plan(session)
    active = services.plan_pull(session_name=session.name)
    url = f"/api/sessions/{session.name}/plans/{active.id}/"
    before = db_rows()
    tag = agent.get(url).headers["ETag"]
    # An active plan's text is its worker's: only a manager corrects it, and never its place.
    refused = agent.patch(url, {"goal": "New"}, format="json", HTTP_IF_MATCH=tag)
    assert "'manager' role" in problem(refused, 403, "PERMISSION_DENIED")["detail"]
    moved = agent.patch(url, {"position": "front"}, format="json", HTTP_IF_MATCH=tag)
    assert "only a queued plan's text or place" in problem(moved, 400, "VALIDATION_ERROR")["detail"]
    unknown = agent.patch(url, {"status": "completed"}, format="json", HTTP_IF_MATCH=tag)
    assert problem(unknown, 400, "VALIDATION_ERROR")["parameter"] == "status"
    assert db_rows() == before


def test_a_token_sent_as_bearer_is_accepted(session, make_plan):
    user = make_user("curl-user", role=Role.AGENT)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {Token.objects.create(user=user).key}")
    assert client.get("/api/sessions/").status_code == 200
    added = client.post(f"/api/sessions/{session.name}/plans/", plan_fields(), format="json")
    assert added.status_code == 201
    client.credentials(HTTP_AUTHORIZATION="Bearer wrong")
    assert problem(client.get("/api/sessions/"), 401, "AUTHENTICATION_REQUIRED")["detail"] == "Invalid token."


def test_the_schema_describes_every_write_with_an_example(anonymous):
    schema = anonymous.get("/api/schema/?format=json").json()
    writes = {
        (path, method): operation
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in ("post", "patch")
    }
    assert {(p, m) for p, m in writes} >= {
        ("/api/sessions/", "post"),
        ("/api/sessions/{name}/plans/", "post"),
        ("/api/sessions/{name}/plans/{plan_id}/", "patch"),
        ("/api/sessions/{name}/plans/{plan_id}/review/", "post"),
    }
    for (path, method), operation in writes.items():
        content = operation["requestBody"]["content"]["application/json"]
        assert content.get("examples"), (path, method)
    assert "201" in writes[("/api/sessions/", "post")]["responses"]
    assert "422" in writes[("/api/sessions/{name}/plans/", "post")]["responses"]
    assert {"tokenAuth", "bearerAuth"} <= set(schema["components"]["securitySchemes"])
