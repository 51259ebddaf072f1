"""Actors and data for the admin tests: a reviewer (made by `create_reviewer`), a staff
user allowed to intervene, an outsider, and a session with something in every state.

Import the fixtures a test module needs from here.
"""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from sessions_app import services
from sessions_app.models import DEFAULT_PROJECT, Plan, Role, Session
from tests.conftest import plan_fields

PASSWORD = "a long test passphrase 7"
HOSTILE = "<script>alert(1)</script> and <img src=x onerror=alert(1)>"


def fast_hashing(settings) -> None:
    # Django's real hasher costs about half a second per password on purpose; these
    # tests are about permissions, not hashing strength.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def reviewer(db, monkeypatch, settings):
    """Rita, made the way a deployment makes reviewers."""
    fast_hashing(settings)
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", PASSWORD)
    call_command("create_reviewer", "rita", stdout=io.StringIO())
    return get_user_model().objects.get(username="rita")


@pytest.fixture
def staff(db, settings):
    """Sam, a manager of the default project (the staff actions) but not a superuser."""
    fast_hashing(settings)
    user = get_user_model().objects.create_user("sam", password=PASSWORD, is_staff=True)
    services.project_grant(project=DEFAULT_PROJECT, username="sam", role=Role.MANAGER)
    return get_user_model().objects.get(pk=user.pk)  # fresh: no stale permission cache


@pytest.fixture
def superuser(db, settings):
    fast_hashing(settings)
    return get_user_model().objects.create_superuser("root", password=PASSWORD)


@pytest.fixture
def outsider(db, settings):
    """Olga, staff without a role in any project."""
    fast_hashing(settings)
    return get_user_model().objects.create_user("olga", password=PASSWORD, is_staff=True)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def reviewer_client(reviewer) -> Client:
    return client_for(reviewer)


@pytest.fixture
def staff_client(staff) -> Client:
    return client_for(staff)


def text_of(response) -> str:
    return response.content.decode()


def enqueue(session: Session, goal: str, position: str | None = None, **overrides) -> Plan:
    return services.plan_enqueue(
        session_name=session.name, position=position, **plan_fields(goal=goal, **overrides)
    ).plan


@pytest.fixture
def busy(session):
    """A session with two completed plans, one discarded, one active and three queued.

    Returns a dict of the plans by role, re-read from the database.
    """
    name = session.name
    enqueue(session, "Inventory the routes")
    services.plan_pull(session_name=name)
    services.plan_complete(session_name=name, outcome="Found 23 routes in four blueprints")
    enqueue(session, "Model the invoices")
    services.plan_pull(session_name=name)
    services.plan_complete(session_name=name, outcome="Invoice and LineItem models with constraints")
    enqueue(session, "Port the PDF export")
    services.plan_pull(session_name=name)
    services.plan_discard(session_name=name, reason="Superseded by the reporting service")
    enqueue(session, "Migrate the customers", approach="1. Dry run\n2. Fix rows\n3. Run for real")
    services.plan_pull(session_name=name)
    services.plan_note(session_name=name, text="41 rows had *lowercase* country codes")
    q1 = enqueue(session, "Add the refund endpoint")
    q2 = enqueue(session, "Rate-limit the lookup")
    q3 = enqueue(session, "Write the runbook")
    plans = Plan.objects.filter(session=session)
    by_goal = {p.goal: p for p in plans}
    return {
        "session": session,
        "done1": by_goal["Inventory the routes"],
        "done2": by_goal["Model the invoices"],
        "discarded": by_goal["Port the PDF export"],
        "active": by_goal["Migrate the customers"],
        "queued": [Plan.objects.get(id=p.id) for p in (q1, q2, q3)],
    }


@pytest.fixture
def quiet(db):
    """A session with nothing queued and no work done."""
    return services.session_create(task_description="Write the release notes")


def sessions_listed(client, query: str = "") -> dict[str, Session]:
    """The sessions list as ``client`` sees it with ``query``, by name."""
    response = client.get(reverse("admin:sessions_app_session_changelist") + query)
    assert response.status_code == 200
    return {s.name: s for s in response.context["cl"].result_list}


def session_url(name: str) -> str:
    return reverse("admin:sessions_app_session_change", args=[name])


def plan_url(plan_id: str) -> str:
    return reverse("admin:sessions_app_plan_change", args=[plan_id])


def act_url(plan_id: str, action: str) -> str:
    return reverse("admin:sessions_app_plan_act", args=[plan_id, action])


@pytest.fixture
def approver(db, monkeypatch, settings):
    """Ada, a reviewer made with `create_reviewer --can-approve`."""
    fast_hashing(settings)
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", PASSWORD)
    call_command("create_reviewer", "ada", "--can-approve", stdout=io.StringIO())
    return get_user_model().objects.get(username="ada")


@pytest.fixture
def demo(sessions_dir) -> Session:
    """The demo's reviewed session: a plan in each state a person decides or watches."""
    call_command("nineplan_demo", stdout=io.StringIO())
    return Session.objects.get(review="required")


def one(status: str, **fields) -> Plan:
    return Plan.objects.get(status=status, **fields)


@pytest.fixture
def team(db):
    """Two workers holding a plan each; a merge step that waits for both."""
    session = services.session_create(task_description="parallel", lease_seconds=60, max_attempts=1)
    created = services.plan_enqueue_many(
        session_name=session.name,
        plans=[plan_fields(goal="Part A"), plan_fields(goal="Part B"), plan_fields(goal="Merge", depends_on=[0, 1])],
    )
    a, b, merge = (w.plan for w in created)
    services.plan_pull(session_name=session.name, worker="alice")
    services.plan_pull(session_name=session.name, worker="bob")
    return {"session": session, "a": a, "b": b, "merge": merge}
