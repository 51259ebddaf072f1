"""How the REST endpoints describe themselves in the OpenAPI schema: ``documented`` for one
endpoint's answers, and the parameters and answers several endpoints share (the path's
name and id, the ETag headers, the problem documents)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from sessions_app.api import params
from sessions_app.api import serializers as s
from sessions_app.api.errors import PROBLEM_CONTENT_TYPE


def _problems(*codes: int) -> dict:
    text = {
        400: "A parameter is malformed, or is not one this endpoint takes; `parameter` names it.",
        401: "No or bad credentials.",
        403: "The user lacks the role the endpoint needs: one in some project, or (to decide a review) "
        "the reviewer or manager role.",
        404: "No such session or plan (or a malformed name or id).",
        503: "The database is busy or unreachable; retry.",
    }
    return {
        (code, PROBLEM_CONTENT_TYPE): OpenApiResponse(s.ProblemSerializer, description=text[code]) for code in codes
    }


def etag_header(name: str, description: str, *, required: bool) -> OpenApiParameter:
    """A conditional request's header carrying an ETag (If-None-Match, If-Match)."""
    return OpenApiParameter(
        name, type=str, location=OpenApiParameter.HEADER, required=required, description=description
    )


IF_NONE_MATCH = etag_header(
    "If-None-Match",
    "The ETag of an earlier answer: a 304 without a body comes back if nothing changed.",
    required=False,
)
IF_MATCH = etag_header("If-Match", "The plan's ETag, from GET /api/sessions/{name}/plans/{plan_id}/.", required=True)
SESSION_IN_PATH = OpenApiParameter(
    "name",
    type=params.SESSION_NAME_SCHEMA,
    location=OpenApiParameter.PATH,
    description="The session's name: three lowercase words joined by '-', like brave-amber-otter.",
)
PLAN_IN_PATH = OpenApiParameter(
    "plan_id",
    type=params.PLAN_ID_SCHEMA,
    location=OpenApiParameter.PATH,
    description="The plan's id: 5 characters of a-z and 0-9, like k3x9q.",
)
REVISION_IN_PATH = OpenApiParameter(
    "number", type=int, location=OpenApiParameter.PATH, description="The revision's number."
)
PLAN_PATH = [SESSION_IN_PATH, PLAN_IN_PATH]
PAGED = [params.PAGE, params.PAGE_SIZE]
NOT_MODIFIED = {304: OpenApiResponse(description="Not modified since the ETag sent in If-None-Match.")}
READ_PROBLEMS = (401, 403, 404, 503)


def documented(
    operation_id: str,
    summary: str,
    description: str,
    tags: list[str],
    ok,
    *,
    parameters=(),
    conditional: bool = False,
    problems=READ_PROBLEMS,
    answers=None,
    status_code: int = 200,
    **more,
):
    """The OpenAPI description of one endpoint. ``parameters`` are OpenApiParameters or the
    query parameters of api/params.py; a ``conditional`` endpoint also takes If-None-Match
    and may answer 304. The answers are ``ok`` (``status_code``: 200, or 201 for a creation), the 304, ``answers`` (other statuses),
    then the ``problems`` and 400 (a malformed parameter or body, or a query parameter the
    endpoint does not take)."""
    parameters = [p if isinstance(p, OpenApiParameter) else p.openapi() for p in parameters]
    codes = set(problems)
    codes.add(400)  # every endpoint refuses a query parameter it does not take (api/endpoint.py)
    describe = extend_schema(
        operation_id=operation_id,
        summary=summary,
        description=description,
        tags=tags,
        parameters=parameters + ([IF_NONE_MATCH] if conditional else []),
        responses={
            status_code: ok,
            **(NOT_MODIFIED if conditional else {}),
            **(answers or {}),
            **_problems(*sorted(codes)),
        },
        **more,
    )
    accepted = frozenset(p.name for p in parameters if p.location == OpenApiParameter.QUERY)

    def decorate(handler):
        # What the schema lists is all the endpoint takes: ApiView refuses any other name.
        handler.query_parameters = accepted
        return describe(handler)

    return decorate
