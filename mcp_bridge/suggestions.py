"""What an agent should do next after each error: the MCP edge's own words.

The core says what went wrong (a category, and a reason where one category covers
several situations); only here is the next step named, as the tools an agent can call.
The REST API words its own (sessions_app/api/errors.py).
"""

from __future__ import annotations

from sessions_app import errors

# Reasons that only the MCP edge has: how a call itself was malformed.
UNKNOWN_TOOL = "unknown_tool"
UNKNOWN_ARGUMENT = "unknown_argument"
BAD_ARGUMENTS = "bad_arguments"
UNEXPECTED = "unexpected"

BY_CATEGORY = {
    "SESSION_NOT_FOUND": "Check the name with 9plan_admin_sessions, or start one with 9plan_session_create.",
    "NO_SESSION_SELECTED": "Call 9plan_session_create or 9plan_session_resume first, or pass session_name to this tool.",
    "PLAN_NOT_FOUND": "Find plans with 9plan_session_resume or 9plan_history_search; ids are 5 characters of a-z and 0-9.",
    "NO_ACTIVE_PLAN": "Pull the next plan with 9plan_queue_pull first.",
    "PLAN_ALREADY_ACTIVE": (
        "Read your plan with 9plan_plan_read, then finish it with 9plan_plan_complete, 9plan_plan_defer or "
        "9plan_plan_discard."
    ),
    "QUEUE_EMPTY": "Nothing left to do: the task is complete. Add plans with 9plan_queue_add if more work appears.",
    "QUEUE_BLOCKED": (
        "Wait for the plans named to complete, then call 9plan_queue_pull again; 9plan_session_resume shows "
        "what each plan waits for."
    ),
    "LEASE_LOST": (
        "Stop work on that plan; call 9plan_queue_pull for the next one (the reclaimed plan may come back to you "
        "with its notes). Renew a long claim with 9plan_plan_renew."
    ),
    "VALIDATION_ERROR": "Correct the named argument and call again; nothing was changed.",
    "PERMISSION_DENIED": (
        "Ask a manager of the project, or the server's administrator, for the role the message names; your "
        "token may still read the project's sessions."
    ),
    "FILE_SYSTEM_ERROR": "Check that the sessions directory exists, is writable and has free space; nothing was changed.",
    "DATABASE_ERROR": "Retry the call; if it keeps failing, check the database and run 9plan_admin_validate.",
}

BY_REASON = {
    errors.QUEUE_FULL: "Work through the queue (9plan_queue_pull) before adding more; nothing was changed.",
    errors.TEXT_TOO_LONG: (
        "Shorten the text (the plan file's Notes have the same limit: keep long output in a file of your own and "
        "name its path) and call again; nothing was changed."
    ),
    errors.PLAN_TOO_LARGE: "Write less, or split the work into several plans; nothing was changed.",
    errors.NOT_COMPLETED: "Read a plan in any state with 9plan_plan_read; 9plan_session_resume lists queued and active plans.",
    errors.STATELESS_CONNECTION: (
        "Pass session_name (e.g. 'brave-amber-otter') on this and every call; 9plan_admin_sessions lists the sessions."
    ),
    errors.COLLIDED: "Retry the call: nothing of it was saved, so retrying is safe.",
    errors.BUSY: "Retry the call in a moment: nothing of it was saved.",
    errors.BROKE_A_RULE: (
        "Check the session with 9plan_session_resume or 9plan_admin_validate, then retry if the change is still needed."
    ),
    errors.PLAN_FILE_REFUSED: (
        "Remove the thing named in the message from the plans folder (or put a regular plan file in its place) "
        "and call again; 9plan_admin_validate lists what it found."
    ),
    errors.PLAN_FILE_TOO_LARGE: "Shorten the plan file (move long detail into files of your own) and call again.",
    errors.NOTHING_ADDED: "Add plans with 9plan_queue_add or 9plan_queue_add_batch, then call 9plan_queue_pull.",
    errors.NOTHING_COMPLETED: "Add plans with 9plan_queue_add if work remains; otherwise the session is done.",
    errors.OTHERS_ACTIVE: (
        "Other workers still hold plans and may add or defer more: call 9plan_queue_pull again later, or stop "
        "if your part is done."
    ),
    errors.WAITING_FOR_PERSON: (
        "The named plans ran out of attempts and wait for a person to requeue or discard them in the admin; "
        "tell the user."
    ),
    errors.AWAITING_REVIEW: (
        "A reviewer decides the plans in review in the admin: tell the user, and call 9plan_queue_pull again later "
        "(a rejected plan comes back to the front of the queue)."
    ),
    errors.HELD_PLANS: "Tell the user: only a person with the manager role can release the held plans, in the admin.",
    errors.OTHER_WORKERS_HOLD: (
        "If you work as one of the workers named, pass worker with its name (a call without worker acts for the "
        "default worker); otherwise pull a plan with 9plan_queue_pull."
    ),
    errors.NOTHING_HELD: (
        "If you worked under a worker name, call 9plan_plan_read again with worker set to it; "
        "9plan_session_resume lists the active plans and their workers. Pull new work only if you hold none."
    ),
    errors.UNSAFE_FOLDER: "Replace the folder named in the message with a real folder (or remove it), then call again.",
    UNKNOWN_TOOL: "Use one of the 9plan_* tools from tools/list.",
    UNKNOWN_ARGUMENT: "Remove or correct the named argument(s) and call again; nothing was changed.",
    BAD_ARGUMENTS: "Correct the named argument(s) as the tool's schema describes and call again; nothing was changed.",
    UNEXPECTED: "Retry the call; if it keeps failing, run 9plan_admin_validate and check the server log.",
}


def for_error(exc: errors.NineplanError) -> str:
    return (exc.reason and BY_REASON.get(exc.reason)) or BY_CATEGORY.get(exc.category) or BY_REASON[UNEXPECTED]
