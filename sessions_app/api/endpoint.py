"""What every REST endpoint shares: who may call it (signed in, a member of some project;
each answer then holds only the caller's projects, sessions_app/access.py), the query
parameters it takes (those its schema declares, nothing else), answers no cache keeps, and
conditional reads under an ETag.
The read endpoints (api/views.py) and the review decision (api/review_views.py) are
ApiViews alike."""

from __future__ import annotations

from django.utils.cache import patch_cache_control, patch_vary_headers
from rest_framework import permissions
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app import access
from sessions_app.api import etags, pagination, params
from sessions_app.api import reads as api_reads


class HasViewPermission(permissions.BasePermission):
    """Signed in, and holding what the endpoint needs in some project (a role there)."""

    message = "You need a role in a 9plan project for this endpoint; a project's manager grants one."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False  # DRF turns this into 401 with a WWW-Authenticate challenge
        return user.has_perms(view.required_perms)


class ApiView(APIView):
    """A REST endpoint; ``required_perms`` are what its caller must hold in some project."""

    permission_classes = [HasViewPermission]
    required_perms: tuple[str, ...] = (access.VIEW,)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # After authentication: a stranger gets 401, not a list of what an endpoint takes.
        # The handler's parameters are the ones schema.documented declared for it.
        # A method the endpoint does not have is a 405 whatever the query says.
        handler = getattr(self, request.method.lower(), None)
        if handler is not None and request.method.lower() in self.http_method_names:
            params.refuse_unknown(request, getattr(handler, "query_parameters", frozenset()))

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        # Answers depend on who asks and hold plan text (an export holds all of it): no
        # cache may keep them, not even the client's own on disk. A client that wants to
        # revalidate keeps the ETag itself and sends it in If-None-Match.
        patch_cache_control(response, private=True, no_cache=True, no_store=True)
        patch_vary_headers(response, ("Authorization", "Cookie"))
        return response

    def conditional(self, request, fingerprint: str, build) -> Response:
        """A 304 when the client already holds this state, otherwise ``build()`` with its ETag.
        Checked only here, after authentication: a stranger learns nothing from a 304."""
        etag = etags.for_representation(fingerprint, request)
        if etags.matches_weakly(request.headers.get("If-None-Match"), etag):
            return Response(status=304, headers={"ETag": etag})
        response = build()
        response["ETag"] = etag
        return response

    def conditional_page(self, request, name: str, qs, serializer, with_rows=None) -> Response:
        """A page of ``qs`` (rows of session ``name``) under the session's ETag. The page
        parameters are checked before the session is looked up: a bad one is a 400 whether
        or not the session exists."""
        window = pagination.RequestedPage.requested(request)
        return self.conditional(
            request,
            api_reads.session_fingerprint(name),
            lambda: Response(pagination.queryset_page(request, qs, serializer, window, with_rows)),
        )
