"""REST views: each checks its parameters, calls the reads of sessions_app it needs, and
formats the result. The API is read-only but for one write, the review decision
(api/review_views.py); any other write method gets 405.

Names and ids in the path are checked before any lookup (api/paths.py).
"""

from __future__ import annotations

from django.conf import settings
from django.http import StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiParameter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework import exceptions, permissions
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from sessions_app import access
from sessions_app.api import pagination, params, paths
from sessions_app.api import reads as api_reads
from sessions_app.api import serializers as s
from sessions_app.api.endpoint import ApiView
from sessions_app.api.errors import PROBLEM_CONTENT_TYPE
from sessions_app.api.schema import PAGED, PLAN_PATH, SESSION_IN_PATH, documented
from sessions_app.maintenance import export_import, invariants
from sessions_app.reads import queries
from sessions_app.store import event_feed

HISTORY_DEPTH = 50
TAG_SESSIONS = ["sessions"]
TAG_PLANS = ["plans"]

# The root's entries: (key, route, path parameters); ApiRootSerializer describes each.
ROOT_ENTRIES = (
    ("sessions", "session-list", ()),
    ("session", "session-detail", ("name",)),
    ("session_queue", "session-queue", ("name",)),
    ("session_plans", "session-plans", ("name",)),
    ("plan", "plan-detail", ("name", "plan_id")),
    ("plan_review", "plan-review", ("name", "plan_id")),
    ("plan_revisions", "plan-revisions", ("name", "plan_id")),
    ("plan_revision", "plan-revision", ("name", "plan_id", "number")),
    ("session_validation", "session-validation", ("name",)),
    ("session_export", "session-export", ("name",)),
    ("history", "history-search", ()),
    ("events", "event-feed", ()),
    ("schema", "schema", ()),
    ("docs", "docs", ()),
)


def _url_template(request, route: str, names: tuple[str, ...]) -> str:
    """The absolute URL of ``route``, with each path parameter left as ``{name}``."""
    url = request.build_absolute_uri(reverse(f"api:{route}", kwargs={n: f"{{{n}}}" for n in names}))
    # reverse() and build_absolute_uri() percent-encode the braces of the placeholders.
    return url.replace("%7B", "{").replace("%7D", "}")


class ApiRootView(ApiView):
    """The REST API's endpoints, each as an absolute URL; a part in braces, like {name}, is
    to be filled in. Every endpoint but the schema and the docs needs credentials."""

    name = "9plan API"  # the browsable pages' first breadcrumb

    @documented(
        "api_root",
        "List the endpoints",
        "Where each endpoint is, as an absolute URL. Parts in braces are filled in (RFC 6570): "
        "{name} with a session's name, {plan_id} with a plan's id, {number} with a revision's number.",
        ["api"],
        s.ApiRootSerializer,
        problems=(401, 403),
    )
    def get(self, request):
        return Response({key: _url_template(request, route, names) for key, route, names in ROOT_ENTRIES})


HAS_ACTIVE = params.ChoiceParam(
    "has_active_plan", params.BOOLEAN, "'true': only sessions with a plan in progress; 'false': only those without."
)
HAS_QUEUED = params.ChoiceParam(
    "has_queued", params.BOOLEAN, "'true': only sessions with queued plans; 'false': only those with an empty queue."
)
SEARCH = params.TextParam("search", 200, "Only sessions whose name or task description contains this text.")


class SessionListView(ApiView):
    @documented(
        "sessions_list",
        "List sessions",
        "Sessions, newest first, with the counts the admin shows. Paginated.",
        TAG_SESSIONS,
        s.SessionPageSerializer,
        parameters=[HAS_ACTIVE, HAS_QUEUED, SEARCH, *PAGED],
        problems=(401, 403, 503),
    )
    def get(self, request):
        flag = {"true": True, "false": False, None: None}
        qs = api_reads.sessions(
            has_active_plan=flag[HAS_ACTIVE.parse(request)],
            has_queued=flag[HAS_QUEUED.parse(request)],
            search=SEARCH.parse(request),
        )
        window = pagination.RequestedPage.requested(request)
        return Response(pagination.queryset_page(request, qs, s.SessionSummarySerializer, window))


class SessionDetailView(ApiView):
    @documented(
        "sessions_retrieve",
        "One session's state",
        "The session with its counts, active plan and the first plans of its queue. "
        "Send the ETag back in If-None-Match to get a 304 while nothing changed.",
        TAG_SESSIONS,
        s.SessionStateSerializer,
        parameters=[SESSION_IN_PATH],
        conditional=True,
    )
    def get(self, request, name: str):
        name = paths.session_name(name)

        def build():
            state = queries.session_state(name)
            dependencies = queries.dependencies_of([p.id for p in state.queue]) if state.queue else {}
            context = {"request": request, "dependencies": dependencies}
            return Response(s.SessionStateSerializer(state, context=context).data)

        return self.conditional(request, api_reads.session_fingerprint(name), build)


class SessionQueueView(ApiView):
    @documented(
        "sessions_queue",
        "A session's queue, in order",
        "The queued plans, the next to be pulled first. Paginated; supports If-None-Match.",
        TAG_SESSIONS,
        s.QueuePageSerializer,
        parameters=[SESSION_IN_PATH, *PAGED],
        conditional=True,
    )
    def get(self, request, name: str):
        name = paths.session_name(name)
        return self.conditional_page(
            request,
            name,
            api_reads.queue(name),
            s.QueuedPlanSerializer,
            with_rows=lambda rows: {"dependencies": queries.dependencies_of([p.id for p in rows])},
        )


STATUS = params.ChoiceParam("status", s.STATUSES, "Only plans in this state.")


class SessionPlansView(ApiView):
    @documented(
        "sessions_plans",
        "A session's plans, by status",
        "Every plan of the session (or those in one state), oldest first. Paginated; supports If-None-Match.",
        TAG_PLANS,
        s.PlanPageSerializer,
        parameters=[SESSION_IN_PATH, STATUS, *PAGED],
        conditional=True,
    )
    def get(self, request, name: str):
        name = paths.session_name(name)
        qs = api_reads.plans(name, status=STATUS.parse(request))
        return self.conditional_page(request, name, qs, s.PlanSummarySerializer)


class PlanDetailView(ApiView):
    @documented(
        "plans_retrieve",
        "One plan",
        "A plan in any state with every section, its outcome or discard reason, and its events. "
        "Supports If-None-Match.",
        TAG_PLANS,
        s.PlanDetailSerializer,
        parameters=PLAN_PATH,
        conditional=True,
    )
    def get(self, request, name: str, plan_id: str):
        name, plan_id = paths.session_name(name), paths.plan_id(plan_id)
        detail = api_reads.plan_detail(name, plan_id)
        return self.conditional(
            request,
            detail.fingerprint,
            lambda: Response(s.PlanDetailSerializer(detail, context={"request": request}).data),
        )


class SessionValidationView(ApiView):
    @documented(
        "sessions_validation",
        "Check a session's invariants",
        "One active plan at most, queue order intact, plan files matching the database, no stray files.",
        TAG_SESSIONS,
        s.ValidationSerializer,
        parameters=[SESSION_IN_PATH],
    )
    def get(self, request, name: str):
        name = paths.session_name(name)
        result = invariants.check_invariants(name)
        body = {"session": name, "valid": result.valid, "invariants": result.invariants, "issues": result.issues}
        return Response(s.ValidationSerializer(body).data)


class SessionExportView(ApiView):
    @documented(
        "sessions_export",
        "Export a session",
        "The whole session as one document: the session, every plan in every state with all its fields, "
        "and every event. `9plan import FILE` restores it into a database without that session.",
        TAG_SESSIONS,
        s.ExportSerializer,
        parameters=[SESSION_IN_PATH],
    )
    def get(self, request, name: str):
        # Streamed as it is read: memory stays flat whatever the session's size. The
        # session is looked up first, so a missing one is still a 404 problem.
        pieces = export_import.export_stream(paths.session_name(name))
        response = StreamingHttpResponse((piece.encode("utf-8") for piece in pieces), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{name}.json"'
        return response


QUERY = params.TextParam(
    "q", settings.NINEPLAN_MAX_QUERY_CHARS, "Words to look for; plans with all of them rank first.", required=True
)
HISTORY_SESSION = params.NameParam("session", "session", "Search only this session's plans.")
HISTORY_PAGE_SIZE = params.page_size(10, "Hits")


class HistorySearchView(ApiView):
    @documented(
        "history_search",
        "Search completed plans",
        "Full-text search over the goal, context, inputs, outputs and outcome of completed plans "
        "(discarded plans are never found), best match first (BM25 on SQLite). "
        f"Pages run over the {HISTORY_DEPTH} best matches: a page holds at most those.",
        TAG_PLANS,
        s.HistoryPageSerializer,
        parameters=[QUERY, HISTORY_SESSION, params.PAGE, HISTORY_PAGE_SIZE],
    )
    def get(self, request):
        query = QUERY.parse(request)
        session = HISTORY_SESSION.parse(request)
        window = pagination.RequestedPage.requested(request, HISTORY_PAGE_SIZE)
        hits = []
        if window.start < HISTORY_DEPTH:
            hits = queries.history_search(query, session_name=session, max_results=min(window.end, HISTORY_DEPTH))
        # The hits are not counted: a full page short of the depth links to a next page,
        # which may turn out empty.
        more = len(hits) == window.end and window.end < HISTORY_DEPTH
        body = {
            "query": query,
            "session": session,
            **window.links(request, has_next=more, name_first_page=True),
            "results": s.HistoryHitSerializer(
                hits[window.start : window.end], many=True, context={"request": request, "query": query}
            ).data,
        }
        return Response(body)


class Cursor:
    """The ?after= parameter: opaque to clients, an event id inside."""

    @staticmethod
    def openapi() -> OpenApiParameter:
        return OpenApiParameter(
            "after",
            type={"type": "string", "pattern": event_feed.CURSOR_PATTERN},
            location=OpenApiParameter.QUERY,
            description="The next_cursor of the previous read; leave out to start from the first event.",
        )

    @staticmethod
    def parse(request) -> int:
        raw = params.single(request, "after")
        return 0 if raw is None else event_feed.decode_cursor(raw, field="after")


FEED_SESSION = params.NameParam("session", "session", "Only this session's events.")
FEED_PLAN = params.NameParam("plan", "plan", "Only this plan's events.")
FEED_PAGE_SIZE = params.page_size(100, "Events")


class EventFeedView(ApiView):
    @documented(
        "events_list",
        "Follow the event feed",
        "Every lifecycle step (plan created, pulled, deferred, noted, completed, discarded, ...) in the order "
        "it happened. Start without `after`, then pass each answer's `next_cursor` as `after`: "
        "every event arrives exactly once, in order, even while agents are writing. "
        "When `has_more` is false you are up to date; poll again later with the same cursor. "
        "`page_size` events per read; `next` keeps it.",
        ["events"],
        s.EventPageSerializer,
        parameters=[Cursor, FEED_SESSION, FEED_PLAN, FEED_PAGE_SIZE],
    )
    def get(self, request):
        after = Cursor.parse(request)
        session_name = FEED_SESSION.parse(request)
        plan_id = FEED_PLAN.parse(request)
        size = FEED_PAGE_SIZE.parse(request)
        session, plan = api_reads.feed_scope(session_name, plan_id)
        page = event_feed.events_after(
            after=after, limit=size, session=session, plan=plan, projects=access.current().visible_projects()
        )
        cursor = event_feed.encode_cursor(page.last_id)
        body = {
            "results": s.EventSerializer(page.events, many=True).data,
            "next_cursor": cursor,
            "has_more": page.has_more,
            "next": replace_query_param(request.build_absolute_uri(), "after", cursor),
        }
        return Response(body)


class NotFoundView(APIView):
    """Any other path under /api/: a problem document rather than Django's HTML page."""

    authentication_classes: list = []
    permission_classes = [permissions.AllowAny]
    schema = None

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        raise exceptions.NotFound("There is no such endpoint.")


_not_found = NotFoundView.as_view()


@csrf_exempt
def not_found(request, *args, **kwargs):
    # Routed as a plain function, not as the view class: the browsable pages build their
    # breadcrumbs from every prefix of the path that resolves to a REST view, and the
    # catch-all would turn "/api/sessions" (no slash) into a "Not Found" crumb.
    return _not_found(request, *args, **kwargs)


class PublicPage(APIView):
    """The schema and its docs page (drf-spectacular's views, public): like every endpoint
    they refuse a query parameter they do not take, and answer errors as problems in JSON."""

    # drf-spectacular's own: the schema's language and API version.
    query_parameters = frozenset({"lang", "version"})

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        params.refuse_unknown(request, self.query_parameters)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if response.exception:
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = JSONRenderer.media_type
            response.content_type = PROBLEM_CONTENT_TYPE
        return response


class SchemaView(PublicPage, SpectacularAPIView):
    """The OpenAPI schema, YAML or (``?format=json``) JSON."""


class ApiDocsView(PublicPage, SpectacularSwaggerView):
    """The interactive docs page (public, like the schema it shows)."""

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        # Only the page itself has a template: an OPTIONS answer or an error would make
        # the HTML renderer fail (a 500), so they are JSON, as everywhere else in the API.
        if request.method not in ("GET", "HEAD") or response.exception:
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = JSONRenderer.media_type
        return response
