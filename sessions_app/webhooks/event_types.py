"""The event types a webhook subscription chooses from, and which events are of each
(docs/design.md, "Webhooks").

A type is what the Standard Webhooks payload calls ``type``: a name for something a person
or an integration wants to be told of, made from one of the event kinds the log records
(``Event.Kind``). One event can be of two types (a reclaim that leaves the plan waiting for
a person is also a lost lease): a subscription to both gets one message for each.
"""

from __future__ import annotations

from sessions_app.models import Event

PLAN_IN_REVIEW = "plan.in_review"
PLAN_HELD = "plan.held"
PLAN_WAITING_FOR_PERSON = "plan.waiting_for_person"
LEASE_LOST = "lease.lost"
LATE_WRITE_KEPT = "late_write.kept"
QUEUE_EMPTIED = "session.queue_emptied"

# Every type, and what an event of it means.
TYPES = {
    PLAN_IN_REVIEW: "a plan enters review (its agent completed it in a reviewed session)",
    PLAN_HELD: "a plan is held after its last rejection",
    PLAN_WAITING_FOR_PERSON: "a plan waits for a person: its attempts ran out",
    LEASE_LOST: "a worker's lease ran out (or staff took its plan back) and the plan was reclaimed",
    LATE_WRITE_KEPT: "a worker wrote after losing its claim, and its text was kept aside",
    QUEUE_EMPTIED: (
        "nothing is left to do in a session: no plan may be pulled (none queued, or each waits for a person),"
        " is being worked on or is in review"
    ),
}
# What a subscription names to get every type, now and later.
ALL = "all"

# The kinds that may take a session's last plan out of work: each ends the work on its plan
# (completed, approved, discarded, held after a rejection, or left waiting for a person by
# a reclaim). A plan entering review does not: a reviewer has it yet, and may send it back.
# The outbox checks that nothing else is left (services/webhooks.py, write_messages).
EMPTYING_KINDS = frozenset(
    {Event.Kind.PLAN_COMPLETED, Event.Kind.PLAN_APPROVED, Event.Kind.PLAN_DISCARDED, Event.Kind.PLAN_HELD}
)

_OF_KIND: dict[str, tuple[str, ...]] = {
    Event.Kind.PLAN_SUBMITTED: (PLAN_IN_REVIEW,),
    Event.Kind.PLAN_HELD: (PLAN_HELD,),
    Event.Kind.PLAN_RECLAIMED: (LEASE_LOST,),
    Event.Kind.LATE_WRITE_KEPT: (LATE_WRITE_KEPT,),
}


def types_of(kind: str, detail: dict) -> tuple[str, ...]:
    """The types an event of ``kind`` with ``detail`` may be of (session.queue_emptied still
    depends on the session's plans, which the outbox statement reads)."""
    found = _OF_KIND.get(kind, ())
    if kind == Event.Kind.PLAN_RECLAIMED and detail.get("waiting_for_person"):
        found = (*found, PLAN_WAITING_FOR_PERSON)
    if kind in EMPTYING_KINDS or (kind == Event.Kind.PLAN_RECLAIMED and detail.get("waiting_for_person")):
        found = (*found, QUEUE_EMPTIED)
    return found
