"""A project's manager subscribes a URL to the project's events from its page in a real
headless Chromium, reads the secret shown once, and rotates it (the forms, the secret page
and the way back to the project work as a browser uses them)."""

from __future__ import annotations

import pytest

from sessions_app.models import WebhookSubscription
from tests.proofs.test_admin_browser import browser, follow, shot  # noqa: F401  (fixture)
from tests.proofs.test_admin_browser_review import login, people  # noqa: F401  (fixture)

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]


def test_a_manager_subscribes_and_rotates_from_the_projects_page(browser, live_server, people, settings):
    settings.NINEPLAN_WEBHOOKS_ALLOW_PRIVATE = True  # the URL is on loopback
    page = login(browser, live_server, "sam")
    page.goto(live_server.url + "/admin/sessions_app/project/default/change/")
    form = page.locator("#np-webhook-subscribe")
    form.locator("input[name=url]").fill("http://127.0.0.1:9/hooks")
    form.locator("input[value='plan.in_review']").check()
    form.locator("input[value='session.queue_emptied']").check()
    follow(page, form.locator("button[type=submit]"))

    sub = WebhookSubscription.objects.get()
    assert page.inner_text("#np-secret") == sub.secret
    assert sub.type_list() == ["plan.in_review", "session.queue_emptied"]
    shot(page, "webhook-secret")
    follow(page, page.locator("#np-webhook-secret a"))
    row = page.locator(f"#np-webhook-{sub.id}")
    assert "http://127.0.0.1:9/hooks" in row.inner_text() and sub.secret not in page.content()

    row.locator("input[name=overlap_hours]").fill("2")
    follow(page, row.locator("button", has_text="Rotate secret"))
    sub.refresh_from_db()
    assert page.inner_text("#np-secret") == sub.secret and sub.previous_secret
    assert "the old one signs beside it until" in page.inner_text("#np-webhook-secret")
    assert page.dialogs == []
    page.context.close()
