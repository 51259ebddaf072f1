"""The REST API's ETags: opaque, weak, and matched by their opaque part in If-None-Match and
If-Match alike."""

from __future__ import annotations

import pytest

from sessions_app.api import etags


def test_an_etag_is_weak_opaque_and_follows_the_fingerprint():
    first = etags.for_fingerprint("brave-amber-otter:1")
    assert first.startswith('W/"') and first.endswith('"') and "brave" not in first
    assert etags.for_fingerprint("brave-amber-otter:1") == first
    assert etags.for_fingerprint("brave-amber-otter:2") != first


@pytest.mark.parametrize(
    "header, found",
    [
        (None, False),
        ("", False),
        ("W/", False),
        ('"other"', False),
        ("*", True),
        ("{etag}", True),
        ("{opaque}", True),
        ('"other", {etag}', True),
        ('W/"other", {opaque}', True),
    ],
)
def test_a_header_matches_by_the_opaque_part(header, found):
    etag = etags.for_fingerprint("brave-amber-otter:1")
    sent = header if header is None else header.format(etag=etag, opaque=etag.removeprefix("W/"))
    assert etags.matches(sent, etag) is found
