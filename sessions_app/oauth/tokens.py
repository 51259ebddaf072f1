"""OAuth access tokens as callers: who a token acts as, at which resource, with which rights.

A token acts as its person narrowed to what the person consented to (sessions_app.models.
Consent): the chosen role in each chosen project the person is still a member of. It is
bound to the resource it was issued for (RFC 8707): the MCP endpoint's token is refused by
the REST API and the other way round, and a token issued for another server is refused by
both. Tokens are found by their SHA-256 checksum; the database holds no token itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.utils import timezone

from sessions_app.access import ROLES_FOR, Caller
from sessions_app.models import Role

# The rights each role gives, for narrowing a consented role to a member's present one.
RIGHTS = {role: frozenset(need for need, roles in ROLES_FOR.items() if role in roles) for role in Role.values}


def role_within(chosen: str, own: str) -> str:
    """``chosen`` where it gives no right ``own`` lacks; else the reader role (every role
    may see its project)."""
    return chosen if RIGHTS[chosen] <= RIGHTS[own] else Role.READER


def roles_allowed(own: str | None, *, superuser: bool) -> list[str]:
    """The roles a person with role ``own`` may give a client (a superuser: any)."""
    if superuser:
        return list(Role.values)
    if own is None:
        return []
    return [role for role in Role.values if RIGHTS[role] <= RIGHTS[own]]


@dataclass(frozen=True)
class Grantee:
    """Who an OAuth token acts as: its person, the client, and the narrowed rights."""

    access_token_id: int
    consent_id: int
    user_id: int
    client_name: str
    caller: Caller


def same_resource(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def token_grantee(token: str, resource: str) -> Grantee | None:
    """The grantee of an active access token issued for ``resource``, else None: unknown,
    revoked, expired, issued for another resource, its person inactive or no longer a member
    of any consented project, or its consent withdrawn."""
    from oauth2_provider.models import get_access_token_model

    from sessions_app.models import Consent, Membership

    if not token or len(token) > 500 or not resource:
        return None
    checksum = hashlib.sha256(token.encode("utf-8")).hexdigest()
    found = (
        get_access_token_model()
        .objects.select_related("user", "application")
        .filter(token_checksum=checksum, expires__gt=timezone.now())
        .first()
    )
    if found is None or found.user is None or not found.user.is_active or found.application is None:
        return None
    if not any(same_resource(bound, resource) for bound in found.resource or ()):
        return None
    consent = Consent.objects.filter(user=found.user, application=found.application).first()
    if consent is None:
        return None
    chosen = set(consent.projects.values_list("name", flat=True))
    user = found.user
    if user.is_superuser:
        roles = dict.fromkeys(chosen, consent.role)
    else:
        own = dict(Membership.objects.filter(user=user, project__in=chosen).values_list("project_id", "role"))
        roles = {project: role_within(consent.role, role) for project, role in own.items()}
    if not roles:
        return None  # removed from every project the client was let into
    name = found.application.name or found.application.client_id
    caller = Caller(
        label=f"agent:{user.get_username()}/oauth:{consent.id}",
        roles=roles,
        # The client's worker is its own: never the person's other tokens' or clients'.
        claimant=f"oauth:{consent.id}",
    )
    return Grantee(found.id, consent.id, user.pk, name, caller)
