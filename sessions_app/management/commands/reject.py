"""`9plan reject PLAN_ID --note ...`: a reviewer sends a plan in review back, saying why."""

from __future__ import annotations

from sessions_app.management.people import PeopleCommand, decide


class Command(PeopleCommand):
    help = (
        "Reject a plan in review, saying why. The note is appended to its Notes and it returns to the front of "
        "the queue (held for a person after too many rejections). Needs the reviewer or manager role."
    )
    name = "reject"

    def add_arguments(self, parser):
        parser.add_argument("plan_id", metavar="PLAN_ID", help="the plan's id")
        parser.add_argument("--note", help="what is missing (required)")

    def act(self, options: dict) -> dict:
        return decide(options["plan_id"], "reject", options["note"])

    def show(self, document: dict) -> None:
        where = "held for a person" if document["status"] == "held" else f"queued at {document['queue_position']}"
        self.stdout.write(f"Plan {document['id']} of {document['session']} rejected: {where}.")
