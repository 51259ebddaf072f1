"""The live endpoint the admin's pages poll (sessions_app/admin/live.py): a 304 until an
event, then each page's parts and counts; and what it refuses (Django's test client)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from sessions_app import clock, services
from sessions_app.models import Event
from tests.sessions_app.admin_fixtures import (  # noqa: F401  (fixtures)
    client_for,
    demo,
    one,
    outsider,
    staff,
    staff_client,
)

pytestmark = pytest.mark.django_db
LIVE = "/admin/live/"


def test_the_live_answer_is_a_304_until_an_event_then_the_parts_with_it(staff_client, demo, monkeypatch):
    # The tag holds the minute: the clock stands still, so it cannot turn between two requests.
    still = timezone.now()
    monkeypatch.setattr(clock, "now", lambda: still)
    url = f"{LIVE}?view=session&session={demo.name}"
    first = staff_client.get(url)
    assert first.status_code == 200 and "private" in first["Cache-Control"]
    parts = first.json()["parts"]
    assert set(parts) == {"session-workers", "session-awaiting", "session-queue", "session-timeline"}
    tag = first["ETag"]
    assert staff_client.get(url, HTTP_IF_NONE_MATCH=tag).status_code == 304

    services.plan_note(session_name=demo.name, worker="alpha", text="Five of five examples done.")
    changed = staff_client.get(url, HTTP_IF_NONE_MATCH=tag)
    assert changed.status_code == 200 and changed["ETag"] != tag
    assert '<tr class="np-event" data-kind="plan_note">' in changed.json()["parts"]["session-timeline"]
    assert "Five of five" not in first.json()["parts"]["session-workers"]
    assert changed.json()["counts"]["events"] == Event.objects.filter(session=demo).count()


def test_the_live_home_and_inbox_carry_their_parts_and_the_counts(staff_client, demo):
    home = staff_client.get(f"{LIVE}?view=home").json()
    assert home["counts"] == {"inbox": 3, "in_review": 1, "held": 1, "waiting": 1}
    assert one("in_review").id in home["parts"]["home-review"]
    inbox = staff_client.get(f"{LIVE}?view=inbox").json()
    assert set(inbox["parts"]) == {"inbox-review", "inbox-held", "inbox-waiting"}
    assert one("held").id in inbox["parts"]["inbox-held"]


def test_the_live_endpoint_refuses_what_it_does_not_serve(staff_client, outsider, demo):
    assert staff_client.get(f"{LIVE}?view=plans").status_code == 404
    assert staff_client.get(f"{LIVE}?view=session&session=../etc").status_code == 404
    assert staff_client.get(f"{LIVE}?view=session&session=no-such-session").status_code == 404
    assert staff_client.post(f"{LIVE}?view=home").status_code == 405
    assert client_for(outsider).get(f"{LIVE}?view=home").status_code == 403
