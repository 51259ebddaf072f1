"""Bearer tokens for the MCP HTTP transport: create, list, revoke, check; and the ASGI
middleware that refuses a request with an invalid token (or without one, where required).

A token is 256 random bits; the database keeps only its SHA-256 digest, so a copy of the
database (a backup, a replica) gives nobody a usable token. A high-entropy secret needs no
slow password hash: nobody can guess their way back from its digest.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, close_old_connections, transaction
from django.db.models import BigIntegerField, BooleanField, CharField, DateTimeField, F, IntegerField, Value
from django.utils import timezone

from sessions_app.access import Caller
from sessions_app.clock import utc_text
from sessions_app.models import DEFAULT_PROJECT, Role

log = logging.getLogger("nineplan.mcp")

TOKEN_PREFIX = "9plan_"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,99}")
# last_used_at is for the operator's eye ("is this token still in use?"): writing it on
# every request would make every read a write, so it is refreshed at most this often.
LAST_USED_EVERY = timedelta(minutes=1)


class TokenError(Exception):
    """A token command that cannot be done; the message says why and what to do."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise TokenError(
            f"Token name {name!r} is not accepted: use 1 to 100 characters of letters, digits, '.', '_', '@' "
            "and '-', starting with a letter or digit (e.g. 'build-server' or 'alice@laptop')."
        )
    return name


def token_create(*, name: str, user: str | None = None, projects: list[str] | tuple[str, ...] = ()) -> str:
    """Creates an active token named ``name`` for ``user`` and returns it; only its digest is
    kept. The token carries its user's roles, narrowed to ``projects`` when any are named
    (each must be a project of the user's). A token without a user works as tokens made
    before tokens had users: the agent role in the default project only."""
    from django.contrib.auth import get_user_model

    from mcp_bridge.models import McpToken
    from sessions_app.models import Membership, Project

    name = _check_name(name)
    owner = None
    if user is not None:
        owner = get_user_model().objects.filter(username=user, is_active=True).first()
        if owner is None:
            raise TokenError(
                f"No active user named '{user}'; make one a member of a project first: "
                f"`9plan project grant PROJECT {user} agent`."
            )
    narrowed = sorted(set(projects))
    if narrowed:
        if owner is None:
            raise TokenError("--project narrows a user's token: name its user with --user.")
        known = set(Project.objects.filter(name__in=narrowed).values_list("name", flat=True))
        if not owner.is_superuser:
            known &= set(
                Membership.objects.filter(user=owner, project__in=narrowed).values_list("project_id", flat=True)
            )
        missing = [p for p in narrowed if p not in known]
        if missing:
            raise TokenError(
                f"'{user}' is not a member of project(s) {', '.join(missing)}; a token can only be narrowed to its "
                "user's projects (`9plan project list` shows them)."
            )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            if McpToken.objects.filter(name=name, revoked=False).exists():
                raise TokenError(f"An active token named '{name}' exists; revoke it first or pick another name.")
            made = McpToken.objects.create(name=name, token_hash=digest(token), user=owner)
            if narrowed:
                # Project names are its primary keys; the stubs take every primary key for an int.
                made.projects.set(narrowed)  # type: ignore[arg-type]
    except IntegrityError:
        # Another process created the name between the check and the insert.
        raise TokenError(f"An active token named '{name}' exists; revoke it first or pick another name.") from None
    log.info("mcp token created", extra={"token_name": name})
    return token


def token_revoke(*, name: str) -> int:
    """Revokes the active token named ``name``; it stops working at its next request."""
    from mcp_bridge.models import McpToken

    name = _check_name(name)
    count = McpToken.objects.filter(name=name, revoked=False).update(revoked=True, revoked_at=timezone.now())
    if not count:
        raise TokenError(f"No active token is named '{name}'; `nineplan_mcp_token list` shows them.")
    log.info("mcp token revoked", extra={"token_name": name})
    return count


def token_list():
    from mcp_bridge.models import McpToken

    tokens = McpToken.objects.select_related("user").prefetch_related("projects")
    return list(tokens.order_by("revoked", "name", "-created_at"))


def active_token_count() -> int:
    from mcp_bridge.models import McpToken

    return McpToken.objects.filter(revoked=False).count()


@dataclass(frozen=True)
class Holder:
    """Who a request's token belongs to, and what it may do (its user's roles, narrowed)."""

    token_id: int
    name: str
    caller: Caller


def token_check(token: str) -> Holder | None:
    """The holder of ``token`` if it is active (and its user too), else None: the token,
    its user, the user's roles and the token's projects, read in one statement.

    The token is found by its digest through the unique index: a guess's timing can at
    most tell how a digest of the guess compares with stored digests, which gives nothing
    towards a token (finding a token from a digest is finding a SHA-256 preimage)."""
    rows = token_rows(digest(token))
    if not rows or rows[0].kind != "token":
        return None
    first = rows[0]
    assert first.token_id is not None  # a token's row always carries its id
    if first.user_id is not None and not first.active:
        return None
    roles = {r.project: r.role for r in rows if r.kind == "member"}
    narrowed = frozenset(r.project for r in rows if r.kind == "project")
    if first.user_id is None:
        # Made before tokens belonged to users: the agent role in the default project.
        username, everything, roles = None, False, {DEFAULT_PROJECT: Role.AGENT}
    else:
        username, everything = first.username, first.superuser
        if narrowed:
            roles = {p: r for p, r in roles.items() if p in narrowed}
    label = f"agent:{first.name}" if username is None else f"agent:{username}/{first.name}"
    caller = Caller(
        label=label,
        everything=everything,
        roles=roles,
        within=narrowed if everything and narrowed else None,
        claimant=f"token:{first.token_id}",
    )
    now = timezone.now()
    if first.last_used is None or now - first.last_used >= LAST_USED_EVERY:
        from mcp_bridge.models import McpToken

        McpToken.objects.filter(id=first.token_id).update(last_used_at=now)
    return Holder(first.token_id, first.name, caller)


@dataclass(frozen=True)
class _Row:
    kind: str
    token_id: int | None = None
    name: str = ""
    last_used: datetime | None = None
    user_id: int | None = None
    username: str | None = None
    superuser: bool = False
    active: bool = False
    project: str = ""
    role: str = ""


# What each row of token_rows says, in its order: each part of its statement selects these.
_ROW_COLUMNS = (
    "kind",
    "token_id",
    "token_name",
    "last_used",
    "owner",
    "username",
    "superuser",
    "user_active",
    "project_name",
    "role_name",
)
# The token's columns in the rows that are not the token's.
_NO_TOKEN = {
    "token_id": Value(None, output_field=BigIntegerField()),
    "token_name": Value(""),
    "last_used": Value(None, output_field=DateTimeField()),
    "owner": Value(None, output_field=IntegerField()),
    "username": Value(None, output_field=CharField()),
    "superuser": Value(None, output_field=BooleanField()),
    "user_active": Value(None, output_field=BooleanField()),
}


def token_rows(wanted: str) -> list[_Row]:
    """The active token of digest ``wanted`` (first row), then its user's memberships and
    the projects it is narrowed to: one statement, so checking a token costs one round trip
    whatever rights it carries."""
    from mcp_bridge.models import McpToken
    from sessions_app.models import Membership

    def part(rows, kind: int, **columns):
        """``rows`` selecting _ROW_COLUMNS: ``kind``, ``columns``, and blanks for the rest."""
        blank = {c: value for c, value in _NO_TOKEN.items() if c not in columns}
        return rows.order_by().values(kind=Value(kind), **blank, **columns).values_list(*_ROW_COLUMNS)

    token = part(
        McpToken.objects.filter(token_hash=wanted, revoked=False),
        0,
        token_id=F("id"),
        token_name=F("name"),
        last_used=F("last_used_at"),
        owner=F("user_id"),
        username=F("user__username"),
        superuser=F("user__is_superuser"),
        user_active=F("user__is_active"),
        project_name=Value(""),
        role_name=Value(""),
    )
    members = part(
        Membership.objects.filter(
            user__nineplan_mcp_tokens__token_hash=wanted, user__nineplan_mcp_tokens__revoked=False
        ),
        1,
        project_name=F("project_id"),
        role_name=F("role"),
    )
    narrowed = part(
        McpToken.projects.through.objects.filter(mcptoken__token_hash=wanted, mcptoken__revoked=False),
        2,
        project_name=F("project_id"),
        role_name=Value(""),
    )
    kinds = ("token", "member", "project")
    return [
        _Row(kinds[kind], token_id, name, last_used, user_id, username, bool(superuser), bool(active), project, role)
        for kind, token_id, name, last_used, user_id, username, superuser, active, project, role in token.union(
            members, narrowed, all=True
        ).order_by("kind")
    ]


def _check_in_thread(token: str) -> Holder | None:
    # Runs in a worker thread (the ORM is synchronous); the connection goes back (to the
    # pool on PostgreSQL) before the thread is handed to someone else.
    close_old_connections()
    try:
        return token_check(token)
    finally:
        close_old_connections()


def bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if there is exactly one."""
    values = [v for k, v in headers if k.lower() == b"authorization"]
    if len(values) != 1:
        return None
    scheme, _, token = values[0].decode("latin-1").strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > 200:
        return None
    return token


def presents_credentials(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(k.lower() == b"authorization" for k, _ in headers)


# The ASGI scope key under which the middleware leaves the request's token holder.
HOLDER_KEY = "nineplan.token_holder"


def holder_of(request: object) -> Holder | None:
    """The token holder of an HTTP request the middleware let through, else None (stdio,
    or a loopback request that presented no token)."""
    scope = getattr(request, "scope", None)
    holder = scope.get(HOLDER_KEY) if isinstance(scope, dict) else None
    if holder is None and isinstance(scope, dict):
        # With OAuth on, the SDK's own bearer check let the request through (mcp_bridge.oauth).
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

        from mcp_bridge.oauth import HOLDER_CLAIM

        user = scope.get("user")
        if isinstance(user, AuthenticatedUser):
            holder = (user.access_token.claims or {}).get(HOLDER_CLAIM)
    return holder if isinstance(holder, Holder) else None


class BearerTokenMiddleware:
    """ASGI middleware in front of the MCP app: checks bearer tokens.

    A token that is presented must be active, whether or not tokens are required: a
    mistyped or revoked token gets 401 rather than passing as if none had been sent,
    so a client never works by accident and then breaks when tokens become required.
    Without a token, a request passes only when tokens are not required.

    A refused request is answered before the MCP app sees any of it, so it can change
    nothing. The holder of an accepted token becomes the request's authenticated user:
    the SDK then binds each MCP session to the token that opened it, and refuses it to
    any other; the tools name the holder as the actor of what they record.
    """

    def __init__(self, app, *, required: bool):
        self.app = app
        self.required = required

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers", [])
        if not self.required and not presents_credentials(headers):
            await self.app(scope, receive, send)
            return
        import anyio

        token = bearer(headers)
        holder = await anyio.to_thread.run_sync(_check_in_thread, token) if token else None
        if holder is None:
            problem = "missing" if not presents_credentials(headers) else "invalid"
            log.warning(
                "mcp request refused: missing or invalid bearer token",
                extra={"problem": problem, "client": (scope.get("client") or ("?",))[0], "path": scope.get("path")},
            )
            await _unauthorized(send, problem)
            return
        scope = dict(scope)
        scope["user"] = _authenticated_user(holder)
        scope[HOLDER_KEY] = holder
        await self.app(scope, receive, send)


def _authenticated_user(holder: Holder):
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    # The SDK keys session ownership on client_id; the token's id keeps two tokens that
    # share a name over time (one revoked, one new) apart.
    identity = AccessToken(token=f"id:{holder.token_id}", client_id=f"9plan-token:{holder.token_id}", scopes=[])
    return AuthenticatedUser(identity)


async def _unauthorized(send, problem: str) -> None:
    description = (
        "This 9plan MCP server requires 'Authorization: Bearer <token>'; create a token with "
        "`manage.py nineplan_mcp_token create NAME` on the server."
        if problem == "missing"
        else "The Authorization header does not carry an active 9plan MCP token (unknown, revoked or "
        "malformed). A token that is sent is always checked, even where none is required: send an "
        "active token as 'Authorization: Bearer <token>', or ask the operator for a new one."
    )
    body = json.dumps({"error": "invalid_token", "error_description": description}).encode("utf-8")
    challenge = 'Bearer realm="9plan"' + ("" if problem == "missing" else ', error="invalid_token"')
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def describe(token) -> dict[str, str]:
    """One token as the list command shows it."""

    def when(value: datetime | None) -> str:
        return utc_text(value) if value else "never"

    projects = sorted(p.name for p in token.projects.all())
    return {
        "name": token.name,
        # A token made before tokens had users shows "-": it works as an agent in "default".
        "user": token.user.get_username() if token.user_id else "-",
        "projects": ",".join(projects) if projects else "all",
        "status": "revoked" if token.revoked else "active",
        "created": when(token.created_at),
        "last_used": when(token.last_used_at),
    }
