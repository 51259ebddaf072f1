"""Actors and data for the REST API tests: a reader of the default project (through a
token), an outsider signed in without a role in any project, and a session with plans in
every state."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import DEFAULT_PROJECT, Plan, Role, Session
from tests.conftest import plan_fields

PROBLEM = "application/problem+json"


def make_user(username: str, *, role: str | None = None, project: str = DEFAULT_PROJECT):
    """A user without a password, with ``role`` in ``project`` (none: a member of nothing)."""
    user = get_user_model().objects.create_user(username=username, password=None)
    if role:
        services.project_grant(project=project, username=username, role=role)
    return get_user_model().objects.get(pk=user.pk)


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def reader(db):
    """An integration's user: reads the default project's sessions, plans and events."""
    return make_user("integration", role=Role.READER)


@pytest.fixture
def api(reader) -> APIClient:
    return token_client(reader)


@pytest.fixture
def outsider_api(db) -> APIClient:
    """Signed in with a valid token, but without a role in any project."""
    return token_client(make_user("outsider"))


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


def fill_session(session: Session, *, queued: int = 2, completed: int = 1, discarded: int = 1, active: bool = True):
    """Plans in every state: ``completed`` completed, ``discarded`` discarded, one active
    (if asked) and ``queued`` still queued, in that order of creation."""
    for i in range(completed):
        services.plan_enqueue(
            session_name=session.name, position="front", **plan_fields(goal=f"Finished goal {i}", context="invoices")
        )
        services.plan_pull(session_name=session.name)
        services.plan_complete(session_name=session.name, outcome=f"Invoices modelled, step {i}")
    for i in range(discarded):
        services.plan_enqueue(session_name=session.name, position="front", **plan_fields(goal=f"Dropped goal {i}"))
        services.plan_pull(session_name=session.name)
        services.plan_discard(session_name=session.name, reason="not needed")
    if active:
        services.plan_enqueue(session_name=session.name, position="front", **plan_fields(goal="Working goal"))
        services.plan_pull(session_name=session.name)
        services.plan_note(session_name=session.name, text="Halfway there")
    if queued:
        services.plan_enqueue_many(
            session_name=session.name, plans=[plan_fields(goal=f"Queued goal {i}") for i in range(queued)]
        )
    return session


@pytest.fixture
def full_session(session) -> Session:
    return fill_session(session)


def plans_by_status(session: Session) -> dict[str, list[Plan]]:
    found: dict[str, list[Plan]] = {}
    for plan in Plan.objects.filter(session=session).order_by("created_at", "id"):
        found.setdefault(plan.status, []).append(plan)
    return found


def completed_plan(session: Session) -> Plan:
    """A completed plan of the session."""
    return Plan.objects.filter(session=session, status="completed").first()


# Every endpoint of the REST API with a URL built from a session and one of its plans.
ENDPOINTS = {
    "root": lambda s, p: "/api/",
    "sessions": lambda s, p: "/api/sessions/",
    "session": lambda s, p: f"/api/sessions/{s.name}/",
    "queue": lambda s, p: f"/api/sessions/{s.name}/queue/",
    "plans": lambda s, p: f"/api/sessions/{s.name}/plans/",
    "plan": lambda s, p: f"/api/sessions/{s.name}/plans/{p.id}/",
    "validation": lambda s, p: f"/api/sessions/{s.name}/validation/",
    "export": lambda s, p: f"/api/sessions/{s.name}/export/",
    "history": lambda s, p: "/api/history/?q=invoices",
    "events": lambda s, p: "/api/events/",
}
WITH_SESSION_IN_PATH = ["session", "queue", "plans", "plan", "validation", "export"]


def assert_problem(response, status: int, category: str, parameter: str | None = None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["status"] == status
    assert body["category"] == category
    assert body["title"] and body["detail"] and body["type"] == "about:blank"
    if parameter is not None:
        assert body["parameter"] == parameter
    return body
