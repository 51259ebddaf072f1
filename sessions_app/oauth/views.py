"""The authorization server's pages: django-oauth-toolkit's endpoints, with 9plan's consent
page, and nothing of them while OAuth is off (NINEPLAN_OAUTH)."""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib import admin
from django.http import Http404
from oauth2_provider import views as dot
from oauth2_provider.models import get_application_model

from sessions_app.errors import NineplanError
from sessions_app.models import Membership, Project, Role
from sessions_app.oauth.tokens import roles_allowed, same_resource

NOT_OURS = (
    "The resource '{resource}' is not served here: this server issues tokens for {ours} only. Nothing was authorized."
)


def resources_served() -> list[str]:
    """What a token can be bound to (RFC 8707): the MCP endpoint and the REST API."""
    return [url for url in (settings.NINEPLAN_MCP_URL, settings.NINEPLAN_API_URL) if url]


def oauth_on(view):
    """``view``, or 404 while OAuth is off."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not settings.NINEPLAN_OAUTH:
            raise Http404("OAuth is off on this server (NINEPLAN_OAUTH).")
        return view(request, *args, **kwargs)

    return wrapped


def project_choices(user) -> list[tuple[str, str]]:
    names: list[str]
    if user.is_superuser:
        names = list(Project.objects.values_list("name", flat=True))
    else:
        names = list(Membership.objects.filter(user=user).values_list("project_id", flat=True))
    return [(name, name) for name in sorted(names)]


class ConsentForm(dot.AuthorizationView.form_class):
    projects = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    role = forms.ChoiceField(required=False, choices=Role.choices, initial=Role.READER)

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["projects"].choices = project_choices(user)
        own = set(Membership.objects.filter(user=user).values_list("role", flat=True))
        allowed = {r for o in own for r in roles_allowed(o, superuser=False)} | (
            set(Role.values) if user.is_superuser else set()
        )
        self.fields["role"].choices = [(value, label) for value, label in Role.choices if value in allowed]


class ConsentView(dot.AuthorizationView):
    """Shows the client's name and where it came from, and lets the person choose the
    project(s) and the role the client gets (at most their own)."""

    template_name = "admin/sessions_app/oauth_consent.html"
    form_class = ConsentForm

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "user": self.request.user}

    def get_context_data(self, **kwargs):
        context = {**admin.site.each_context(self.request), **super().get_context_data(**kwargs)}
        application = context.get("application")
        if application is not None:
            context["client_origin"] = client_origin(application)
        context["title"] = "Connect an app"
        return context

    def get(self, request, *args, **kwargs):
        wanted = request.GET.getlist("resource")
        refused = self.refused_resource(wanted)
        if refused:
            return self.render_to_response({**admin.site.each_context(request), "refusal": refused}, status=400)
        if not wanted:
            # A client that names no resource gets a token for the MCP endpoint, the one
            # clients sign in for.
            request.GET = request.GET.copy()
            request.GET["resource"] = settings.NINEPLAN_MCP_URL
        return super().get(request, *args, **kwargs)

    def refused_resource(self, wanted: list[str]) -> str | None:
        for resource in wanted:
            if not any(same_resource(resource, ours) for ours in resources_served()):
                return NOT_OURS.format(resource=resource, ours=" and ".join(resources_served()))
        return None

    def form_valid(self, form):
        from sessions_app.services import consent_check, consent_give

        refused = self.refused_resource((form.cleaned_data.get("resource") or "").split())
        if refused:
            return self.render_to_response({**admin.site.each_context(self.request), "refusal": refused}, status=400)
        if not form.cleaned_data.get("allow"):
            return super().form_valid(form)
        application = get_application_model().objects.filter(client_id=form.cleaned_data["client_id"]).first()
        if application is None:
            raise Http404("No such client.")
        projects: list[str] = form.cleaned_data.get("projects") or []
        role: str = form.cleaned_data.get("role") or ""
        try:
            consent_check(user=self.request.user, projects=projects, role=role)
        except NineplanError as exc:
            form.add_error(None, exc.message)
            return self.form_invalid(form)
        answer = super().form_valid(form)
        # Kept only once a code was made: a request refused on the way (a "plain" PKCE
        # challenge, say) leaves no consent behind.
        if "code=" in answer.get("Location", ""):
            consent_give(user=self.request.user, application=application, projects=projects, role=role)
        return answer

    def form_invalid(self, form):
        application = get_application_model().objects.filter(client_id=form.data.get("client_id")).first()
        self.oauth2_data = {"application": application}
        return self.render_to_response(self.get_context_data(form=form, application=application))


def client_origin(application) -> str:
    """Where a client came from, as the consent page says it: its metadata document's host,
    or how it registered, and the host its redirect goes to."""
    redirect = (application.redirect_uris or "").split()
    goes_to = urlsplit(redirect[0]).netloc if redirect else "?"
    if application.client_id.startswith("https://"):
        return f"described by {urlsplit(application.client_id).netloc}; sends you back to {goes_to}"
    source = getattr(application, "registration_source", "")
    how = "registered itself" if source == "dcr" else "registered by an administrator"
    return f"{how}; sends you back to {goes_to}"


authorize = oauth_on(ConsentView.as_view())
token = oauth_on(dot.TokenView.as_view())
revoke_token = oauth_on(dot.RevokeTokenView.as_view())
register = oauth_on(dot.DynamicClientRegistrationView.as_view())
register_manage = oauth_on(dot.DynamicClientRegistrationManagementView.as_view())
server_metadata = oauth_on(dot.OAuthServerMetadataView.as_view())
