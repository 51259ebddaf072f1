"""The sessions list's filters: whether a session has a plan in progress, and queued work."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Exists

from sessions_app.admin import reads as admin_reads


class YesNoFilter(admin.SimpleListFilter):
    @staticmethod
    def expression() -> Exists:
        """The condition "yes" selects: each filter names its own."""
        raise NotImplementedError

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
