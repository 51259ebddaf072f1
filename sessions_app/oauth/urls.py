"""The authorization server's endpoints under /oauth/ (their names are the toolkit's, which
its metadata document reverses)."""

from django.urls import path

from sessions_app.oauth import views

app_name = "oauth2_provider"

urlpatterns = [
    path("authorize/", views.authorize, name="authorize"),
    path("token/", views.token, name="token"),
    path("revoke_token/", views.revoke_token, name="revoke-token"),
    path("register/", views.register, name="dcr-register"),
    path("register/<str:client_id>/", views.register_manage, name="dcr-register-management"),
]
