"""The MCP server's periodic sweep reports claims whose lease ran out and moves nothing: an
expired claim stays its worker's until another worker pulls (docs/design.md, reclaiming)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from mcp_bridge import sweep
from sessions_app import clock, services
from sessions_app.models import Event, Plan
from tests.conftest import plan_fields

pytestmark = pytest.mark.django_db(transaction=True)

REPORTED = "lease expired, claim still held until another worker pulls"


def test_the_sweep_reports_each_expired_claim_once_and_leaves_it_held(monkeypatch, caplog, sessions_dir):
    short = services.session_create(lease_seconds=60)
    long = services.session_create(lease_seconds=3600)
    a = services.plan_enqueue(session_name=short.name, **plan_fields(goal="A")).plan
    b = services.plan_enqueue(session_name=long.name, **plan_fields(goal="B")).plan
    services.plan_pull(session_name=short.name, worker="w1")
    services.plan_pull(session_name=long.name, worker="w1")
    later = timezone.now() + timedelta(seconds=120)
    monkeypatch.setattr(clock, "now", lambda: later)
    monkeypatch.setattr(sweep, "_reported", {})

    with caplog.at_level(logging.INFO, logger="nineplan.mcp"):
        assert sweep.sweep_once() == 1
        assert sweep.sweep_once() == 1
    reported = [r for r in caplog.records if r.getMessage() == REPORTED]
    assert [(r.plan, r.worker, r.session) for r in reported] == [(a.id, "w1", short.name)]
    # Nothing moved: both plans are still their worker's, no reclaim was recorded.
    assert {p.id: (p.status, p.worker) for p in Plan.objects.filter(id__in=[a.id, b.id])} == {
        a.id: (Plan.Status.ACTIVE, "w1"),
        b.id: (Plan.Status.ACTIVE, "w1"),
    }
    assert not Event.objects.filter(kind=Event.Kind.PLAN_RECLAIMED).exists()
    # Its holder's write renews it: the next sweep finds nothing expired.
    services.plan_note(session_name=short.name, worker="w1", text="still here")
    assert sweep.sweep_once() == 0
