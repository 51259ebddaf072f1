"""The REST API's ETags: opaque, strong for a JSON answer and weak for the browsable page,
compared weakly in If-None-Match and strongly in If-Match (RFC 9110, section 8.8.3.2)."""

from __future__ import annotations

import pytest

from sessions_app.api import etags

BASE = "http://testserver/"


def test_a_json_answers_etag_is_strong_opaque_and_follows_the_fingerprint():
    first = etags.for_state("brave-amber-otter:1", media_type=etags.JSON, base=BASE)
    assert first.startswith('"') and first.endswith('"') and "brave" not in first
    assert etags.for_state("brave-amber-otter:1", media_type=etags.JSON, base=BASE) == first
    assert etags.for_state("brave-amber-otter:2", media_type=etags.JSON, base=BASE) != first
    # Links to another host are other bytes: another strong ETag.
    assert etags.for_state("brave-amber-otter:1", media_type=etags.JSON, base="https://9plan.example/") != first


def test_the_browsable_page_of_the_same_state_has_another_and_weak_etag():
    page = etags.for_state("brave-amber-otter:1", media_type="text/html", base=BASE)
    json = etags.for_state("brave-amber-otter:1", media_type=etags.JSON, base=BASE)
    assert page.startswith('W/"') and page.removeprefix("W/") != json


# What a request header holds, whether If-None-Match finds the ETag in it (a weak
# comparison) and whether If-Match does (a strong one).
MATCHES = [
    (None, False, False),
    ("", False, False),
    ("W/", False, False),
    ('"other"', False, False),
    # * is any current ETag to If-None-Match; to If-Match it is the caller's to refuse or
    # accept: it is no ETag of this plan.
    ("*", True, False),
    ("{etag}", True, True),
    # A weak validator never matches in a strong comparison, not even with the same opaque part.
    ("W/{etag}", True, False),
    ('"other", {etag}', True, True),
    ('W/"other", W/{etag}', True, False),
]


@pytest.mark.parametrize("header, weakly, strongly", MATCHES)
@pytest.mark.parametrize("comparison", ["if-none-match weakly", "if-match strongly"])
def test_if_none_match_compares_weakly_and_if_match_strongly(comparison, header, weakly, strongly):
    etag = etags.for_state("brave-amber-otter:1", media_type=etags.JSON, base=BASE)
    sent = header if header is None else header.format(etag=etag)
    if comparison == "if-none-match weakly":
        assert etags.matches_weakly(sent, etag) is weakly
    else:
        assert etags.matches_strongly(sent, etag) is strongly


def test_a_weak_etag_matches_nothing_strongly_even_itself():
    page = etags.for_state("brave-amber-otter:1", media_type="text/html", base=BASE)
    assert etags.matches_strongly(page, page) is False
    assert etags.all_weak(page) and etags.all_weak(f'{page}, W/"x"')
    assert not etags.all_weak(f'{page}, "x"') and not etags.all_weak("") and not etags.all_weak(None)
