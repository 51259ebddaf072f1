"""The bodies of the REST writes (api/write_views.py) and of their answers. The bodies'
serializers describe them in the schema; the values are checked by the services, with the
limits and the words the MCP tools have, and only the shape (an object, a list, fields this
request takes) is checked here."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from sessions_app import inputs
from sessions_app.api import serializers as s
from sessions_app.errors import ValidationFailed
from sessions_app.models import MAX_ATTEMPTS, MAX_LEASE_SECONDS, ReviewPolicy
from sessions_app.services import MAX_DEPENDENCIES

SESSION_FIELDS = ("task_description", "project", "review", "lease_seconds", "max_attempts")
PLAN_FIELDS = ("context", "goal", "approach", "success_criteria", "inputs", "outputs", "depends_on")
OPTIONS = ("position", "review")
EDIT_FIELDS = ("context", "goal", "inputs", "outputs", "approach", "success_criteria", "notes", "position")

POSITION = serializers.ChoiceField(
    choices=inputs.POSITIONS, required=False, help_text="'back' (the default) or 'front' (pulled next)."
)


class SessionCreateSerializer(serializers.Serializer):
    task_description = serializers.CharField(required=False, help_text="What the session's work is for.")
    project = serializers.CharField(
        required=False, help_text="The project, one where you hold the agent or manager role; required if several."
    )
    review = serializers.ChoiceField(
        choices=ReviewPolicy.values,
        required=False,
        help_text="'required': every completed plan waits for a reviewer; 'none' (the default): only plans added "
        "with review.",
    )
    lease_seconds = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_LEASE_SECONDS, help_text="How long a claim holds without a write."
    )
    max_attempts = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=100,
        help_text=f"Claims of a plan that may run out before it waits for a person (default {MAX_ATTEMPTS}).",
    )


class PlanInputSerializer(serializers.Serializer):
    # The plan's section; DRF moves declared fields off the class, so the serializer's own
    # ``context`` stays what it is (the type checker cannot know that).
    context = serializers.CharField(help_text="Where this plan fits in the overall task.")  # type: ignore[assignment]
    goal = serializers.CharField(help_text="What this plan accomplishes, specific and checkable.")
    approach = serializers.CharField(help_text="Concrete steps to reach the goal.")
    success_criteria = serializers.CharField(help_text="Observable conditions that mean it is done.")
    inputs = serializers.CharField(required=False, help_text="What it needs from other plans, described.")
    outputs = serializers.CharField(required=False, help_text="What it produces, specific enough to search for later.")
    depends_on = serializers.ListField(
        child=serializers.JSONField(),
        required=False,
        max_length=MAX_DEPENDENCIES,
        help_text="Plan ids of the session to complete first; in a batch, also the index of an earlier plan of it.",
    )


class PlansAddSerializer(PlanInputSerializer):
    """One plan with its options; or, instead of the plan's fields, ``plans``: several, in order."""

    position = POSITION
    review = serializers.BooleanField(required=False, help_text="Each plan waits for a reviewer when completed.")
    plans = PlanInputSerializer(
        many=True,
        required=False,
        help_text=f"Several plans (1 to {settings.NINEPLAN_MAX_BATCH}), worked in this order; all added or none.",
    )


class PlanEditSerializer(serializers.Serializer):
    """The sections to change (any of them) and/or where to move the plan."""

    context = serializers.CharField(required=False)  # type: ignore[assignment]
    goal = serializers.CharField(required=False)
    inputs = serializers.CharField(required=False, allow_blank=True)
    outputs = serializers.CharField(required=False, allow_blank=True)
    approach = serializers.CharField(required=False)
    success_criteria = serializers.CharField(required=False)
    notes = serializers.CharField(required=False, allow_blank=True)
    position = POSITION


class AddedPlanSerializer(s.PlanSummarySerializer):
    queue_position = serializers.SerializerMethodField(
        help_text="Its place in the queue right after the add: 1 is next."
    )

    def get_queue_position(self, plan) -> int:
        return self.context["places"][plan.id]


class PlansAddedSerializer(serializers.Serializer):
    session = serializers.CharField()
    added = serializers.IntegerField()
    plans = AddedPlanSerializer(many=True)


def plans_in_body(body: object) -> tuple[list[dict], dict]:
    """The plans a POST .../plans/ body holds, and its options (position, review): one plan
    (an object), a list of plans, or an object with ``plans`` and the options."""
    if isinstance(body, list):
        return [_plan(p, f"plans[{i}]") for i, p in enumerate(body)], {}
    if not isinstance(body, dict):
        raise ValidationFailed("The body must be a plan (an object) or a list of plans.", field="body")
    if "plans" in body:
        unknown = sorted(set(body) - {"plans", *OPTIONS})
        if unknown:
            raise ValidationFailed(
                f"{unknown[0]} is not a field of a batch; a batch takes plans, position and review "
                "(each plan's fields go inside its object).",
                field=unknown[0],
            )
        plans = body["plans"]
        if not isinstance(plans, list):
            raise ValidationFailed("plans must be a list of plans.", field="plans")
        return [_plan(p, f"plans[{i}]") for i, p in enumerate(plans)], {k: body.get(k) for k in OPTIONS}
    plan = {k: v for k, v in body.items() if k not in OPTIONS}
    return [_plan(plan, "")], {k: body.get(k) for k in OPTIONS}


def _plan(fields: object, where: str) -> dict:
    if not isinstance(fields, dict):
        raise ValidationFailed(
            f"{where or 'The body'} must be an object with the plan's sections.", field=where or "body"
        )
    unknown = sorted(set(fields) - set(PLAN_FIELDS))
    if unknown:
        at = f"{where}.{unknown[0]}" if where else unknown[0]
        raise ValidationFailed(f"{at} is not a field of a plan; a plan takes {', '.join(PLAN_FIELDS)}.", field=at)
    return dict(fields)
