from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from sessions_app.admin import live

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False)),
    # What the admin's live pages poll (sessions_app/admin/live.py).
    path("admin/live/", admin.site.admin_view(live.view), name="nineplan_live"),
    path("admin/", admin.site.urls),
    path("api/", include("sessions_app.api.urls")),
]
