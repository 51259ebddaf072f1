"""How REST callers sign in: a user's token, sent as ``Authorization: Token <key>`` (DRF's
word) or ``Authorization: Bearer <key>`` (what MCP clients and most HTTP tools send), or the
admin's session cookie."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    """The same token under the ``Bearer`` keyword."""

    keyword = "Bearer"


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """How the schema describes it: HTTP bearer authentication, beside DRF's ``tokenAuth``."""

    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A user's REST token, as `Bearer <key>`."}
