from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

if TYPE_CHECKING:
    from datetime import datetime

    from sessions_app.services.claims import PullResult

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

# The worker a call acts for when it names none: a single agent never names one, and sees
# one worker holding at most one plan, as sessions always had
# (docs/design.md, "Model and invariants").
DEFAULT_WORKER = "default"
# How many plans may depend on one plan: discarding it writes a note into each of them in
# one write transaction, during which every other writer of the database waits, so the
# number bounds that transaction (docs/design.md, "Model and invariants": dependencies).
MAX_DEPENDENTS = 100
LEASE_SECONDS = 1800
MAX_LEASE_SECONDS = 604_800
MAX_ATTEMPTS = 3


DEFAULT_PROJECT = "default"


class Role(models.TextChoices):
    """A member's role in a project (docs/design.md, "Projects and access")."""

    READER = "reader"
    AGENT = "agent"
    REVIEWER = "reviewer"
    MANAGER = "manager"


class Project(models.Model):
    """What a team works on: its sessions, and the people and tokens that may see and change
    them. Every session belongs to exactly one project."""

    name = models.CharField(primary_key=True, max_length=63)
    title = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's one role in a project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships", db_column="project_name")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="nineplan_memberships")
    role = models.CharField(max_length=10, choices=Role.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "user"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_one_role_per_project"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.role} in {self.project_id}"


class ReviewPolicy(models.TextChoices):
    NONE = "none", "No review"
    REQUIRED = "required", "Every plan is reviewed"


class Session(models.Model):
    name = models.CharField(primary_key=True, max_length=64)
    project = models.ForeignKey(
        Project,
        on_delete=models.PROTECT,
        related_name="sessions",
        db_column="project_name",
        default=DEFAULT_PROJECT,
        db_default=DEFAULT_PROJECT,
    )
    task_description = models.TextField(null=True, blank=True)
    # Whether every completed plan waits for a reviewer's approval (a plan added with
    # review=true waits in any session).
    review = models.CharField(max_length=10, choices=ReviewPolicy.choices, default=ReviewPolicy.NONE, db_default="none")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # How long a pull's claim lasts without a write by its holder, and how many claims of a
    # plan may run out before it waits for a person instead of being handed out again.
    lease_seconds = models.PositiveIntegerField(default=LEASE_SECONDS, db_default=LEASE_SECONDS)
    max_attempts = models.PositiveIntegerField(default=MAX_ATTEMPTS, db_default=MAX_ATTEMPTS)
    # How many of the session's plans are in each status, kept by database triggers
    # (sessions_app/store/plan_counts.py): never written by 9plan's code.
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

    # The claim: who holds the plan while it is active (and who finished it, once completed
    # or discarded), since when, and until when without a write. Cleared when it returns to
    # the queue. A worker is its name within its claimant: "" for the local user (stdio, or
    # HTTP without a token), "token:<id>" for a bearer token, so two tokens passing the
    # same name (or none) are two workers.
    claimant = models.CharField(max_length=32, blank=True, default="", db_default="")
    worker = models.CharField(max_length=64, null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Claims of this plan that ran out (reclaimed when their lease expired); at the
    # session's max_attempts the plan waits for a person instead of being handed out.
    attempts = models.PositiveIntegerField(default=0, db_default=0)
    # Claims of this plan taken back, ever (a person's requeue resets attempts, not this):
    # it names the plan file of each new claim, so that a file an earlier holder may still
    # edit is never read as the new holder's (``file_stem``).
    reclaims = models.PositiveIntegerField(default=0, db_default=0)
    waiting_for_person = models.BooleanField(default=False, db_default=False)
    depends_on: models.ManyToManyField[Plan, PlanDependency] = models.ManyToManyField(
        "self", symmetrical=False, through="PlanDependency", related_name="dependents", blank=True
    )
    # Not stored: on the plan a pull returns, what the pull knew as it handed it out
    # (services.PullResult), for the pull's answer.
    pull_result: PullResult | None = None

    class Meta:
        ordering = ["session", "sort_key", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "claimant", "worker"],
                condition=Q(status="active"),
                name="plan_one_active_per_worker",
            ),
            models.UniqueConstraint(
                fields=["session", "sort_key"],
                condition=Q(status="queued"),
                name="plan_unique_sort_key",
            ),
            models.CheckConstraint(condition=Q(status__in=PlanStatus.values), name="plan_status_valid"),
            models.CheckConstraint(
                condition=(Q(status="queued") & Q(sort_key__isnull=False))
                | (~Q(status="queued") & Q(sort_key__isnull=True)),
                name="plan_position_only_while_queued",
            ),
            models.CheckConstraint(
                condition=~Q(status="active")
                | (Q(worker__isnull=False) & Q(claimed_at__isnull=False) & Q(lease_expires_at__isnull=False)),
                name="plan_active_has_claim",
            ),
            models.CheckConstraint(
                condition=Q(status="active") | Q(lease_expires_at__isnull=True), name="plan_lease_only_while_active"
            ),
            models.CheckConstraint(
                condition=Q(status="queued") | Q(waiting_for_person=False), name="plan_waits_only_while_queued"
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
    def file_stem(self) -> str:
        """The name of the plan's file without ``.txt``: its id, and after a reclaim the
        number of claims taken back (``k3x9q-2``)."""
        return f"{self.id}-{self.reclaims}" if self.reclaims else self.id

    @property
    def is_open(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.ACTIVE)

    def sections(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in SECTIONS}


class PlanDependency(models.Model):
    """``plan`` is not handed out until ``depends_on`` is completed. Both are plans of one
    session, and the dependency existed when the plan was added, so no cycle can form."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="dependency_links")
    depends_on = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="dependent_links")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["plan", "depends_on"], name="plan_dependency_unique"),
            models.CheckConstraint(condition=~Q(plan=models.F("depends_on")), name="plan_dependency_not_self"),
        ]

    def __str__(self) -> str:
        return f"{self.plan_id} after {self.depends_on_id}"


class LostClaim(models.Model):
    """The last claim a worker of a session lost to an expired lease (or to staff taking it
    back), so that worker's next write is refused with LEASE_LOST instead of reaching
    another plan or looking like a mistake; forgotten when the worker pulls again."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="lost_claims", db_column="session_name")
    claimant = models.CharField(max_length=32, blank=True, default="", db_default="")
    worker = models.CharField(max_length=64)
    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="lost_claims")
    lost_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "claimant", "worker"], name="lost_claim_one_per_worker")
        ]

    def __str__(self) -> str:
        return f"{self.worker} lost {self.plan_id}"


class Authored(models.Model):
    """What the event log and a plan's revisions both keep of a change: who made it (a
    person's username, or an agent or worker name) and when. Abstract: no table of its own."""

    id = models.BigAutoField(primary_key=True)
    actor = models.CharField(max_length=150)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True


class Event(Authored):
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
        PLAN_RECLAIMED = "plan_reclaimed"
        LATE_WRITE_KEPT = "late_write_kept"
        DEPENDENCY_DROPPED = "dependency_dropped"
        FILE_EDITS_KEPT = "file_edits_kept"
        PLAN_SUBMITTED = "plan_submitted"
        PLAN_APPROVED = "plan_approved"
        PLAN_REJECTED = "plan_rejected"
        PLAN_HELD = "plan_held"
        PLAN_RESTORED = "plan_restored"
        PLAN_EDITED = "plan_edited"
        SESSION_CHANGED = "session_changed"
        REPAIRED = "repaired"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events", db_column="session_name")
    plan = models.ForeignKey(Plan, null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "id"], name="event_session_id")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor} {self.kind}"


class Revision(Authored):
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
        EDIT = "edit"

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    sections = models.JSONField(default=list)
    # {section: [kept prefix length, rest of the text before]}; empty for the first revision.
    undo = models.JSONField(default=dict)

    class Meta:
        ordering = ["plan", "number"]
        constraints = [models.UniqueConstraint(fields=["plan", "number"], name="revision_plan_number")]

    def __str__(self) -> str:
        return f"{self.plan_id} r{self.number} {self.kind}"


class WebhookSubscription(models.Model):
    """A URL a project's managers want told of some event types (docs/design.md,
    "Webhooks"): every event of the project's sessions that is of one of them is written to
    the outbox (WebhookDelivery) in the event's own transaction."""

    # What ``event_types`` holds for a subscription to every type.
    ALL = "*"

    id = models.BigAutoField(primary_key=True)
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="webhook_subscriptions", db_column="project_name"
    )
    url = models.CharField(max_length=2000)
    # ",plan.held,lease.lost," (each type between commas, so one LIKE finds it) or "*".
    event_types = models.CharField(max_length=500)
    # "whsec_" and base64 of 32 random bytes: the key of the signatures (Standard Webhooks).
    secret = models.CharField(max_length=80)
    # The secret before the last rotation, which also signs every message until
    # ``previous_secret_until``, so receivers can change over without losing one; then dropped.
    previous_secret = models.CharField(max_length=80, blank=True, default="")
    previous_secret_until = models.DateTimeField("previous secret signs until", null=True, blank=True)
    active = models.BooleanField(default=True)
    created_by = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "id"]
        indexes = [models.Index(fields=["project", "active"], name="webhook_project_active")]

    def __str__(self) -> str:
        return f"{self.project_id} → {self.url}"

    def type_list(self) -> list[str]:
        if self.event_types == self.ALL:
            return ["all"]
        return [t for t in self.event_types.split(",") if t]

    def signing_secrets(self, at: datetime) -> list[str]:
        """The secrets a message sent at ``at`` is signed with: the current one, and the
        previous one while its overlap lasts."""
        if self.previous_secret and self.previous_secret_until is not None and at < self.previous_secret_until:
            return [self.secret, self.previous_secret]
        return [self.secret]


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookDelivery(models.Model):
    """One message of the outbox: an event of one type for one subscription, sent until
    the receiver answers 2xx or the retries run out."""

    Status = DeliveryStatus

    id = models.BigAutoField(primary_key=True)
    # No foreign key in the database: the outbox statement of a write in flight may copy a
    # subscription that is being removed, and on PostgreSQL the key's check at that write's
    # commit would then fail the agent's write. Such a message is never sent (the loops
    # join the active subscriptions); removing a subscription deletes its messages.
    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries", db_constraint=False
    )
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="webhook_deliveries")
    event_type = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Until when one delivery loop is sending it: no other loop takes it before then, and
    # a loop that died mid-attempt leaves it to the next once it has passed.
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_response_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="delivery_due")]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=DeliveryStatus.values), name="delivery_status_valid"),
        ]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"msg_{self.id} {self.event_type}"


class WriteRequest(models.Model):
    """A write a caller named with a ``request_id``, and the answer it got: a retry of the
    same call is given that answer and changes nothing (services/retries.py). Kept for 48
    hours, then forgotten by the periodic sweep."""

    caller = models.CharField(max_length=100)  # Caller.claimant, or "local"
    request_id = models.CharField(max_length=64)
    fingerprint = models.CharField(max_length=64)  # SHA-256 of the call: tool, session, arguments
    answer = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["caller", "request_id"], name="write_request_unique")]

    def __str__(self) -> str:
        return f"{self.caller}: {self.request_id}"


class Consent(models.Model):
    """What a person let an OAuth client do: ``role`` in ``projects``, chosen on the consent
    page. Every token the client holds for the person acts within it; deleting it (the
    admin's "Connected apps") ends the client's tokens."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="nineplan_consents")
    application = models.ForeignKey(
        "oauth2_provider.Application", on_delete=models.CASCADE, related_name="nineplan_consents"
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    projects = models.ManyToManyField(Project, related_name="consents")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["user", "-updated_at"]
        verbose_name = "connected app"
        constraints = [
            models.UniqueConstraint(fields=["user", "application"], name="consent_one_per_user_and_client"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="consent_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.application_id} for {self.user_id} ({self.role})"
