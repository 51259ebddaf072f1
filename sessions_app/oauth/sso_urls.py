"""The sign-on endpoints (mozilla-django-oidc's views), only where a provider is configured."""

from django.conf import settings
from django.urls import path

from sessions_app.oauth import sso

urlpatterns = []
if settings.NINEPLAN_OIDC_ISSUER:
    urlpatterns = [
        path("authenticate/", sso.SignInView.as_view(), name="oidc_authentication_init"),
        path("callback/", sso.CallbackView.as_view(), name="oidc_authentication_callback"),
    ]
