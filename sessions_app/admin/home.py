"""The admin's home, "Needs you": what waits for a person in the projects the user sees
(reads in sessions_app/reads/needs_you.py), each item linking to where it is decided, with
Django's list of apps below it."""

from __future__ import annotations

from django.template.response import TemplateResponse
from django.urls import reverse

from sessions_app import access
from sessions_app.admin.roles import can_intervene, can_review, can_view
from sessions_app.reads import needs_you

TEMPLATE = "admin/sessions_app/home.html"
# The live parts of the page, each a template that renders the children of its container.
PARTS = {
    "home-review": "admin/sessions_app/live/home_review.html",
    "home-held": "admin/sessions_app/live/home_held.html",
    "home-waiting": "admin/sessions_app/live/home_waiting.html",
    "home-trouble": "admin/sessions_app/live/home_trouble.html",
    "home-blocked": "admin/sessions_app/live/home_blocked.html",
    "home-workers": "admin/sessions_app/live/home_workers.html",
}


def context(request) -> dict:
    """What the live parts of the home show."""
    found = needs_you.home()
    caller = access.caller_for_user(request.user)
    reviewing = can_review(request.user)
    return {
        "needs": found,
        "now": found.now,
        "reviewable": {p.id for p in found.in_review if reviewing and caller.allows(access.REVIEW, p.project)},
        "may_intervene": can_intervene(request.user),
        "here": reverse("admin:index"),
        "counts": found.counts,
    }


def index_view(site):
    """The view that replaces ``site.index``."""

    def index(request, extra_context=None):
        page = {
            **site.each_context(request),
            "title": "Needs you",
            "subtitle": None,
            "app_list": site.get_app_list(request),
            "live_view": "home",
            "parts": PARTS,
            **(extra_context or {}),
        }
        if can_view(request.user):
            page.update(context(request))
        request.current_app = site.name
        return TemplateResponse(request, TEMPLATE, page)

    return index
