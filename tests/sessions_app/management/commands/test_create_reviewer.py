"""`create_reviewer`: a reviewer's account from a password in the environment or typed at a
terminal, strong passwords only, and an existing user given what is missing."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from sessions_app.admin.roles import REVIEWERS_GROUP

PASSWORD = "a long test passphrase 7"

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_hashing(settings):
    # The real hasher is slow on purpose; what is tested here is who gets a password.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def create_reviewer(*args) -> str:
    out = io.StringIO()
    call_command("create_reviewer", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_create_reviewer_with_the_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", PASSWORD)
    out = create_reviewer("rita", "--email", "rita@example.com")
    assert "Created reviewer 'rita'" in out
    user = get_user_model().objects.get(username="rita")
    assert (user.is_staff, user.is_superuser, user.is_active, user.email) == (True, False, True, "rita@example.com")
    assert user.check_password(PASSWORD)
    assert list(user.groups.values_list("name", flat=True)) == [REVIEWERS_GROUP]
    assert user.get_all_permissions() == {
        "sessions_app.view_session",
        "sessions_app.view_plan",
        "sessions_app.view_event",
    }


def test_create_reviewer_prompts_for_the_password(monkeypatch):
    monkeypatch.delenv("NINEPLAN_REVIEWER_PASSWORD", raising=False)
    answers = iter(["short", "short", PASSWORD, "typo", PASSWORD, PASSWORD])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    monkeypatch.setattr("sys.stdin", _Terminal())
    create_reviewer("rita")
    assert get_user_model().objects.get(username="rita").check_password(PASSWORD)
    assert next(answers, None) is None  # three rounds: too short, mismatch, accepted


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_create_reviewer_without_a_password_or_terminal_changes_nothing(monkeypatch):
    monkeypatch.delenv("NINEPLAN_REVIEWER_PASSWORD", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO())
    with pytest.raises(CommandError, match="NINEPLAN_REVIEWER_PASSWORD"):
        create_reviewer("rita")
    assert not get_user_model().objects.filter(username="rita").exists()


@pytest.mark.parametrize("password", ["", "password", "12345678901"])
def test_create_reviewer_rejects_weak_passwords(monkeypatch, password):
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", password)
    with pytest.raises(CommandError, match="Nothing was changed|nothing was changed"):
        create_reviewer("rita")
    assert not get_user_model().objects.filter(username="rita").exists()


def create_reviewer_said(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("create_reviewer", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_reviewer_on_an_existing_user_grants_what_is_missing_and_keeps_its_password(monkeypatch):
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", PASSWORD)
    get_user_model().objects.create_user("rita", password="old one here 99", is_staff=False)
    out, err = create_reviewer_said("rita")
    user = get_user_model().objects.get(username="rita")
    # The password in the environment is for new users: an existing one keeps hers.
    assert user.check_password("old one here 99") and user.is_staff
    assert list(user.groups.values_list("name", flat=True)) == [REVIEWERS_GROUP]
    assert not user.has_perm("sessions_app.review_plan")
    assert (
        out == "" and "Updated existing user 'rita'" in err and "made it staff" in err and "Kept: its password" in err
    )

    # Later, the approval that could not be added before.
    out, err = create_reviewer_said("rita", "--can-approve")
    user = get_user_model().objects.get(username="rita")
    assert user.has_perm("sessions_app.review_plan") and user.check_password("old one here 99")
    assert "made it reviewer in project 'default' (was reader)" in err and "made it staff" not in err

    # Once more changes nothing, and says so.
    before = list(get_user_model().objects.filter(username="rita").values())
    out, err = create_reviewer_said("rita", "--can-approve")
    assert "it was a reviewer already who may approve" in err
    assert list(get_user_model().objects.filter(username="rita").values()) == before


def test_create_reviewer_sets_an_existing_users_password_only_when_asked(monkeypatch):
    get_user_model().objects.create_user("rita", password="old one here 99", is_staff=True)
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", "password")
    with pytest.raises(CommandError, match="Nothing was changed"):
        create_reviewer_said("rita", "--set-password", "--can-approve")
    user = get_user_model().objects.get(username="rita")
    assert (
        user.check_password("old one here 99")
        and not user.groups.exists()
        and not user.has_perm("sessions_app.review_plan")
    )
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", PASSWORD)
    _, err = create_reviewer_said("rita", "--set-password")
    assert get_user_model().objects.get(username="rita").check_password(PASSWORD)
    assert "set its new password" in err and "Kept: its password" not in err
