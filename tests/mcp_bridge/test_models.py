"""The MCP token table (mcp_bridge/models.py): a digest is stored once, a name is taken by
one active token at a time and freed when it is revoked, a token goes with its user, and a
token says whether it is active. (Making, checking and revoking tokens: test_auth.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from mcp_bridge.models import McpToken

pytestmark = pytest.mark.django_db


def digest(n: int) -> str:
    return f"{n:064x}"


def refused(constraint: str, **fields) -> None:
    """Inserting ``fields`` fails on ``constraint`` (named by PostgreSQL; SQLite names its
    columns) and adds no token."""
    before = McpToken.objects.count()
    with pytest.raises(IntegrityError) as info, transaction.atomic():
        McpToken.objects.create(**fields)
    if connection.vendor == "postgresql":
        assert constraint in str(info.value)
    assert McpToken.objects.count() == before


def test_a_digest_is_stored_once():
    McpToken.objects.create(name="ci", token_hash=digest(1))
    refused("token_hash", name="laptop", token_hash=digest(1))
    assert list(McpToken.objects.values_list("name", flat=True)) == ["ci"]


def test_a_name_is_taken_by_one_active_token_at_a_time():
    first = McpToken.objects.create(name="ci", token_hash=digest(1))
    refused("mcp_token_active_name_unique", name="ci", token_hash=digest(2))
    McpToken.objects.filter(pk=first.pk).update(revoked=True, revoked_at=timezone.now())
    # Revoked, the token keeps its row and name; a new active token may take the name,
    # and another revoked one may keep it too.
    McpToken.objects.create(name="ci", token_hash=digest(2))
    McpToken.objects.create(name="ci", token_hash=digest(3), revoked=True)
    refused("mcp_token_active_name_unique", name="ci", token_hash=digest(4))
    assert sorted(McpToken.objects.filter(name="ci").values_list("revoked", flat=True)) == [False, True, True]


def test_a_token_goes_with_its_user_and_a_token_without_one_stays():
    user = get_user_model().objects.create_user("ci-bot")
    McpToken.objects.create(name="build-server", token_hash=digest(1), user=user)
    McpToken.objects.create(name="old-laptop", token_hash=digest(2))
    user.delete()
    assert list(McpToken.objects.values_list("name", "user")) == [("old-laptop", None)]


def test_tokens_are_listed_by_name_then_newest_first():
    now = timezone.now()
    McpToken.objects.create(name="ci", token_hash=digest(1), created_at=now - timedelta(days=2), revoked=True)
    McpToken.objects.create(name="ci", token_hash=digest(2), created_at=now)
    McpToken.objects.create(name="alpha", token_hash=digest(3), created_at=now - timedelta(days=9))
    assert list(McpToken.objects.values_list("token_hash", flat=True)) == [digest(3), digest(2), digest(1)]


def test_a_token_says_whether_it_is_active():
    token = McpToken.objects.create(name="ci", token_hash=digest(1))
    assert (token.revoked, token.revoked_at, token.last_used_at) == (False, None, None)
    assert str(token) == "ci (active)"
    token.revoked = True
    assert str(token) == "ci (revoked)"
