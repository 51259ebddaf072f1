"""What nineplan/settings.py configures: repeated failed logins to the admin locked out per
username and address (django-axes), and a production configuration that `manage.py check
--deploy` finds nothing wrong with."""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from tests.conftest import MANAGE, PYTHON, REPO
from tests.sessions_app.admin_fixtures import PASSWORD, reviewer  # noqa: F401  (fixture)
from validation.replay import server_environment

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"
HOME = "198.51.100.7"
ELSEWHERE = "203.0.113.9"


def attempt(password: str, *, username: str = "rita", address: str = HOME, client: Client | None = None, **headers):
    client = client or Client()
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address, **headers)


def fail(times: int, **kw) -> None:
    """``times`` failures below the limit: each gets the login form back."""
    for _ in range(times):
        response = attempt("wrong password", **kw)
        assert response.status_code == 200  # the login form again, with Django's own error
        assert b"Please enter the correct username and password" in response.content


def lock_out(**kw) -> None:
    fail(4, **kw)
    assert attempt("wrong password", **kw).status_code == 429


def assert_locked(response) -> None:
    assert response.status_code == 429
    text = response.content.decode()
    assert "Too many failed logins for <strong>rita</strong> from your address" in text
    assert "after 5 wrong passwords" in text and "locked for 15 minutes" in text
    assert "axes_reset_username NAME" in text
    assert "_auth_user_id" not in response.client.session


def test_a_correct_password_before_the_limit_logs_in_and_forgets_the_failures(reviewer):
    fail(4)
    client = Client()
    response = attempt(PASSWORD, client=client)
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    assert AccessAttempt.objects.count() == 0
    fail(4)  # counting starts again
    assert attempt(PASSWORD).status_code == 302


def test_the_limit_locks_the_user_at_that_address_even_with_the_right_password(reviewer):
    fail(4)
    assert_locked(attempt("wrong password"))  # the fifth failure is answered with the lockout
    assert_locked(attempt(PASSWORD))
    assert_locked(attempt("wrong password"))
    (record,) = AccessAttempt.objects.all()
    assert (record.username, record.ip_address) == ("rita", HOME)


def test_a_lockout_touches_neither_other_users_nor_the_same_user_elsewhere(reviewer, settings):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("sam", password=PASSWORD, is_staff=True)
    lock_out()
    assert attempt(PASSWORD, address=ELSEWHERE).status_code == 302
    assert attempt(PASSWORD, username="sam").status_code == 302


def test_a_forged_forwarded_for_header_does_not_escape_the_lockout(reviewer):
    for n in range(5):
        attempt("wrong password", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
    assert_locked(attempt(PASSWORD, HTTP_X_FORWARDED_FOR="192.0.2.200"))


def test_the_lock_ends_after_the_cool_off(reviewer):
    lock_out()
    assert_locked(attempt(PASSWORD))
    # The last failure is now older than the cool-off: the lock has run out.
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert attempt(PASSWORD).status_code == 302


def test_an_administrator_unlocks_a_user_at_once(reviewer):
    lock_out()
    assert_locked(attempt(PASSWORD))
    call_command("axes_reset_username", "rita", stdout=io.StringIO())
    assert AccessAttempt.objects.count() == 0
    assert attempt(PASSWORD).status_code == 302


def test_the_lockout_page_names_the_configured_limit_and_wait(reviewer, settings):
    settings.AXES_FAILURE_LIMIT = 2
    settings.AXES_COOLOFF_TIME = timedelta(hours=1, minutes=30)
    fail(1)
    response = attempt("wrong password")
    assert response.status_code == 429
    assert "after 2 wrong passwords" in response.content.decode()
    assert "locked for 1 hour 30 minutes" in response.content.decode()


def test_the_lockout_page_is_headed_as_every_9plan_page(reviewer, settings):
    settings.AXES_FAILURE_LIMIT = 2
    fail(1)
    html = attempt("wrong password").content.decode()
    assert '<div id="site-name"><a href="/admin/">9plan review</a></div>' in html
    assert "Django administration" not in html and "Django site admin" not in html


@pytest.mark.slow
def test_the_limit_and_the_wait_come_from_the_environment(tmp_path):
    env = server_environment(
        tmp_path / "data",
        NINEPLAN_LOGIN_FAILURE_LIMIT="3",
        NINEPLAN_LOGIN_COOLOFF_MINUTES="60",
        NINEPLAN_LOGIN_LOCKOUT="off",
    )
    code = "from django.conf import settings as s; print(s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME, s.AXES_ENABLED)"
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.strip().splitlines()[-1] == "3 1:00:00 False", done.stderr


def test_behind_a_proxy_the_address_is_the_one_the_proxy_saw(reviewer, settings):
    # What DJANGO_BEHIND_PROXY=true sets: the proxy appends the client's address to
    # X-Forwarded-For, and whatever the client put before it is not believed.
    settings.AXES_IPWARE_META_PRECEDENCE_ORDER = ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"]
    settings.AXES_IPWARE_PROXY_COUNT = 1
    for n in range(5):
        attempt("wrong password", address="127.0.0.1", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, {HOME}")
    assert_locked(attempt(PASSWORD, address="127.0.0.1", HTTP_X_FORWARDED_FOR=f"192.0.2.99, {HOME}"))
    assert attempt(PASSWORD, address="127.0.0.1", HTTP_X_FORWARDED_FOR=ELSEWHERE).status_code == 302
    assert AccessAttempt.objects.get().ip_address == HOME


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
    result = subprocess.run([PYTHON, MANAGE, "check", "--deploy"], env=env, capture_output=True, text=True, timeout=120)
    # The check itself works and would catch a missing setting: HSTS and the redirect.
    assert "security.W004" in result.stderr + result.stdout
    assert "security.W008" in result.stderr + result.stdout


def _database_options(tmp_path, **env: str) -> dict:
    env = server_environment(
        tmp_path / "data", DATABASE_URL="postgres://someone:secret@127.0.0.1:25999/nineplan", **env
    )
    code = "from django.conf import settings as s; print(repr(s.DATABASES['default'].get('OPTIONS', {})))"
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_on_postgresql_the_pooled_connections_prepare_their_statements(tmp_path):
    options = _database_options(tmp_path)
    assert options["pool"]["max_size"] == 10
    assert options["server_side_binding"] is True and options["prepare_threshold"] == 5


@pytest.mark.slow
def test_without_the_pool_nothing_is_prepared_as_a_pooler_in_front_needs(tmp_path):
    options = _database_options(tmp_path, NINEPLAN_DB_POOL_SIZE="0")
    assert "pool" not in options and "server_side_binding" not in options and "prepare_threshold" not in options
