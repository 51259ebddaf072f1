"""The REST API under /api/: its root, the data endpoints (reads, and the writes that put work
in and decide reviews), the OpenAPI schema and its docs."""

from django.urls import path, re_path

from sessions_app.api import review_views, views, write_views

app_name = "api"

urlpatterns = [
    path("", views.ApiRootView.as_view(), name="root"),
    path("sessions/", write_views.SessionListView.as_view(), name="session-list"),
    path("sessions/<str:name>/", views.SessionDetailView.as_view(), name="session-detail"),
    path("sessions/<str:name>/queue/", views.SessionQueueView.as_view(), name="session-queue"),
    path("sessions/<str:name>/plans/", write_views.SessionPlansView.as_view(), name="session-plans"),
    path("sessions/<str:name>/plans/<str:plan_id>/", write_views.PlanDetailView.as_view(), name="plan-detail"),
    path("sessions/<str:name>/plans/<str:plan_id>/review/", review_views.PlanReviewView.as_view(), name="plan-review"),
    path(
        "sessions/<str:name>/plans/<str:plan_id>/revisions/",
        review_views.PlanRevisionsView.as_view(),
        name="plan-revisions",
    ),
    path(
        "sessions/<str:name>/plans/<str:plan_id>/revisions/<str:number>/",
        review_views.PlanRevisionView.as_view(),
        name="plan-revision",
    ),
    path("sessions/<str:name>/validation/", views.SessionValidationView.as_view(), name="session-validation"),
    path("sessions/<str:name>/export/", views.SessionExportView.as_view(), name="session-export"),
    path("history/", views.HistorySearchView.as_view(), name="history-search"),
    path("events/", views.EventFeedView.as_view(), name="event-feed"),
    path("schema/", views.SchemaView.as_view(), name="schema"),
    path("docs/", views.ApiDocsView.as_view(url_name="api:schema"), name="docs"),
    re_path(r"^.*$", views.not_found, name="not-found"),
]
