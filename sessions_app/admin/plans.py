"""The plans: their list, a plan's page (sections, file check, dependencies, late writes,
review and revisions), and the staff actions on them. Each action is one service call with
the staff user as the actor, for a user ``can_intervene`` accepts."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html

from sessions_app import clock, services
from sessions_app.admin import reads as admin_reads
from sessions_app.admin import render, review_pages
from sessions_app.admin.model_admin import NineplanAdmin, plan_url, redirect_back, session_url
from sessions_app.admin.roles import actor_for, can_intervene
from sessions_app.errors import NineplanError, NotPermitted
from sessions_app.identifiers import is_plan_id
from sessions_app.models import SECTION_TITLES, SECTIONS, Plan
from sessions_app.reads import excerpts

# Messages shown after a staff action; tests assert on them.
MOVED = "Moved plan {plan} to the {position} of the queue."
REQUEUED = "Returned plan {plan} to the {position} of the queue."
RECLAIMED = (
    "Took plan {plan} back from its worker: it is at the front of the queue, and the worker's next write is refused."
)
DISCARDED = "Discarded plan {plan}."
FAILED = "Plan {plan}: {category}: {message}"

# The staff actions a plan page posts to: the service, the one form field it takes, and
# the message shown when it succeeds.
# Each service takes the session, plan and actor, and the one field named (if any), by keyword.
STAFF_ACTIONS: dict[str, tuple[Callable[..., services.Written], str | None, str]] = {
    "move": (services.plan_move, "position", MOVED),
    "requeue": (services.plan_requeue, "position", REQUEUED),
    "reclaim": (services.plan_reclaim, None, RECLAIMED),
    "discard": (services.plan_discard_any, "reason", DISCARDED),
}


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
        return format_html('<a href="{}">{}</a>', session_url(obj.session_id), obj.session_id)

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
            can_intervene=can_intervene(request.user, plan),
            lease_expired=plan.status == Plan.Status.ACTIVE
            and plan.lease_expires_at is not None
            and plan.lease_expires_at < clock.now(),
            **review_pages.plan_context(request, plan),
        )
        return TemplateResponse(request, "admin/sessions_app/plan_page.html", context)

    # --- staff actions: each one is a service call, recorded with the staff user as actor ---

    def _staff_action(
        self, request, plan_id: str, session_name: str, action: str, value: str, *, one: bool = False
    ) -> bool:
        """One staff action, its outcome told in a message; ``one`` (a plan page's button):
        a plan the user may not change is a 403, as a page it may not see is a 404."""
        service, field, done = STAFF_ACTIONS[action]
        actor = actor_for(request.user)
        try:
            given = {field: value} if field else {}
            written = service(session_name=session_name, plan_id=plan_id, actor=actor, **given)
        except NineplanError as exc:
            if one and isinstance(exc, NotPermitted):
                raise PermissionDenied from None
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
        self._staff_action(
            request, plan_id, session_name, action, request.POST.get(field, "") if field else "", one=True
        )
        return redirect_back(request, plan_url(plan_id))

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
