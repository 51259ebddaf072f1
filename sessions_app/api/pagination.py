"""Paginated answers: the window of rows a request asks for (``page`` and a page size), one
page of a queryset, and the links to the pages either side. The lists count their rows;
the history search pages over its best hits without counting them (api/views.py)."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework.utils.urls import remove_query_param, replace_query_param

from sessions_app.api import params


@dataclass(frozen=True)
class RequestedPage:
    """Page ``number`` (from 1) of pages of ``size`` rows: rows ``start`` to ``end``."""

    number: int
    size: int

    @classmethod
    def requested(cls, request, size: params.IntParam = params.PAGE_SIZE) -> RequestedPage:
        return cls(params.PAGE.parse(request), size.parse(request))

    @property
    def start(self) -> int:
        return (self.number - 1) * self.size

    @property
    def end(self) -> int:
        return self.number * self.size

    def links(self, request, *, has_next: bool, name_first_page: bool = False) -> dict:
        """``page``, ``page_size``, ``next`` and ``previous``, in the order answers give them.
        ``previous`` on page 2 is this URL without ``page``, or with ``page=1`` if
        ``name_first_page``."""
        url = request.build_absolute_uri()
        if self.number == 1:
            previous = None
        elif self.number == 2 and not name_first_page:
            previous = remove_query_param(url, "page")
        else:
            previous = replace_query_param(url, "page", self.number - 1)
        return {
            "page": self.number,
            "page_size": self.size,
            "next": replace_query_param(url, "page", self.number + 1) if has_next else None,
            "previous": previous,
        }


def queryset_page(request, qs, serializer, window: RequestedPage, with_rows=None) -> dict:
    """One page of ``qs`` with its count (two queries: the count and the rows; ``with_rows``
    may add what the serializer needs of the page's rows, in a fixed number more)."""
    count = qs.count()
    rows = list(qs[window.start : window.end]) if window.start < count else []
    context = {"request": request, **(with_rows(rows) if with_rows and rows else {})}
    return {
        "count": count,
        **window.links(request, has_next=window.end < count),
        "results": serializer(rows, many=True, context=context).data,
    }
