"""The writes that put work in: a new session (POST sessions/), new plans (POST
sessions/NAME/plans/, one or a list) and a queued plan corrected (PATCH
sessions/NAME/plans/ID/, its text or its place, under If-Match).

Each calls the service an agent's tool calls (sessions_app/services), which checks the
caller's role: ``agent`` and ``manager`` put work in, a ``reader`` or ``reviewer`` is
refused with 403 and nothing changed. A write sent with an ``Idempotency-Key`` header is
applied once per user: the same key and body again get the first answer (the key works as
``request_id`` does over MCP); the same key with another body is refused with 422.

The views here extend the read views at the same addresses (api/views.py) with their writes.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from sessions_app import access, errors, services
from sessions_app.api import etags, paths, views
from sessions_app.api import reads as api_reads
from sessions_app.api import serializers as s
from sessions_app.api import write_serializers as w
from sessions_app.api.endpoint import HasViewPermission
from sessions_app.api.errors import (
    IdempotencyKeyReused,
    PreconditionFailed,
    PreconditionRequired,
    WeakValidator,
    WildcardRefused,
)
from sessions_app.api.schema import IF_MATCH, PLAN_PATH, SESSION_IN_PATH, documented
from sessions_app.errors import ValidationFailed
from sessions_app.reads import queries

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    type=str,
    location=OpenApiParameter.HEADER,
    required=False,
    description=(
        "Your name for this write (up to 64 characters of letters, digits, '.', '_', ':' and '-', like a UUID). "
        "Sent again with the same body, the write is not applied twice: the first answer comes back. "
        "The same key with another body is refused (422). Keys are kept 48 hours."
    ),
)
WRITE_PROBLEMS = (401, 403, 404, 503)
REUSED = {422: OpenApiResponse(s.ProblemSerializer, description="The Idempotency-Key was used for another body.")}


class HasWritePermission(HasViewPermission):
    """Reads as every endpoint; writes need the agent or manager role in some project (the
    service then checks the session's own project)."""

    message = (
        "Putting work in needs the 'agent' or 'manager' role in a 9plan project; a 'reader' or 'reviewer' may "
        "read but not write. Nothing was changed."
    )

    def has_permission(self, request, view) -> bool:
        if not super().has_permission(request, view):
            return False
        # A method the endpoint does not have stays a 405, whoever asks.
        writes = request.method.lower() in ("post", "put", "patch", "delete") and hasattr(view, request.method.lower())
        return not writes or request.user.has_perm(access.ADD)


def once(request, endpoint: str, write, **call) -> Response:
    """``write()`` (a Response), applied once per Idempotency-Key when the request sends one."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return write()

    def applied() -> tuple[dict, bool]:
        response = write()
        kept = {name: response[name] for name in ("ETag", "Location") if response.has_header(name)}
        return {"status": response.status_code, "body": response.data, "headers": kept}, True

    try:
        answer = services.write_once(
            request_id=key,
            call={"endpoint": endpoint, "body": request.data, **call},
            write=applied,
            scope=f"user:{request.user.pk}",
            field="Idempotency-Key",
            # A kept answer is given back only to a caller who may still write there.
            session_of=lambda answer: call.get("session") or _created_session(answer),
        )
    except ValidationFailed as exc:
        if exc.reason == errors.REQUEST_ID_REUSED:
            raise IdempotencyKeyReused(exc.message) from exc
        raise
    return Response(answer["body"], status=answer["status"], headers=answer["headers"])


def _created_session(answer: dict) -> str | None:
    body = answer.get("body")
    name = body.get("name") if isinstance(body, dict) else None
    return name if isinstance(name, str) else None


def object_body(request) -> dict:
    if not isinstance(request.data, dict):
        raise ValidationFailed("The body must be a JSON object.", field="body")
    return request.data


def refuse_unknown(body: dict, allowed, where: str = "") -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise ValidationFailed(
            f"{where}{unknown[0]} is not a field this request takes; it takes {', '.join(allowed)}.",
            field=f"{where}{unknown[0]}",
        )


class SessionListView(views.SessionListView):
    permission_classes = [HasWritePermission]

    @documented(
        "sessions_create",
        "Create a session",
        "A new session with a fresh three-word name, in a project where you hold the agent or manager role "
        "(`project` may be left out when you hold it in one project only). Answers 201 with the session's "
        "state and its address in Location. Send an Idempotency-Key to retry safely.",
        views.TAG_SESSIONS,
        s.SessionStateSerializer,
        status_code=201,
        parameters=[IDEMPOTENCY_KEY],
        problems=WRITE_PROBLEMS,
        answers=REUSED,
        request=w.SessionCreateSerializer,
        examples=[
            OpenApiExample(
                "A session for a ticket",
                value={"task_description": "BILL-142: port invoicing to Django", "project": "billing"},
                request_only=True,
            )
        ],
    )
    def post(self, request):
        body = object_body(request)
        refuse_unknown(body, w.SESSION_FIELDS)

        def write() -> Response:
            session = services.session_create(
                **{name: body.get(name) for name in w.SESSION_FIELDS}, actor=access.current().label
            )
            state = queries.session_state(session.name)
            data = s.SessionStateSerializer(state, context={"request": request}).data
            location = request.build_absolute_uri(reverse("api:session-detail", kwargs={"name": session.name}))
            return Response(data, status=status.HTTP_201_CREATED, headers={"Location": location})

        return once(request, "sessions_create", write)


class SessionPlansView(views.SessionPlansView):
    permission_classes = [HasWritePermission]

    @documented(
        "plans_create",
        "Add plans to a session",
        "One plan (an object with its sections) or several in order (a list, or an object with `plans`, "
        "`position` and `review`), with the fields and limits of the MCP tools 9plan_queue_add and "
        "9plan_queue_add_batch: `context`, `goal`, `approach` and `success_criteria` are required; `depends_on` "
        "names plans of the session (or, in a batch, earlier plans of it by index). All are added or none. "
        "Answers 201 with the plans added and their places in the queue. Needs the agent or manager role.",
        views.TAG_PLANS,
        w.PlansAddedSerializer,
        status_code=201,
        parameters=[SESSION_IN_PATH, IDEMPOTENCY_KEY],
        problems=WRITE_PROBLEMS,
        answers=REUSED,
        request=w.PlansAddSerializer,
        examples=[
            OpenApiExample(
                "One plan",
                value={
                    "context": "BILL-142: invoicing moves to Django",
                    "goal": "Model invoices",
                    "approach": "1. Read the schema 2. Write the models 3. Migrate",
                    "success_criteria": "Migrations apply; tests pass",
                    "position": "back",
                },
                request_only=True,
            ),
            OpenApiExample(
                "Several, in order",
                value={
                    "plans": [
                        {"context": "BILL-142", "goal": "Model invoices", "approach": "...", "success_criteria": "..."},
                        {
                            "context": "BILL-142",
                            "goal": "Invoice API",
                            "approach": "...",
                            "success_criteria": "...",
                            "depends_on": [0],
                        },
                    ],
                    "position": "front",
                    "review": True,
                },
                request_only=True,
            ),
        ],
    )
    def post(self, request, name: str):
        name = paths.session_name(name)
        plans, options = w.plans_in_body(request.data)

        def write() -> Response:
            written = services.plan_enqueue_many(
                session_name=name,
                plans=plans,
                position=options.get("position"),
                review=options.get("review"),
                actor=access.current().label,
            )
            places = {q.plan.id: q.place for q in written}
            data = {
                "session": name,
                "added": len(written),
                "plans": w.AddedPlanSerializer(
                    [q.plan for q in written], many=True, context={"request": request, "places": places}
                ).data,
            }
            return Response(data, status=status.HTTP_201_CREATED)

        return once(request, "plans_create", write, session=name)


class PlanDetailView(views.PlanDetailView):
    permission_classes = [HasWritePermission]

    @documented(
        "plans_update",
        "Correct a queued plan",
        "Change a queued plan's sections (those given; the change is a revision, and the plan's agent is told "
        "on resume) and/or move it to the `front` or `back` of the queue, in one write. Needs the agent or "
        "manager role and the plan's ETag, as GET .../plans/{plan_id}/ gave it in JSON, in If-Match: 428 without "
        "it or with `*`, 412 if the plan changed since. Answers with the plan as it now is and its new ETag.",
        views.TAG_PLANS,
        s.PlanDetailSerializer,
        parameters=[*PLAN_PATH, IF_MATCH, IDEMPOTENCY_KEY],
        problems=WRITE_PROBLEMS,
        answers={
            412: OpenApiResponse(s.ProblemSerializer, description="The plan changed since the ETag was issued."),
            428: OpenApiResponse(s.ProblemSerializer, description="If-Match is missing, or is `*`."),
            **REUSED,
        },
        request=w.PlanEditSerializer,
        examples=[
            OpenApiExample(
                "Sharpen the goal and move it up",
                value={"goal": "Model invoices and credit notes", "position": "front"},
                request_only=True,
            )
        ],
    )
    def patch(self, request, name: str, plan_id: str):
        name, plan_id = paths.session_name(name), paths.plan_id(plan_id)
        header = if_match(request, "changed")
        body = object_body(request)
        refuse_unknown(body, w.EDIT_FIELDS)
        sections = {k: v for k, v in body.items() if k != "position"}

        def unchanged(plan) -> None:
            current = etags.for_json(api_reads.plan_detail(name, plan.id).fingerprint, request)
            if not etags.matches_strongly(header, current):
                raise refusal(PreconditionFailed, "changed")

        def write() -> Response:
            services.plan_edit(
                session_name=name,
                plan_id=plan_id,
                sections=sections,
                position=body.get("position"),
                actor=access.current().label,
                precondition=unchanged,
            )
            detail = api_reads.plan_detail(name, plan_id)
            response = Response(s.PlanDetailSerializer(detail, context={"request": request}).data)
            response["ETag"] = etags.for_json(detail.fingerprint, request)
            return response

        return once(request, "plans_update", write, session=name, plan=plan_id, if_match=header)


def refusal(cls: type[exceptions.APIException], done: str) -> exceptions.APIException:
    """A conditional request's refusal, saying what did not happen ("decided", "changed")."""
    return cls(detail=str(cls.default_detail).replace("nothing was decided", f"nothing was {done}"))


def if_match(request, done: str) -> str:
    """The If-Match header of a conditional write: present, not ``*``, not only weak ETags."""
    header = request.headers.get("If-Match")
    if not header:
        raise refusal(PreconditionRequired, done)
    if etags.ANY in etags.sent(header):
        raise refusal(WildcardRefused, done)
    if etags.all_weak(header):
        raise refusal(WeakValidator, done)
    return header
