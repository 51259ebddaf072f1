"""What others did to an agent's plans: the reads of the event log that tell an agent who
discarded, took back, moved, reviewed, restored or edited its plans, and when (docs/design.md, "The
edges": an agent is told what others did). Reads only, on error paths and on resume."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Substr

from sessions_app.clock import utc_text
from sessions_app.models import Event, Plan
from sessions_app.reads.excerpts import ended, one_line

INTERVENTION_KINDS = (
    "plan_discarded",
    "plan_requeued",
    "plan_moved",
    "plan_approved",
    "plan_rejected",
    "plan_held",
    "plan_restored",
    "plan_edited",
)
INTERVENTIONS_SHOWN = 3
# What a held plan waits for and who ends the wait: the one wording of every answer that
# tells of a held plan (resume, a pull's QUEUE_BLOCKED, what others changed).
HELD_UNTIL = "not pulled or reviewed again until a person with the manager role releases it in the admin"


def held_after(rejections: object) -> str:
    return f"held after {rejections} rejection(s) in review"


def is_agent_actor(actor: str) -> bool:
    """Agents act as "agent" (stdio, or HTTP without a token) or "agent:<token name>", with
    "/<worker>" after it when a call named its worker."""
    return actor == "agent" or actor.startswith(("agent:", "agent/"))


AGENT_ACTORS = Q(actor="agent") | Q(actor__startswith="agent:") | Q(actor__startswith="agent/")


@dataclass(frozen=True)
class Intervention:
    """A change someone other than an agent (a reviewer in the admin, an integration) made
    to a plan: what, who, when and why, so the agent that held or queued it is told."""

    plan_id: str | None  # None only for an event that names no plan (an imported log may hold one)
    kind: str
    actor: str
    at: datetime
    reason: str
    rejections: int = 0

    def describe(self) -> str:
        if self.kind == "plan_held":
            # One rejection, one sentence: the rejection that held the plan is told here,
            # not as a rejection that sent it back to the queue.
            # The notes are cut short so that the end of the story (who releases it) is told.
            why = f": {one_line(self.reason, 60)}" if self.reason else ""
            return (
                ended(f"Plan {self.plan_id} was rejected in review by {self.actor} at {utc_text(self.at)}{why}")
                + f" It is {held_after(self.rejections)}: {HELD_UNTIL}."
            )
        what = {
            "plan_discarded": "was discarded",
            "plan_requeued": "was taken back and returned to the queue",
            "plan_moved": "was moved in the queue",
            "plan_approved": "was approved in review",
            "plan_rejected": "was sent back in review to the front of the queue",
            "plan_restored": "had its text restored to an earlier revision",
            "plan_edited": "had its text edited",
        }[self.kind]
        if self.kind == "plan_edited":
            # The sections edited, said in place of why; read the plan again for the text.
            which = f" ({self.reason})" if self.reason else ""
            return f"Plan {self.plan_id} had its text edited{which} by {self.actor} at {utc_text(self.at)}."
        if self.kind == "plan_restored" and self.reason:
            # "revision 2": which one, said in place of why.
            return f"Plan {self.plan_id} had its text restored to {self.reason} by {self.actor} at {utc_text(self.at)}."
        why = f": {self.reason}" if self.reason else ""
        return ended(f"Plan {self.plan_id} {what} by {self.actor} at {utc_text(self.at)}{why}")


def _intervention(event: Event) -> Intervention:
    detail = event.detail if isinstance(event.detail, dict) else {}
    reason = (
        detail.get("reason")
        or detail.get("notes")
        or (f"to the {detail['position']}" if detail.get("position") else "")
        or (f"revision {detail['revision']}" if detail.get("revision") else "")
        or (f"before plan {detail['before']}" if detail.get("before") else "")
        or (", ".join(str(s) for s in detail["sections"]) if isinstance(detail.get("sections"), list) else "")
    )
    rejections = found if isinstance(found := detail.get("rejections"), int) else 0
    return Intervention(event.plan_id, event.kind, event.actor, event.created_at, str(reason), rejections)


def _one_per_rejection(events: list[Event]) -> list[Intervention]:
    """Newest first; the rejection that held a plan is folded into its ``plan_held`` (which
    takes that rejection's notes)."""
    told: list[Intervention] = []
    for event in events:
        found = _intervention(event)
        last = told[-1] if told else None
        if (
            found.kind == "plan_rejected"
            and last is not None
            and last.kind == "plan_held"
            and last.plan_id == found.plan_id
            and last.rejections == found.rejections
        ):
            told[-1] = Intervention(last.plan_id, last.kind, last.actor, last.at, found.reason, last.rejections)
            continue
        told.append(found)
    return told


def interventions(session_name: str) -> list[Intervention]:
    """What others did to the session's plans since an agent last acted in it, newest first
    (a few at most): what resume tells an agent coming back."""
    last_agent = (
        Event.objects.filter(session_id=session_name)
        .filter(AGENT_ACTORS)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    found = Event.objects.filter(session_id=session_name, kind__in=INTERVENTION_KINDS, id__gt=last_agent or 0)
    found = found.exclude(AGENT_ACTORS).order_by("-id")
    # One more than shown: a held plan's two events tell one story.
    return _one_per_rejection(list(found[: INTERVENTIONS_SHOWN + 1]))[:INTERVENTIONS_SHOWN]


def latest_intervention(plan: Plan) -> Intervention | None:
    event = (
        Event.objects.filter(plan_id=plan.id, kind__in=INTERVENTION_KINDS).exclude(AGENT_ACTORS).order_by("-id").first()
    )
    return None if event is None else _intervention(event)


# What a person may do to a plan while its worker holds it and keeps working on it.
WHILE_HELD_KINDS = ("plan_restored", "plan_edited")


# AGENT_ACTORS, case-sensitive on both databases (SQLite's LIKE, which startswith uses, is not).
_BY_AGENT = Q(actor="agent") | Q(actor_head__in=("agent:", "agent/"))


def _since_worker(plan, actor: str):
    """The events since the worker's last: by a person, of a kind done while the worker
    holds the plan, after the last event the worker (``actor``) wrote or pulled it with.
    ``plan`` is the plan's id."""
    last = Event.objects.filter(plan_id=OuterRef("plan_id"), actor=actor).order_by("-id").values("id")[:1]
    return (
        Event.objects.filter(plan_id=plan, kind__in=WHILE_HELD_KINDS, id__gt=Coalesce(Subquery(last), 0))
        .alias(actor_head=Substr("actor", 1, 6))
        .exclude(_BY_AGENT)
    )


def any_since_worker_wrote(plan_id: str, actor: str) -> bool:
    """Whether ``since_worker_wrote`` would find anything, read as cheaply as every write of
    a worker's plan needs (the answer is nearly always no): the newest of the plan's events
    that are the worker's own or of a kind people do while it holds the plan. A person's
    such event is news; the worker's own says it wrote since. An agent's event of that kind
    (never seen: agents restore nothing) is read out by the whole query."""
    newest = (
        Event.objects.filter(Q(actor=actor) | Q(kind__in=WHILE_HELD_KINDS), plan_id=plan_id)
        .order_by("-id")
        .values_list("kind", "actor")
        .first()
    )
    if newest is None or newest[1] == actor:
        return False
    if is_agent_actor(newest[1]):
        return _since_worker(plan_id, actor).exists()
    return True


def since_worker_wrote(plan_id: str, actor: str) -> list[Intervention]:
    """What people did to the plan (restored a revision) since ``actor``, the worker holding
    it, last wrote it or pulled it, oldest first; run only when ``any_since_worker_wrote``
    said there is something to find."""
    found = _since_worker(plan_id, actor).order_by("id")[:INTERVENTIONS_SHOWN]
    return [_intervention(e) for e in found.only("id", "plan", "kind", "actor", "created_at", "detail")]


def fate_of_last_pulled(session_name: str, actor: str | None = None) -> Intervention | None:
    """Why the plan an agent (``actor``, which names its worker) last pulled in the session
    is no longer active, when someone else took it away (discarded or returned it to the
    queue); None otherwise."""
    pulls = Event.objects.filter(session_id=session_name, kind="plan_pulled")
    if actor is not None:
        pulls = pulls.filter(actor=actor)
    pulled = pulls.order_by("-id").only("id", "plan_id").first()
    if pulled is None:
        return None
    after = (
        Event.objects.filter(
            session_id=session_name, plan_id=pulled.plan_id, id__gt=pulled.id, kind__in=INTERVENTION_KINDS[:2]
        )
        .exclude(AGENT_ACTORS)
        .order_by("-id")
        .first()
    )
    return None if after is None else _intervention(after)
