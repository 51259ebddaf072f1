"""The REST API's ETags: made from a fingerprint of the state an answer shows, and matched
against an If-None-Match or If-Match header by their opaque part (every ETag of this API is
weak)."""

from __future__ import annotations

import hashlib

from django.utils.http import parse_etags


def for_fingerprint(fingerprint: str) -> str:
    # Hashed so that clients treat it as opaque; weak because the same state may be
    # rendered as JSON or as the browsable HTML page.
    return f'W/"{hashlib.blake2b(fingerprint.encode(), digest_size=10).hexdigest()}"'


def matches(header: str | None, etag: str) -> bool:
    """Whether the header (a list of ETags, or ``*`` for any) names ``etag``; no header names none."""
    if not header:
        return False
    wanted = etag.removeprefix("W/")
    return any(tag == "*" or tag.removeprefix("W/") == wanted for tag in parse_etags(header))
