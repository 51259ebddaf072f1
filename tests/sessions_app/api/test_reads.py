"""Each endpoint costs the same number of database queries however much data there is."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app import services
from sessions_app.models import Plan
from tests.conftest import plan_fields
from tests.sessions_app.api_fixtures import fill_session

pytestmark = pytest.mark.django_db


def urls(session, plan) -> list[str]:
    return [
        "/api/sessions/",
        "/api/sessions/?has_queued=true&search=port",
        f"/api/sessions/{session.name}/",
        f"/api/sessions/{session.name}/queue/",
        f"/api/sessions/{session.name}/plans/",
        f"/api/sessions/{session.name}/plans/?status=completed",
        f"/api/sessions/{session.name}/plans/{plan.id}/",
        f"/api/sessions/{session.name}/validation/",
        f"/api/sessions/{session.name}/export/",
        "/api/history/?q=invoices",
        f"/api/history/?q=invoices&session={session.name}",
        "/api/events/",
        f"/api/events/?session={session.name}&plan={plan.id}",
    ]


def query_counts(api, session, plan) -> dict[str, int]:
    counts = {}
    for url in urls(session, plan):
        with CaptureQueriesContext(connection) as captured:
            response = api.get(url)
            if response.streaming:  # the export reads as it is sent
                b"".join(response.streaming_content)
        assert response.status_code == 200, (url, response.content)
        counts[url] = len(captured)
    return counts


def test_query_counts_do_not_grow_with_the_data(api, full_session):
    plan = Plan.objects.get(session=full_session, status="active")
    small = query_counts(api, full_session, plan)

    # Many more of everything: sessions, plans in every state, events, notes on the plan.
    for _ in range(4):
        fill_session(services.session_create(task_description="Port more"), queued=6, completed=4, discarded=2)
    services.plan_enqueue_many(session_name=full_session.name, plans=[plan_fields(goal=f"More {i}") for i in range(30)])
    for i in range(12):
        services.plan_note(session_name=full_session.name, text=f"note {i}")
    services.plan_complete(session_name=full_session.name, outcome="invoices done")
    for _ in range(5):
        services.plan_pull(session_name=full_session.name)
        services.plan_complete(session_name=full_session.name, outcome="invoices handled")

    big = query_counts(api, full_session, plan)
    assert big == small
    # And the counts are small: authentication, permissions and a handful of reads.
    # The export reads one more: the plans' revisions, in one query beside the plans.
    assert max(v for k, v in small.items() if not k.endswith("/export/")) <= 10, small
    assert max(v for k, v in small.items() if k.endswith("/export/")) <= 11, small
