"""The reads of what waits for a person (sessions_app/reads/needs_you.py): each panel's rows, the
counts, what changed since a pull, and that every read keeps to the caller's projects."""

from __future__ import annotations

import pytest

from sessions_app import access, services
from sessions_app.models import Plan
from sessions_app.reads import needs_you
from tests.conftest import plan_fields
from tests.sessions_app.admin_fixtures import demo  # noqa: F401 - fixtures
from tests.sessions_app.conftest import rejected_once

pytestmark = pytest.mark.django_db


def pulled_and_noted(session_name: str, goal: str, *, worker: str | None = None) -> Plan:
    plan = services.plan_enqueue(session_name=session_name, **plan_fields(goal=goal)).plan
    services.plan_pull(session_name=session_name, worker=worker)
    services.plan_note(session_name=session_name, worker=worker, text="Found the cause\nin parse()")
    return plan


def test_since_pull_diffs_the_text_at_the_pull_with_the_text_now(session):
    plan = pulled_and_noted(session.name, "Fix the parser")
    stored = Plan.objects.get(id=plan.id)
    found = needs_you.since_pull([stored])[plan.id]
    assert found.lines == ["r2 note by agent: Notes"]
    assert found.sections == [("notes", "", "Found the cause\nin parse()")]


def test_a_plan_behind_a_held_or_waiting_plan_is_listed_with_its_blocker(session, settings):
    settings.NINEPLAN_MAX_REJECTIONS = 1
    reviewed = services.session_create(review="required", max_attempts=1)
    held = rejected_once(reviewed.name, "Held one", outcome="x", notes="no", actor="user:r")
    behind = services.plan_enqueue_many(
        session_name=reviewed.name, plans=[{**plan_fields(goal="Behind it"), "depends_on": [held.id]}]
    )[0].plan
    free = services.plan_enqueue(session_name=reviewed.name, **plan_fields(goal="Free")).plan
    assert needs_you.blocked_on_person() == [
        needs_you.StuckBehind(behind.id, reviewed.name, "Behind it", held.id, "held")
    ]
    assert free.id not in {b.plan_id for b in needs_you.blocked_on_person()}
    assert needs_you.counts() == needs_you.Counts(held=1)


def test_busy_sessions_group_each_workers_plan_under_its_session(session):
    first = pulled_and_noted(session.name, "One", worker="w1")
    second = pulled_and_noted(session.name, "Two", worker="w2")
    busy = needs_you.busy_sessions()
    assert [(b.session_id, [p.id for p in b.plans]) for b in busy] == [(session.name, [first.id, second.id])]
    assert [p.worker for p in busy[0].plans] == ["w1", "w2"]


def test_every_read_keeps_to_the_callers_projects(session):
    pulled_and_noted(session.name, "Default project's", worker="w1")
    services.plan_reclaim(session_name=session.name, plan_id=Plan.objects.get().id, actor="user:sam")
    stranger = access.Caller(label="user:eve", roles={"elsewhere": "manager"})
    with access.acting_as(stranger):
        home = needs_you.home()
        assert (home.in_review, home.waiting, home.trouble, home.busy) == ([], [], [], [])
        assert needs_you.latest_event_id() == 0 and needs_you.latest_event_id(session.name) == 0
    home = needs_you.home()
    assert [t.event.kind for t in home.trouble] == ["plan_reclaimed"] and home.trouble[0].worker == "w1"
    assert needs_you.latest_event_id(session.name) > 0


def test_counts_read_only_visible_plans(demo):
    assert needs_you.counts() == needs_you.Counts(in_review=1, held=1, waiting=1)
