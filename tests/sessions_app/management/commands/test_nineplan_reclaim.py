"""`nineplan_reclaim` returns expired claims to their queue, as another worker's pull
would; the repair leaves them with their workers (docs/design.md, "Repair")."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from sessions_app import clock, services
from sessions_app.maintenance import repair
from sessions_app.models import Event, Plan
from tests.conftest import plan_fields

pytestmark = pytest.mark.django_db


@pytest.fixture
def expired(monkeypatch):
    """A session whose worker 'w1' holds a plan whose lease ran out a minute ago."""
    session = services.session_create(lease_seconds=60)
    plan = services.plan_enqueue(session_name=session.name, **plan_fields()).plan
    services.plan_pull(session_name=session.name, worker="w1")
    later = timezone.now() + timedelta(seconds=120)
    monkeypatch.setattr(clock, "now", lambda: later)
    return session, plan


def test_the_command_reclaims_expired_claims_and_says_so(expired):
    session, plan = expired
    out = StringIO()
    call_command("nineplan_reclaim", stdout=out)
    assert f"{session.name} plan {plan.id}, attempt 1 lost" in out.getvalue()
    assert Plan.objects.get(id=plan.id).status == Plan.Status.QUEUED
    out = StringIO()
    call_command("nineplan_reclaim", "--session", session.name, stdout=out)
    assert out.getvalue().strip() == "No claim has run out."


def test_the_command_refuses_a_bad_session_name(expired):
    with pytest.raises(CommandError):
        call_command("nineplan_reclaim", "--session", "../etc", stdout=StringIO())
    assert Plan.objects.get(id=expired[1].id).status == Plan.Status.ACTIVE


def test_the_repair_leaves_an_expired_claim_with_its_worker(expired):
    session, plan = expired
    assert not [a for a in repair.repair_all(apply=False) if a.target == plan.id]
    repair.repair_all(apply=True)
    stored = Plan.objects.get(id=plan.id)
    assert (stored.status, stored.worker, stored.attempts) == (Plan.Status.ACTIVE, "w1", 0)
    assert not Event.objects.filter(plan_id=plan.id, kind=Event.Kind.PLAN_RECLAIMED).exists()
    # Its worker's write still succeeds.
    assert services.plan_note(session_name=session.name, worker="w1", text="back").plan.id == plan.id


@pytest.mark.parametrize("command", ["nineplan_reclaim", "repair"])
def test_a_malformed_session_name_is_refused_before_anything_runs(expired, command):
    session, plan = expired
    with pytest.raises(CommandError, match=r"--session: '\.\./etc' is not a session name \(three lowercase words"):
        call_command(command, "--session", "../etc", "--apply" if command == "repair" else "--verbosity=1")
    assert Plan.objects.get(id=plan.id).status == Plan.Status.ACTIVE
    assert not Event.objects.filter(kind=Event.Kind.PLAN_RECLAIMED).exists()
