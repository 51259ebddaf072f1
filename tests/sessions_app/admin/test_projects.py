"""The projects in the admin (sessions_app/admin/projects.py): the list and a project's page
with its sessions and members, granting and revoking roles by the project's managers, and
creating a project by superusers; a refused change changes nothing. (Every role on every
page is proved in tests/proofs/test_project_access.py.)"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Membership, Project
from tests.sessions_app.admin_fixtures import (  # noqa: F401 (fixtures)
    client_for,
    outsider,
    staff,
    staff_client,
    superuser,
    text_of,
)

pytestmark = pytest.mark.django_db


def memberships(project: str = "default") -> list[tuple[str, str]]:
    return list(
        Membership.objects.filter(project_id=project).order_by("user__username").values_list("user__username", "role")
    )


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_a_projects_page_shows_its_sessions_and_members(staff_client, session):
    response = staff_client.get(reverse("admin:sessions_app_project_change", args=["default"]))
    assert response.status_code == 200
    page = text_of(response)
    assert session.name in page and "sam" in page and "Project default" in page


def test_a_manager_grants_and_revokes_a_role_in_its_project(staff_client):
    grant = reverse("admin:sessions_app_project_grant", args=["default"])
    response = staff_client.post(grant, {"username": "nina", "role": "reviewer"})
    assert response.status_code == 302
    assert said(response)[0] == "'nina' is now reviewer in project default."
    assert "created without a password" in said(response)[1]
    assert ("nina", "reviewer") in memberships()

    revoke = reverse("admin:sessions_app_project_revoke", args=["default"])
    response = staff_client.post(revoke, {"username": "nina"})
    # Messages not yet shown pile up: the revoke's is the last.
    assert said(response)[-1] == "'nina' is no longer a member of project default."
    assert "nina" not in dict(memberships())


def test_a_bad_role_is_said_and_changes_nothing(staff_client):
    before = memberships()
    response = staff_client.post(
        reverse("admin:sessions_app_project_grant", args=["default"]), {"username": "nina", "role": "owner"}
    )
    assert response.status_code == 302 and said(response)[0].startswith("Project default: VALIDATION_ERROR: ")
    assert memberships() == before and not get_user_model().objects.filter(username="nina").exists()


def test_a_grant_is_posted_never_fetched(staff_client):
    response = staff_client.get(reverse("admin:sessions_app_project_grant", args=["default"]))
    assert response.status_code == 405 and memberships() == [("sam", "manager")]


def test_a_manager_of_no_project_is_refused_and_another_project_is_not_found(staff_client, outsider):
    services.project_create(name="billing")
    before = (memberships(), memberships("billing"))
    grant = {"username": "x1", "role": "reader"}
    assert (
        client_for(outsider).post(reverse("admin:sessions_app_project_grant", args=["default"]), grant).status_code
        == 403
    )
    assert staff_client.post(reverse("admin:sessions_app_project_grant", args=["billing"]), grant).status_code == 404
    assert staff_client.post(reverse("admin:sessions_app_project_grant", args=["No_Such"]), grant).status_code == 404
    assert (memberships(), memberships("billing")) == before


def test_only_a_superuser_creates_a_project(staff_client, superuser):
    create = reverse("admin:sessions_app_project_create")
    assert staff_client.post(create, {"name": "billing"}).status_code == 403
    assert not Project.objects.filter(name="billing").exists()

    response = client_for(superuser).post(create, {"name": "billing", "title": "Billing team"})
    assert response.status_code == 302 and response["Location"] == reverse(
        "admin:sessions_app_project_change", args=["billing"]
    )
    assert said(response) == ["Created project billing."]
    assert Project.objects.get(name="billing").title == "Billing team"


def test_a_bad_project_name_is_said_and_creates_nothing(superuser):
    response = client_for(superuser).post(reverse("admin:sessions_app_project_create"), {"name": "Bad_Name"})
    assert response.status_code == 302 and response["Location"] == reverse("admin:sessions_app_project_changelist")
    assert said(response)[0].startswith("Project Bad_Name: VALIDATION_ERROR: ")
    assert list(Project.objects.values_list("name", flat=True)) == ["default"]


def test_the_list_offers_creating_a_project_to_superusers_only(staff_client, superuser):
    listing = reverse("admin:sessions_app_project_changelist")
    assert staff_client.get(listing).context["can_create_project"] is False
    assert client_for(superuser).get(listing).context["can_create_project"] is True
