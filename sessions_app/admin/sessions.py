"""The sessions: their list with counts, filters and last activity, and a session's page
(queue, workers, active and blocked plans, history, timeline, chart, invariant check)."""

from __future__ import annotations

from django.contrib import admin
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from sessions_app.admin import board as board_pages
from sessions_app.admin import history_search, render, review_pages, work_pages
from sessions_app.admin import reads as admin_reads
from sessions_app.admin.filters import ActivePlanFilter, QueuedWorkFilter
from sessions_app.admin.model_admin import NineplanAdmin, annotated_column, plan_url
from sessions_app.admin.roles import can_intervene
from sessions_app.identifiers import is_session_name
from sessions_app.models import Session
from sessions_app.reads import excerpts, needs_you

INVARIANT_LABELS = {
    "single_active_plan": "At most one active plan per worker",
    "claims_valid": "Every active plan has a worker and a lease",
    "dependencies_valid": "No plan handed out before its dependencies",
    "queue_order_preserved": "Queue positions unique and ordered",
    "files_match_database": "Every queued or active plan has its file",
    "no_orphaned_files": "No plan file without a plan",
    "search_index_in_sync": "Search index holds every completed plan",
}


@admin.register(Session)
class SessionAdmin(NineplanAdmin):
    project_field = "project_id"
    # The project is a filter, not a column: the list must fit a laptop's screen.
    list_display = (
        "session_name",
        "task",
        "created_at",
        "queue_length",
        "active_plan",
        "completed_count",
        "discarded_count",
        "last_activity",
    )
    # The name cell links the session's page and, below it, its board: one more column
    # would not fit a small screen.
    list_display_links = None
    search_fields = ("name", "task_description")
    # Only the projects of the sessions the user sees: another project's name is not shown.
    list_filter = (
        ("project", admin.RelatedOnlyFieldListFilter),
        ActivePlanFilter,
        QueuedWorkFilter,
        ("created_at", admin.DateFieldListFilter),
    )
    ordering = ("-created_at", "name")
    list_per_page = 50
    change_list_template = "admin/sessions_app/session/change_list.html"

    def get_queryset(self, request):
        return admin_reads.annotate_sessions(super().get_queryset(request))

    @admin.display(description="name", ordering="name")
    def session_name(self, obj):
        return format_html(
            '<a href="{}">{}</a><a class="np-sub np-board-link" href="{}">board</a>',
            reverse("admin:sessions_app_session_change", args=[obj.name]),
            obj.name,
            reverse("admin:sessions_app_board", args=[obj.name]),
        )

    @admin.display(description="task", ordering="task_description")
    def task(self, obj):
        return excerpts.one_line(obj.task_description, 100) or "—"

    @admin.display(description="queue", ordering="queue_length")
    def queue_length(self, obj):
        # Plans waiting for a person after their attempts are queued, but wait for a person.
        if obj.waiting_count:
            return format_html(
                '{} <span class="np-muted np-sub">{} waiting</span>', obj.queue_length, obj.waiting_count
            )
        return obj.queue_length

    @admin.display(description="active plan", ordering="active_plan_goal")
    def active_plan(self, obj):
        if not obj.active_plan_id:
            return "—"
        # The number of workers holding a plan, when more than one: the first one's is shown.
        workers = (
            format_html('<span class="np-muted np-sub np-workers">{} workers hold plans</span>', obj.workers_count)
            if obj.workers_count > 1
            else ""
        )
        return format_html(
            '<a href="{}">{}</a> {}{}',
            plan_url(obj.active_plan_id),
            obj.active_plan_id,
            excerpts.one_line(obj.active_plan_goal, 80),
            workers,
        )

    @admin.display(description="completed", ordering="completed_count")
    def completed_count(self, obj):
        # Completed by their agents but waiting for a reviewer, or held after their rejections.
        waiting = [f"{n} {what}" for n, what in ((obj.in_review_count, "in review"), (obj.held_count, "held")) if n]
        if not waiting:
            return obj.completed_count
        return format_html(
            "{}{}",
            obj.completed_count,
            format_html_join("", '<span class="np-muted np-sub">{}</span>', ((w,) for w in waiting)),
        )

    discarded_count = annotated_column("discarded_count", "discarded")
    last_activity = annotated_column("last_activity", "last activity")

    def get_urls(self):
        return [*history_search.urls(self), *board_pages.urls(self), *work_pages.urls(self), *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        page = self.read_page(request, object_id, is_session_name, admin_reads.session_page)
        state = page.state
        invariants = [
            {
                "name": key,
                "label": INVARIANT_LABELS.get(key, key),
                "ok": ok,
                "issues": page.validation.issues_by_invariant.get(key, []),
            }
            for key, ok in page.validation.invariants.items()
        ]
        context = self.page_context(
            request,
            title=f"Session {state.session.name}",
            completed=page.completed,
            discarded=page.discarded,
            chart=render.chart(page.series),
            valid=page.validation.valid,
            invariants=invariants,
            review_choices=review_pages.POLICY_CHOICES,
            **_live_context(request, page),
        )
        return TemplateResponse(request, "admin/sessions_app/session_page.html", context)


# The live parts of a session page (sessions_app/admin/live.py), each the template of the
# children of its container.
LIVE_PARTS = {
    "session-workers": "admin/sessions_app/live/session_workers.html",
    "session-awaiting": "admin/sessions_app/live/session_awaiting.html",
    "session-queue": "admin/sessions_app/live/session_queue.html",
    "session-timeline": "admin/sessions_app/live/session_timeline.html",
}


def _live_context(request, page) -> dict:
    """What the live parts show, from a SessionPage or a SessionLive."""
    state = page.state
    return {
        "session": state.session,
        "queue": list(enumerate(state.queue, start=1)),
        "queue_length": state.queue_length,
        "queue_hidden": state.queue_length - len(state.queue),
        "active": state.active,
        "workers": [
            {
                "plan": p,
                "expired": p.lease_expires_at is not None and p.lease_expires_at < page.now,
                "attempt": p.attempts + 1,
            }
            for p in state.claimed
        ],
        "max_attempts": state.session.max_attempts,
        "blocked": [b for b in state.blocked if not b.waiting_for_person],
        "waiting": [b for b in state.blocked if b.waiting_for_person],
        "completed_count": state.completed_count,
        "discarded_count": state.discarded_count,
        "in_review": page.in_review[0],
        "in_review_count": page.in_review[1],
        "held_plans": page.held[0],
        "held_count": page.held[1],
        "awaiting_count": page.in_review[1] + page.held[1],
        "timeline": render.timeline(page.events),
        "event_count": page.event_count,
        "can_intervene": can_intervene(request.user, state.session),
        "here": reverse("admin:sessions_app_session_change", args=[state.session.name]),
    }


def live_context(request, name: str) -> dict:
    """A session page's live parts and counts, in a fixed number of queries."""
    context = _live_context(request, admin_reads.session_live(name))
    context["live_counts"] = {
        "queued": context["queue_length"],
        "completed": context["completed_count"],
        "discarded": context["discarded_count"],
        "review_summary": f"{context['in_review_count']}"
        + (f", {context['held_count']} held" if context["held_count"] else ""),
        "events": context["event_count"],
        "inbox": needs_you.counts().total,
    }
    return context
