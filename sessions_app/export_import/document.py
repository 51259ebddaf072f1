"""The export document's format: its keys, and the checks each part of it must pass
before an import writes anything."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from sessions_app import inputs
from sessions_app.errors import BAD_DOCUMENT, ValidationFailed
from sessions_app.models import DEFAULT_WORKER, MAX_LEASE_SECONDS, SECTIONS, Event, Plan
from sessions_app.models import ReviewPolicy, Revision, Session

FORMAT = "9plan-session-export"
FORMAT_VERSION = 3
# Version 1 named the queue's sort key "queue_position"; it is read as "sort_key". Versions
# 1 and 2 had no review, no revisions, no workers, leases or dependencies: their plans are
# read as never reviewed, each gets one "import" revision holding its text as imported, and
# an active plan is restored as the default worker's, with a fresh lease. A version 3
# document written before review existed (no review keys) is read as never reviewed too.
READABLE_VERSIONS = (1, 2, 3)

SESSION_KEYS_V2 = ("name", "task_description", "created_at")
SESSION_KEYS = (*SESSION_KEYS_V2, "review", "lease_seconds", "max_attempts")
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
ACTOR_CHARS = Event._meta.get_field("actor").max_length
FILE_CHARS = 16 * 1024 * 1024


def _fail(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", field=field, reason=BAD_DOCUMENT)


def _object(field: str, value: object, keys: tuple[str, ...]) -> dict:
    if not isinstance(value, dict):
        raise _fail(field, "must be a JSON object.")
    missing = [k for k in keys if k not in value]
    if missing:
        raise _fail(field, f"lacks {', '.join(missing)}.")
    extra = sorted(set(value) - set(keys))
    if extra:
        raise _fail(field, f"has unknown keys {', '.join(extra)}; expected exactly {', '.join(keys)}.")
    return value


def _list(field: str, value: object) -> list:
    if not isinstance(value, list):
        raise _fail(field, "must be a JSON array.")
    return value


def _integer(field: str, value: object, *, minimum: int = -BIGINT, maximum: int = BIGINT - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise _fail(field, f"must be a whole number from {minimum} to {maximum}.")
    return value


def _datetime(field: str, value: object, *, required: bool) -> datetime | None:
    if value is None and not required:
        return None
    parsed = None
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise _fail(field, "must be an ISO 8601 date and time with a UTC offset, like '2025-01-31T12:00:00+00:00'.")
    return parsed


def _text(
    field: str, value: object, *, required: bool = False, nullable: bool = False, max_chars: int | None = None
) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _fail(field, "must be a string.")
    return inputs.text(field, value, required=required, max_chars=max_chars)


def _check_session(data: object, version: int) -> Session:
    data = _object("session", data, SESSION_KEYS if version >= 3 else (*SESSION_KEYS_V2, "review"))
    name = inputs.session_name(data["name"], field="session.name")
    session = Session(
        name=name,
        task_description=_text("session.task_description", data["task_description"], nullable=True),
        created_at=_datetime("session.created_at", data["created_at"], required=True),
        review=_choice("session.review", data["review"], ReviewPolicy.values),
    )
    if version >= 3:
        session.lease_seconds = _integer("session.lease_seconds", data["lease_seconds"], minimum=1, maximum=MAX_LEASE_SECONDS)
        session.max_attempts = _integer("session.max_attempts", data["max_attempts"], minimum=1, maximum=100)
    return session


def _choice(field: str, value: object, choices) -> str:
    if value not in choices:
        raise _fail(field, f"must be one of {', '.join(choices)}; got {value!r}.")
    return value


def _check_revisions(at: str, plan_id: str, rows: object) -> list[Revision]:
    found: list[Revision] = []
    previous = 0
    for i, row in enumerate(_list(at, rows)):
        where = f"{at}[{i}]"
        row = _object(where, row, REVISION_KEYS)
        number = _integer(f"{where}.number", row["number"], minimum=1, maximum=2**31 - 1)
        if number <= previous:
            raise _fail(f"{where}.number", "revisions must be listed in increasing number order.")
        previous = number
        sections = _list(f"{where}.sections", row["sections"])
        if any(name not in SECTIONS for name in sections):
            raise _fail(f"{where}.sections", f"may name only {', '.join(SECTIONS)}.")
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
            raise _fail(f"{where}.undo", "must map section names to [kept prefix length, text].")
        actor = _text(f"{where}.actor", row["actor"], required=True)
        if len(actor) > ACTOR_CHARS:
            raise _fail(f"{where}.actor", f"is {len(actor)} characters; at most {ACTOR_CHARS} are allowed.")
        found.append(
            Revision(
                plan_id=plan_id,
                number=number,
                kind=_choice(f"{where}.kind", row["kind"], Revision.Kind.values),
                actor=actor,
                sections=sections,
                undo=undo,
                created_at=_datetime(f"{where}.created_at", row["created_at"], required=True),
            )
        )
    return found



def _check_claim(at: str, row: dict, status: str, version: int, session: Session) -> dict:
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
        "claimed_at": _datetime(f"{at}.claimed_at", row["claimed_at"], required=False),
        "lease_expires_at": _datetime(f"{at}.lease_expires_at", row["lease_expires_at"], required=False),
        "attempts": _integer(f"{at}.attempts", row["attempts"], minimum=0, maximum=2**31 - 1),
        "waiting_for_person": row["waiting_for_person"],
    }
    if not isinstance(claim["waiting_for_person"], bool):
        raise _fail(f"{at}.waiting_for_person", "must be true or false.")
    if status == Plan.Status.ACTIVE and None in (worker, claim["claimed_at"], claim["lease_expires_at"]):
        raise _fail(f"{at}.worker", "an active plan needs its worker, claimed_at and lease_expires_at.")
    if status != Plan.Status.ACTIVE and claim["lease_expires_at"] is not None:
        raise _fail(f"{at}.lease_expires_at", f"must be null for a {status} plan.")
    if status != Plan.Status.QUEUED and claim["waiting_for_person"]:
        raise _fail(f"{at}.waiting_for_person", f"must be false for a {status} plan.")
    if not isinstance(row["depends_on"], list):
        raise _fail(f"{at}.depends_on", "must be a JSON array of plan ids.")
    return claim

def _renamed(row: object, old: str, new: str) -> object:
    if isinstance(row, dict) and old in row and new not in row:
        row = {(new if key == old else key): value for key, value in row.items()}
    return row

