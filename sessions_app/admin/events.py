"""The event log: every lifecycle step, newest first, searchable in its details."""

from __future__ import annotations

import json

from django.contrib import admin
from django.db.models import Q
from django.utils.html import format_html
from django.utils.text import smart_split, unescape_string_literal

from sessions_app.admin import render
from sessions_app.admin.model_admin import NineplanAdmin, plan_url, session_url
from sessions_app.models import Event


@admin.register(Event)
class EventAdmin(NineplanAdmin):
    list_display = ("id", "created_at", "session_link", "plan_link", "kind", "who", "detail_text")
    list_filter = ("kind", ("created_at", admin.DateFieldListFilter))
    # What the search looks in; get_search_results does the looking.
    search_fields = ("=session__name", "=plan__id", "actor", "detail")
    ordering = ("-id",)
    list_per_page = 100
    # The event's page in the order the step reads (the model lists its inherited who and
    # when first).
    fields = ("session", "plan", "kind", "actor", "detail", "created_at")

    @admin.display(description="session", ordering="session")
    def session_link(self, obj):
        return format_html('<a href="{}">{}</a>', session_url(obj.session_id), obj.session_id)

    @admin.display(description="plan", ordering="plan")
    def plan_link(self, obj):
        if not obj.plan_id:
            return "—"
        return format_html('<a href="{}">{}</a>', plan_url(obj.plan_id), obj.plan_id)

    @admin.display(description="who", ordering="actor")
    def who(self, obj):
        return render.actor_label(obj.actor)

    @admin.display(description="detail")
    def detail_text(self, obj):
        return render.event_detail(obj.detail)

    def get_search_results(self, request, queryset, search_term):
        """Events with every word of the search in their session, plan, actor or detail
        (a discard reason, a deferral note), the way Django's own search splits words.

        The detail is matched in its stored JSON text, where a quote or backslash is
        escaped and SQLite keeps every non-ASCII character as a \\u escape: each word is
        looked for both as typed and as JSON writes it.
        """
        terms = []
        for bit in smart_split(search_term):
            if bit.startswith(('"', "'")) and bit[0] == bit[-1]:
                bit = unescape_string_literal(bit)
            as_json = json.dumps(bit)[1:-1]
            match = Q(session__name=bit) | Q(plan__id=bit) | Q(actor__icontains=bit) | Q(detail__icontains=bit)
            if as_json != bit:
                match |= Q(detail__icontains=as_json)
            terms.append(match)
        return queryset.filter(*terms), False
