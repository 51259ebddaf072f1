"""Single sign-on for people through the company's OpenID Connect provider, on
mozilla-django-oidc: its views check the state and the nonce and its backend the ID token's
signature; this module finds the provider's endpoints from its issuer (OpenID Connect
Discovery) and gives a person signing in for the first time the roles their groups map to
(NINEPLAN_OIDC_GROUP_ROLES), or none."""

from __future__ import annotations

import logging
import threading

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

log = logging.getLogger("nineplan.sso")

# The provider's endpoints, by the names mozilla-django-oidc reads them under.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
_lock = threading.Lock()
_found: dict[str, dict] = {}


def provider_metadata() -> dict:
    """The provider's discovery document (fetched once per process), checked to name the
    configured issuer: a document naming another issuer would hand sign-in to someone else."""
    issuer: str = settings.NINEPLAN_OIDC_ISSUER or ""
    with _lock:
        if issuer not in _found:
            answer = requests.get(issuer + "/.well-known/openid-configuration", timeout=10)
            answer.raise_for_status()
            document = answer.json()
            if document.get("issuer", "").rstrip("/") != issuer.rstrip("/"):
                raise ImproperlyConfigured(
                    f"NINEPLAN_OIDC_ISSUER={issuer!r}, but its discovery document names {document.get('issuer')!r}."
                )
            _found[issuer] = document
        return _found[issuer]


def setting(name: str, *default):
    if name in DISCOVERED:
        return provider_metadata()[DISCOVERED[name]]
    return import_from_settings(name, *default)


class SignInView(OIDCAuthenticationRequestView):
    """Sends the person to the provider (with a fresh state and nonce in their session)."""

    @staticmethod
    def get_settings(attr, *args):
        return setting(attr, *args)


class CallbackView(OIDCAuthenticationCallbackView):
    """The provider's answer. One that does not belong to this sign-in (an ID token whose
    nonce is another's) is refused like a wrong state: back to the sign-in page, nobody
    signed in, rather than the library's bare 400."""

    def get(self, request):
        try:
            return super().get(request)
        except SuspiciousOperation:
            log.warning("single sign-on answer refused: it does not belong to this sign-in")
            return self.login_failure()


class Backend(OIDCAuthenticationBackend):
    """Signs in the person the provider vouches for; the first time, with the roles their
    groups map to."""

    @staticmethod
    def get_settings(attr, *args):
        return setting(attr, *args)

    def get_username(self, claims):
        return claims.get("preferred_username") or claims.get("email")

    def create_user(self, claims):
        from sessions_app.services import roles_from_groups

        user = super().create_user(claims)
        user.is_staff = True  # members read their projects in the admin, which only staff enter
        user.save(update_fields=["is_staff"])
        groups = claims.get(settings.NINEPLAN_OIDC_GROUPS_CLAIM) or []
        if isinstance(groups, str):
            groups = [groups]
        granted = roles_from_groups(user=user, groups=[g for g in groups if isinstance(g, str)])
        log.info("sso user created", extra={"username": user.get_username(), "roles": granted})
        return user
