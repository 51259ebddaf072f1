"""`check --deploy` on sign-in: tokens and codes must not cross the network in the clear."""

from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.security, deploy=True)
def oauth_over_https(app_configs, **kwargs):
    if not settings.NINEPLAN_OAUTH:
        return []
    plain = [
        name
        for name in ("NINEPLAN_PUBLIC_URL", "NINEPLAN_MCP_URL")
        if getattr(settings, name).lower().startswith("http://")
    ]
    if not plain:
        return []
    return [
        checks.Warning(
            f"OAuth is on (NINEPLAN_OAUTH) but {' and '.join(plain)} {'is' if len(plain) == 1 else 'are'} not https: "
            "access tokens, refresh tokens "
            "and authorization codes would cross the network readable by anyone on the way.",
            hint="Serve 9plan behind TLS and set NINEPLAN_PUBLIC_URL=https://... (DJANGO_BEHIND_PROXY=true "
            "behind a proxy that terminates TLS).",
            id="nineplan.W101",
        )
    ]
