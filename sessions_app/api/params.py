"""Query parameters: each is declared once and gives both its OpenAPI description and its
strict parser. A bad value is a VALIDATION_ERROR naming the parameter and what it accepts;
nothing is silently replaced by a default."""

from __future__ import annotations

from dataclasses import dataclass

from drf_spectacular.utils import OpenApiParameter

from sessions_app import inputs
from sessions_app.errors import UNKNOWN_PARAMETER, ValidationFailed
from sessions_app.identifiers import PLAN_ID_RE, SESSION_NAME_RE

# What inputs.text accepts as non-blank, for the schema: no NUL anywhere, and at least
# one character that str.isspace() does not count as white space.
_SPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_BLANK_PATTERN = rf"^[^\x00]*[^\x00{_SPACE}][^\x00]*$"
NO_NUL_PATTERN = r"^[^\x00]*$"

# The formats identifiers.is_session_name and is_plan_id accept, wherever a name or id is given.
SESSION_NAME_SCHEMA = {"type": "string", "pattern": rf"^{SESSION_NAME_RE.pattern}$", "maxLength": 64}
PLAN_ID_SCHEMA = {"type": "string", "pattern": rf"^{PLAN_ID_RE.pattern}$"}


def single(request, name: str) -> str | None:
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValidationFailed(f"{name} is given {len(values)} times; give it once.", field=name)
    return values[0]


@dataclass(frozen=True)
class IntParam:
    name: str
    default: int
    minimum: int
    maximum: int
    description: str

    def openapi(self) -> OpenApiParameter:
        schema = {"type": "integer", "minimum": self.minimum, "maximum": self.maximum, "default": self.default}
        return OpenApiParameter(self.name, type=schema, location=OpenApiParameter.QUERY, description=self.description)

    def parse(self, request) -> int:
        raw = single(request, self.name)
        if raw is None:
            return self.default
        # Digits only: int() would also take " 7", "+7", "٧" or "1_000".
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 12) or not self.minimum <= int(raw) <= self.maximum:
            raise ValidationFailed(
                f"{self.name} must be a whole number from {self.minimum} to {self.maximum}; got {inputs.shown(raw)}.",
                field=self.name,
            )
        return int(raw)


@dataclass(frozen=True)
class ChoiceParam:
    name: str
    choices: tuple[str, ...]
    description: str

    def openapi(self) -> OpenApiParameter:
        return OpenApiParameter(
            self.name, type=str, enum=list(self.choices), location=OpenApiParameter.QUERY, description=self.description
        )

    def parse(self, request) -> str | None:
        raw = single(request, self.name)
        if raw is None:
            return None
        if raw not in self.choices:
            accepted = ", ".join(f"'{c}'" for c in self.choices)
            raise ValidationFailed(
                f"{self.name} must be exactly one of {accepted}; got {inputs.shown(raw)}.",
                field=self.name,
            )
        return raw


@dataclass(frozen=True)
class TextParam:
    name: str
    max_chars: int
    description: str
    required: bool = False

    def openapi(self) -> OpenApiParameter:
        schema = {"type": "string", "maxLength": self.max_chars, "pattern": NO_NUL_PATTERN}
        if self.required:
            schema["minLength"] = 1
            schema["pattern"] = NOT_BLANK_PATTERN
        return OpenApiParameter(
            self.name,
            type=schema,
            location=OpenApiParameter.QUERY,
            required=self.required,
            description=self.description,
        )

    def parse(self, request) -> str | None:
        raw = single(request, self.name)
        if raw is None and not self.required:
            return None
        return inputs.text(self.name, raw, required=self.required, max_chars=self.max_chars)


@dataclass(frozen=True)
class NameParam:
    """A session name or plan id given as a query parameter; checked before any lookup."""

    name: str
    kind: str  # "session" | "plan"
    description: str

    def openapi(self) -> OpenApiParameter:
        schema = SESSION_NAME_SCHEMA if self.kind == "session" else PLAN_ID_SCHEMA
        return OpenApiParameter(self.name, type=schema, location=OpenApiParameter.QUERY, description=self.description)

    def parse(self, request) -> str | None:
        raw = single(request, self.name)
        if raw is None:
            return None
        if self.kind == "session":
            return inputs.session_name(raw, field=self.name)
        return inputs.plan_id(raw, field=self.name)


BOOLEAN = ("true", "false")

# One paging vocabulary on every list, the history search and the event feed: ``page_size``
# rows per answer, at most MAX_PAGE_SIZE (an answer's size, and the work one request does,
# stay bounded); ``page`` numbers the pages of the lists and the search (the feed pages by
# its cursor instead).
MAX_PAGE_SIZE = 100
PAGE = IntParam("page", 1, 1, 100_000, "Page number, from 1. A page past the end is empty.")


def page_size(default: int, what: str = "Items") -> IntParam:
    return IntParam(
        "page_size", default, 1, MAX_PAGE_SIZE, f"{what} per page (1 to {MAX_PAGE_SIZE}, default {default})."
    )


PAGE_SIZE = page_size(20)

# DRF's own ``?format=`` (json, or api for the browsable page) picks the representation
# of any endpoint; every other parameter is declared by the endpoint that takes it.
ALWAYS_ACCEPTED = ("format",)


def refuse_unknown(request, accepted) -> None:
    """A VALIDATION_ERROR naming the first query parameter the endpoint does not take: a
    misspelt filter (``?stauts=queued``) must not silently answer everything."""
    for name in request.query_params:
        if name not in accepted and name not in ALWAYS_ACCEPTED:
            takes = ", ".join(sorted(accepted)) or "no query parameters"
            raise ValidationFailed(
                f"Unknown query parameter {inputs.shown(name)}: this endpoint takes {takes}.",
                field=inputs.clip(name, 64),
                reason=UNKNOWN_PARAMETER,
            )
