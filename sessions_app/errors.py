"""Domain errors: what went wrong, never what to do next.

Each error has a category (docs/design.md, "Errors"), a message naming what was wrong and
what is accepted, the field it concerns, and a ``reason``: a short code for the situation
when one category covers several (a full queue and a too-long text are both
VALIDATION_ERROR). Each edge words the next step in its own terms from the category and
the reason: an agent is told which tool to call (mcp_bridge/suggestions.py), an
integration which endpoint (sessions_app/api/errors.py), a person sees the message.
"""

from __future__ import annotations


class NineplanError(Exception):
    category = "INTERNAL_ERROR"

    def __init__(self, message: str, *, field: str | list[str] | None = None, reason: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.reason = reason


class SessionNotFound(NineplanError):
    category = "SESSION_NOT_FOUND"

    @classmethod
    def named(cls, name: str) -> SessionNotFound:
        return cls(f"No session named '{name}' exists.")


class NotPermitted(NineplanError):
    """The caller sees the session (or project) but its role there does not allow this."""

    category = "PERMISSION_DENIED"

    @classmethod
    def lacking(cls, *, project: str, role: str, what: str) -> NotPermitted:
        return cls(
            f"Your role in project '{project}' does not allow this: to {what} its sessions you need the "
            f"'{role}' role there. Nothing was changed.",
            field="project",
        )


class NoSessionSelected(NineplanError):
    """A call that needs a session named none, and the connection has no current one."""

    category = "NO_SESSION_SELECTED"


class PlanNotFound(NineplanError):
    category = "PLAN_NOT_FOUND"

    @classmethod
    def in_session(cls, plan_id: str, session_name: str) -> PlanNotFound:
        return cls(f"No plan {plan_id} in session '{session_name}'.")


class NoActivePlan(NineplanError):
    """A write to the worker's plan when the worker holds none (it never pulled, or its plan was
    completed, discarded or taken back since)."""

    category = "NO_ACTIVE_PLAN"


class PlanAlreadyActive(NineplanError):
    """A pull by a worker that already holds a plan (a worker works one plan at a time), or one
    that lost the plan it found to another caller."""

    category = "PLAN_ALREADY_ACTIVE"


class QueueEmpty(NineplanError):
    """A pull when nothing is queued, active, in review or held: the task is done."""

    category = "QUEUE_EMPTY"


class QueueBlocked(NineplanError):
    """Plans are queued (or held by other workers) but none can be handed out now."""

    category = "QUEUE_BLOCKED"


class LeaseLost(NineplanError):
    """The worker's claim ran out and was reclaimed: its write changed nothing of the plan
    (its text was kept aside for the plan's next holder and reviewers)."""

    category = "LEASE_LOST"


class ValidationFailed(NineplanError):
    """An argument 9plan does not accept (its ``field`` names which), or a limit it would break;
    nothing was changed."""

    category = "VALIDATION_ERROR"


class FileSystemFailed(NineplanError):
    """A plan file or folder that could not be read or written, or that 9plan refuses to touch
    (a link, a device, a file with other names)."""

    category = "FILE_SYSTEM_ERROR"


class DatabaseFailed(NineplanError):
    """The database refused or failed the write, which was rolled back."""

    category = "DATABASE_ERROR"


# Reasons: the situations within a category that call for a different next step.
QUEUE_FULL = "queue_full"
# A webhook URL that resolves to a loopback, private or link-local address.
PRIVATE_ADDRESS = "private_address"
TEXT_TOO_LONG = "text_too_long"
PLAN_TOO_LARGE = "plan_too_large"
NOT_COMPLETED = "not_completed"
STATELESS_CONNECTION = "stateless_connection"
BAD_DOCUMENT = "bad_document"
COLLIDED = "collided"
BUSY = "busy"
BROKE_A_RULE = "broke_a_rule"
PLAN_FILE_REFUSED = "plan_file_refused"
PLAN_FILE_TOO_LARGE = "plan_file_too_large"
UNSAFE_FOLDER = "unsafe_folder"
NOT_IN_REVIEW = "not_in_review"
NOTHING_ADDED = "nothing_added"
NOTHING_COMPLETED = "nothing_completed"
OTHERS_ACTIVE = "others_active"
WAITING_FOR_PERSON = "waiting_for_person"
AWAITING_REVIEW = "awaiting_review"
UNKNOWN_PARAMETER = "unknown_parameter"
OTHER_WORKERS_HOLD = "other_workers_hold"
NOTHING_HELD = "nothing_held"
HELD_PLANS = "held_plans"

# Every category an edge may answer with, for the edges' tables and their tests: one for
# each error above, so that a new error cannot be left out.
CATEGORIES = tuple(cls.category for cls in NineplanError.__subclasses__())
