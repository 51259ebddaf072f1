"""The server instructions and the `bootstrap` prompt, written for the model."""

from __future__ import annotations

INSTRUCTIONS = """\
9plan is a work queue for one long task, kept in a session that survives restarts and
context compaction. Split the task into self-contained plans, queue them, and work one at
a time until the queue is empty.

LOOP:
1. 9plan_session_create (or 9plan_session_resume with the session's three-word name).
2. 9plan_queue_add / 9plan_queue_add_batch: 'front' = blocking work, 'back' = eventual.
3. 9plan_queue_pull: makes the front plan active and returns its full text.
4. Do the work. Record findings with 9plan_plan_note (append) or in the plan file's Notes.
5. 9plan_plan_complete with an outcome that names what you produced (or 9plan_plan_defer
   to put it back, or 9plan_plan_discard if it is no longer needed).
6. Pull again until QUEUE_EMPTY: the task is complete.

PLAN FILES: each queued or active plan is a text file with the sections
# Context, # Goal, # Inputs, # Outputs, # Approach, # Success Criteria, # Notes.
You may edit it (usually Notes); 9plan reads it back before defer, complete and discard,
so your edits are kept.

DEPENDENCIES: describe inputs in words, not ids. Find what earlier plans produced with
9plan_history_search (completed plans only) and read one with 9plan_history_get.

ORDER: adding A, B, C one by one at 'front' gives C, B, A; 9plan_queue_add_batch keeps
the order you give.

PARALLEL WORK: several agents (subagents, other machines) can work one session at once.
A lead gives each one the session name and its own worker name (e.g. 'tests-1'); each
passes worker=<its name> to pull, note, defer, complete and discard, and holds one plan
at a time. Queue a merge step with depends_on (in a batch, the indexes of earlier plans:
A, B, then C with depends_on [0, 1]); it is pulled only once A and B are completed.
QUEUE_BLOCKED means plans wait for others' work or for a reviewer: pull again later. A pulled plan is
leased (default 30 minutes): every write renews it, 9plan_plan_renew renews it without
writing; past it, the plan stays yours until another worker's pull takes it (then
LEASE_LOST on your next write).

ARGUMENTS most tools take: session_name (omit it for the connection's current session),
worker (your worker name when agents share a session: 1-64 of A-Za-z0-9._-; omit it
when you work alone), request_id (a retry key, 1-64 of A-Za-z0-9._:-: a call resent with
the same key returns the first answer and changes nothing; give one to every write you
might retry, a note's append above all). ERRORS name the field and a suggested action.

RECOVERY: every response starts with [Session: name]. After losing context, call
9plan_session_resume with that name (9plan_admin_sessions lists sessions). Every other
tool also takes session_name, to act on a session other than the current one; over HTTP,
pass it on every call (a stateless connection keeps no current session).
"""

BOOTSTRAP = """\
You are setting up a 9plan session for a complex task{task_clause}.

WORKFLOW:
1. CLARIFY: ask what you must know about scope, parts and dependencies before planning.
2. CREATE: call 9plan_session_create with a one-sentence task_description, and note the
   session name it returns: it is how you resume after a restart.
3. DECOMPOSE: break the task into self-contained plans, each doable without asking
   questions: context, goal, approach, success criteria.
4. DEPENDENCIES: say in each plan's inputs what it needs from earlier plans (in words),
   and in its outputs what it produces (specific enough to search for).
5. ENQUEUE: add them in dependency order with 9plan_queue_add_batch (keeps order), or one
   by one with 9plan_queue_add at 'back'. For parts others can work in parallel, give the
   step that needs them depends_on (ids, or indexes of earlier plans in the batch).
6. START: 9plan_queue_pull, work the plan, 9plan_plan_complete with a concrete outcome,
   and pull again until the queue is empty.

PLAN CHECKLIST:
- Goal is specific and checkable.
- Approach has concrete steps.
- Success criteria are observable.
- Inputs describe other plans' outputs, not their ids.
- Outputs are specific enough to find with 9plan_history_search.

NOTE: adding A, B, C one by one at 'front' gives C, B, A; use 9plan_queue_add_batch to
keep an order.

PARALLEL: to hand parts to subagents, give each the session name and a worker name of its
own; each passes worker=<name> on pull, note, defer, complete and discard. Plans queued
with depends_on wait until those plans are completed.
"""

# Added to the instructions when the server lists its core tools only (NINEPLAN_TOOLS=core).
CORE_NOTE = """
CORE SET: this server lists its core tools only. 9plan_plan_discard, 9plan_plan_renew,
9plan_history_get and the 9plan_admin_* tools are not offered: defer a plan you would
discard, read a completed plan with 9plan_plan_read, resume to see the sessions' state.
"""


def instructions(tools: str) -> str:
    """The server instructions for the tool set ``tools`` ('all' or 'core')."""
    return INSTRUCTIONS + (CORE_NOTE if tools == "core" else "")


def bootstrap(task: str | None = None) -> str:
    """Set up a 9plan session for a complex task: clarify, create the session, decompose
    into self-contained plans, queue them and start."""
    clause = f": {task.strip()}" if task and task.strip() else ""
    return BOOTSTRAP.format(task_clause=clause)
