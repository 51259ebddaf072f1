"""The REST API's ETags, made from a fingerprint of the state an answer shows (RFC 9110,
section 8.8.3).

A JSON answer's ETag is strong: the same state, asked for at the same address, is the same
bytes, so a client may send it in If-Match to act on exactly what it read (the review
decision). The browsable HTML page of the same state is weak (``W/``): it also shows the
signed-in user and a fresh CSRF token. If-None-Match compares weakly (either kind matches
its own representation's state); If-Match compares strongly, so a weak ETag never matches.
"""

from __future__ import annotations

import hashlib

from django.utils.http import parse_etags

JSON = "application/json"
ANY = "*"


def for_state(fingerprint: str, *, media_type: str, base: str) -> str:
    """The ETag of ``fingerprint`` rendered as ``media_type`` with links under ``base``."""
    # Hashed so that clients treat it as opaque. The media type and the base address are
    # part of it: another representation, or links to another host, are other bytes.
    digest = hashlib.blake2b(f"{media_type}\n{base}\n{fingerprint}".encode(), digest_size=10).hexdigest()
    strong = media_type.partition(";")[0].strip() == JSON  # "application/json; indent=4" too
    return f'"{digest}"' if strong else f'W/"{digest}"'


def for_representation(fingerprint: str, request) -> str:
    """The ETag of ``fingerprint`` as this request gets it (JSON, or the browsable page)."""
    return for_state(fingerprint, media_type=request.accepted_media_type, base=request.build_absolute_uri("/"))


def for_json(fingerprint: str, request) -> str:
    """The strong ETag of the JSON answer for ``fingerprint``, whatever this request accepts."""
    return for_state(fingerprint, media_type=JSON, base=request.build_absolute_uri("/"))


def sent(header: str | None) -> list[str]:
    """The ETags an If-Match or If-None-Match header lists (``["*"]`` for any); none if absent or malformed."""
    return parse_etags(header) if header else []


def matches_weakly(header: str | None, etag: str) -> bool:
    """If-None-Match: whether the header names ``etag``, ignoring ``W/`` on either side."""
    wanted = etag.removeprefix("W/")
    return any(tag == ANY or tag.removeprefix("W/") == wanted for tag in sent(header))


def matches_strongly(header: str | None, etag: str) -> bool:
    """If-Match: whether the header names ``etag`` exactly, both strong. ``*`` is the
    caller's to handle (it matches any current state)."""
    return not etag.startswith("W/") and any(tag == etag for tag in sent(header))


def all_weak(header: str | None) -> bool:
    """Whether the header lists ETags and every one is weak (so no strong comparison can succeed)."""
    tags = sent(header)
    return bool(tags) and all(tag.startswith("W/") for tag in tags)
