"""`9plan ready [NAME]`: the queued plans an agent's pull could take now."""

from __future__ import annotations

from sessions_app.management.people import PeopleCommand, cut
from sessions_app.management.person_command import session_name
from sessions_app.models import Plan
from sessions_app.reads import queries


class Command(PeopleCommand):
    help = (
        "List the plans an agent could pull now. Queued, not waiting for a person or for plans not completed, "
        "in queue order: of one session, or of every session you can see."
    )
    name = "ready"

    def add_arguments(self, parser):
        parser.add_argument("session", nargs="?", type=session_name, help="only this session (three-word name)")

    def act(self, options: dict) -> dict:
        name = options["session"]
        if name is not None:
            queries.get_session(name)  # not found, or not yours: said as the other reads say it
            rows = queries.ready_plans(name)
        else:
            rows = (
                queries.visible_plans()
                .filter(status=Plan.Status.QUEUED, waiting_for_person=False)
                .exclude(queries.WAITS_FOR_OTHERS)
            )
        plans = [
            {"session": p.session_id, "id": p.id, "goal": p.goal, "review": p.review, "created_at": p.created_at}
            for p in rows.order_by("session_id", "sort_key").only("id", "session_id", "goal", "review", "created_at")
        ]
        return {"session": name, "count": len(plans), "plans": plans}

    def show(self, document: dict) -> None:
        rows = [[p["session"], p["id"], p["created_at"], cut(p["goal"])] for p in document["plans"]]
        self.table(["SESSION", "PLAN", "ADDED", "GOAL"], rows, empty="Nothing can be pulled now.")
