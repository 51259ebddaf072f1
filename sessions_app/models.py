from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

SECTIONS = ("context", "goal", "inputs", "outputs", "approach", "success_criteria", "notes")
SECTION_TITLES = {
    "context": "Context",
    "goal": "Goal",
    "inputs": "Inputs",
    "outputs": "Outputs",
    "approach": "Approach",
    "success_criteria": "Success Criteria",
    "notes": "Notes",
}


COUNTERS = ("count_queued", "count_completed", "count_discarded")


class ReviewPolicy(models.TextChoices):
    NONE = "none", "No review"
    REQUIRED = "required", "Every plan is reviewed"


class Session(models.Model):
    name = models.CharField(primary_key=True, max_length=64)
    task_description = models.TextField(null=True, blank=True)
    # Whether every completed plan waits for a reviewer's approval (a plan added with
    # review=true waits in any session).
    review = models.CharField(max_length=10, choices=ReviewPolicy.choices, default=ReviewPolicy.NONE, db_default="none")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # How many of the session's plans are in each status, kept by database triggers
    # (sessions_app/plan_counts.py): never written by 9plan's code.
    count_queued = models.IntegerField(default=0, db_default=0, editable=False)
    count_completed = models.IntegerField(default=0, db_default=0, editable=False)
    count_discarded = models.IntegerField(default=0, db_default=0, editable=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        # The counters belong to the triggers: saving a session read earlier must not
        # write back the counts it was read with.
        if not self._state.adding and not kwargs.get("force_insert") and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [
                f.name for f in self._meta.concrete_fields if not f.primary_key and f.name not in COUNTERS
            ]
        super().save(*args, **kwargs)


class PlanStatus(models.TextChoices):
    QUEUED = "queued"
    ACTIVE = "active"
    COMPLETED = "completed"
    DISCARDED = "discarded"
    # Completed by its agent, waiting for a reviewer's approval; not yet searchable.
    IN_REVIEW = "in_review"
    # Rejected in review too many times: nobody pulls it until a person decides.
    HELD = "held"


class Plan(models.Model):
    Status = PlanStatus

    id = models.CharField(primary_key=True, max_length=5)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="plans", db_column="session_name")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    # Signed so that "front" can always go below the current minimum; only set while queued.
    sort_key = models.BigIntegerField(null=True, blank=True)

    context = models.TextField(blank=True, default="")
    goal = models.TextField()
    inputs = models.TextField(blank=True, default="")
    outputs = models.TextField(blank=True, default="")
    approach = models.TextField(blank=True, default="")
    success_criteria = models.TextField(blank=True, default="")
    notes = models.TextField(blank=True, default="")
    outcome = models.TextField(blank=True, default="")
    discard_reason = models.TextField(blank=True, default="")

    # Review: whether this plan waits for approval when completed (whatever its session
    # says), and how many times a reviewer has sent it back.
    review = models.BooleanField(default=False, db_default=False)
    rejections = models.PositiveIntegerField(default=0, db_default=0)

    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    discarded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session", "sort_key", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["session"], condition=Q(status="active"), name="plan_one_active_per_session"
            ),
            models.UniqueConstraint(
                fields=["session", "sort_key"],
                condition=Q(status="queued"),
                name="plan_unique_sort_key",
            ),
            models.CheckConstraint(
                condition=Q(status__in=PlanStatus.values), name="plan_status_valid"
            ),
            models.CheckConstraint(
                condition=(Q(status="queued") & Q(sort_key__isnull=False))
                | (~Q(status="queued") & Q(sort_key__isnull=True)),
                name="plan_position_only_while_queued",
            ),
        ]
        permissions = [("review_plan", "Can review plan")]
        indexes = [
            models.Index(fields=["session", "status", "sort_key"], name="plan_session_status_pos"),
            models.Index(fields=["session", "status", "completed_at"], name="plan_session_status_done"),
        ]

    def __str__(self) -> str:
        return f"{self.id}: {self.goal[:60]}"

    @property
    def is_open(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.ACTIVE)

    def sections(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in SECTIONS}


class Event(models.Model):
    class Kind(models.TextChoices):
        SESSION_CREATED = "session_created"
        PLAN_CREATED = "plan_created"
        PLAN_PULLED = "plan_pulled"
        PLAN_DEFERRED = "plan_deferred"
        PLAN_NOTE = "plan_note"
        PLAN_COMPLETED = "plan_completed"
        PLAN_DISCARDED = "plan_discarded"
        PLAN_MOVED = "plan_moved"
        PLAN_REQUEUED = "plan_requeued"
        FILE_EDITS_KEPT = "file_edits_kept"
        PLAN_SUBMITTED = "plan_submitted"
        PLAN_APPROVED = "plan_approved"
        PLAN_REJECTED = "plan_rejected"
        PLAN_HELD = "plan_held"
        PLAN_RESTORED = "plan_restored"
        SESSION_CHANGED = "session_changed"
        REPAIRED = "repaired"

    id = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events", db_column="session_name")
    plan = models.ForeignKey(Plan, null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    actor = models.CharField(max_length=150)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "id"], name="event_session_id")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor} {self.kind}"


class Revision(models.Model):
    """One change to a plan's text: who, when, what kind, which sections, and how to get
    the text before it back from the text after it (a reverse delta).

    The plan row holds the latest text; each revision keeps, per changed section, the
    length of the prefix the text before shared with the text after and the rest of the
    text before. A note append shares everything but trailing whitespace, so its revision
    stores a few characters, not the whole plan (docs/design.md, "Model and invariants").
    """

    class Kind(models.TextChoices):
        ADD = "add"
        NOTE = "note"
        FILE_EDIT = "file_edit"
        DEFER = "defer"
        REVIEW = "review"
        RESTORE = "restore"
        IMPORT = "import"

    id = models.BigAutoField(primary_key=True)
    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    actor = models.CharField(max_length=150)
    sections = models.JSONField(default=list)
    # {section: [kept prefix length, rest of the text before]}; empty for the first revision.
    undo = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["plan", "number"]
        constraints = [models.UniqueConstraint(fields=["plan", "number"], name="revision_plan_number")]

    def __str__(self) -> str:
        return f"{self.plan_id} r{self.number} {self.kind}"
