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


def _manager_of(project: str, username: str):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user(username, password="x", is_staff=True)
    services.project_grant(project=project, username=username, role="manager")
    return get_user_model().objects.get(username=username)


def _still(monkeypatch) -> None:
    still = timezone.now()
    monkeypatch.setattr(clock, "now", lambda: still)


def test_a_viewer_who_sees_the_same_is_answered_from_one_render_in_few_queries(staff_client, demo, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _still(monkeypatch)
    twin = client_for(_manager_of("default", "tess"))
    with CaptureQueriesContext(connection) as rendered:
        first = staff_client.get(f"{LIVE}?view=home")
    assert first.status_code == 200
    with CaptureQueriesContext(connection) as unchanged:
        assert staff_client.get(f"{LIVE}?view=home", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    with CaptureQueriesContext(connection) as cached:
        second = twin.get(f"{LIVE}?view=home")
    # A cached answer costs what a 304 costs: the sign-in, the viewer's roles, the newest event.
    assert len(cached) == len(unchanged) < len(rendered)
    assert second.status_code == 200 and second["ETag"] == first["ETag"]
    assert second.json()["parts"].keys() == first.json()["parts"].keys()
    assert one("in_review").id in second.json()["parts"]["home-review"]


def test_a_cached_render_carries_the_viewers_own_csrf_token(staff, demo, monkeypatch):
    import re

    from django.test import Client

    _still(monkeypatch)
    twin = _manager_of("default", "tess")
    answers = []
    for user in (staff, twin):
        client = Client(enforce_csrf_checks=True)
        client.force_login(user)
        client.get("/admin/")  # the page sets the CSRF cookie, as a browser's first visit does
        body = client.get(f"{LIVE}?view=home").content.decode()
        tokens = set(re.findall(r'name=\\"csrfmiddlewaretoken\\" value=\\"([A-Za-z0-9]+)\\"', body))
        assert len(tokens) == 1, body
        answers.append((client, tokens.pop()))
    assert "csrfslot" not in body
    tess, tess_token = answers[1]
    plan = one("in_review")
    # The second viewer's answer, from the first one's render, holds a token her session accepts.
    response = tess.post(
        f"/admin/sessions_app/plan/{plan.id}/review/",
        {"decision": "approve", "notes": "", "next": "/admin/", "csrfmiddlewaretoken": tess_token},
    )
    assert response.status_code == 302
    assert one("completed", id=plan.id)


def test_another_projects_viewer_never_gets_a_render_from_the_cache(staff_client, demo, monkeypatch):
    _still(monkeypatch)
    services.project_create(name="elsewhere")
    eve = client_for(_manager_of("elsewhere", "eve"))
    mine = staff_client.get(f"{LIVE}?view=home")
    assert one("in_review").id in mine.json()["parts"]["home-review"]
    theirs = eve.get(f"{LIVE}?view=home")
    assert theirs.status_code == 200 and theirs["ETag"] != mine["ETag"]
    assert one("in_review").id not in theirs.content.decode()
    assert demo.name not in theirs.content.decode()
    assert theirs.json()["counts"]["inbox"] == 0
    # A reader of the same project, who may not decide, gets a render without the buttons.
    tess = _manager_of("default", "tess")
    services.project_grant(project="default", username="tess", role="reader")
    seen = client_for(tess).get(f"{LIVE}?view=home")
    assert seen["ETag"] != mine["ETag"]
    assert "np-approve-form" in mine.json()["parts"]["home-review"]
    assert "np-approve-form" not in seen.json()["parts"]["home-review"]


def test_a_new_event_replaces_the_cached_render(staff_client, demo, monkeypatch):
    _still(monkeypatch)
    url = f"{LIVE}?view=session&session={demo.name}"
    first = staff_client.get(url)
    services.plan_note(session_name=demo.name, worker="alpha", text="Five of five examples done.")
    second = client_for(_manager_of("default", "tess")).get(url)
    assert second["ETag"] != first["ETag"]
    assert "Five of five" not in first.content.decode()
    assert '<tr class="np-event" data-kind="plan_note">' in second.json()["parts"]["session-timeline"]


def test_the_pause_a_page_is_asked_for_grows_with_the_open_pages_and_shrinks_when_they_close(settings):
    from sessions_app.admin import live

    settings.NINEPLAN_LIVE_POLLS_PER_SECOND = 50
    live.forget_pages()
    assert live.next_poll_seconds("onlyonepage", now=1000.0) == live.FASTEST
    for i in range(199):
        pause = live.next_poll_seconds(f"page{i:04d}x", now=1000.0 + i / 100)
    assert pause == 200 / 50
    # A page polling again is one page, not two.
    assert live.next_poll_seconds("onlyonepage", now=1002.0) == 200 / 50
    # Past the window only the pages heard since count; never slower than SLOWEST.
    assert live.next_poll_seconds("onlyonepage", now=1002.0 + live.WINDOW) == live.FASTEST
    settings.NINEPLAN_LIVE_POLLS_PER_SECOND = 1
    assert live.next_poll_seconds("otherpage1", now=1003.0 + live.WINDOW) == 2.0
    assert live.next_poll_seconds(None, now=1004.0 + live.WINDOW) == 2.0
    live.forget_pages()


def test_the_live_answer_asks_for_a_pause_and_ignores_a_page_id_it_cannot_use(staff_client, demo):
    from sessions_app.admin import live

    live.forget_pages()
    answer = staff_client.get(f"{LIVE}?view=home", HTTP_LIVE_PAGE="a1b2c3d4e5f6")
    assert float(answer["Poll-After"]) >= live.FASTEST
    assert live.pages_heard() == ["a1b2c3d4e5f6"]
    unchanged = staff_client.get(f"{LIVE}?view=home", HTTP_LIVE_PAGE="../../x", HTTP_IF_NONE_MATCH=answer["ETag"])
    assert unchanged.status_code == 304 and "Poll-After" in unchanged
    assert live.pages_heard() == ["a1b2c3d4e5f6"]
    live.forget_pages()
