"""`project` (sessions_app/management/commands/project.py): creating
projects, granting and revoking roles, and listing them; a refused call changes nothing."""

from __future__ import annotations

from functools import partial

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError

from sessions_app import services
from sessions_app.models import Membership, Project
from tests.conftest import manage

pytestmark = pytest.mark.django_db

run = partial(manage, "project")


def test_the_command_creates_grants_lists_and_revokes():
    _, said = run("create", "billing", "--title", "Billing team")
    assert said.strip() == "Created project 'billing'."
    assert Project.objects.get(name="billing").title == "Billing team"
    _, said = run("grant", "billing", "alice", "agent")
    assert "Created user 'alice' without a password" in said and "'alice' is now agent in 'billing'" in said
    alice = get_user_model().objects.get(username="alice")
    assert not alice.has_usable_password() and alice.is_staff
    _, said = run("grant", "billing", "alice", "manager")
    assert "now manager in 'billing' (was agent)" in said and "Created user" not in said
    services.session_create(project="billing")
    listing, _ = run("list")
    assert "billing  Billing team\n  sessions: 1\n  members: alice (manager)" in listing
    run("revoke", "billing", "alice")
    assert not Membership.objects.filter(user=alice).exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (("create", "Billing"), "not a project name"),
        (("create", "bil_ling"), "not a project name"),
        (("create", "b" * 64), "not a project name"),
        (("grant", "nowhere", "alice", "agent"), "no project named 'nowhere'"),
        (("grant", "default", "alice", "owner"), "role"),
        (("revoke", "default", "nobody"), "'nobody' is not a member"),
    ],
)
def test_the_command_refuses_bad_input_and_changes_nothing(args, message):
    users, projects = get_user_model().objects.count(), Project.objects.count()
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert (get_user_model().objects.count(), Project.objects.count()) == (users, projects)


def test_a_grant_of_the_role_a_member_has_says_so_and_changes_nothing():
    run("grant", "default", "bob", "reader")
    before = list(Membership.objects.values_list("project_id", "user__username", "role"))
    _, said = run("grant", "default", "bob", "reader")
    assert said.strip() == "'bob' was reader in 'default' already."
    assert list(Membership.objects.values_list("project_id", "user__username", "role")) == before


def test_a_revoke_ends_the_membership_and_keeps_the_user():
    run("grant", "default", "carol", "reviewer")
    _, said = run("revoke", "default", "carol")
    assert said.strip() == "'carol' is no longer a member of 'default'; its next request is refused."
    assert not Membership.objects.filter(user__username="carol").exists()
    assert get_user_model().objects.filter(username="carol").exists()


def test_the_list_shows_every_project_by_name_with_its_counts():
    services.project_create(name="zeta")
    services.project_create(name="alpha", title="Alpha work")
    run("grant", "alpha", "dan", "agent")
    run("grant", "alpha", "ann", "reader")
    services.session_create(project="alpha")
    services.session_create(project="alpha")
    listing, _ = run("list")
    assert listing.splitlines() == [
        "alpha  Alpha work",
        "  sessions: 2",
        "  members: ann (reader), dan (agent)",
        "default  Default project",
        "  sessions: 0",
        "  members: none",
        "zeta",
        "  sessions: 0",
        "  members: none",
    ]
