"""What every reviewer page shares: dates written one way, with the zone."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import dateformat, timezone

from tests.sessions_app.admin_fixtures import busy, plan_url, reviewer, reviewer_client, session_url, text_of  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def stamp(at) -> str:
    return dateformat.format(timezone.localtime(at), "Y-m-d H:i T")


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_every_page_writes_dates_one_way_with_the_zone(busy, reviewer_client, settings, zone):
    settings.TIME_ZONE = zone
    session, active = busy["session"], busy["active"]
    expected_zone = "UTC" if zone == "UTC" else ("EST", "EDT")
    pages = {
        "sessions list": reverse("admin:sessions_app_session_changelist"),
        "plans list": reverse("admin:sessions_app_plan_changelist"),
        "events list": reverse("admin:sessions_app_event_changelist"),
        "session page": session_url(session.name),
        "plan page": plan_url(active.id),
        "search": reverse("admin:sessions_app_history_search") + "?q=routes",
    }
    for name, url in pages.items():
        html = text_of(reviewer_client.get(url))
        assert not re.search(r"\b[ap]\.m\.|(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\.? \d", html), name
        stamps = re.findall(r"\b\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?(?: [A-Z]{3,4})?", html)
        assert stamps, name
        for found in stamps:
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d [A-Z]{3,4}", found), (name, found)
            assert found.endswith(expected_zone), (name, found)
    assert stamp(session.created_at) in text_of(reviewer_client.get(reverse("admin:sessions_app_session_changelist")))
    assert stamp(active.created_at) in text_of(reviewer_client.get(plan_url(active.id)))


def test_every_page_names_an_icon_and_favicon_ico_finds_it(busy, reviewer_client, client):
    from django.contrib.staticfiles import finders

    for url in (reverse("admin:index"), session_url(busy["session"].name), plan_url(busy["active"].id)):
        html = text_of(reviewer_client.get(url))
        assert '<link rel="icon" href="/static/sessions_app/favicon.svg" type="image/svg+xml">' in html, url
    assert '<link rel="icon"' in text_of(client.get(reverse("admin:login")))
    # Pages that name no icon (the REST API's) make the browser ask for /favicon.ico.
    response = client.get("/favicon.ico")
    assert response.status_code == 302 and response["Location"] == "/static/sessions_app/favicon.svg"
    found = finders.find("sessions_app/favicon.svg")
    assert found and open(found, encoding="utf-8").read().startswith("<svg ")
