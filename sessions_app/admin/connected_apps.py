"""Connected apps: the OAuth clients people let act for them, with the projects and role
each was given. People see and revoke their own; a project's managers and superusers those
of their projects. Revoking is a service call (services/consents.py) and ends the client's
tokens, so its next request is refused."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils.html import format_html

from sessions_app.admin.model_admin import NineplanAdmin
from sessions_app.errors import NineplanError
from sessions_app.models import Consent
from sessions_app.oauth.views import client_origin
from sessions_app.services import consent_revoke, consent_visible, consents_visible

REVOKED = "{name} can no longer act for its person; its next request is refused."


@admin.register(Consent)
class ConnectedAppAdmin(NineplanAdmin):
    list_display = ("client", "origin", "person", "role", "project_list", "created_at", "updated_at")
    list_display_links = None
    ordering = ("-updated_at",)
    actions = ("revoke",)

    def get_queryset(self, request):
        return consents_visible(request.user)

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None):
        if not (request.user.is_active and request.user.is_staff):
            return False
        return obj is None or consent_visible(obj, request.user)

    def has_revoke_permission(self, request, obj=None):
        return self.has_view_permission(request, obj)

    @admin.display(description="app", ordering="application__name")
    def client(self, obj):
        return obj.application.name or obj.application.client_id

    @admin.display(description="where it came from")
    def origin(self, obj):
        return client_origin(obj.application)

    @admin.display(description="person", ordering="user__username")
    def person(self, obj):
        return obj.user.get_username()

    @admin.display(description="projects")
    def project_list(self, obj):
        return format_html("{}", ", ".join(p.name for p in obj.projects.all()))

    @admin.action(description="Revoke the selected apps", permissions=["revoke"])
    def revoke(self, request, queryset):
        for consent_id in queryset.values_list("id", flat=True):
            try:
                name = consent_revoke(consent_id=consent_id, by=request.user)
            except NineplanError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.message_user(request, REVOKED.format(name=name), messages.SUCCESS)
