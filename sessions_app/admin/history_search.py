"""The admin's history search: completed plans, best match first, across every session or
within one, with the word forms each matched highlighted. The same search as the MCP tool
and /api/history/ (queries.history_search)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed
from django.template.response import TemplateResponse
from django.urls import path

from sessions_app.admin import render
from sessions_app.admin.roles import can_view
from sessions_app.errors import NineplanError
from sessions_app.reads import excerpts, queries

SEARCH_RESULTS_DEFAULT = 20
SEARCH_RESULTS_MAX = 50


def urls(model_admin) -> list:
    view = model_admin.admin_site.admin_view(lambda request: search_view(model_admin, request))
    return [path("search/", view, name="sessions_app_history_search")]


def search_view(model_admin, request):
    if not can_view(request.user):
        raise PermissionDenied
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    query = request.GET.get("q", "")
    session_name = request.GET.get("session", "").strip()
    try:
        limit = min(max(int(request.GET.get("n", SEARCH_RESULTS_DEFAULT)), 1), SEARCH_RESULTS_MAX)
    except ValueError:
        limit = SEARCH_RESULTS_DEFAULT
    results, error = [], None
    if query.strip():
        try:
            hits = queries.history_search(query, session_name=session_name or None, max_results=limit)
        except NineplanError as exc:
            error = f"{exc.category}: {exc.message}"
        else:
            pattern = excerpts.match_pattern(query)
            results = [render.search_result(hit, pattern) for hit in hits]
    context = model_admin.page_context(
        request,
        title="History search",
        query=query,
        session_name=session_name,
        limit=limit,
        results=results,
        error=error,
        searched=bool(query.strip()),
    )
    return TemplateResponse(request, "admin/sessions_app/history_search.html", context)
