"""The sessions list's filters (admin/filters.py): whether a session has a plan in
progress, and whether it has queued work."""

from __future__ import annotations

import pytest

from tests.sessions_app.admin_fixtures import busy, quiet, reviewer, reviewer_client, sessions_listed  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("", {"busy", "quiet"}),
        ("?active=yes", {"busy"}),
        ("?active=no", {"quiet"}),
        ("?queued=yes", {"busy"}),
        ("?queued=no", {"quiet"}),
        ("?active=yes&queued=no", set()),
    ],
)
def test_each_filter_keeps_the_sessions_it_names(busy, quiet, reviewer_client, query, shown):
    names = {"busy": busy["session"].name, "quiet": quiet.name}
    assert set(sessions_listed(reviewer_client, query)) == {names[n] for n in shown}


def test_the_filters_are_offered_with_both_answers(busy, reviewer_client):
    from django.urls import reverse

    changelist = reviewer_client.get(reverse("admin:sessions_app_session_changelist")).context["cl"]
    titles = {spec.title: [shown["display"] for shown in spec.choices(changelist)] for spec in changelist.filter_specs}
    assert titles["active plan"] == ["All", "Yes", "No"]
    assert titles["queued work"] == ["All", "Yes", "No"]
