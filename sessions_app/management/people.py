"""The base of the commands a person runs to look at and put in work (`9plan ls`, `show`,
`ready`, `add`, `search`, `approve`, `reject`): they act as a named user, whose projects
and roles apply as in the admin, answer a table on a terminal or one JSON document with
--json, and refuse bad input with one line on stderr naming the field."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import NoReturn

from django.contrib.auth import get_user_model
from django.core.management.base import CommandParser

from sessions_app import access, inputs, services
from sessions_app.clock import utc_text
from sessions_app.errors import NineplanError, PlanNotFound, ValidationFailed
from sessions_app.management.person_command import PersonCommand
from sessions_app.reads import queries

# Exit statuses: a refusal (bad input, not found, not allowed), and a malformed command line.
REFUSED = 1
USAGE = 2


class Refused(Exception):
    """A one-line refusal of the command line itself (a user that does not exist)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


class PeopleCommand(PersonCommand):
    """A person's command: ``act(options)`` returns the JSON document, ``show(document)``
    prints it for a person."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument(
            "--as",
            dest="as_user",
            metavar="USER",
            help="act as this user, with its projects and roles (default: the first superuser)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON document and nothing else")
        command = f"9plan {subcommand}"

        def one_line_error(message: str) -> None:
            # argparse would print the whole usage first; one line says what is wrong.
            sys.stderr.write(f"{command}: {message} (see '9plan help {subcommand}')\n")
            sys.exit(USAGE)

        if getattr(parser, "called_from_command_line", False):
            parser.error = one_line_error  # type: ignore[method-assign]
        return parser

    def handle(self, *args, **options):
        try:
            with access.acting_as(access.caller_for_user(acting_user(options.get("as_user")))):
                document = self.act(options)
        except (NineplanError, Refused) as exc:
            field = exc.field if isinstance(exc.field, str) else ", ".join(exc.field or [])
            message = " ".join(exc.message.split())
            said = message if not field or message.startswith(field) else f"{field}: {message}"
            self.stderr.write(f"9plan {self.name}: {said}", style_func=lambda text: text)
            sys.exit(REFUSED)
        if options["json"]:
            self.stdout.write(json.dumps(document, default=json_value, ensure_ascii=False))
        else:
            self.show(document)

    # The command's name, as a person typed it (set by the module's Command).
    name = ""

    def act(self, options: dict) -> dict:
        raise NotImplementedError

    def show(self, document: dict) -> None:
        raise NotImplementedError

    def table(self, headers: list[str], rows: list[list[object]], *, empty: str) -> None:
        """Columns as wide as their widest cell, the last one cut to fit a line."""
        if not rows:
            self.stdout.write(empty)
            return
        cells = [[text(value) for value in row] for row in rows]
        widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]
        for row in [headers, *cells]:
            head = "  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths[:-1], strict=True))
            self.stdout.write(f"{head}  {row[-1]}".rstrip() if head else row[-1])


def acting_user(username: str | None):
    """The user a command acts as: ``username``, or the first superuser (the one the first
    step of the README makes)."""
    users = get_user_model().objects.filter(is_active=True)
    if username:
        found = users.filter(username=username).first()
        if found is None:
            raise Refused("--as", f"--as: no active user named {username!r}.")
        return found
    found = users.filter(is_superuser=True).order_by("pk").first()
    if found is None:
        raise Refused(
            "--as",
            "--as: there is no superuser to act as; make one with '9plan createsuperuser', or name a user with --as.",
        )
    return found


def text(value: object) -> str:
    """A cell: times in UTC to the minute, nothing for None, text on one line."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return utc_text(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return " ".join(str(value).split())


def cut(value: str | None, width: int = 60) -> str:
    value = " ".join((value or "").split())
    return value if len(value) <= width else value[: width - 1] + "…"


def json_value(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON: {type(value).__name__}")


def refuse(field: str, message: str) -> NoReturn:
    raise ValidationFailed(message, field=field)


def decide(plan_id: str, decision: str, note: str | None) -> dict:
    """A review decision on the plan ``plan_id`` of any session the caller can see."""
    plan_id = inputs.plan_id(plan_id, field="PLAN_ID")
    session = queries.visible_plans().filter(id=plan_id).values_list("session_id", flat=True).first()
    if session is None:
        raise PlanNotFound(f"No plan {plan_id} in the sessions you can see.", field="PLAN_ID")
    if decision == "reject" and not (note or "").strip():
        refuse("--note", "--note is required to reject: say what is missing.")
    written = services.plan_review(
        session_name=session, plan_id=plan_id, decision=decision, notes=note, actor=access.current().label
    )
    return {
        "id": plan_id,
        "session": session,
        "decision": decision,
        "status": written.plan.status,
        "queue_position": written.place,
        "rejections": written.plan.rejections,
    }
