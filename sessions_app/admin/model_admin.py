"""What every 9plan ModelAdmin shares: the generic add, change and delete forms closed,
object pages that only read, the context each page's template needs, and the links and
redirects between pages."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from sessions_app import access
from sessions_app.admin.roles import can_intervene, can_view
from sessions_app.errors import PlanNotFound, SessionNotFound


def session_url(name: str) -> str:
    return reverse("admin:sessions_app_session_change", args=[name])


def plan_url(plan_id: str) -> str:
    return reverse("admin:sessions_app_plan_change", args=[plan_id])


def redirect_back(request, fallback: str) -> HttpResponseRedirect:
    """To the page a form came from (its ``next`` field) if that is a page of this site,
    otherwise to ``fallback``."""
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = fallback
    return HttpResponseRedirect(target)


def annotated_column(field: str, description: str):
    """A list column showing a value the list's queryset annotates each row with, sortable by it."""

    @admin.display(description=description, ordering=field)
    def column(self, obj):
        return getattr(obj, field)

    return column


class NineplanAdmin(admin.ModelAdmin):
    """Read-only generic admin; the only writes are the service-backed staff actions. Every
    list shows only the projects the user is a member of (``project_field`` leads from the
    model to its project)."""

    project_field = "session__project_id"

    def get_queryset(self, request):
        projects = access.current().visible_projects()
        qs = super().get_queryset(request)
        return qs if projects is None else qs.filter(**{f"{self.project_field}__in": projects})

    def has_module_permission(self, request):
        return can_view(request.user)

    def has_view_permission(self, request, obj=None):
        return can_view(request.user, obj)

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
        # Another project's object (like a missing one) is not found: a 404, not Django's
        # redirect with a "does not exist" message that would tell the two apart.
        if self.get_object(request, unquote(object_id)) is None:
            raise Http404(f"No such {self.opts.verbose_name}.")
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
