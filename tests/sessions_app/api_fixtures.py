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
