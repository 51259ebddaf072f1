"""The MCP endpoint as an OAuth resource server, through the SDK's own support: its
``AuthSettings`` publish the protected resource metadata (RFC 9728) and answer a request
without a valid token with 401 and ``WWW-Authenticate: Bearer resource_metadata="..."``;
``TokenVerifier`` below says whose a token is.

Two kinds of bearer token are accepted: the static tokens of ``nineplan_mcp_token``
(mcp_bridge.auth), and OAuth access tokens bound to this endpoint (RFC 8707), which act as
their person narrowed to the projects and role chosen on the consent page
(sessions_app.oauth.tokens). Either is checked on every request, so a revocation takes
effect on the next one.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import close_old_connections
from mcp.server.auth.provider import AccessToken

from mcp_bridge import auth

# Where the verifier leaves the token's holder for the tools (mcp_bridge.auth.holder_of).
HOLDER_CLAIM = "nineplan_holder"


def enabled() -> bool:
    return bool(settings.NINEPLAN_OAUTH)


def server_options() -> dict[str, Any]:
    """The MCPServer arguments that make its HTTP app an OAuth resource server ({} while
    OAuth is off)."""
    if not enabled():
        return {}
    from mcp.server.auth.settings import AuthSettings

    # Given as text, which AuthSettings keeps as written: a URL made first would gain a "/"
    # after a bare host, and a client compares the issuer it is sent as a string (RFC 8414).
    urls: dict[str, Any] = {
        "issuer_url": settings.NINEPLAN_PUBLIC_URL,
        "resource_server_url": settings.NINEPLAN_MCP_URL,
    }
    return {
        "auth": AuthSettings(
            **urls,
            # The SDK refuses a token the verifier reports as issued for another resource.
            validate_token_resource=True,
            required_scopes=[settings.OAUTH_SCOPE],
        ),
        "token_verifier": TokenVerifier(),
    }


def check(token: str) -> AccessToken | None:
    """The SDK's view of ``token``: a static token or an OAuth access token bound to this
    endpoint, with its holder for the tools; None for anything else."""
    # A worker thread of the event loop's: its connection goes back before the thread does.
    close_old_connections()
    try:
        resource = settings.NINEPLAN_MCP_URL
        if token.startswith(auth.TOKEN_PREFIX):
            holder = auth.token_check(token)
            if holder is None:
                return None
            client_id = f"9plan-token:{holder.token_id}"
        else:
            from sessions_app.oauth.tokens import token_grantee

            grantee = token_grantee(token, resource)
            if grantee is None:
                return None
            holder = auth.Holder(grantee.access_token_id, grantee.client_name, grantee.caller)
            client_id = f"9plan-oauth:{grantee.consent_id}"
        return AccessToken(
            # The SDK keys an MCP session's owner on client_id: a session opened with one
            # token is refused to any other (and to a refreshed token of the same client).
            token=client_id,
            client_id=client_id,
            scopes=[settings.OAUTH_SCOPE],
            resource=resource,
            claims={HOLDER_CLAIM: holder},
        )
    finally:
        close_old_connections()


class TokenVerifier:
    """The SDK's ``TokenVerifier``: the database is read in a worker thread."""

    async def verify_token(self, token: str) -> AccessToken | None:
        import anyio

        if not token or len(token) > 500:
            return None
        return await anyio.to_thread.run_sync(check, token.strip())
