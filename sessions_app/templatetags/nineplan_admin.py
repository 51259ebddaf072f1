"""Filters for the admin's templates: agent text shown the one safe way (sessions_app.admin.render)
and cut the one way (sessions_app.excerpts), never with Django's own truncatechars, which
cuts through words."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from sessions_app import excerpts
from sessions_app.admin import render

register = template.Library()


@register.filter
def excerpt(text: str | None, limit: int) -> str:
    """``text`` on one line, cut after a whole word: ``{{ plan.goal|excerpt:120 }}``."""
    return excerpts.one_line(text, int(limit)) or ""


@register.filter
def markdown(text: str | None) -> SafeString:
    """Agent Markdown as sanitised HTML: ``{{ plan.outcome|markdown }}``."""
    return render.markdown(text)
