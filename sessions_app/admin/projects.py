"""The projects: their list, a project's page with its sessions, members and webhooks, and
granting and revoking a member's role, subscribing a URL to the project's events, rotating
its secret and removing it (by the project's managers and superusers) and creating a
project (by superusers). Each change is one service call (services/projects.py,
services/webhooks.py)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from sessions_app import access, services
from sessions_app.admin import webhooks as webhook_pages
from sessions_app.admin.model_admin import NineplanAdmin, annotated_column, redirect_back
from sessions_app.admin.roles import can_intervene
from sessions_app.errors import NineplanError, NotPermitted
from sessions_app.identifiers import is_project_name
from sessions_app.models import Membership, Project, Role
from sessions_app.reads import queries
from sessions_app.webhooks import event_types

SESSIONS_SHOWN = 100
GRANTED = "'{user}' is now {role} in project {project}."
USER_CREATED = "User '{user}' was created without a password: set one with `changepassword {user}` to let them sign in."
REVOKED = "'{user}' is no longer a member of project {project}."
CREATED = "Created project {project}."
FAILED = "Project {project}: {category}: {message}"


def project_url(name: str) -> str:
    return reverse("admin:sessions_app_project_change", args=[name])


@admin.register(Project)
class ProjectAdmin(NineplanAdmin):
    project_field = "name"
    list_display = ("name", "title", "session_count", "member_count", "created_at")
    search_fields = ("name", "title")
    ordering = ("name",)
    change_list_template = "admin/sessions_app/project/change_list.html"

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(session_count=Count("sessions", distinct=True), member_count=Count("memberships", distinct=True))
        )

    session_count = annotated_column("session_count", "sessions")
    member_count = annotated_column("member_count", "members")

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("create/", wrap(self.create_view), name="sessions_app_project_create"),
            path("<str:name>/grant/", wrap(self.grant_view), name="sessions_app_project_grant"),
            path("<str:name>/revoke/", wrap(self.revoke_view), name="sessions_app_project_revoke"),
            path(
                "<str:name>/webhooks/subscribe/",
                wrap(self.webhook_subscribe_view),
                name="sessions_app_project_webhook_subscribe",
            ),
            path(
                "<str:name>/webhooks/<int:subscription_id>/rotate/",
                wrap(self.webhook_rotate_view),
                name="sessions_app_project_webhook_rotate",
            ),
            path(
                "<str:name>/webhooks/<int:subscription_id>/remove/",
                wrap(self.webhook_remove_view),
                name="sessions_app_project_webhook_remove",
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        caller = access.caller_for_user(request.user)
        extra = {"can_create_project": caller.everything and caller.within is None}
        return super().changelist_view(request, {**(extra_context or {}), **extra})

    def change_view(self, request, object_id, form_url="", extra_context=None):
        project = self.read_page(request, object_id, is_project_name, self._visible)
        sessions = project.sessions.order_by("-created_at", "name")
        can_manage = can_intervene(request.user, project)
        context = self.page_context(
            request,
            title=f"Project {project.name}",
            project=project,
            sessions=list(sessions.only("name", "task_description", "created_at")[:SESSIONS_SHOWN]),
            session_count=sessions.count(),
            members=list(Membership.objects.filter(project=project).select_related("user").order_by("user__username")),
            roles=Role.choices,
            can_manage=can_manage,
            webhooks=queries.webhook_subscriptions(project=project.name) if can_manage else [],
            event_types=event_types.TYPES,
            overlap_hours=services.DEFAULT_OVERLAP_HOURS,
            public_url=settings.NINEPLAN_PUBLIC_URL,
            here=request.get_full_path(),
        )
        return TemplateResponse(request, "admin/sessions_app/project_page.html", context)

    def _visible(self, name: str) -> Project:
        project = Project.objects.filter(name=name).first()
        if project is None or not access.current().allows(access.VIEW, name):
            raise Http404("No such project.")
        return project

    def _change(self, request, name: str, act) -> HttpResponse:
        """A POST that changes the project's members or webhooks: one service call, its
        outcome in a message (or a page of its own, for a secret shown once); 403 for a user
        who may not manage the project, 404 for one who may not see it."""
        if not can_intervene(request.user):
            raise PermissionDenied  # a manager of no project: refused before anything is looked up
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not is_project_name(name) or not access.current().allows(access.VIEW, name):
            raise Http404("No such project.")
        try:
            said = act()
        except NotPermitted:
            raise PermissionDenied from None
        except NineplanError as exc:
            messages.error(request, FAILED.format(project=name, category=exc.category, message=exc.message))
        else:
            if isinstance(said, HttpResponse):
                return said
            for line in said:
                messages.success(request, line)
        return redirect_back(request, project_url(name))

    def grant_view(self, request, name: str):
        user, role = request.POST.get("username", ""), request.POST.get("role", "")

        def act():
            granted = services.project_grant(project=name, username=user, role=role)
            lines = [GRANTED.format(user=user, role=granted.membership.role, project=name)]
            if granted.user_created:
                lines.append(USER_CREATED.format(user=user))
            return lines

        return self._change(request, name, act)

    def revoke_view(self, request, name: str):
        user = request.POST.get("username", "")

        def act():
            services.project_revoke(project=name, username=user)
            return [REVOKED.format(user=user, project=name)]

        return self._change(request, name, act)

    def _secret_shown(self, request, name: str, shown: tuple[str, str]) -> HttpResponse:
        said, secret = shown
        context = self.page_context(
            request, title=f"Project {name}: webhook secret", project_name=name, said=said, secret=secret
        )
        return webhook_pages.secret_page(request, context)

    def webhook_subscribe_view(self, request, name: str):
        return self._change(
            request, name, lambda: self._secret_shown(request, name, webhook_pages.subscribe_posted(request, name))
        )

    def webhook_rotate_view(self, request, name: str, subscription_id: int):
        return self._change(
            request,
            name,
            lambda: self._secret_shown(request, name, webhook_pages.rotate_posted(request, name, subscription_id)),
        )

    def webhook_remove_view(self, request, name: str, subscription_id: int):
        return self._change(request, name, lambda: webhook_pages.unsubscribe_posted(name, subscription_id))

    def create_view(self, request):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        name = request.POST.get("name", "")
        try:
            project = services.project_create(name=name, title=request.POST.get("title") or None)
        except NotPermitted:
            raise PermissionDenied from None
        except NineplanError as exc:
            messages.error(request, FAILED.format(project=name[:63], category=exc.category, message=exc.message))
            return HttpResponseRedirect(reverse("admin:sessions_app_project_changelist"))
        messages.success(request, CREATED.format(project=project.name))
        return HttpResponseRedirect(project_url(project.name))
