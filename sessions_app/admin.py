from django.contrib import admin

from sessions_app.models import Event, Plan, Session


class ReadOnlyAdmin(admin.ModelAdmin):
    # State changes go through the services; the generic forms must not bypass them.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    list_display = ("name", "task_description", "created_at")
    search_fields = ("name", "task_description")


@admin.register(Plan)
class PlanAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "status", "queue_position", "goal", "updated_at")
    list_filter = ("status",)
    search_fields = ("id", "goal")


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "plan", "kind", "actor", "created_at")
    list_filter = ("kind",)
