"""`token`: the REST token that lets an integration in, read-only, shown again when
asked and revoked by --reset."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.sessions_app.api_fixtures import full_session  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _token(*args) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("token", *args, stdout=out, stderr=err)
    return out.getvalue().strip()


def test_the_token_command_creates_a_read_only_api_user(full_session):
    key = _token("dashboard", "--create")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get(f"/api/sessions/{full_session.name}/").status_code == 200
    assert client.post("/api/sessions/").status_code == 403  # a reader puts no work in
    user = Token.objects.get(key=key).user
    assert not user.is_staff and not user.has_usable_password()
    # Asking again prints the same token; --reset revokes it.
    assert _token("dashboard") == key
    fresh = _token("dashboard", "--reset")
    assert fresh != key and not Token.objects.filter(key=key).exists()
    assert client.get("/api/sessions/").status_code == 401


def test_the_token_command_needs_an_existing_user_or_create(db):
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        _token("nobody")
    assert not Token.objects.exists()


def test_the_token_command_warns_when_the_user_cannot_read(db):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("plain")
    out, err = io.StringIO(), io.StringIO()
    call_command("token", "plain", stdout=out, stderr=err)
    assert "403" in err.getvalue() and Token.objects.get(user__username="plain").key == out.getvalue().strip()
