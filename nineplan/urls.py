from django.contrib import admin
from django.http import HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from sessions_app.admin import live
from sessions_app.oauth import views as oauth

# The admin app is installed without autodiscovery (nineplan/settings.py): every installed
# app's ModelAdmins are registered here, where the pages that show them are routed.
admin.autodiscover()


def favicon(request):
    # Browsers ask for /favicon.ico on pages that name no icon (the REST API's, its docs):
    # the admin's icon, rather than a 404 on every page.
    return HttpResponseRedirect(static("sessions_app/favicon.svg"))


urlpatterns = [
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False)),
    path("favicon.ico", favicon),
    # What the admin's live pages poll (sessions_app/admin/live.py).
    path("admin/live/", admin.site.admin_view(live.view), name="nineplan_live"),
    path("admin/", admin.site.urls),
    path("api/", include("sessions_app.api.urls")),
    # OAuth 2.1 for MCP clients and integrations (404 while NINEPLAN_OAUTH is off).
    path("oauth/", include("sessions_app.oauth.urls")),
    # Single sign-on for people (sessions_app/oauth/sso.py; 404 without NINEPLAN_OIDC_ISSUER).
    path("oidc/", include("sessions_app.oauth.sso_urls")),
    path(".well-known/oauth-authorization-server", oauth.server_metadata, name="oauth_server_metadata"),
]
