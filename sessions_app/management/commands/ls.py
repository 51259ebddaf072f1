"""`9plan ls`: the sessions you can see, newest first, with their counts."""

from __future__ import annotations

from sessions_app.management.people import PeopleCommand, cut
from sessions_app.reads import queries


class Command(PeopleCommand):
    help = "List the sessions you can see, newest first, with their counts of plans."
    name = "ls"

    def act(self, options: dict) -> dict:
        sessions = [
            {
                "name": s.name,
                "project": s.project_id,
                "task_description": s.task_description,
                "queued": s.queue_length,
                "has_active_plan": s.has_active_plan,
                "completed": s.completed_count,
                "discarded": s.discarded_count,
                "review": s.review,
                "created_at": s.created_at,
            }
            for s in queries.sessions_with_counts()
        ]
        return {"count": len(sessions), "sessions": sessions}

    def show(self, document: dict) -> None:
        rows = [
            [
                s["name"],
                s["project"],
                s["queued"],
                s["has_active_plan"],
                s["completed"],
                s["discarded"],
                s["created_at"],
                cut(s["task_description"], 50),
            ]
            for s in document["sessions"]
        ]
        headers = ["SESSION", "PROJECT", "QUEUED", "ACTIVE", "COMPLETED", "DISCARDED", "CREATED", "TASK"]
        self.table(headers, rows, empty="No sessions you can see; an agent's 9plan_session_create makes one.")
