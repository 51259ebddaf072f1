"""Input checks shared by every edge. Each failure names the field and what is accepted."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.conf import settings

from sessions_app.errors import PLAN_TOO_LARGE, TEXT_TOO_LONG, ValidationFailed
from sessions_app.identifiers import is_plan_id, is_project_name, is_session_name

POSITIONS = ("front", "back")
NOTE_MODES = ("append", "replace")
# Where a history search looks: the session, or every session of its project.
SEARCH_SCOPES = ("session", "project")


def clip(text: str, limit: int = 60) -> str:
    """A caller's text (a name it sent) cut short for echoing back: a huge or hostile value
    must not make the error message, and the agent's context, huge."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: object, limit: int = 40) -> str:
    """A rejected value as it is echoed in an error: its repr, cut short (see ``clip``)."""
    return clip(repr(value), limit)


def is_blank(value: str) -> bool:
    # "Empty" means Unicode White_Space only (NEL, NBSP, ideographic space...), not " \t\r\n".
    return value == "" or value.isspace()


def text(
    field: str,
    value: object,
    *,
    required: bool,
    max_chars: int | None = None,
) -> str:
    if value is None:
        if required:
            raise ValidationFailed(f"{field} is required: give a non-empty string.", field=field)
        return ""
    if not isinstance(value, str):
        raise ValidationFailed(f"{field} must be a string, not {type(value).__name__}.", field=field)
    if "\x00" in value:
        raise ValidationFailed(f"{field} contains a NUL character (U+0000), which cannot be stored.", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationFailed(
            f"{field} contains a lone surrogate code point, which is not valid Unicode text.", field=field
        ) from None
    if required and is_blank(value):
        raise ValidationFailed(f"{field} is empty or only whitespace: give some text.", field=field)
    limit = settings.NINEPLAN_MAX_FIELD_CHARS if max_chars is None else max_chars
    if len(value) > limit:
        raise ValidationFailed(
            f"{field} is {len(value)} characters; at most {limit} are allowed.",
            field=field,
            reason=TEXT_TOO_LONG,
        )
    return value


def choice(field: str, value: object, choices: Iterable[str], *, default: str) -> str:
    options = tuple(choices)
    if value is None:
        return default
    # Matched exactly: "Front" or "BACK" is an error, never silently the default.
    if not isinstance(value, str) or value not in options:
        accepted = " or ".join(f"'{c}'" for c in options)
        raise ValidationFailed(f"{field} must be exactly {accepted} (lowercase); got {shown(value)}.", field=field)
    return value


def _shaped(value: object, field: str, fits, what: str) -> str:
    """``value`` if ``fits`` its exact shape, else VALIDATION_ERROR naming the field and ``what``."""
    if not fits(value):
        raise ValidationFailed(f"{field} {shown(value)} is not {what}.", field=field)
    return value  # type: ignore[return-value]


def session_name(value: object, field: str = "session_name") -> str:
    return _shaped(
        value,
        field,
        is_session_name,
        "a session name: expected three lowercase words joined by '-', like 'brave-amber-otter'",
    )


def plan_id(value: object, field: str = "plan_id") -> str:
    return _shaped(value, field, is_plan_id, "a plan id: expected 5 characters of a-z and 0-9, like 'k3x9q'")


def project_name(value: object, field: str = "project") -> str:
    return _shaped(
        value,
        field,
        is_project_name,
        "a project name: expected 1 to 63 characters of a-z, 0-9 and '-', starting with a letter or digit, like "
        "'billing-team'",
    )


_WORKER = re.compile(r"[A-Za-z0-9._-]{1,64}")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def _token(field: str, value: object, pattern: re.Pattern, what: str, chars: str, example: str) -> str:
    """A short name of a fixed alphabet (a worker's name, a request id), or VALIDATION_ERROR."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ValidationFailed(
            f"{field} {shown(value)} is not {what}: expected 1 to 64 characters of A-Z, a-z, 0-9, {chars}, "
            f"like '{example}'.",
            field=field,
        )
    return value


def worker(value: object, field: str = "worker") -> str:
    """A worker's name; omitted, the session's default worker (a single agent names none)."""
    from sessions_app.models import DEFAULT_WORKER

    if value is None:
        return DEFAULT_WORKER
    return _token(field, value, _WORKER, "a worker name", "'.', '_' and '-'", "tests-2")


def request_id(value: object, field: str = "request_id") -> str:
    """A caller's key for one write, so that a retry of it is answered, not applied again."""
    return _token(field, value, _REQUEST_ID, "a request id", "'.', '_', ':' and '-'", "note-7f3a")


def bounded_int(field: str, value: object, *, default: int, minimum: int, maximum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or value > maximum:
        raise ValidationFailed(
            f"{field} must be a whole number from {minimum} to {maximum}; got {shown(value)}.", field=field
        )
    return value


def positive_int(field: str, value: object, *, default: int, maximum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > maximum:
        raise ValidationFailed(f"{field} must be a whole number from 1 to {maximum}; got {shown(value)}.", field=field)
    return value


def plan_size(sections: dict[str, str], *, field: str = "plan") -> None:
    """The whole plan's text stays under NINEPLAN_MAX_PLAN_CHARS (checked on the composed result)."""
    size = sum(len(v or "") for v in sections.values())
    limit = settings.NINEPLAN_MAX_PLAN_CHARS
    if size > limit:
        raise ValidationFailed(
            f"{field}: the plan's text would be {size} characters; at most {limit} are allowed.",
            field=field,
            reason=PLAN_TOO_LARGE,
        )


def flag(field: str, value: object) -> bool:
    """A yes/no option: true or false (JSON booleans), absent meaning false."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValidationFailed(f"{field} must be true or false; got {shown(value)}.", field=field)
    return value
