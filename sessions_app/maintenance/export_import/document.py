"""The export document's format: its keys, and the checks each piece of it must pass
before an import writes anything.

Each check takes one piece as the reader decoded it (the session, a plan, a revision, an
event) and returns the row it becomes, or raises ValidationFailed naming the field. What
spans pieces (an id given twice, the dependencies, the queue's positions, the events'
plans) is checked by the import (restore.py), which sees the pieces one after another.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Literal, cast, overload

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from sessions_app import inputs, planfiles
from sessions_app.errors import BAD_DOCUMENT, ValidationFailed
from sessions_app.models import (
    DEFAULT_WORKER,
    MAX_LEASE_SECONDS,
    SECTION_TITLES,
    SECTIONS,
    Event,
    Plan,
    ReviewPolicy,
    Revision,
    Session,
)

FORMAT = "9plan-session-export"
FORMAT_VERSION = 4
# Version 4 names the session's project; an older document's session goes into the project
# the import is given (default: "default"). Version 1 named the queue's sort key
# "queue_position"; it is read as "sort_key". Versions
# 1 and 2 had no review, no revisions, no workers, leases or dependencies: their plans are
# read as never reviewed, each gets one "import" revision holding its text as imported, and
# an active plan is restored as the default worker's, with a fresh lease. A version 3
# document written before review existed (no review keys) is read as never reviewed too.
READABLE_VERSIONS = (1, 2, 3, 4)

SESSION_KEYS_V2 = ("name", "task_description", "created_at")
SESSION_KEYS_V3 = (*SESSION_KEYS_V2, "review", "lease_seconds", "max_attempts")
SESSION_KEYS = (*SESSION_KEYS_V3, "project")
PLAN_TEXT = (*SECTIONS, "outcome", "discard_reason")
PLAN_KEYS = (
    "id",
    "status",
    "sort_key",
    *PLAN_TEXT,
    "version",
    "created_at",
    "updated_at",
    "completed_at",
    "discarded_at",
    "file_text",
    "review",
    "rejections",
    "revisions",
)
REVISION_KEYS = ("number", "kind", "actor", "sections", "undo", "created_at")
CLAIM_KEYS = ("worker", "claimed_at", "lease_expires_at", "attempts", "waiting_for_person", "depends_on")
PLAN_KEYS_V3 = (*PLAN_KEYS, *CLAIM_KEYS)
EVENT_KEYS = ("id", "plan", "kind", "actor", "detail", "created_at")
BIGINT = 2**63
# Event.actor declares its max_length; the stubs type any field's as optional.
ACTOR_CHARS = cast(int, Event._meta.get_field("actor").max_length)
INT32 = 2**31 - 1
# Read once: an enum's values are rebuilt on every access, and each piece checks one.
PLAN_STATUSES = tuple(Plan.Status.values)
REVISION_KINDS = tuple(Revision.Kind.values)
EVENT_KINDS = tuple(Event.Kind.values)
HEADER_KEYS = ("format", "version", "exported_at", "session")
DOCUMENT_KEYS = (*HEADER_KEYS, "plans", "events")


def fail(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", field=field, reason=BAD_DOCUMENT)


def check_object(field: str, value: object, keys: tuple[str, ...]) -> dict:
    if not isinstance(value, dict):
        raise fail(field, "must be a JSON object.")
    missing = [k for k in keys if k not in value]
    if missing:
        raise fail(field, f"lacks {', '.join(missing)}.")
    extra = sorted(set(value) - set(keys))
    if extra:
        raise fail(field, f"has unknown keys {', '.join(extra)}; expected exactly {', '.join(keys)}.")
    return value


def check_list(field: str, value: object) -> list:
    if not isinstance(value, list):
        raise fail(field, "must be a JSON array.")
    return value


def whole_number(field: str, value: object, *, minimum: int = -BIGINT, maximum: int = BIGINT - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise fail(field, f"must be a whole number from {minimum} to {maximum}.")
    return value


@overload
def moment(field: str, value: object, *, required: Literal[True]) -> datetime: ...
@overload
def moment(field: str, value: object, *, required: bool) -> datetime | None: ...
def moment(field: str, value: object, *, required: bool) -> datetime | None:
    if value is None and not required:
        return None
    parsed = None
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise fail(field, "must be an ISO 8601 date and time with a UTC offset, like '2025-01-31T12:00:00+00:00'.")
    return parsed


@overload
def text(
    field: str, value: object, *, required: bool = ..., nullable: Literal[False] = ..., max_chars: int | None = ...
) -> str: ...
@overload
def text(
    field: str, value: object, *, required: bool = ..., nullable: bool, max_chars: int | None = ...
) -> str | None: ...
def text(
    field: str, value: object, *, required: bool = False, nullable: bool = False, max_chars: int | None = None
) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise fail(field, "must be a string.")
    return inputs.text(field, value, required=required, max_chars=max_chars)


def check_session(data: object, version: int) -> Session:
    keys = SESSION_KEYS if version >= 4 else SESSION_KEYS_V3 if version == 3 else (*SESSION_KEYS_V2, "review")
    data = check_object("session", data, keys)
    name = inputs.session_name(data["name"], field="session.name")
    session = Session(
        name=name,
        task_description=text("session.task_description", data["task_description"], nullable=True),
        created_at=moment("session.created_at", data["created_at"], required=True),
        review=choice("session.review", data["review"], ReviewPolicy.values),
    )
    if version >= 3:
        session.lease_seconds = whole_number(
            "session.lease_seconds", data["lease_seconds"], minimum=1, maximum=MAX_LEASE_SECONDS
        )
        session.max_attempts = whole_number("session.max_attempts", data["max_attempts"], minimum=1, maximum=100)
    if version >= 4:
        session.project_id = inputs.project_name(data["project"], field="session.project")
    return session


def choice(field: str, value: object, choices: Collection[str]) -> str:
    # Every choice is text, so a value that is not text is none of them.
    if not isinstance(value, str) or value not in choices:
        raise fail(field, f"must be one of {', '.join(choices)}; got {value!r}.")
    return value


def check_claim(at: str, row: dict, status: str, version: int, session: Session) -> dict:
    """The plan's claim fields: as exported (version 3), or, from an older document, an
    active plan held by the default worker with a fresh lease."""
    if version < 3:
        if status != Plan.Status.ACTIVE:
            return {}
        now = timezone.now()
        return {
            "worker": DEFAULT_WORKER,
            "claimed_at": now,
            "lease_expires_at": now + timedelta(seconds=session.lease_seconds),
        }
    worker = row["worker"]
    if worker is not None:
        worker = inputs.worker(worker, field=f"{at}.worker")
    claim = {
        "worker": worker,
        "claimed_at": moment(f"{at}.claimed_at", row["claimed_at"], required=False),
        "lease_expires_at": moment(f"{at}.lease_expires_at", row["lease_expires_at"], required=False),
        "attempts": whole_number(f"{at}.attempts", row["attempts"], minimum=0, maximum=2**31 - 1),
        "waiting_for_person": row["waiting_for_person"],
    }
    if not isinstance(claim["waiting_for_person"], bool):
        raise fail(f"{at}.waiting_for_person", "must be true or false.")
    if status == Plan.Status.ACTIVE and None in (worker, claim["claimed_at"], claim["lease_expires_at"]):
        raise fail(f"{at}.worker", "an active plan needs its worker, claimed_at and lease_expires_at.")
    if status != Plan.Status.ACTIVE and claim["lease_expires_at"] is not None:
        raise fail(f"{at}.lease_expires_at", f"must be null for a {status} plan.")
    if status != Plan.Status.QUEUED and claim["waiting_for_person"]:
        raise fail(f"{at}.waiting_for_person", f"must be false for a {status} plan.")
    if not isinstance(row["depends_on"], list):
        raise fail(f"{at}.depends_on", "must be a JSON array of plan ids.")
    return claim


def check_header(data: dict) -> tuple[int, bool]:
    """The document's format and version, and whether it was written before review
    existed (no review policy, flags or revisions)."""
    if data["format"] != FORMAT:
        raise fail("format", f"must be '{FORMAT}'; got {inputs.shown(data['format'])}.")
    version = data["version"]
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise fail("version", f"must be 1 to 4; this 9plan cannot read version {inputs.shown(version)}.")
    session = data["session"]
    return version, version < 3 or (isinstance(session, dict) and "review" not in session)


def session_row(data: object, version: int, old: bool) -> Session:
    if old and isinstance(data, dict):
        data = {"review": ReviewPolicy.NONE, **data}
    return check_session(data, version)


def plan_defaults(row: object, version: int, old: bool) -> object:
    """A plan of an older document as a version 3 one would hold it."""
    if not isinstance(row, dict):
        return row
    if version == 1 and "queue_position" in row and "sort_key" not in row:
        row = {("sort_key" if key == "queue_position" else key): value for key, value in row.items()}
    if old:
        row = {"review": False, "rejections": 0, "revisions": [], **row}
    return row


def check_revision(where: str, plan_id: str | None, row: object, previous: int) -> Revision:
    """One revision of a plan, numbered above ``previous`` (the plan's revision before it)."""
    row = check_object(where, row, REVISION_KEYS)
    number = whole_number(f"{where}.number", row["number"], minimum=1, maximum=INT32)
    if number <= previous:
        raise fail(f"{where}.number", "revisions must be listed in increasing number order.")
    sections = check_list(f"{where}.sections", row["sections"])
    if any(name not in SECTIONS for name in sections):
        raise fail(f"{where}.sections", f"may name only {', '.join(SECTIONS)}.")
    undo = row["undo"]
    if not isinstance(undo, dict) or any(
        name not in SECTIONS
        or not isinstance(step, list)
        or len(step) != 2
        or isinstance(step[0], bool)
        or not isinstance(step[0], int)
        or step[0] < 0
        or not isinstance(step[1], str)
        for name, step in undo.items()
    ):
        raise fail(f"{where}.undo", "must map section names to [kept prefix length, text].")
    # What a revision undoes is a section's earlier text, which was within the field limit.
    longest = settings.NINEPLAN_MAX_FIELD_CHARS
    for name, (kept, rest) in undo.items():
        if kept + len(rest) > longest:
            raise fail(
                f"{where}.undo", f"gives {name} an earlier text of {kept + len(rest):,} characters; a section holds at "
                f"most {longest:,} (NINEPLAN_MAX_FIELD_CHARS)."
            )  # fmt: skip
    return Revision(
        # None while the first read checks a plan not yet named, a row never saved; the
        # stubs refuse None for a NOT NULL foreign key even on an unsaved row.
        plan_id=plan_id,  # type: ignore[misc]
        number=number,
        kind=choice(f"{where}.kind", row["kind"], REVISION_KINDS),
        actor=actor_name(f"{where}.actor", row["actor"]),
        sections=sections,
        undo=undo,
        created_at=moment(f"{where}.created_at", row["created_at"], required=True),
    )


def actor_name(field: str, value: object) -> str:
    actor = text(field, value, required=True)
    if len(actor) > ACTOR_CHARS:
        raise fail(field, f"is {len(actor)} characters; at most {ACTOR_CHARS} are allowed.")
    return actor


def check_plan(at: str, row: object, version: int, session: Session) -> tuple[Plan, str | None, list[str]]:
    """A plan as its row, its file's text (None: rendered from the row) and the ids it
    depends on. Its revisions were taken out of ``row`` (checked by check_revision)."""
    row = check_object(at, row, PLAN_KEYS_V3 if version >= 3 else PLAN_KEYS)
    plan_id = inputs.plan_id(row["id"], field=f"{at}.id")
    status = row["status"]
    if status not in PLAN_STATUSES:
        raise fail(f"{at}.status", f"must be one of {', '.join(PLAN_STATUSES)}; got {inputs.shown(status)}.")
    position = row["sort_key"]
    if status == Plan.Status.QUEUED:
        position = whole_number(f"{at}.sort_key", position)
    elif position is not None:
        raise fail(f"{at}.sort_key", f"must be null for a {status} plan.")
    claim = check_claim(at, row, status, version, session)
    depends_on = [
        inputs.plan_id(dep, field=f"{at}.depends_on[{j}]")
        for j, dep in enumerate(row["depends_on"] if version >= 3 else [])
    ]
    sections = {key: text(f"{at}.{key}", row[key], required=(key == "goal")) for key in PLAN_TEXT}
    inputs.plan_size({k: sections[k] for k in (*SECTIONS, "outcome")}, field=at)
    if not isinstance(row["review"], bool):
        raise fail(f"{at}.review", "must be true or false.")
    check_list(f"{at}.revisions", row["revisions"])
    plan = Plan(
        id=plan_id,
        session=session,
        status=status,
        sort_key=position,
        review=row["review"],
        rejections=whole_number(f"{at}.rejections", row["rejections"], minimum=0, maximum=INT32),
        version=whole_number(f"{at}.version", row["version"], minimum=1, maximum=INT32),
        created_at=moment(f"{at}.created_at", row["created_at"], required=True),
        updated_at=moment(f"{at}.updated_at", row["updated_at"], required=True),
        completed_at=moment(f"{at}.completed_at", row["completed_at"], required=False),
        discarded_at=moment(f"{at}.discarded_at", row["discarded_at"], required=False),
        **claim,
        **sections,
    )
    file_text = row["file_text"]
    if file_text is not None:
        if status not in (Plan.Status.QUEUED, Plan.Status.ACTIVE):
            raise fail(f"{at}.file_text", f"must be null for a {status} plan (it has no file).")
        check_file_text(f"{at}.file_text", plan, file_text)
    return plan, file_text, depends_on


def check_file_text(field: str, plan: Plan, value: object) -> str:
    """An open plan's file as the agent left it, held to the limits its next note would
    apply when it takes the file in: the bytes 9plan reads of a plan file, each section
    within NINEPLAN_MAX_FIELD_CHARS, the plan within NINEPLAN_MAX_PLAN_CHARS."""
    from sessions_app import services

    if not isinstance(value, str):
        raise fail(field, "must be a string.")
    inputs.text(field, value, required=False, max_chars=len(value))
    size, cap = len(value.encode("utf-8")), planfiles.read_cap()
    if size > cap:
        raise fail(
            field, f"plan {plan.id}'s file is {size:,} bytes; at most {cap:,} are read (from NINEPLAN_MAX_PLAN_CHARS)."
        )
    parsed = planfiles.parse(value)
    taken = plan.sections()
    for name, body in parsed.sections.items():
        if name == "goal" and inputs.is_blank(body):
            continue  # the file's blank goal is never taken in
        taken[name] = body
        if len(body) > settings.NINEPLAN_MAX_FIELD_CHARS:
            raise fail(
                field,
                f"plan {plan.id}'s file has a {SECTION_TITLES[name]} of {len(body):,} characters; at most "
                f"{settings.NINEPLAN_MAX_FIELD_CHARS:,} are allowed.",
            )
    if parsed.preamble:
        taken["notes"] = services.compose_append(taken["notes"], parsed.preamble)
    total = sum(len(body) for body in taken.values()) + len(plan.outcome or "")
    if total > settings.NINEPLAN_MAX_PLAN_CHARS:
        raise fail(
            field,
            f"plan {plan.id}'s file holds a plan of {total:,} characters; at most "
            f"{settings.NINEPLAN_MAX_PLAN_CHARS:,} are allowed.",
        )
    return value


def check_event(at: str, row: object, session: Session) -> tuple[Event, int]:
    """One event and its exported id; the ids' order and the event's plan are checked
    against the others by the import."""
    row = check_object(at, row, EVENT_KEYS)
    number = whole_number(f"{at}.id", row["id"], minimum=1)
    if row["kind"] not in EVENT_KINDS:
        raise fail(f"{at}.kind", f"must be one of {', '.join(EVENT_KINDS)}; got {inputs.shown(row['kind'])}.")
    plan_id = row["plan"]
    if plan_id is not None:
        plan_id = inputs.plan_id(plan_id, field=f"{at}.plan")
    if not isinstance(row["detail"], dict):
        raise fail(f"{at}.detail", "must be a JSON object.")
    event = Event(
        session=session,
        plan_id=plan_id,
        kind=row["kind"],
        actor=actor_name(f"{at}.actor", row["actor"]),
        detail=row["detail"],
        created_at=moment(f"{at}.created_at", row["created_at"], required=True),
    )
    return event, number
