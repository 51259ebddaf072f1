"""The admin's commands and settings: `create_reviewer`, `nineplan_demo`, and a production
configuration that `manage.py check --deploy` finds nothing wrong with."""

from __future__ import annotations

import io
import json
import os
import subprocess

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import CommandError, call_command

from sessions_app import invariants, needs_you, queries
from sessions_app.admin.roles import REVIEWERS_GROUP, ensure_reviewers_group
from sessions_app.models import Event, Plan, Session
from sessions_app.management.commands.nineplan_demo import PARALLEL_TASK, TASK
from tests.conftest import MANAGE, PYTHON

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


# --- create_reviewer ---------------------------------------------------------------------


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
    assert out == "" and "Updated existing user 'rita'" in err and "made it staff" in err and "Kept: its password" in err

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
    assert user.check_password("old one here 99") and not user.groups.exists() and not user.has_perm("sessions_app.review_plan")
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", PASSWORD)
    _, err = create_reviewer_said("rita", "--set-password")
    assert get_user_model().objects.get(username="rita").check_password(PASSWORD)
    assert "set its new password" in err and "Kept: its password" not in err


def test_the_reviewers_group_is_reset_to_view_only():
    group = ensure_reviewers_group()
    group.permissions.add(Permission.objects.get(codename="change_plan"))
    ensure_reviewers_group()
    codenames = set(Group.objects.get(name=REVIEWERS_GROUP).permissions.values_list("codename", flat=True))
    assert codenames == {"view_session", "view_plan", "view_event"}


# --- nineplan_demo -----------------------------------------------------------------------


def test_demo_builds_a_realistic_valid_session(sessions_dir):
    out = io.StringIO()
    call_command("nineplan_demo", verbosity=2, stdout=out)
    session = Session.objects.get(task_description=TASK)
    text = out.getvalue()
    assert f"Created demo session {session.name}" in text
    counts = dict.fromkeys(("queued", "active", "completed", "discarded"), 0)
    for status in Plan.objects.filter(session=session).values_list("status", flat=True):
        counts[status] += 1
    assert counts == {"queued": 3, "active": 1, "completed": 5, "discarded": 2}
    assert all(Plan.objects.filter(status="completed").values_list("outcome", flat=True))
    for plan in Plan.objects.filter(session=session):
        assert plan.id in text
        assert (sessions_dir / session.name / "plans" / f"{plan.id}.txt").exists() == plan.is_open
    assert invariants.check_invariants(session.name).valid
    assert invariants.check_invariants(Session.objects.exclude(name=session.name).get().name).valid
    actors = set(Event.objects.filter(session=session).values_list("actor", flat=True))
    assert actors == {"agent", "user:demo-staff"}
    times = list(Event.objects.filter(session=session).order_by("id").values_list("created_at", flat=True))
    assert times == sorted(times) and len(set(times)) == len(times)
    assert (times[-1] - times[0]).total_seconds() > 3 * 3600
    assert session.created_at == times[0]
    assert queries.history_search("webhook", session_name=session.name)[0].plan.goal.startswith("Port the payment webhook")


@pytest.mark.django_db(transaction=True)
def test_demo_says_what_it_made_in_two_lines_and_logs_only_when_asked(subprocess_env):
    def demo(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [PYTHON, MANAGE, "nineplan_demo", *args], env=subprocess_env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done

    plain = demo()
    first = Session.objects.get(task_description=TASK)
    parallel = Session.objects.get(task_description=PARALLEL_TASK)
    assert plain.stdout.splitlines() == [
        f"Created demo session {first.name}: 3 queued, 1 active, 5 completed, 2 discarded; "
        f"{Event.objects.filter(session=first).count()} events over 6 hours.",
        f"Admin page: /admin/sessions_app/session/{first.name}/change/",
        f"Created demo session {parallel.name}: 2 queued, 2 active, 1 completed, 0 discarded, 1 in review, 1 held; "
        f"{Event.objects.filter(session=parallel).count()} events over 6 hours.",
        f"Admin page: /admin/sessions_app/session/{parallel.name}/change/",
    ]
    assert plain.stderr == ""

    verbose = demo("-v", "2")
    second = Session.objects.exclude(name__in=[first.name, parallel.name]).get(task_description=TASK)
    assert f"Created demo session {second.name}" in verbose.stdout
    assert all(plan.id in verbose.stdout for plan in Plan.objects.filter(session=second))
    logged = [json.loads(line) for line in verbose.stderr.splitlines()]
    assert {"level": "info", "msg": "session created", "session": second.name}.items() <= logged[0].items()
    assert all(entry["level"] == "info" for entry in logged) and len(logged) > 10


def test_after_the_demo_every_panel_of_the_home_has_something(sessions_dir):
    call_command("nineplan_demo", stdout=io.StringIO())
    home = needs_you.home()
    panels = {
        "in review": home.in_review,
        "held": home.held,
        "waiting": home.waiting,
        "late writes and lost leases": home.trouble,
        "blocked behind a person": home.blocked,
        "sessions with workers": home.busy,
    }
    assert {name: len(rows) >= 1 for name, rows in panels.items()} == dict.fromkeys(panels, True)
    assert {t.event.kind for t in home.trouble} == {"late_write_kept", "plan_reclaimed"}
    assert max(len(b.plans) for b in home.busy) == 2  # several workers in one session
    assert home.blocked[0].blocker_id == home.held[0].id
    assert home.counts == needs_you.Counts(in_review=1, held=1, waiting=1)


# --- production settings -----------------------------------------------------------------


@pytest.mark.slow
def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    # The secret key is generated once in the data directory, as in a real deployment.
    env.update(
        DJANGO_SETTINGS_MODULE="nineplan.settings",
        NINEPLAN_SESSIONS_PATH=str(tmp_path / "data" / "sessions"),
        DJANGO_SECURE="true",
        DJANGO_SECURE_HSTS_SECONDS="31536000",
        DJANGO_SECURE_SSL_REDIRECT="true",
        DJANGO_ALLOWED_HOSTS="9plan.example.com",
    )
    result = subprocess.run(
        [PYTHON, MANAGE, "check", "--deploy", "--fail-level", "DEBUG"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNING" not in result.stdout + result.stderr
    key = (tmp_path / "data" / "secret_key").read_text()
    assert len(key) >= 50
    assert oct((tmp_path / "data" / "secret_key").stat().st_mode & 0o777) == "0o600"


@pytest.mark.slow
def test_check_deploy_warns_without_them(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))}
    env.update(DJANGO_SETTINGS_MODULE="nineplan.settings", NINEPLAN_SESSIONS_PATH=str(tmp_path / "sessions"))
    result = subprocess.run(
        [PYTHON, MANAGE, "check", "--deploy"], env=env, capture_output=True, text=True, timeout=120
    )
    # The check itself works and would catch a missing setting: HSTS and the redirect.
    assert "security.W004" in result.stderr + result.stdout
    assert "security.W008" in result.stderr + result.stdout
