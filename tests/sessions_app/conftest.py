"""Fixtures for the service-layer tests: snapshots of everything a call could change, and
a guard asserting that a rejected call changed none of it."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from sessions_app import clock, planfiles, services
from sessions_app.errors import NineplanError
from sessions_app.maintenance import invariants
from sessions_app.models import Event, Plan, Revision, Session
from sessions_app.search import FTS_TABLE
from sessions_app.search import sqlite as search_sqlite
from tests.conftest import manage, plan_fields


def plan_file(sessions_dir: Path, plan: Plan) -> Path:
    """The plan's file as the database names it now (after a reclaim, the new claim's)."""
    stem = Plan.objects.filter(id=plan.id).values_list("reclaims", flat=True).first()
    return sessions_dir / plan.session_id / "plans" / f"{Plan(id=plan.id, reclaims=stem or 0).file_stem}.txt"


def revised_plan(session: Session, note: str, replacement: str, **fields) -> Plan:
    """The session's active plan with three revisions: as added, with ``note`` appended
    to its notes, and with its notes replaced by ``replacement``."""
    added = services.plan_enqueue(session_name=session.name, **plan_fields(**fields)).plan
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text=note)
    services.plan_note(session_name=session.name, text=replacement, mode="replace")
    return Plan.objects.get(id=added.id)


sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's online backup; pg_dump on PostgreSQL")


def files_below(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` by its path, with its bytes (folders left out)."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under root with its bytes (None for a directory)."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        found[key] = None if path.is_dir() else path.read_bytes()
    return found


def db_rows() -> dict[str, list]:
    rows = {
        "sessions": list(Session.objects.order_by("name").values()),
        "plans": list(Plan.objects.order_by("id").values()),
        "events": list(Event.objects.order_by("id").values()),
        "revisions": list(Revision.objects.order_by("id").values()),
    }
    if connection.vendor == "sqlite":
        with connection.cursor() as cur:
            cur.execute(f"SELECT plan_id, goal, outcome FROM {FTS_TABLE} ORDER BY plan_id")
            rows["fts"] = cur.fetchall()
    return rows


def queue_ids(session: Session) -> list[str]:
    """The ids of the session's queued plans, front first."""
    return list(Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("id", flat=True))


def events(plan: Plan) -> list[tuple[str, str]]:
    return list(Event.objects.filter(plan_id=plan.id).order_by("id").values_list("kind", "actor"))


@pytest.fixture
def snapshot(tmp_path):
    """Database rows, every file of this test's temp tree, and the names next to it (where
    a path-traversal write would land)."""

    def take() -> dict:
        return {"db": db_rows(), "files": tree(tmp_path), "beside": sorted(p.name for p in tmp_path.parent.iterdir())}

    return take


@pytest.fixture
def rejects(snapshot):
    """`with rejects("VALIDATION_ERROR", field="goal"):` — the call raises that category,
    names the field, and leaves the database and the file system exactly as they were."""

    @contextmanager
    def check(category: str, *, field: str | None = None, match: str | None = None):
        before = snapshot()
        with pytest.raises(NineplanError) as info:
            yield info
        error = info.value
        assert error.category == category, error.message
        if field is not None:
            assert error.field == field, error.message
        if match is not None:
            assert match in error.message
        # The core says what happened, never which tool or button to use next.
        assert "9plan_" not in error.message and not hasattr(error, "suggestion")
        assert snapshot() == before

    return check


@pytest.fixture
def active(session, make_plan):
    """A session whose only plan has been pulled."""
    make_plan(session)
    return services.plan_pull(session_name=session.name)


@pytest.fixture
def complete_plan(db):
    """Runs one plan through add, pull and complete; returns the completed plan."""

    def run(session: Session, outcome: str = "Done.", **overrides) -> Plan:
        services.plan_enqueue(session_name=session.name, position="front", **plan_fields(**overrides))
        services.plan_pull(session_name=session.name)
        return services.plan_complete(session_name=session.name, outcome=outcome).plan

    return run


@pytest.fixture(params=["own index", "shared index"] if connection.vendor == "sqlite" else ["shared index"])
def search_path(request, monkeypatch):
    """Each test runs on both SQLite paths: a small session's own temporary index, and the
    shared index that larger sessions (and searches of every session) read."""
    if request.param == "shared index":
        monkeypatch.setattr(search_sqlite, "SMALL_SESSION", -1)
    return request.param


class Clock:
    """The time leases are measured by, moved forward by the test instead of waited for."""

    def __init__(self) -> None:
        self.at = timezone.now()

    def __call__(self):
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def now(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(clock, "now", fake)
    return fake


def rejected_once(session_name: str, goal: str, *, outcome: str, notes: str, actor: str) -> Plan:
    """A plan queued, pulled, completed with ``outcome`` and rejected in review with ``notes``
    (held, where the session allows one rejection)."""
    plan = services.plan_enqueue(session_name=session_name, **plan_fields(goal=goal)).plan
    services.plan_pull(session_name=session_name)
    services.plan_complete(session_name=session_name, outcome=outcome)
    services.plan_review(session_name=session_name, plan_id=plan.id, decision="reject", notes=notes, actor=actor)
    return plan


# --- repairs ------------------------------------------------------------------------------


def run_repair(*args: str) -> str:
    """What `repair` with ``args`` writes on stdout."""
    return manage("repair", *args)[0]


def repaired_events(session) -> list[dict]:
    return [
        {"plan": e.plan_id, **e.detail}
        for e in Event.objects.filter(session=session, kind=Event.Kind.REPAIRED, actor="repair").order_by("id")
    ]


def assert_valid(session) -> None:
    result = invariants.check_invariants(session.name)
    assert result.valid, result.issues
    assert result.issues == []


def completed_with_file(session, complete_plan, **overrides) -> tuple[Plan, str]:
    """A completed plan whose file is back on disk, as if killed between the commit and
    the delete; returns the plan and the file's text."""
    plan = complete_plan(session, **overrides)
    text = planfiles.render(plan.sections())
    planfiles.write_plan(session.name, plan.id, plan.sections())
    return plan, text
