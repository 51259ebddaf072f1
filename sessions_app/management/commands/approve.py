"""`9plan approve PLAN_ID`: a reviewer's approval of a plan in review."""

from __future__ import annotations

from sessions_app.management.people import PeopleCommand, decide


class Command(PeopleCommand):
    help = "Approve a plan in review. It is completed (and searchable). Needs the reviewer or manager role."
    name = "approve"

    def add_arguments(self, parser):
        parser.add_argument("plan_id", metavar="PLAN_ID", help="the plan's id")
        parser.add_argument("--note", help="why; appended to the plan's Notes under a heading naming you")

    def act(self, options: dict) -> dict:
        return decide(options["plan_id"], "approve", options["note"])

    def show(self, document: dict) -> None:
        self.stdout.write(f"Plan {document['id']} of {document['session']} approved: it is {document['status']}.")
