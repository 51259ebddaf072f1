"""The event log in the admin (admin/events.py): its search looks into the details, and
each row names who did it once."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Event
from tests.sessions_app.admin_fixtures import busy, enqueue, reviewer, reviewer_client, text_of  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def events_found(client, query: str) -> list[Event]:
    response = client.get(reverse("admin:sessions_app_event_changelist"), {"q": query})
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


def test_event_search_looks_into_the_details(busy, reviewer_client):
    (found,) = events_found(reviewer_client, "reporting service")
    assert (found.kind, found.plan_id) == ("plan_discarded", busy["discarded"].id)
    assert events_found(reviewer_client, "no such words anywhere") == []
    # Still by session name and actor, as before.
    assert (
        len(events_found(reviewer_client, busy["session"].name))
        == Event.objects.filter(session=busy["session"]).count()
    )


@pytest.mark.parametrize("reason", ['Café menü: "duplicate" of a\\b', "naïve 🎉 plan"])
def test_event_search_finds_any_text_of_a_detail(session, reviewer_client, reason):
    enqueue(session, "To drop")
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason=reason)
    for word in reason.split():
        (found,) = events_found(reviewer_client, word)
        assert found.kind == "plan_discarded", word


def test_event_list_names_who_did_it_once(busy, reviewer_client):
    services.plan_move(
        session_name=busy["session"].name, plan_id=busy["queued"][2].id, position="front", actor="user:sam"
    )
    html = text_of(reviewer_client.get(reverse("admin:sessions_app_event_changelist")))
    assert '<td class="field-who">user:sam</td>' in html
    assert '<td class="field-who">agent</td>' in html
