"""What the live pages poll (docs/design.md, "The edges"): the home, the review inbox, a
session page and a session's board ask every second for their live parts. The answer's ETag is the newest event
the user may see (every change writes one) with the minute, so a poll that finds nothing
new is a 304 after one query of its own; a changed one renders the page's parts, in the same fixed
number of queries as the page itself, as JSON: {"parts": {name: html}, "counts": {...}}.

A changed view is rendered once per (view, what the viewer may see, newest event, minute)
and kept in the ``live`` cache, shared by the server's worker processes: every other open
page of a viewer who sees the same is answered from it. The viewer's own CSRF token is put
in on the way out, so no viewer is ever sent another's."""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
import time

from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.utils.cache import patch_cache_control

from sessions_app import access, clock
from sessions_app.admin import board, home, review_pages
from sessions_app.admin import sessions as session_pages
from sessions_app.admin.roles import can_intervene, can_review, can_view
from sessions_app.errors import SessionNotFound
from sessions_app.identifiers import is_session_name
from sessions_app.reads import needs_you

# Pacing: each open page says who it is (a random id it made, in the Live-Page header), and
# this process keeps when it last heard from each. Every page polls at least every
# SLOWEST seconds and lands on a random worker, so over WINDOW seconds each worker hears
# from nearly all of them: the count is the server's open pages, without shared state.
# The answer tells each page to ask every max(1, pages / budget) seconds, so the server
# answers about the budget's polls a second however many pages are open.
PAGE_ID_RE = re.compile(r"[A-Za-z0-9]{8,40}")
FASTEST, SLOWEST, WINDOW = 1.0, 10.0, 30.0
MOST_PAGES = 100_000
_pages_heard: dict[str, float] = {}
_pages_lock = threading.Lock()


def next_poll_seconds(page: str | None, now: float | None = None) -> float:
    """How long the page ``page`` should wait before its next poll, having just asked."""
    now = time.monotonic() if now is None else now
    with _pages_lock:
        # Kept in the order last heard, so the stale ones are at the front.
        if page is not None and (_pages_heard.pop(page, None) is not None or len(_pages_heard) < MOST_PAGES):
            _pages_heard[page] = now
        while _pages_heard and next(iter(_pages_heard.values())) < now - WINDOW:
            del _pages_heard[next(iter(_pages_heard))]
        open_pages = len(_pages_heard)
    return min(SLOWEST, max(FASTEST, open_pages / settings.NINEPLAN_LIVE_POLLS_PER_SECOND))


def pages_heard() -> list[str]:
    """The pages this process has heard from within the window, oldest first."""
    with _pages_lock:
        return list(_pages_heard)


def forget_pages() -> None:
    with _pages_lock:
        _pages_heard.clear()


def sight(request) -> str:
    """What the viewer may see and do, as far as the live parts show it: the projects and
    the role in each, and the admin permissions the parts' buttons depend on. Two viewers
    with the same sight are shown the same parts, so they may share a render; any
    difference, however small, gives another key."""
    caller = access.caller_for_user(request.user)
    within = sorted(caller.within) if caller.within is not None else None
    roles = sorted(caller.roles.items())
    user = request.user
    return repr((caller.everything, within, roles, can_review(user), can_intervene(user)))


def _digest(request, view: str, session_name: str | None) -> str:
    latest = needs_you.latest_event_id(session_name)
    minute = clock.now().strftime("%Y%m%d%H%M")
    return hashlib.sha256(f"{view}|{session_name}|{sight(request)}|{latest}|{minute}".encode()).hexdigest()[:32]


def _csrf_slot() -> str:
    """What stands for the viewer's CSRF token in a shared render. Derived from the secret
    key, so plan text written by an agent cannot contain it and be given a viewer's token."""
    mac = hmac.new(settings.SECRET_KEY.encode(), b"nineplan live csrf slot", hashlib.sha256)
    return "csrfslot" + mac.hexdigest()[:56]


def _answer(request, parts: dict[str, str], context: dict, counts: dict[str, int]) -> bytes:
    """The JSON body of a changed view, with the CSRF slot where each form's token goes."""
    context = {**context, "csrf_token": _csrf_slot()}
    rendered = {name: render_to_string(template, context, request=request) for name, template in parts.items()}
    return JsonResponse({"parts": rendered, "counts": counts}).content


def _render(request, which: str, name: str | None) -> bytes:
    if which == "home":
        context = home.context(request)
        return _answer(request, home.PARTS, context, _nav(context["counts"]))
    if which == "inbox":
        context = review_pages.inbox_context(request)
        return _answer(request, review_pages.INBOX_PARTS, context, _nav(context["counts"]))
    assert name is not None  # view() lets a session's page through only with the session's name
    try:
        if which == "board":
            context = board.live_context(request, name)
            return _answer(request, board.LIVE_PARTS, context, context["live_counts"])
        context = session_pages.live_context(request, name)
    except SessionNotFound:
        raise Http404("No such session.") from None
    return _answer(request, session_pages.LIVE_PARTS, context, context["live_counts"])


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
    page = request.headers.get("Live-Page", "")
    pause = next_poll_seconds(page if PAGE_ID_RE.fullmatch(page) else None)
    digest = _digest(request, which, name)
    etag = f'W/"{digest}"'
    if etag in [t.strip() for t in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponse(status=304)
        response["ETag"] = etag
        response["Poll-After"] = f"{pause:.1f}"
        return response
    shared = caches["live"]
    body = shared.get(digest)
    if body is None:
        body = _render(request, which, name)
        shared.set(digest, body)
    body = body.replace(_csrf_slot().encode(), get_token(request).encode())
    response = HttpResponse(body, content_type="application/json")
    response["ETag"] = etag
    response["Poll-After"] = f"{pause:.1f}"
    patch_cache_control(response, private=True, no_cache=True)
    return response


def _nav(counts: needs_you.Counts) -> dict[str, int]:
    return {"inbox": counts.total, "in_review": counts.in_review, "held": counts.held, "waiting": counts.waiting}
