"""The API's one write, the review decision, and the reads of a plan's revisions.

The decision goes through the service (sessions_app/review.py) like the admin's buttons.
It is conditional: the client sends the plan's ETag (from GET .../plans/ID/, as JSON) in
If-Match, so a decision is never taken on a plan that changed since the reviewer (or the
CI bot) looked at it: 428 without the header or with ``*`` (which would decide unread),
412 when the plan changed, or when the ETag sent is weak (If-Match compares strongly,
RFC 9110). The ETag is checked inside the decision's write transaction, so nothing can
change in between.

Session-cookie clients must send the CSRF token (DRF's SessionAuthentication checks it on
every unsafe method); integrations use token authentication, which needs none.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers
from rest_framework.response import Response

from sessions_app import access, inputs, services
from sessions_app.api import etags, pagination, paths
from sessions_app.api import reads as api_reads
from sessions_app.api import serializers as s
from sessions_app.api.endpoint import ApiView, HasViewPermission
from sessions_app.api.errors import PreconditionFailed, PreconditionRequired, WeakValidator, WildcardRefused
from sessions_app.api.schema import IF_MATCH, PAGED, PLAN_PATH, REVISION_IN_PATH, documented
from sessions_app.errors import PlanNotFound
from sessions_app.store import revisions

TAG_REVIEW = ["review"]


class HasReviewPermission(HasViewPermission):
    message = (
        "Approving or rejecting a plan needs the 'reviewer' or 'manager' role in its project; "
        "a 'reader' or 'agent' may read the plan but not decide on it. Nothing was decided."
    )


class ReviewDecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=services.DECISIONS, help_text="'approve' or 'reject'.")
    notes = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="Why; required to reject. Appended to the plan's Notes under a heading naming the reviewer.",
    )


class PlanReviewView(ApiView):
    permission_classes = [HasReviewPermission]
    required_perms = (access.VIEW, access.REVIEW)

    @documented(
        "plans_review",
        "Approve or reject a plan in review",
        "The reviewer's decision on a plan in review: `approve` completes it (it becomes searchable); "
        "`reject` returns it to the front of the queue with the notes appended to its Notes (after too many "
        "rejections it is held for a person). Needs the reviewer or manager role and the plan's ETag, as "
        "GET .../plans/{plan_id}/ gave it in JSON, in If-Match: 428 without it or with `*`, 412 if the plan "
        "changed since or the ETag is weak (`W/`; If-Match compares strongly). "
        "Answers with the plan as it now is and its new ETag.",
        TAG_REVIEW,
        s.PlanDetailSerializer,
        parameters=[*PLAN_PATH, IF_MATCH],
        answers={
            412: OpenApiResponse(
                s.ProblemSerializer, description="The plan changed since the ETag was issued, or the ETag is weak."
            ),
            428: OpenApiResponse(s.ProblemSerializer, description="If-Match is missing, or is `*`."),
        },
        request=ReviewDecisionSerializer,
        examples=[
            OpenApiExample("Approve", value={"decision": "approve", "notes": "CI build green"}, request_only=True)
        ],
    )
    def post(self, request, name: str, plan_id: str):
        name, plan_id = paths.session_name(name), paths.plan_id(plan_id)
        header = request.headers.get("If-Match")
        if not header:
            raise PreconditionRequired()
        if etags.ANY in etags.sent(header):
            raise WildcardRefused()
        if etags.all_weak(header):
            raise WeakValidator()
        body = ReviewDecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)

        def unchanged(plan) -> None:
            current = etags.for_json(api_reads.plan_detail(name, plan.id).fingerprint, request)
            if not etags.matches_strongly(header, current):
                raise PreconditionFailed()

        services.plan_review(
            session_name=name,
            plan_id=plan_id,
            decision=body.validated_data["decision"],
            notes=body.validated_data.get("notes"),
            actor=access.caller_for_user(request.user).label,
            precondition=unchanged,
        )
        detail = api_reads.plan_detail(name, plan_id)
        response = Response(s.PlanDetailSerializer(detail, context={"request": request}).data)
        response["ETag"] = etags.for_representation(detail.fingerprint, request)
        return response


class RevisionSerializer(serializers.Serializer):
    number = serializers.IntegerField(source="revision.number")
    kind = serializers.CharField(
        source="revision.kind", help_text="add, note, file_edit, defer, review, restore or import."
    )
    actor = serializers.CharField(source="revision.actor")
    created_at = serializers.DateTimeField(source="revision.created_at")
    sections = serializers.ListField(source="revision.sections", child=serializers.CharField())


class RevisionDetailSerializer(RevisionSerializer):
    before = serializers.DictField(
        child=serializers.CharField(allow_blank=True), help_text="The changed sections as they were before."
    )
    text = serializers.DictField(
        source="after", child=serializers.CharField(allow_blank=True), help_text="Every section right after it."
    )


RevisionPageSerializer = s.page_serializer(RevisionSerializer, "RevisionPageSerializer")


def revision_rows(rows, *, many: bool, context: dict) -> RevisionSerializer:
    """The serializer of a page of revision rows, each read as its Version."""
    return RevisionSerializer([revisions.Version(r) for r in rows], many=many, context=context)


class PlanRevisionsView(ApiView):
    @documented(
        "plans_revisions_list",
        "A plan's revisions",
        "Every change to the plan's text, newest first: who, when, which kind of change, which sections. "
        "Paginated like every list.",
        TAG_REVIEW,
        RevisionPageSerializer,
        parameters=[*PLAN_PATH, *PAGED],
    )
    def get(self, request, name: str, plan_id: str):
        name, plan_id = paths.session_name(name), paths.plan_id(plan_id)
        window = pagination.RequestedPage.requested(request)
        plan = api_reads.plan(name, plan_id)
        page = pagination.queryset_page(request, plan.revisions.order_by("-number"), revision_rows, window)
        return Response(page)


class PlanRevisionView(ApiView):
    @documented(
        "plans_revisions_retrieve",
        "One revision of a plan",
        "The revision with the whole text right after it and the changed sections before it.",
        TAG_REVIEW,
        RevisionDetailSerializer,
        parameters=[*PLAN_PATH, REVISION_IN_PATH],
    )
    def get(self, request, name: str, plan_id: str, number: str):
        name, plan_id = paths.session_name(name), paths.plan_id(plan_id)
        plan = api_reads.plan(name, plan_id)
        found = (
            revisions.revision(plan, int(number))
            if number.isascii() and number.isdigit() and len(number) < 10
            else None
        )
        if found is None:
            raise PlanNotFound(f"Plan {plan_id} has no revision {inputs.shown(number)}.")
        return Response(RevisionDetailSerializer(found).data)
