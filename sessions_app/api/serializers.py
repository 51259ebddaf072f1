"""Read-only representations of 9plan's data for the REST API. They only format: every value
comes from a query in sessions_app, and none of them triggers a query of its own."""

from __future__ import annotations

from typing import Any, cast

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sessions_app.maintenance import invariants
from sessions_app.models import Plan
from sessions_app.reads import excerpts
from sessions_app.store import event_feed

SNIPPET_CHARS = 120

STATUSES = tuple(Plan.Status.values)


def _url(context: dict, route: str, **kwargs) -> str:
    path = reverse(f"api:{route}", kwargs=kwargs)
    request = context.get("request")
    return request.build_absolute_uri(path) if request is not None else path


def plan_times(of: str = "") -> tuple[serializers.DateTimeField, ...]:
    """A plan's four timestamps (created, updated, completed, discarded), for a serializer to
    declare in that order where it shows them: ``of`` names the plan's attribute when the
    object shown is not the plan itself."""

    def stamp(name: str, **options) -> serializers.DateTimeField:
        source: dict[str, Any] = {"source": f"{of}.{name}"} if of else {}
        return serializers.DateTimeField(**source, **options)

    return (
        stamp("created_at"),
        stamp("updated_at"),
        stamp("completed_at", allow_null=True),
        stamp("discarded_at", allow_null=True),
    )


class ApiRootSerializer(serializers.Serializer):
    """Where each endpoint is. A part in braces, like {name}, is filled in (RFC 6570)."""

    sessions = serializers.CharField(help_text="The sessions, newest first.")
    session = serializers.CharField(help_text="One session's state; {name} is its three-word name.")
    session_queue = serializers.CharField(help_text="A session's queue, in order.")
    session_plans = serializers.CharField(help_text="A session's plans, by status.")
    plan = serializers.CharField(help_text="One plan; {plan_id} is its 5-character id.")
    plan_review = serializers.CharField(help_text="POST a reviewer's decision on a plan in review (needs If-Match).")
    plan_revisions = serializers.CharField(help_text="Every change to a plan's text, newest first.")
    plan_revision = serializers.CharField(help_text="One revision; {number} is its number.")
    session_validation = serializers.CharField(help_text="A session's invariant check.")
    session_export = serializers.CharField(help_text="A whole session as one document.")
    history = serializers.CharField(help_text="Search over completed plans (?q=words).")
    events = serializers.CharField(help_text="The event feed (?after=cursor).")
    schema = serializers.CharField(help_text="The OpenAPI 3 schema (public).")
    docs = serializers.CharField(help_text="The interactive docs (public).")


# The fields a session carries in a listing and in an export alike. (A comment, not a
# docstring: the schema would take a docstring as the description of both serializers.)
class SessionFieldsSerializer(serializers.Serializer):
    name = serializers.CharField()
    task_description = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()


class SessionSummarySerializer(SessionFieldsSerializer):
    queue_length = serializers.IntegerField(help_text="Plans waiting in the queue.")
    completed_count = serializers.IntegerField()
    discarded_count = serializers.IntegerField()
    has_active_plan = serializers.BooleanField()
    url = serializers.SerializerMethodField()

    def get_url(self, session) -> str:
        return _url(self.context, "session-detail", name=session.name)


class QueuedPlanSerializer(serializers.Serializer):
    id = serializers.CharField()
    goal = serializers.CharField()
    queue_position = serializers.IntegerField(
        source="place", help_text="The plan's place in the queue: 1 is pulled next."
    )
    ready = serializers.SerializerMethodField(
        help_text="Whether a pull may take it now: every plan it depends on is completed, and it does not wait for a person."
    )
    depends_on = serializers.SerializerMethodField(help_text="Ids of the plans it waits for (completed ones included).")
    waiting_for_person = serializers.BooleanField(
        help_text="Its claims ran out max_attempts times: it is not handed out until a person requeues or discards it."
    )
    attempts = serializers.IntegerField(
        help_text="Claims of this plan that ran out (reclaimed when their lease expired)."
    )
    url = serializers.SerializerMethodField()

    def get_ready(self, plan) -> bool:
        return not plan.unmet and not plan.waiting_for_person

    def get_depends_on(self, plan) -> list[str]:
        found = self.context.get("dependencies", {}).get(plan.id)
        return [dep for dep, _ in found.depends_on] if found else []

    def get_url(self, plan) -> str:
        return _url(self.context, "plan-detail", name=plan.session_id, plan_id=plan.id)


class PlanSummarySerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=STATUSES)
    goal = serializers.CharField()
    created_at, updated_at, completed_at, discarded_at = plan_times()
    worker = serializers.CharField(
        allow_null=True, help_text="The worker holding it (active), or that finished it (completed, discarded)."
    )
    lease_expires_at = serializers.DateTimeField(
        allow_null=True, help_text="Until when the worker's claim holds without a write; null unless active."
    )
    attempts = serializers.IntegerField(
        help_text="Claims of this plan that ran out (reclaimed when their lease expired)."
    )
    url = serializers.SerializerMethodField()

    def get_url(self, plan) -> str:
        return _url(self.context, "plan-detail", name=plan.session_id, plan_id=plan.id)


class WaitedForSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=STATUSES)
    worker = serializers.CharField(allow_null=True, help_text="Who holds it, when it is active.")
    lease_expires_at = serializers.DateTimeField(allow_null=True)


class BlockedPlanSerializer(serializers.Serializer):
    id = serializers.CharField(source="plan_id")
    goal = serializers.CharField()
    waiting_for_person = serializers.BooleanField()
    attempts = serializers.IntegerField()
    waits_for = WaitedForSerializer(many=True, help_text="The plans it depends on that are not completed yet.")


class SessionStateSerializer(serializers.Serializer):
    """One session: its counts, active plan and the head of its queue."""

    name = serializers.CharField(source="session.name")
    task_description = serializers.CharField(source="session.task_description", allow_null=True)
    created_at = serializers.DateTimeField(source="session.created_at")
    queue_length = serializers.IntegerField()
    completed_count = serializers.IntegerField()
    discarded_count = serializers.IntegerField()
    lease_seconds = serializers.IntegerField(
        source="session.lease_seconds", help_text="How long a claim holds without a write."
    )
    max_attempts = serializers.IntegerField(
        source="session.max_attempts", help_text="Claims of a plan that may run out before it waits for a person."
    )
    active_plan = PlanSummarySerializer(source="active", allow_null=True)
    workers = PlanSummarySerializer(
        source="claimed", many=True, help_text="Every active plan, one per worker holding one, with its lease."
    )
    blocked = BlockedPlanSerializer(
        many=True, help_text="Queued plans near the front that cannot be pulled now, with what each waits for."
    )
    queue = serializers.SerializerMethodField(
        help_text="The first plans of the queue, in order; see queue_url for all."
    )
    queue_url = serializers.SerializerMethodField()
    plans_url = serializers.SerializerMethodField()
    events_url = serializers.SerializerMethodField()
    validation_url = serializers.SerializerMethodField()
    export_url = serializers.SerializerMethodField()

    @extend_schema_field(QueuedPlanSerializer(many=True))
    def get_queue(self, state) -> list[dict]:
        # The state's blocked plans cover the head of the queue shown here.
        blocked = {b.plan_id for b in state.blocked}
        deps = self.context.get("dependencies", {})
        return [
            {
                "id": plan.id,
                "goal": plan.goal,
                "queue_position": place,
                "ready": plan.id not in blocked,
                "depends_on": [d for d, _ in deps[plan.id].depends_on] if plan.id in deps else [],
                "waiting_for_person": plan.waiting_for_person,
                "attempts": plan.attempts,
                "url": _url(self.context, "plan-detail", name=plan.session_id, plan_id=plan.id),
            }
            for place, plan in enumerate(state.queue, start=1)
        ]

    def get_queue_url(self, state) -> str:
        return _url(self.context, "session-queue", name=state.session.name)

    def get_plans_url(self, state) -> str:
        return _url(self.context, "session-plans", name=state.session.name)

    def get_events_url(self, state) -> str:
        return _url(self.context, "event-feed") + f"?session={state.session.name}"

    def get_validation_url(self, state) -> str:
        return _url(self.context, "session-validation", name=state.session.name)

    def get_export_url(self, state) -> str:
        return _url(self.context, "session-export", name=state.session.name)


class EventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    cursor = serializers.SerializerMethodField(help_text="Pass as ?after= to read the events that follow this one.")
    session = serializers.CharField(source="session_id")
    plan = serializers.CharField(source="plan_id", allow_null=True)
    kind = serializers.CharField()
    actor = serializers.CharField()
    detail = serializers.DictField(help_text="What the step recorded, e.g. a reason or a position.")
    created_at = serializers.DateTimeField()

    def get_cursor(self, event) -> str:
        return event_feed.encode_cursor(event.id)


class PlanDetailSerializer(serializers.Serializer):
    """A plan with every section, its outcome and its events (from api.reads.PlanDetail)."""

    id = serializers.CharField(source="plan.id")
    session = serializers.CharField(source="plan.session_id")
    status = serializers.ChoiceField(source="plan.status", choices=STATUSES)
    queue_position = serializers.IntegerField(
        source="place",
        allow_null=True,
        help_text="The plan's place in the queue (1 is pulled next); null unless queued.",
    )
    # The serializer's metaclass takes declared fields out of the class, so self.context stays
    # the serializer's context; the stubs do not know that.
    context = serializers.CharField(source="plan.context", allow_blank=True)  # type: ignore[assignment]
    goal = serializers.CharField(source="plan.goal")
    inputs = serializers.CharField(source="plan.inputs", allow_blank=True)
    outputs = serializers.CharField(source="plan.outputs", allow_blank=True)
    approach = serializers.CharField(source="plan.approach", allow_blank=True)
    success_criteria = serializers.CharField(source="plan.success_criteria", allow_blank=True)
    notes = serializers.CharField(source="plan.notes", allow_blank=True)
    outcome = serializers.CharField(source="plan.outcome", allow_blank=True)
    discard_reason = serializers.CharField(source="plan.discard_reason", allow_blank=True)
    version = serializers.IntegerField(
        source="plan.version", help_text="Grows by one with every change to the plan's text."
    )
    created_at, updated_at, completed_at, discarded_at = plan_times(of="plan")
    worker = serializers.CharField(
        source="plan.worker", allow_null=True, help_text="The worker holding it (active), or that finished it."
    )
    claimed_at = serializers.DateTimeField(source="plan.claimed_at", allow_null=True)
    lease_expires_at = serializers.DateTimeField(
        source="plan.lease_expires_at", allow_null=True, help_text="Until when the claim holds without a write."
    )
    attempts = serializers.IntegerField(source="plan.attempts", help_text="Claims of this plan that ran out.")
    waiting_for_person = serializers.BooleanField(source="plan.waiting_for_person")
    ready = serializers.BooleanField(allow_null=True, help_text="Whether a pull may take it now; null unless queued.")
    depends_on = serializers.SerializerMethodField(help_text="The plans it waits for, with their status.")
    dependents = serializers.SerializerMethodField(help_text="The plans that wait for it, with their status.")
    late_writes = serializers.SerializerMethodField(
        help_text="Text a worker sent after its claim on this plan was reclaimed: never applied, kept (newest first)."
    )
    events = EventSerializer(many=True, help_text="The plan's first events, oldest first.")
    events_count = serializers.IntegerField(help_text="All the plan's events; see events_url when more than shown.")
    events_url = serializers.SerializerMethodField()

    def serializer_context(self) -> dict[str, Any]:
        # self.context is the serializer's context at run time: the field named "context"
        # is taken out of the class by the metaclass, which the checker cannot follow.
        return cast(dict[str, Any], self.context)

    def get_events_url(self, detail) -> str:
        return (
            _url(self.serializer_context(), "event-feed") + f"?session={detail.plan.session_id}&plan={detail.plan.id}"
        )

    def _linked(self, detail, pairs) -> list[dict]:
        return [
            {
                "id": pid,
                "status": status,
                "url": _url(self.serializer_context(), "plan-detail", name=detail.plan.session_id, plan_id=pid),
            }
            for pid, status in pairs
        ]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_depends_on(self, detail) -> list[dict]:
        return self._linked(detail, detail.dependencies.depends_on)

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_dependents(self, detail) -> list[dict]:
        return self._linked(detail, detail.dependencies.dependents)

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_late_writes(self, detail) -> list[dict]:
        return [{"worker": w.worker, "op": w.op, "text": w.text, "at": w.at.isoformat()} for w in detail.late_writes]


def page_serializer(item: type[serializers.Serializer], name: str) -> type[serializers.Serializer]:
    fields = {
        "count": serializers.IntegerField(help_text="Items in all pages."),
        "page": serializers.IntegerField(),
        "page_size": serializers.IntegerField(),
        "next": serializers.CharField(allow_null=True, help_text="URL of the next page, or null on the last."),
        "previous": serializers.CharField(allow_null=True),
        "results": item(many=True),
    }
    return type(name, (serializers.Serializer,), fields)


SessionPageSerializer = page_serializer(SessionSummarySerializer, "SessionPageSerializer")
QueuePageSerializer = page_serializer(QueuedPlanSerializer, "QueuePageSerializer")
PlanPageSerializer = page_serializer(PlanSummarySerializer, "PlanPageSerializer")


class HistoryHitSerializer(serializers.Serializer):
    rank = serializers.IntegerField(help_text="1 for the best match.")
    every_word = serializers.BooleanField(
        help_text=(
            "Whether the plan holds every word of the query (in some form); such plans rank before "
            "those holding only some. No score is given: an engine's score moves with what else is indexed."
        )
    )
    id = serializers.CharField(source="plan.id")
    session = serializers.CharField(source="plan.session_id")
    goal = serializers.CharField(source="plan.goal")
    outcome = serializers.SerializerMethodField(help_text="The outcome, cut to a snippet.")
    snippet = serializers.SerializerMethodField(help_text="Text around the first match of the query in the plan.")
    completed_at = serializers.DateTimeField(source="plan.completed_at", allow_null=True)
    url = serializers.SerializerMethodField()

    def get_outcome(self, hit) -> str:
        return excerpts.one_line(hit.plan.outcome, SNIPPET_CHARS)

    def get_snippet(self, hit) -> str:
        pattern = excerpts.match_pattern(self.context.get("query", ""))
        name = excerpts.first_matching(hit.plan, pattern)
        if name is None:
            return excerpts.one_line(hit.plan.goal, SNIPPET_CHARS)
        return excerpts.around_match(getattr(hit.plan, name), pattern, SNIPPET_CHARS).plain()

    def get_url(self, hit) -> str:
        return _url(self.context, "plan-detail", name=hit.plan.session_id, plan_id=hit.plan.id)


class HistoryPageSerializer(serializers.Serializer):
    query = serializers.CharField()
    session = serializers.CharField(allow_null=True)
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    next = serializers.CharField(allow_null=True, help_text="URL of the next page of hits, or null.")
    previous = serializers.CharField(allow_null=True)
    results = HistoryHitSerializer(many=True)


def _invariant_fields() -> dict:
    return {name: serializers.BooleanField() for name in invariants.INVARIANTS}


InvariantsSerializer = type("InvariantsSerializer", (serializers.Serializer,), _invariant_fields())


class ValidationSerializer(serializers.Serializer):
    session = serializers.CharField()
    valid = serializers.BooleanField()
    invariants = InvariantsSerializer()
    issues = serializers.ListField(child=serializers.CharField(), help_text="Each issue names the plan and the fix.")


class EventPageSerializer(serializers.Serializer):
    results = EventSerializer(many=True)
    next_cursor = serializers.CharField(
        help_text="Pass as ?after= on the next read. Equal to the cursor sent when nothing new has happened."
    )
    has_more = serializers.BooleanField(help_text="True when more events are ready right now.")
    next = serializers.CharField(help_text="The URL of the next read.")


# --- export -------------------------------------------------------------------------------


class ExportSessionSerializer(SessionFieldsSerializer):
    lease_seconds = serializers.IntegerField()
    max_attempts = serializers.IntegerField()


class ExportPlanSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=STATUSES)
    sort_key = serializers.IntegerField(allow_null=True, help_text="Orders the queued plans: lower is pulled sooner.")
    # A field, not self.context (see PlanDetailSerializer).
    context = serializers.CharField(allow_blank=True)  # type: ignore[assignment]
    goal = serializers.CharField()
    inputs = serializers.CharField(allow_blank=True)
    outputs = serializers.CharField(allow_blank=True)
    approach = serializers.CharField(allow_blank=True)
    success_criteria = serializers.CharField(allow_blank=True)
    notes = serializers.CharField(allow_blank=True)
    outcome = serializers.CharField(allow_blank=True)
    discard_reason = serializers.CharField(allow_blank=True)
    version = serializers.IntegerField()
    created_at, updated_at, completed_at, discarded_at = plan_times()
    file_text = serializers.CharField(
        allow_null=True, allow_blank=True, help_text="The plan file as the agent left it (queued and active plans)."
    )
    worker = serializers.CharField(allow_null=True)
    claimed_at = serializers.DateTimeField(allow_null=True)
    lease_expires_at = serializers.DateTimeField(allow_null=True)
    attempts = serializers.IntegerField()
    waiting_for_person = serializers.BooleanField()
    depends_on = serializers.ListField(child=serializers.CharField())


class ExportEventSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The id in the exporting database; an import assigns new ids in order.")
    plan = serializers.CharField(allow_null=True)
    kind = serializers.CharField()
    actor = serializers.CharField()
    detail = serializers.DictField()
    created_at = serializers.DateTimeField()


class ExportSerializer(serializers.Serializer):
    """The export document; 9plan import FILE restores it."""

    format = serializers.CharField(help_text="Always '9plan-session-export'.")
    version = serializers.IntegerField()
    exported_at = serializers.DateTimeField()
    session = ExportSessionSerializer()
    plans = ExportPlanSerializer(many=True)
    events = ExportEventSerializer(many=True)


class ProblemSerializer(serializers.Serializer):
    """An error (RFC 9457 problem details)."""

    type = serializers.CharField()
    title = serializers.CharField()
    status = serializers.IntegerField()
    detail = serializers.CharField()
    category = serializers.CharField(
        help_text=(
            "SESSION_NOT_FOUND, PLAN_NOT_FOUND, VALIDATION_ERROR, DATABASE_ERROR, FILE_SYSTEM_ERROR, ..., "
            "or AUTHENTICATION_REQUIRED, PERMISSION_DENIED, NOT_FOUND, METHOD_NOT_ALLOWED, NOT_ACCEPTABLE, THROTTLED."
        )
    )
    suggestion = serializers.CharField(required=False)
    parameter = serializers.CharField(required=False, help_text="The request parameter that was wrong.")
    instance = serializers.CharField(required=False)
