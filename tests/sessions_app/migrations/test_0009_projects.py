"""Migration 0009 (projects): a database from before it keeps working. Its sessions land in
the project ``default``; its MCP tokens and REST tokens, and its reviewers and staff, keep
working there and nowhere else."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from rest_framework.test import APIClient

from mcp_bridge import auth
from sessions_app import access, services
from sessions_app.errors import SessionNotFound
from sessions_app.models import Membership, Session
from sessions_app.reads import queries

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("sessions_app", "0008_review_revisions"), ("mcp_bridge", "0001_initial")]


def migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def test_a_database_from_before_projects_migrates_and_keeps_its_access(settings):
    migrate(BEFORE)
    loader = MigrationExecutor(connection).loader
    others = [leaf for leaf in loader.graph.leaf_nodes() if leaf[0] not in ("sessions_app", "mcp_bridge")]
    old = loader.project_state([*others, *BEFORE]).apps
    try:
        now = timezone.now()
        OldSession = old.get_model("sessions_app", "Session")
        OldSession.objects.create(name="brave-amber-otter", task_description="from before", created_at=now)
        OldToken = old.get_model("mcp_bridge", "McpToken")
        token = "9plan_" + "t" * 40
        OldToken.objects.create(name="old-laptop", token_hash=auth.digest(token))
        User = old.get_model("auth", "User")
        Permission = old.get_model("auth", "Permission")
        Group = old.get_model("auth", "Group")
        codes = lambda *names: Permission.objects.filter(content_type__app_label="sessions_app", codename__in=names)  # noqa: E731
        rita = User.objects.create(username="rita", is_staff=True)
        reviewers = Group.objects.create(name="reviewers")
        reviewers.permissions.set(codes("view_session", "view_plan", "view_event"))
        rita.groups.add(reviewers)
        ada = User.objects.create(username="ada", is_staff=True)
        ada.groups.add(reviewers)
        ada.user_permissions.set(codes("review_plan"))
        sam = User.objects.create(username="sam", is_staff=True)
        sam.user_permissions.set(codes("view_plan", "change_plan"))
        User.objects.create(username="nobody", is_staff=True)
        Token = old.get_model("authtoken", "Token")
        Token.objects.create(key="r" * 40, user=rita, created=now)
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert Session.objects.get(name="brave-amber-otter").project_id == "default"
    roles = dict(Membership.objects.values_list("user__username", "role"))
    assert roles == {"rita": "reader", "ada": "reviewer", "sam": "manager"}

    # The old MCP token: the agent role in default, and nowhere else.
    holder = auth.token_check(token)
    assert holder.caller.roles == {"default": "agent"} and not holder.caller.everything
    services.project_create(name="elsewhere")
    other = services.session_create(project="elsewhere")
    with access.acting_as(holder.caller):
        assert queries.get_session("brave-amber-otter").name == "brave-amber-otter"
        added = services.plan_enqueue(
            session_name="brave-amber-otter", context="c", goal="g", approach="a", success_criteria="s"
        )
        assert added.plan.session_id == "brave-amber-otter"
        with pytest.raises(SessionNotFound):
            queries.get_session(other.name)
        assert [s.name for s in queries.session_list()[0]] == ["brave-amber-otter"]

    # The old REST token: its user's role, in default only.
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "r" * 40)
    assert client.get("/api/sessions/brave-amber-otter/").status_code == 200
    assert client.get(f"/api/sessions/{other.name}/").status_code == 404
    assert [s["name"] for s in client.get("/api/sessions/").json()["results"]] == ["brave-amber-otter"]
