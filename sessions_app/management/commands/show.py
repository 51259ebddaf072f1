"""`9plan show NAME` (a session's queue, claims and reviews) and `9plan show PLAN_ID` (a plan's
text, notes, outcome and events)."""

from __future__ import annotations

from sessions_app import inputs
from sessions_app.errors import PlanNotFound
from sessions_app.identifiers import is_session_name
from sessions_app.management.people import PeopleCommand, cut, refuse, text
from sessions_app.models import SECTION_TITLES, SECTIONS, Plan
from sessions_app.reads import queries


class Command(PeopleCommand):
    help = (
        "Show a session or a plan. NAME: its queue in order, each plan ready or blocked; the active plans with "
        "their workers and leases; the plans in review and held. PLAN_ID: its text, outcome and events."
    )
    name = "show"

    def add_arguments(self, parser):
        parser.add_argument("target", metavar="NAME|PLAN_ID", help="a session's name or a plan's id")

    def act(self, options: dict) -> dict:
        target = options["target"]
        if is_session_name(target):
            return session_document(target)
        if not (isinstance(target, str) and len(target) == 5 and target.isascii() and target.isalnum()):
            refuse(
                "NAME|PLAN_ID",
                f"NAME|PLAN_ID: {inputs.shown(target)} is neither a session's name (three lowercase words joined "
                "by '-') nor a plan's id (5 characters of a-z and 0-9).",
            )
        return plan_document(inputs.plan_id(target, field="PLAN_ID"))

    def show(self, document: dict) -> None:
        if "plan" in document:
            self.show_plan(document["plan"], document["events"])
        else:
            self.show_session(document)

    def show_session(self, d: dict) -> None:
        s = d["session"]
        self.stdout.write(f"Session {s['name']} (project {s['project']}, review {s['review']})")
        if s["task_description"]:
            self.stdout.write(f"Task: {cut(s['task_description'], 100)}")
        self.stdout.write(f"Completed {s['completed']}, discarded {s['discarded']}.\n")
        self.stdout.write(f"Queue ({len(d['queue'])}):")
        rows = [[q["place"], q["id"], q["state"], ", ".join(q["waits_for"]), cut(q["goal"], 50)] for q in d["queue"]]
        self.table(["#", "PLAN", "STATE", "WAITS FOR", "GOAL"], rows, empty="  (empty)")
        self.stdout.write(f"\nActive ({len(d['active'])}):")
        rows = [[a["id"], a["worker"], a["lease_expires_at"], cut(a["goal"], 50)] for a in d["active"]]
        self.table(["PLAN", "WORKER", "LEASE UNTIL", "GOAL"], rows, empty="  (none)")
        for key, title in (("in_review", "In review"), ("held", "Held")):
            self.stdout.write(f"\n{title} ({len(d[key])}):")
            rows = [[p["id"], p["updated_at"], cut(p["goal"], 60)] for p in d[key]]
            self.table(["PLAN", "SINCE", "GOAL"], rows, empty="  (none)")

    def show_plan(self, p: dict, events: list[dict]) -> None:
        self.stdout.write(f"Plan {p['id']} of session {p['session']}: {p['status']}")
        if p["worker"]:
            self.stdout.write(f"Worker {p['worker']}, lease until {text(p['lease_expires_at'])}")
        for name in (*SECTIONS, "outcome", "discard_reason"):
            if p[name]:
                title = SECTION_TITLES.get(name, name.replace("_", " ").capitalize())
                self.stdout.write(f"\n# {title}\n{p[name]}")
        self.stdout.write(f"\nEvents ({len(events)}):")
        rows = [[e["at"], e["kind"], e["actor"]] for e in events]
        self.table(["AT", "EVENT", "BY"], rows, empty="  (none)")


def session_document(name: str) -> dict:
    state = queries.session_state(name, limit=None)
    session = state.session
    ids = [p.id for p in state.queue]
    ready = set(queries.ready_plans(session.name).filter(id__in=ids).values_list("id", flat=True)) if ids else set()
    deps = queries.dependencies_of(ids) if ids else {}
    queue = []
    for place, p in enumerate(state.queue, start=1):
        waits = [f"{dep} ({status})" for dep, status in deps[p.id].depends_on if status != Plan.Status.COMPLETED]
        if p.waiting_for_person:
            waits.insert(0, "a person (its claims ran out)")
        queue.append(
            {
                "place": place,
                "id": p.id,
                "goal": p.goal,
                "state": "ready" if p.id in ready else "blocked",
                "waits_for": waits,
            }
        )
    later = {
        key: [
            {"id": p.id, "goal": p.goal, "updated_at": p.updated_at}
            for p in queries.plans_in(session.name, status, limit=None)[0]
        ]
        for key, status in (("in_review", Plan.Status.IN_REVIEW), ("held", Plan.Status.HELD))
    }
    return {
        "session": {
            "name": session.name,
            "project": session.project_id,
            "task_description": session.task_description,
            "review": session.review,
            "lease_seconds": session.lease_seconds,
            "created_at": session.created_at,
            "completed": state.completed_count,
            "discarded": state.discarded_count,
        },
        "queue": queue,
        "active": [
            {
                "id": p.id,
                "goal": p.goal,
                "worker": p.worker,
                "claimed_at": p.claimed_at,
                "lease_expires_at": p.lease_expires_at,
            }
            for p in state.claimed
        ],
        **later,
    }


def plan_document(plan_id: str) -> dict:
    plan = queries.visible_plans().filter(id=plan_id).first()
    if plan is None:
        raise PlanNotFound(f"No plan {plan_id} in the sessions you can see.", field="PLAN_ID")
    events = queries.visible_events().filter(plan_id=plan.id).order_by("id")
    fields = ("status", "review", "rejections", "worker", "lease_expires_at", "created_at", "completed_at")
    return {
        "plan": {
            "id": plan.id,
            "session": plan.session_id,
            **{name: getattr(plan, name) for name in fields},
            **plan.sections(),
            "outcome": plan.outcome,
            "discard_reason": plan.discard_reason,
            "queue_position": queries.queue_place(plan),
        },
        "events": [{"at": e.created_at, "kind": e.kind, "actor": e.actor, "detail": e.detail} for e in events],
    }
