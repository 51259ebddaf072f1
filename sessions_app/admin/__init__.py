"""The reviewer admin: sessions, queues, plans, history, timelines and invariant checks.

Reviewers read; a few staff (``change_plan`` permission) may discard, move or requeue a
plan. Every such change is a call to a service with the staff user as the actor; the
generic add/change/delete forms are switched off for every model, so nothing edits a
plan's status, position or text behind the services' back.
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import smart_split, unescape_string_literal

from sessions_app import excerpts, queries, services
from sessions_app.admin import reads as admin_reads
from sessions_app.admin import render, review_pages
from sessions_app.admin.roles import INTERVENE_PERMISSION, VIEW_PLAN, actor_for, can_intervene
from sessions_app.errors import NineplanError, PlanNotFound, SessionNotFound
from sessions_app.identifiers import is_plan_id, is_session_name
from sessions_app.models import SECTION_TITLES, SECTIONS, Event, Plan, Session

admin.site.site_header = "9plan review"
admin.site.site_title = "9plan"
admin.site.index_title = "Sessions, plans and history"
# The header's own links lead to every page; the app sidebar would only take the width
# the lists need on a laptop screen.
admin.site.enable_nav_sidebar = False

# Messages shown after a staff action; tests assert on them.
MOVED = "Moved plan {plan} to the {position} of the queue."
REQUEUED = "Returned plan {plan} to the {position} of the queue."
RECLAIMED = "Took plan {plan} back from its worker: it is at the front of the queue, and the worker's next write is refused."
DISCARDED = "Discarded plan {plan}."
FAILED = "Plan {plan}: {category}: {message}"

# The staff actions a plan page posts to: the service, the one form field it takes, and
# the message shown when it succeeds.
STAFF_ACTIONS = {
    "move": (services.plan_move, "position", MOVED),
    "requeue": (services.plan_requeue, "position", REQUEUED),
    "reclaim": (services.plan_reclaim, None, RECLAIMED),
    "discard": (services.plan_discard_any, "reason", DISCARDED),
}

INVARIANT_LABELS = {
    "single_active_plan": "At most one active plan per worker",
    "claims_valid": "Every active plan has a worker and a lease",
    "dependencies_valid": "No plan handed out before its dependencies",
    "queue_order_preserved": "Queue positions unique and ordered",
    "files_match_database": "Every queued or active plan has its file",
    "no_orphaned_files": "No plan file without a plan",
    "search_index_in_sync": "Search index holds every completed plan",
}
SEARCH_RESULTS_DEFAULT = 20
SEARCH_RESULTS_MAX = 50


def _session_url(name: str) -> str:
    return reverse("admin:sessions_app_session_change", args=[name])


def _plan_url(plan_id: str) -> str:
    return reverse("admin:sessions_app_plan_change", args=[plan_id])


class NineplanAdmin(admin.ModelAdmin):
    """Read-only generic admin; the only writes are the service-backed staff actions."""

    # State changes go through the services; the generic forms must not bypass them.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_intervene_permission(self, request, obj=None):
        return can_intervene(request.user)

    def changelist_view(self, request, extra_context=None):
        # A list page's only POST is an admin action. Without an action this user may run,
        # refuse it outright instead of re-rendering the list as if nothing was asked.
        if request.method == "POST" and not self.get_actions(request):
            raise PermissionDenied
        return super().changelist_view(request, extra_context)

    def check_page_request(self, request) -> None:
        # Object pages only read: every change is a staff action posted to its own URL.
        if request.method not in ("GET", "HEAD") or not self.has_view_permission(request):
            raise PermissionDenied

    def change_view(self, request, object_id, form_url="", extra_context=None):
        self.check_page_request(request)
        return super().change_view(request, object_id, form_url, extra_context)

    def read_page(self, request, object_id: str, is_key, read):
        """What the object's own page shows, ``read(key)`` for the key in its URL, once the
        request is checked. A malformed key, like a missing object, is a 404."""
        self.check_page_request(request)
        key = unquote(object_id)
        if not is_key(key):
            raise Http404(f"No such {self.opts.verbose_name}.")
        try:
            return read(key)
        except (SessionNotFound, PlanNotFound):
            raise Http404(f"No such {self.opts.verbose_name}.") from None

    def page_context(self, request, **extra) -> dict:
        return {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "has_view_permission": self.has_view_permission(request),
            **extra,
        }


# --- sessions ---------------------------------------------------------------------------


class YesNoFilter(admin.SimpleListFilter):
    expression = None

    def lookups(self, request, model_admin):
        return (("yes", "Yes"), ("no", "No"))

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(self.expression())
        if self.value() == "no":
            return queryset.filter(~self.expression())
        return queryset


class ActivePlanFilter(YesNoFilter):
    title = "active plan"
    parameter_name = "active"
    expression = staticmethod(admin_reads.has_active_plan)


class QueuedWorkFilter(YesNoFilter):
    title = "queued work"
    parameter_name = "queued"
    expression = staticmethod(admin_reads.has_queued_work)


@admin.register(Session)
class SessionAdmin(NineplanAdmin):
    list_display = (
        "name",
        "task",
        "created_at",
        "queue_length",
        "active_plan",
        "completed_count",
        "discarded_count",
        "last_activity",
    )
    search_fields = ("name", "task_description")
    list_filter = (ActivePlanFilter, QueuedWorkFilter, ("created_at", admin.DateFieldListFilter))
    ordering = ("-created_at", "name")
    list_per_page = 50
    change_list_template = "admin/sessions_app/session/change_list.html"

    def get_queryset(self, request):
        return admin_reads.annotate_sessions(super().get_queryset(request))

    @admin.display(description="task", ordering="task_description")
    def task(self, obj):
        return excerpts.one_line(obj.task_description, 100) or "—"

    @admin.display(description="queue", ordering="queue_length")
    def queue_length(self, obj):
        return obj.queue_length

    @admin.display(description="active plan", ordering="active_plan_goal")
    def active_plan(self, obj):
        if not obj.active_plan_id:
            return "—"
        return format_html(
            '<a href="{}">{}</a> {}', _plan_url(obj.active_plan_id), obj.active_plan_id, excerpts.one_line(obj.active_plan_goal, 80)
        )

    @admin.display(description="completed", ordering="completed_count")
    def completed_count(self, obj):
        return obj.completed_count

    @admin.display(description="discarded", ordering="discarded_count")
    def discarded_count(self, obj):
        return obj.discarded_count

    @admin.display(description="last activity", ordering="last_activity")
    def last_activity(self, obj):
        return obj.last_activity

    def get_urls(self):
        search = self.admin_site.admin_view(self.search_view)
        return [path("search/", search, name="sessions_app_history_search"), *super().get_urls()]

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
            session=state.session,
            queue=list(enumerate(state.queue, start=1)),
            queue_length=state.queue_length,
            queue_hidden=state.queue_length - len(state.queue),
            active=state.active,
            workers=[
                {
                    "plan": p,
                    "expired": p.lease_expires_at is not None and p.lease_expires_at < page.now,
                    "attempt": p.attempts + 1,
                }
                for p in state.held
            ],
            max_attempts=state.session.max_attempts,
            blocked=[b for b in state.blocked if not b.waiting_for_person],
            waiting=[b for b in state.blocked if b.waiting_for_person],
            completed=page.completed,
            completed_count=state.completed_count,
            discarded=page.discarded,
            discarded_count=state.discarded_count,
            in_review=page.in_review[0],
            in_review_count=page.in_review[1],
            held_plans=page.held[0],
            held_count=page.held[1],
            awaiting_count=page.in_review[1] + page.held[1],
            timeline=render.timeline(page.events),
            event_count=page.event_count,
            chart=render.chart(page.series),
            valid=page.validation.valid,
            invariants=invariants,
            can_intervene=can_intervene(request.user),
            here=request.get_full_path(),
            review_choices=review_pages.POLICY_CHOICES,
        )
        return TemplateResponse(request, "admin/sessions_app/session_page.html", context)

    def search_view(self, request):
        if not (request.user.has_perm(VIEW_PLAN) or request.user.has_perm(INTERVENE_PERMISSION)):
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
        context = self.page_context(
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


# --- plans ------------------------------------------------------------------------------


class DiscardForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Recorded in the plan's history and the event log.",
    )


@admin.register(Plan)
class PlanAdmin(NineplanAdmin):
    list_display = ("id", "session_link", "status", "goal_snippet", "created_at", "updated_at")
    list_filter = ("status", ("created_at", admin.DateFieldListFilter))
    search_fields = ("=id", "goal", "=session__name")
    # By the session's column, not the relation: ordering by "session" joins the sessions
    # table to sort by their creation time and sorts every plan (docs/benchmarks.md).
    ordering = ("session_id", "sort_key", "created_at")
    list_per_page = 100
    actions = ("move_to_front", "move_to_back", "requeue_plans", "reclaim_plans", "discard_plans")

    @admin.display(description="session", ordering="session_id")
    def session_link(self, obj):
        return format_html('<a href="{}">{}</a>', _session_url(obj.session_id), obj.session_id)

    @admin.display(description="goal")
    def goal_snippet(self, obj):
        return excerpts.one_line(obj.goal, 100)

    def get_urls(self):
        act = self.admin_site.admin_view(self.action_view)
        return [
            *review_pages.urls(self),
            path("<path:object_id>/act/<str:action>/", act, name="sessions_app_plan_act"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        page = self.read_page(request, object_id, is_plan_id, admin_reads.plan_page)
        plan = page.plan
        context = self.page_context(
            request,
            title=f"Plan {plan.id}",
            plan=plan,
            place=page.place,
            sections=[(SECTION_TITLES[name], render.markdown(getattr(plan, name))) for name in SECTIONS],
            outcome=render.markdown(plan.outcome),
            discard_reason=render.markdown(plan.discard_reason),
            file=page.file,
            depends_on=page.dependencies.depends_on,
            dependents=page.dependencies.dependents,
            ready=page.dependencies.ready,
            late_writes=page.late_writes,
            timeline=render.timeline(page.events),
            event_count=page.event_count,
            can_intervene=can_intervene(request.user),
            **review_pages.plan_context(request, plan),
        )
        return TemplateResponse(request, "admin/sessions_app/plan_page.html", context)

    # --- staff actions: each one is a service call, recorded with the staff user as actor ---

    def _staff_action(self, request, plan_id: str, session_name: str, action: str, value: str) -> bool:
        service, field, done = STAFF_ACTIONS[action]
        actor = actor_for(request.user)
        try:
            given = {field: value} if field else {}
            written = service(session_name=session_name, plan_id=plan_id, actor=actor, **given)
        except NineplanError as exc:
            self.message_user(
                request, FAILED.format(plan=plan_id, category=exc.category, message=exc.message), messages.ERROR
            )
            return False
        self.message_user(request, done.format(plan=plan_id, **({field: value} if field else {})), messages.SUCCESS)
        if written.file_notice:  # the plan file could not be taken in (a link, FIFO, too large...): say what was found
            self.message_user(request, written.file_notice, messages.WARNING)
        return True

    def action_view(self, request, object_id, action):
        if not self.has_intervene_permission(request):
            raise PermissionDenied
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        plan_id = unquote(object_id)
        if action not in STAFF_ACTIONS or not is_plan_id(plan_id):
            raise Http404("No such plan or action.")
        session_name = admin_reads.session_of_plan(plan_id)
        if session_name is None:
            raise Http404("No such plan.")
        field = STAFF_ACTIONS[action][1]
        # The value is passed on as sent: the services match it exactly and name what is accepted.
        self._staff_action(request, plan_id, session_name, action, request.POST.get(field, "") if field else "")
        target = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
            target = _plan_url(plan_id)
        return HttpResponseRedirect(target)

    def _each(self, request, queryset, action: str, value: str) -> None:
        for plan_id, session_name in queryset.values_list("id", "session_id"):
            self._staff_action(request, plan_id, session_name, action, value)

    @admin.action(description="Move selected queued plans to the front", permissions=["intervene"])
    def move_to_front(self, request, queryset):
        # Each move to the front lands before the previous one, so go last-first to keep
        # the selected plans in their queue order.
        self._each(request, queryset.order_by("-sort_key"), "move", "front")

    @admin.action(description="Move selected queued plans to the back", permissions=["intervene"])
    def move_to_back(self, request, queryset):
        self._each(request, queryset.order_by("sort_key"), "move", "back")

    @admin.action(
        description="Return selected active (or waiting) plans to the front of their queue", permissions=["intervene"]
    )
    def requeue_plans(self, request, queryset):
        self._each(request, queryset.order_by("id"), "requeue", "front")

    @admin.action(description="Take selected active plans back from their workers", permissions=["intervene"])
    def reclaim_plans(self, request, queryset):
        self._each(request, queryset.order_by("id"), "reclaim", "")

    @admin.action(description="Discard selected plans…", permissions=["intervene"])
    def discard_plans(self, request, queryset):
        form = DiscardForm(request.POST if "confirm" in request.POST else None)
        if form.is_bound and form.is_valid():
            self._each(request, queryset.order_by("id"), "discard", form.cleaned_data["reason"])
            return None
        context = self.page_context(
            request,
            title="Discard plans",
            plans=list(queryset.order_by("session", "sort_key", "id").only("id", "session_id", "status", "goal")),
            form=form,
            action_name="discard_plans",
            action_checkbox_name=helpers.ACTION_CHECKBOX_NAME,
        )
        return TemplateResponse(request, "admin/sessions_app/plan/discard_confirmation.html", context)


# --- events -----------------------------------------------------------------------------


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
        return format_html('<a href="{}">{}</a>', _session_url(obj.session_id), obj.session_id)

    @admin.display(description="plan", ordering="plan")
    def plan_link(self, obj):
        if not obj.plan_id:
            return "—"
        return format_html('<a href="{}">{}</a>', _plan_url(obj.plan_id), obj.plan_id)

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
