"""What the live pages poll (docs/design.md, "The edges"): the home, the review inbox, a
session page and a session's board ask every second for their live parts. The answer's ETag is the newest event
the user may see (every change writes one) with the minute, so a poll that finds nothing
new is a 304 after one query of its own; a changed one renders the page's parts, in the same fixed
number of queries as the page itself, as JSON: {"parts": {name: html}, "counts": {...}}."""

from __future__ import annotations

import hashlib

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.template.loader import render_to_string
from django.utils.cache import patch_cache_control

from sessions_app import access, clock
from sessions_app.admin import board, home, review_pages
from sessions_app.admin import sessions as session_pages
from sessions_app.admin.roles import can_view
from sessions_app.errors import SessionNotFound
from sessions_app.identifiers import is_session_name
from sessions_app.reads import needs_you


def _etag(request, view: str, session_name: str | None) -> str:
    latest = needs_you.latest_event_id(session_name)
    caller = access.caller_for_user(request.user)
    minute = clock.now().strftime("%Y%m%d%H%M")
    digest = hashlib.sha256(f"{view}|{session_name}|{caller.label}|{latest}|{minute}".encode()).hexdigest()[:20]
    return f'W/"{digest}"'


def _answer(request, parts: dict[str, str], context: dict, counts: dict[str, int], etag: str) -> JsonResponse:
    rendered = {name: render_to_string(template, context, request=request) for name, template in parts.items()}
    response = JsonResponse({"parts": rendered, "counts": counts})
    response["ETag"] = etag
    patch_cache_control(response, private=True, no_cache=True)
    return response


def view(request):
    if not can_view(request.user):
        raise PermissionDenied
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    which = request.GET.get("view", "")
    per_session = which in ("session", "board")
    name = request.GET.get("session") if per_session else None
    if which not in ("home", "inbox", "session", "board") or (per_session and not is_session_name(name or "")):
        raise Http404("No such live page.")
    etag = _etag(request, which, name)
    if etag in [t.strip() for t in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponse(status=304)
        response["ETag"] = etag
        return response
    if which == "home":
        context = home.context(request)
        return _answer(request, home.PARTS, context, _nav(context["counts"]), etag)
    if which == "inbox":
        context = review_pages.inbox_context(request)
        return _answer(request, review_pages.INBOX_PARTS, context, _nav(context["counts"]), etag)
    try:
        if which == "board":
            context = board.live_context(request, name)
            return _answer(request, board.LIVE_PARTS, context, context["live_counts"], etag)
        context = session_pages.live_context(request, name)
    except SessionNotFound:
        raise Http404("No such session.") from None
    return _answer(request, session_pages.LIVE_PARTS, context, context["live_counts"], etag)


def _nav(counts: needs_you.Counts) -> dict[str, int]:
    return {"inbox": counts.total, "in_review": counts.in_review, "held": counts.held, "waiting": counts.waiting}
