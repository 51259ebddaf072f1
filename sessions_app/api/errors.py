"""The REST API's one exception handler: every error leaves as application/problem+json
(RFC 9457) carrying a category, the domain's own for domain errors and a few more for what
only HTTP has (credentials, permissions, methods).

Domain errors keep their message; the suggestion is the API's own, worded for an
integration (an endpoint to call), chosen by the error's category and reason.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DatabaseError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from sessions_app import errors
from sessions_app.errors import NineplanError
from sessions_app.identifiers import is_plan_id, is_session_name

log = logging.getLogger("nineplan.api")

PROBLEM_CONTENT_TYPE = "application/problem+json"

# Categories beyond the domain's (docs/design.md, "Errors"): they describe the HTTP exchange, not the domain.
AUTHENTICATION_REQUIRED = "AUTHENTICATION_REQUIRED"
PERMISSION_DENIED = "PERMISSION_DENIED"
NOT_FOUND = "NOT_FOUND"
METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
NOT_ACCEPTABLE = "NOT_ACCEPTABLE"
UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
THROTTLED = "THROTTLED"
PRECONDITION_FAILED = "PRECONDITION_FAILED"
PRECONDITION_REQUIRED = "PRECONDITION_REQUIRED"

DOMAIN_STATUS = {
    "SESSION_NOT_FOUND": status.HTTP_404_NOT_FOUND,
    "PLAN_NOT_FOUND": status.HTTP_404_NOT_FOUND,
    "VALIDATION_ERROR": status.HTTP_400_BAD_REQUEST,
    "NO_SESSION_SELECTED": status.HTTP_400_BAD_REQUEST,
    "NO_ACTIVE_PLAN": status.HTTP_409_CONFLICT,
    "PLAN_ALREADY_ACTIVE": status.HTTP_409_CONFLICT,
    "QUEUE_EMPTY": status.HTTP_409_CONFLICT,
    "QUEUE_BLOCKED": status.HTTP_409_CONFLICT,
    "LEASE_LOST": status.HTTP_409_CONFLICT,
    "PERMISSION_DENIED": status.HTTP_403_FORBIDDEN,
    # Not the caller's fault, and usually passing (a locked or unreachable database).
    "FILE_SYSTEM_ERROR": status.HTTP_503_SERVICE_UNAVAILABLE,
    "DATABASE_ERROR": status.HTTP_503_SERVICE_UNAVAILABLE,
}

API_SUGGESTIONS = {
    "SESSION_NOT_FOUND": "List the sessions at /api/sessions/ and use one of their names.",
    "PLAN_NOT_FOUND": "List the session's plans at /api/sessions/{name}/plans/ and use one of their ids.",
    "VALIDATION_ERROR": "Correct the named parameter and repeat the request; see /api/docs/.",
    "DATABASE_ERROR": "Retry shortly; if it keeps failing, ask the operator to check the database.",
    "FILE_SYSTEM_ERROR": "Retry shortly; if it keeps failing, ask the operator to check the sessions directory.",
    "NO_ACTIVE_PLAN": "Read the session's state at /api/sessions/{name}/ to see which plan is active.",
    "PLAN_ALREADY_ACTIVE": "Read the session's state at /api/sessions/{name}/ to see which plan is active.",
    "QUEUE_EMPTY": "Nothing is queued; read the session's history at /api/history/.",
    "QUEUE_BLOCKED": "Read the session's state at /api/sessions/{name}/ to see what its plans wait for.",
    "LEASE_LOST": "Read the plan at /api/sessions/{name}/plans/{id}/ to see who holds it now.",
    "PERMISSION_DENIED": "Ask a manager of the project, or an administrator, for the role the message names.",
}
API_SUGGESTIONS_BY_REASON = {
    errors.NOT_COMPLETED: "Read queued and active plans at /api/sessions/{name}/plans/; history holds completed ones.",
    errors.BAD_DOCUMENT: "Import a document written by `9plan export` or GET /api/sessions/{name}/export/.",
    errors.COLLIDED: "Repeat the request: nothing of it was saved.",
    errors.BUSY: "Repeat the request in a moment: nothing of it was saved.",
    errors.NOT_IN_REVIEW: "Read the plan at /api/sessions/{name}/plans/{plan_id}/: only a plan in review is decided.",
    errors.NOTHING_ADDED: "No plan was added to this session yet; read its state at /api/sessions/{name}/.",
    errors.NOTHING_COMPLETED: "Read the session's discarded plans at /api/sessions/{name}/plans/?status=discarded.",
    errors.WAITING_FOR_PERSON: "A person requeues or discards the waiting plans in the admin's session page.",
    errors.UNKNOWN_PARAMETER: "Leave the named parameter out, or correct its spelling; /api/docs/ lists each endpoint's.",
    errors.AWAITING_REVIEW: "Decide the plans in review with POST /api/sessions/{name}/plans/{plan_id}/review/.",
}


class PreconditionRequired(exceptions.APIException):
    status_code = status.HTTP_428_PRECONDITION_REQUIRED
    default_detail = "This request must be conditional: send the plan's ETag in If-Match."
    default_code = "precondition_required"


class PreconditionFailed(exceptions.APIException):
    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_detail = "The plan changed since the ETag sent in If-Match was issued; nothing was decided."
    default_code = "precondition_failed"


class IdempotencyKeyReused(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = "This Idempotency-Key was already used for a different request; nothing was changed."
    default_code = "idempotency_key_reused"
    parameter = "Idempotency-Key"


class WildcardRefused(PreconditionRequired):
    default_detail = (
        "If-Match: * would act on whatever the plan now says, unread: read the plan first and send "
        "its ETag in If-Match; nothing was decided."
    )


class WeakValidator(PreconditionFailed):
    default_detail = (
        'If-Match compares ETags strongly (RFC 9110), so a weak ETag (W/"...") never matches: send the '
        "strong ETag of the plan's JSON answer; nothing was decided."
    )


HTTP_CATEGORIES = (
    (
        PreconditionRequired,
        PRECONDITION_REQUIRED,
        "GET /api/sessions/{name}/plans/{plan_id}/, then repeat the request with its ETag in If-Match.",
    ),
    (
        PreconditionFailed,
        PRECONDITION_FAILED,
        "GET /api/sessions/{name}/plans/{plan_id}/ again, check what changed, and repeat with its new ETag.",
    ),
    (
        IdempotencyKeyReused,
        "VALIDATION_ERROR",
        "Send a new Idempotency-Key with a new request; the same key is for repeating the same request.",
    ),
    (
        exceptions.NotAuthenticated,
        AUTHENTICATION_REQUIRED,
        "Send 'Authorization: Token <key>' or 'Authorization: Bearer <key>' (see /api/docs/).",
    ),
    (
        exceptions.AuthenticationFailed,
        AUTHENTICATION_REQUIRED,
        "Check the token; create one with 9plan token USER.",
    ),
    (
        exceptions.PermissionDenied,
        PERMISSION_DENIED,
        "Ask a manager of the project, or an administrator, for the role the message names.",
    ),
    (exceptions.NotFound, NOT_FOUND, "See /api/docs/ for the endpoints and their parameters."),
    (
        exceptions.MethodNotAllowed,
        METHOD_NOT_ALLOWED,
        "This endpoint does not take that method: the Allow header lists those it does (see /api/docs/).",
    ),
    (exceptions.NotAcceptable, NOT_ACCEPTABLE, "Accept application/json."),
    (exceptions.UnsupportedMediaType, UNSUPPORTED_MEDIA_TYPE, "Send a write's body as application/json."),
    (exceptions.Throttled, THROTTLED, "Wait for the time given in Retry-After, then repeat the request."),
    (exceptions.ParseError, "VALIDATION_ERROR", "Send a write's body as well-formed JSON; reads take no body."),
    (exceptions.ValidationError, "VALIDATION_ERROR", "Correct the named parameter and repeat the request."),
)


def problem(
    *,
    status_code: int,
    category: str,
    detail: str,
    suggestion: str | None = None,
    parameter: str | list[str] | None = None,
) -> dict:
    body = {
        "type": "about:blank",
        "title": HTTPStatus(status_code).phrase,
        "status": status_code,
        "detail": detail,
        "category": category,
    }
    if suggestion:
        body["suggestion"] = suggestion
    if parameter:
        body["parameter"] = parameter
    return body


def _validation_detail(detail) -> tuple[str, str | None]:
    """DRF's nested error detail flattened to one message, and the first field it names."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            message, _ = _validation_detail(value)
            return (f"{key}: {message}", None if key == "non_field_errors" else str(key))
        return ("Invalid request.", None)
    if isinstance(detail, list):
        return (_validation_detail(detail[0])[0] if detail else "Invalid request.", None)
    return (str(detail), None)


def _translate(exc) -> tuple[int, dict, dict] | None:
    """(status, problem body, headers), or None for an exception that is not ours to answer."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    if isinstance(exc, NineplanError):
        code = DOMAIN_STATUS.get(exc.category, status.HTTP_400_BAD_REQUEST)
        suggestion = (exc.reason and API_SUGGESTIONS_BY_REASON.get(exc.reason)) or API_SUGGESTIONS.get(exc.category)
        body = problem(
            status_code=code, category=exc.category, detail=exc.message, suggestion=suggestion, parameter=exc.field
        )
        return code, body, {}

    if isinstance(exc, exceptions.APIException):
        headers = {}
        # Only some APIExceptions (NotAuthenticated, Throttled) carry these.
        auth_header = getattr(exc, "auth_header", None)
        if auth_header:
            headers["WWW-Authenticate"] = auth_header
        wait = getattr(exc, "wait", None)
        if wait:
            headers["Retry-After"] = f"{wait:d}"
        category, suggestion = "VALIDATION_ERROR", None
        for cls, cat, hint in HTTP_CATEGORIES:
            if isinstance(exc, cls):
                category, suggestion = cat, hint
                break
        if exc.status_code == status.HTTP_403_FORBIDDEN and category == AUTHENTICATION_REQUIRED:
            category = PERMISSION_DENIED
        if isinstance(exc, exceptions.PermissionDenied) and str(exc.detail).startswith("CSRF Failed"):
            # No role is missing: a signed-in browser session left out its CSRF token.
            suggestion = "Send the CSRF token with a session cookie, or authenticate with 'Authorization: Token <key>'."
        parameter = getattr(exc, "parameter", None)
        if isinstance(exc, exceptions.ValidationError):
            detail, parameter = _validation_detail(exc.detail)
        else:
            detail = str(exc.detail)
        body = problem(
            status_code=exc.status_code, category=category, detail=detail, suggestion=suggestion, parameter=parameter
        )
        return exc.status_code, body, headers

    if isinstance(exc, DatabaseError):
        # A busy or unreachable database is an outage, not a bug in the request.
        log.error("database error in the REST API", extra={"error": str(exc)})
        code = status.HTTP_503_SERVICE_UNAVAILABLE
        body = problem(
            status_code=code,
            category="DATABASE_ERROR",
            detail="The database could not answer the request.",
            suggestion=API_SUGGESTIONS["DATABASE_ERROR"],
        )
        return code, body, {"Retry-After": "1"}

    return None


def exception_handler(exc, context) -> Response | None:
    translated = _translate(exc)
    if translated is None:
        return None  # DRF re-raises it
    code, body, headers = translated
    request = context.get("request")
    if body.get("suggestion"):
        body["suggestion"] = filled(body["suggestion"], context.get("kwargs") or {}, request)
    if request is not None:
        body["instance"] = request.path
    set_rollback()
    return Response(body, status=code, headers=headers, content_type=problem_content_type(request))


# What a suggestion's address may name, and the request's values that fill it in: the
# path's, else the query's (?session=, ?plan=). A value is used only when it is well formed,
# so nothing a client sent unchecked is echoed back.
PLACEHOLDERS = {
    "{name}": (("name", "session"), is_session_name, "<session name>"),
    "{plan_id}": (("plan_id", "plan"), is_plan_id, "<plan id>"),
    "{id}": (("plan_id", "plan"), is_plan_id, "<plan id>"),
}


def filled(suggestion: str, kwargs: dict, request) -> str:
    """The suggestion with the request's session name and plan id in its addresses, so it can be
    followed as it is; one the request does not tell is named in angle brackets."""
    query = getattr(request, "query_params", {}) if request is not None else {}
    for placeholder, (keys, well_formed, unknown) in PLACEHOLDERS.items():
        if placeholder not in suggestion:
            continue
        value = next((v for v in (kwargs.get(keys[0]), query.get(keys[1])) if v and well_formed(v)), None)
        suggestion = suggestion.replace(placeholder, value or unknown)
    return suggestion


def problem_content_type(request) -> str | None:
    # The browsable API renders errors as HTML; only a JSON body is a problem document.
    renderer = getattr(request, "accepted_renderer", None) if request is not None else None
    if renderer is None or getattr(renderer, "format", None) == "json":
        return PROBLEM_CONTENT_TYPE
    return None
