"""The session names and plan ids in a REST path, checked against their exact formats
before any lookup. A malformed one is simply not found (404): it could name nothing, and a
path-traversal attempt learns nothing more than that."""

from __future__ import annotations

from sessions_app import inputs
from sessions_app.errors import PlanNotFound, SessionNotFound
from sessions_app.identifiers import is_plan_id, is_session_name


def session_name(raw: str) -> str:
    if not is_session_name(raw):
        raise SessionNotFound(f"No session named {inputs.shown(raw)} exists (names are three lowercase words).")
    return raw


def plan_id(raw: str) -> str:
    if not is_plan_id(raw):
        raise PlanNotFound(f"No plan {inputs.shown(raw)} exists (ids are 5 characters of a-z and 0-9).")
    return raw
