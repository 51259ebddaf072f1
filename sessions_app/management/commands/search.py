"""`9plan search QUERY`: completed plans that match, best first."""

from __future__ import annotations

from sessions_app.management.people import PeopleCommand, cut, refuse
from sessions_app.management.person_command import add_session_option
from sessions_app.reads import queries


class Command(PeopleCommand):
    help = "Search the completed plans of the sessions you can see. Goal, context, inputs, outputs and outcome are searched."
    name = "search"

    def add_arguments(self, parser):
        parser.add_argument("query", help="words to look for")
        add_session_option(parser)
        parser.add_argument("--limit", type=int, default=10, help="at most this many hits (1 to 50; default 10)")

    def act(self, options: dict) -> dict:
        if not 1 <= options["limit"] <= 50:
            refuse("--limit", f"--limit must be from 1 to 50; got {options['limit']}.")
        hits = queries.history_search(options["query"], session_name=options["session"], max_results=options["limit"])
        found = [
            {
                "rank": hit.rank,
                "session": hit.plan.session_id,
                "id": hit.plan.id,
                "goal": hit.plan.goal,
                "outcome": hit.plan.outcome,
                "completed_at": hit.plan.completed_at,
            }
            for hit in hits
        ]
        return {"query": options["query"], "session": options["session"], "count": len(found), "results": found}

    def show(self, document: dict) -> None:
        rows = [[h["rank"], h["session"], h["id"], cut(h["goal"], 50)] for h in document["results"]]
        self.table(["#", "SESSION", "PLAN", "GOAL"], rows, empty="No completed plan matches.")
