"""Domain errors. Each carries a category, a message naming what was wrong, and a
suggestion of what to do next. Every edge (MCP, REST, admin) translates them
(docs/design.md, "Errors")."""

from __future__ import annotations


class NineplanError(Exception):
    category = "INTERNAL_ERROR"
    suggestion = "Retry the call; if it keeps failing, run 9plan_admin_validate and report the issue."

    def __init__(self, message: str, *, suggestion: str | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        if suggestion is not None:
            self.suggestion = suggestion


class SessionNotFound(NineplanError):
    category = "SESSION_NOT_FOUND"
    suggestion = "Check the name with 9plan_admin_sessions, or start one with 9plan_session_create."


class NoSessionSelected(NineplanError):
    category = "NO_SESSION_SELECTED"
    suggestion = (
        "Call 9plan_session_create or 9plan_session_resume first, or pass session_name to this tool."
    )


class PlanNotFound(NineplanError):
    category = "PLAN_NOT_FOUND"
    suggestion = "Find completed plans with 9plan_history_search; ids are 5 characters of a-z and 0-9."


class NoActivePlan(NineplanError):
    category = "NO_ACTIVE_PLAN"
    suggestion = "Pull the next plan with 9plan_queue_pull first."


class PlanAlreadyActive(NineplanError):
    category = "PLAN_ALREADY_ACTIVE"
    suggestion = "Finish the active plan with 9plan_plan_complete, 9plan_plan_defer or 9plan_plan_discard."


class QueueEmpty(NineplanError):
    category = "QUEUE_EMPTY"
    suggestion = "Nothing left to do: the task is complete. Add plans with 9plan_queue_add if more work appears."


class ValidationFailed(NineplanError):
    category = "VALIDATION_ERROR"
    suggestion = "Correct the named argument and call again; nothing was changed."


class FileSystemFailed(NineplanError):
    category = "FILE_SYSTEM_ERROR"
    suggestion = "Check that the sessions directory exists, is writable and has free space; nothing was changed."


class DatabaseFailed(NineplanError):
    category = "DATABASE_ERROR"
    suggestion = "Retry the call; if it keeps failing, check the database and run 9plan_admin_validate."


CATEGORIES = (
    "SESSION_NOT_FOUND",
    "PLAN_NOT_FOUND",
    "NO_ACTIVE_PLAN",
    "PLAN_ALREADY_ACTIVE",
    "QUEUE_EMPTY",
    "VALIDATION_ERROR",
    "FILE_SYSTEM_ERROR",
    "DATABASE_ERROR",
    "NO_SESSION_SELECTED",
)
