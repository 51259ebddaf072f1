"""`9plan add NAME`: a plan into a session's queue, from options or from plan-file texts."""

from __future__ import annotations

from pathlib import Path

from sessions_app import access, planfiles, services
from sessions_app.management.people import PeopleCommand, cut, refuse
from sessions_app.management.person_command import session_name
from sessions_app.reads import queries

# What a plan added with only its goal says in the sections an agent's add must fill.
NO_CONTEXT = "Added by {who} from the command line."
NO_APPROACH = "Not given: work it out from the goal and the context."
NO_CRITERIA = "Not given: the goal is met, and the outcome says how."
# A plan-file text at most this large is read (a plan's text is far smaller).
MAX_FILE_BYTES = 1_000_000


class Command(PeopleCommand):
    help = (
        "Add a plan to a session's queue. At the back (--front: next to be pulled), from --goal "
        "and the other sections, or from plan-file texts (--file, once per plan, added in that order). "
        "Needs the agent or manager role in the session's project."
    )
    name = "add"

    def add_arguments(self, parser):
        parser.add_argument("session", type=session_name, help="the session's three-word name")
        parser.add_argument("--goal", help="what the plan accomplishes, specific and checkable")
        parser.add_argument("--context", help="where the plan fits (default: who added it, from here)")
        parser.add_argument("--approach", help="concrete steps to reach the goal")
        parser.add_argument("--success-criteria", dest="success_criteria", help="conditions that mean it is done")
        parser.add_argument("--inputs", help="what it needs from other plans, described")
        parser.add_argument("--outputs", help="what it produces")
        parser.add_argument(
            "--file",
            dest="files",
            action="append",
            metavar="PLAN.txt",
            help="a plan-file text (sections under '# Context', '# Goal', ...); repeat for several plans",
        )
        parser.add_argument("--front", action="store_true", help="at the front of the queue (next to be pulled)")
        parser.add_argument(
            "--depends-on", dest="depends_on", nargs="+", metavar="ID", help="plans to complete first (ids)"
        )
        parser.add_argument("--review", action="store_true", help="a reviewer approves it once completed")

    def act(self, options: dict) -> dict:
        name = options["session"]
        if options["files"]:
            given = [f for f in ("goal", "context", "approach", "success_criteria", "inputs", "outputs") if options[f]]
            if given:
                refuse(
                    "--file", f"--file: give the plan either in files or with --{given[0].replace('_', '-')}, not both."
                )
            plans = [from_file(path) for path in options["files"]]
        else:
            if not options["goal"]:
                refuse("--goal", "--goal is required (or --file with a plan-file text).")
            who = access.current().label
            plans = [
                {
                    "goal": options["goal"],
                    "context": options["context"] or NO_CONTEXT.format(who=who),
                    "approach": options["approach"] or NO_APPROACH,
                    "success_criteria": options["success_criteria"] or NO_CRITERIA,
                    "inputs": options["inputs"],
                    "outputs": options["outputs"],
                }
            ]
        if options["depends_on"]:
            for plan in plans:
                plan["depends_on"] = list(options["depends_on"])
        written = services.plan_enqueue_many(
            session_name=name,
            plans=plans,
            position="front" if options["front"] else "back",
            review=options["review"],
            actor=access.current().label,
        )
        added = [
            {"id": w.plan.id, "queue_position": w.place, "goal": w.plan.goal, "review": w.plan.review} for w in written
        ]
        return {"session": name, "added": len(added), "plans": added, "queue_length": queries.queue_length(name)}

    def show(self, document: dict) -> None:
        self.stdout.write(f"Added {document['added']} plan(s) to {document['session']}:")
        rows = [[p["id"], p["queue_position"], cut(p["goal"])] for p in document["plans"]]
        self.table(["PLAN", "PLACE", "GOAL"], rows, empty="")


def from_file(path: str) -> dict:
    """The sections of a plan-file text (a missing heading is a missing section)."""
    file = Path(path)
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            refuse("--file", f"--file: {path} is larger than {MAX_FILE_BYTES} bytes; a plan's text is far smaller.")
        content = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        refuse("--file", f"--file: no file {path}.")
    except (OSError, UnicodeDecodeError) as exc:
        refuse("--file", f"--file: cannot read {path}: {exc}.")
    sections = planfiles.parse(content).sections
    if not sections:
        refuse(
            "--file",
            f"--file: {path} has none of a plan file's headings ('# Context', '# Goal', '# Approach', "
            "'# Success Criteria', ...) on a line of its own.",
        )
    if sections.get("notes"):
        refuse("--file", f"--file: {path} has Notes; a new plan starts without them (its agent writes them).")
    sections.pop("notes", None)
    return sections
