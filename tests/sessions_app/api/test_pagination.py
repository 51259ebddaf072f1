"""Pagination of the REST answers: the window a request asks for, and the links either side
of it (a list's first page is its own URL; the history search names page 1)."""

from __future__ import annotations

import pytest
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from sessions_app.api import params
from sessions_app.api.pagination import RequestedPage
from sessions_app.errors import ValidationFailed


def request(query: str = "") -> Request:
    return Request(APIRequestFactory().get(f"/api/sessions/?{query}"))


def test_the_window_defaults_to_the_first_page_of_the_default_size():
    window = RequestedPage.requested(request())
    assert window == RequestedPage(1, params.PAGE_SIZE.default)
    assert (window.start, window.end) == (0, params.PAGE_SIZE.default)


def test_the_window_takes_the_page_and_the_size_asked_for():
    window = RequestedPage.requested(request("page=3&page_size=7"))
    assert (window.number, window.size, window.start, window.end) == (3, 7, 14, 21)


def test_the_size_parameter_may_be_the_endpoints_own():
    own = params.IntParam("page_size", 10, 1, 50, "Hits per page.")
    assert RequestedPage.requested(request(), own).size == 10
    with pytest.raises(ValidationFailed) as refused:
        RequestedPage.requested(request("page_size=51"), own)
    assert refused.value.field == "page_size"


def test_the_first_page_links_only_forward():
    links = RequestedPage(1, 5).links(request("page_size=5"), has_next=True)
    assert links == {
        "page": 1,
        "page_size": 5,
        "next": "http://testserver/api/sessions/?page=2&page_size=5",
        "previous": None,
    }
    assert RequestedPage(1, 5).links(request("page_size=5"), has_next=False)["next"] is None


@pytest.mark.parametrize(
    "name_first_page, previous",
    [
        (False, "http://testserver/api/sessions/?page_size=5"),
        (True, "http://testserver/api/sessions/?page=1&page_size=5"),
    ],
)
def test_page_two_links_back_to_the_first_page(name_first_page, previous):
    links = RequestedPage(2, 5).links(request("page=2&page_size=5"), has_next=False, name_first_page=name_first_page)
    assert links["previous"] == previous and links["next"] is None


def test_later_pages_link_back_by_number():
    links = RequestedPage(4, 5).links(request("page=4&page_size=5"), has_next=True)
    assert links["previous"] == "http://testserver/api/sessions/?page=3&page_size=5"
    assert links["next"] == "http://testserver/api/sessions/?page=5&page_size=5"
