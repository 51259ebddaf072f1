"""OAuth access tokens on the REST API: ``Authorization: Bearer <token>`` of a token bound
to this API (RFC 8707); a token issued for the MCP endpoint or another server is refused."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from sessions_app import access
from sessions_app.oauth.tokens import token_grantee


class OAuthTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer" or not settings.NINEPLAN_OAUTH:
            return None
        grantee = token_grantee(token.strip(), settings.NINEPLAN_API_URL)
        if grantee is None:
            from rest_framework.authtoken.models import Token

            if Token.objects.filter(key=token.strip()).exists():
                return None  # a static token sent as Bearer: BearerTokenAuthentication's
            raise exceptions.AuthenticationFailed(
                "The bearer token is not an active 9plan token for this API (unknown, expired, revoked, "
                "or issued for another resource such as the MCP endpoint)."
            )
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.get(pk=grantee.user_id)
        access.remember_caller(user, grantee.caller)
        return user, grantee

    def authenticate_header(self, request):
        return 'Bearer realm="9plan"'


class OAuthTokenScheme(OpenApiAuthenticationExtension):
    """The schema's name for OAuth access tokens: a bearer token."""

    target_class = OAuthTokenAuthentication
    name = "oauthBearer"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An OAuth access token bound to this API."}
