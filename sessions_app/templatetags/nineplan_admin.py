"""Filters for the admin's templates: agent text shown the one safe way (sessions_app.admin.render)
and cut the one way (sessions_app.reads.excerpts), never with Django's own truncatechars, which
cuts through words; waits in words; and the admin site's names for pages rendered outside it."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from sessions_app.admin import render
from sessions_app.reads import excerpts, needs_you

register = template.Library()


@register.simple_tag
def nineplan_site():
    """9plan's admin site, for pages rendered without its context (the lockout page):
    ``{% nineplan_site as site %}{{ site.site_header }}``."""
    from django.contrib import admin

    return admin.site


@register.filter
def excerpt(text: str | None, limit: int) -> str:
    """``text`` on one line, cut after a whole word: ``{{ plan.goal|excerpt:120 }}``."""
    return excerpts.one_line(text, int(limit)) or ""


@register.filter
def markdown(text: str | None) -> SafeString:
    """Agent Markdown as sanitised HTML: ``{{ plan.outcome|markdown }}``."""
    return render.markdown(text)


@register.filter
def nineplan_duration(value: timedelta | None) -> str:
    """A wait in words a person reads at a glance: "15 minutes", "1 hour 30 minutes"."""
    if value is None:
        return ""
    minutes = max(1, round(value.total_seconds() / 60))
    hours, minutes = divmod(minutes, 60)
    parts = []
    if hours:
        parts.append(f"{hours} hour{'s' if hours != 1 else ''}")
    if minutes:
        parts.append(f"{minutes} minute{'s' if minutes != 1 else ''}")
    return " ".join(parts)


@register.filter
def since(value: datetime | None, now: datetime) -> str:
    """How long ago ``value`` was, as Django's ``timesince`` says it, but "less than a minute"
    rather than "0 minutes": ``waiting {{ plan.updated_at|since:now }}``."""
    if value is None:
        return ""
    if (now - value).total_seconds() < 60:
        return "less than a minute"
    return timesince(value, now)


@register.inclusion_tag("admin/sessions_app/button_form.html", takes_context=True)
def button_form(
    context, action: str, label: str, *, id: str = "", title: str = "", css: str = "", next: str = "", **fields
):
    """A form of one button that posts to ``action`` (a staff or reviewer action): ``next``
    is where to come back to, ``fields`` become hidden inputs.
    ``{% url 'admin:sessions_app_plan_act' plan.id 'move' as to %}{% button_form to "front" position="front" %}``."""
    return {
        "csrf_token": context.get("csrf_token"),
        "action": action,
        "label": label,
        "id": id,
        "title": title,
        "css": css,
        "next": next,
        "fields": list(fields.items()),
    }


@register.simple_tag
def waiting_for_people():
    """How many plans wait for a person in the user's projects (the navigation's counts)."""
    return needs_you.counts()


@register.simple_tag
def sign_in_ways():
    """How people may sign in, for the login page: ``{% sign_in_ways as ways %}``."""
    from django.conf import settings

    return {"sso": bool(settings.NINEPLAN_OIDC_ISSUER), "password": settings.NINEPLAN_PASSWORD_LOGIN}
