"""The reviewer admin in a real headless Chromium (Debian's, driven by Playwright; no
browser is ever downloaded). One browser per module; screenshots go to test-artifacts/."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from sessions_app import services
from sessions_app.admin import render
from sessions_app.management.commands import nineplan_demo as demo
from sessions_app.models import Event, Plan, Session
from tests.conftest import REPO, plan_fields

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = REPO / "test-artifacts"
PASSWORD = "a long test passphrase 7"
# A laptop screen: the lists must fit it without scrolling sideways.
LAPTOP = {"width": 1400, "height": 900}
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing: CI must run the browser tests (install Debian's chromium).")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        # Playwright's sync API keeps an idle event loop on this thread, and Django's
        # async-safety guard would then refuse the test's own ORM calls (and the database
        # flush after each test) although nothing runs concurrently with them.
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                yield chromium
            finally:
                chromium.close()


@pytest.fixture
def reviewer(monkeypatch, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", PASSWORD)
    call_command("create_reviewer", "rita", stdout=io.StringIO())
    return "rita"


@pytest.fixture
def page(browser, live_server, reviewer):
    """A fresh browser context, logged in as the reviewer through the login form."""
    context = browser.new_context(viewport=LAPTOP)
    page = context.new_page()
    page.dialogs = []

    def on_dialog(dialog):
        page.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(live_server.url + "/admin/")
    page.fill("#id_username", reviewer)
    page.fill("#id_password", PASSWORD)
    follow(page, page.locator("input[type=submit]"))
    assert page.url == live_server.url + "/admin/"
    yield page
    context.close()


def follow(page, locator) -> None:
    """Click a link or button and wait for the page it loads."""
    with page.expect_navigation():
        locator.click()


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"admin-{name}.png"), full_page=True)


def test_reviewer_browses_sessions_plans_and_history(page, live_server):
    call_command("nineplan_demo", stdout=io.StringIO())
    session = Session.objects.get(task_description=demo.TASK)
    active = Plan.objects.get(session=session, status="active")
    assert "9plan review" in page.inner_text("#site-name")

    follow(page, page.locator("#header .np-nav >> text=Sessions"))
    row = page.locator("#result_list tbody tr", has_text=session.name)
    assert row.count() == 1
    assert "Fix the failing currency rounding test" in row.inner_text()
    assert row.locator("td.field-queue_length").inner_text() == "3"
    assert row.locator("td.field-completed_count").inner_text() == "5"
    shot(page, "sessions-list")

    follow(page, row.locator("td.field-session_name a").first)
    assert page.inner_text("h1") == f"Session {session.name}"
    assert page.inner_text("#np-invariants h2").endswith("valid")
    assert page.locator("#np-invariants .np-fail").count() == 0
    assert page.locator("#np-queue tbody tr").count() == 3
    assert page.locator("#np-history table").first.locator("tbody tr").count() == 5
    timeline = page.inner_text("#np-timeline")
    assert re.search(r"^Timeline \(\d+ events\)", timeline)
    whos = set(page.locator("#np-timeline td.np-who").all_inner_texts())
    assert whos == {"agent", "user:demo-staff"}
    assert "agent agent" not in timeline
    # Outcomes are rendered Markdown here as on the plan page.
    assert "**" not in page.inner_text("#np-history")
    assert page.locator("svg.np-chart polyline").count() == 2
    # The stylesheet arrived: the cards have the border it gives them.
    border = page.evaluate("getComputedStyle(document.querySelector('.np-card')).borderTopStyle")
    assert border == "solid"
    shot(page, "session")

    follow(page, page.locator(f"#np-active a >> text={active.id}"))
    assert page.inner_text("h1") == f"Plan {active.id}"
    assert page.inner_text("#np-status") == "Active"
    assert "matches" in page.inner_text("#np-file-check")
    assert page.inner_text("#np-file-path").endswith(f"{session.name}/plans/{active.id}.txt")
    headings = page.locator(".np-section h2").all_inner_texts()
    assert headings == ["Context", "Goal", "Inputs", "Outputs", "Approach", "Success Criteria", "Notes"]
    assert page.locator("#np-section-5 ol li").count() == 3  # the Approach's numbered list
    assert page.locator("#np-actions").count() == 0  # a reviewer gets no buttons
    shot(page, "plan")

    follow(page, page.locator("#header .np-nav >> text=History search"))
    page.fill("#np-q", "webhook signature")
    follow(page, page.locator("form.np-search-form button[type=submit]"))
    results = page.locator("li.np-result")
    assert results.count() >= 1
    assert "Port the payment webhook handler" in results.first.inner_text()
    marks = {m.lower() for m in results.first.locator("mark").all_inner_texts()}
    assert {"webhook", "signature"} <= marks
    shot(page, "search")
    assert page.dialogs == []


def test_hostile_plan_text_renders_inert(page, live_server):
    session = services.session_create(task_description=f"Task {SCRIPT}")
    hostile = plan_fields(goal=f"Ship {SCRIPT} {IMG}", context=f"[x](javascript:alert(1)) {IMG}")
    services.plan_enqueue(session_name=session.name, **hostile)
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text=f"Found {IMG} and {SCRIPT} in the page")
    services.plan_complete(session_name=session.name, outcome=f"alert fixed: {SCRIPT} {IMG}")
    services.plan_enqueue(session_name=session.name, **hostile)
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text=f"Still {IMG} {SCRIPT}")
    active = Plan.objects.get(session=session, status="active")
    done = Plan.objects.get(session=session, status="completed")

    # The dialog listener works: a real alert is caught.
    page.evaluate("alert('control')")
    assert page.dialogs == ["control"]
    page.dialogs.clear()

    base = live_server.url + "/admin/sessions_app/"
    for name, path in [
        ("xss-sessions-list", "session/"),
        ("xss-session", f"session/{session.name}/change/"),
        ("xss-plan-active", f"plan/{active.id}/change/"),
        ("xss-plan-completed", f"plan/{done.id}/change/"),
        ("xss-plans-list", "plan/"),
        ("xss-search", "session/search/?q=alert"),
    ]:
        page.goto(base + path, wait_until="load")
        assert page.locator("#content img[src='x']").count() == 0, name
        assert page.evaluate("document.querySelectorAll('#content script').length") == 0, name
        assert page.evaluate("document.querySelectorAll('a[href^=\"javascript\"]').length") == 0, name
        shot(page, name)
    assert page.dialogs == []

    page.goto(base + f"plan/{active.id}/change/")
    assert SCRIPT in page.inner_text("#np-section-2")  # Goal, shown as text
    assert IMG in page.inner_text("#np-section-2")
    notes = page.inner_text("#np-section-7")
    assert IMG in notes and SCRIPT in notes
    page.goto(base + "session/search/?q=alert")
    snippet = page.locator("li.np-result .np-snippet").all_inner_texts()
    assert any(SCRIPT in s for s in snippet)
    assert page.locator("li.np-result mark").first.inner_text().lower() == "alert"
    assert page.dialogs == []


# --- a laptop screen ----------------------------------------------------------------------

LISTS = {
    "sessions": ("session/", "td.field-task"),
    "plans": ("plan/", "td.field-goal_snippet"),
    "events": ("event/", "td.field-detail_text"),
}
# Enough for several words a line: a goal squeezed to a word a line is far narrower.
MIN_TEXT_COLUMN = 180


def fit(page) -> dict:
    """How the change list sits in the window: the page's and the table box's overflow,
    the last column header's right edge, and the width of each column of text."""
    return page.evaluate(
        """() => {
            const results = document.querySelector('#changelist-form .results');
            const headers = [...document.querySelectorAll('#result_list thead th')];
            const last = headers[headers.length - 1].getBoundingClientRect();
            const atLast = document.elementFromPoint(last.right - 4, last.top + last.height / 2);
            return {
                page: document.scrollingElement.scrollWidth,
                window: window.innerWidth,
                results: results.scrollWidth - results.clientWidth,
                lastRight: last.right,
                resultsRight: results.getBoundingClientRect().right,
                lastHeaderShown: headers[headers.length - 1].contains(atLast),
                lastHeader: headers[headers.length - 1].innerText,
            };
        }"""
    )


@pytest.mark.parametrize("width", [1024, 1366, 1400, 1440])
def test_lists_fit_a_laptop_screen(page, live_server, width):
    call_command("nineplan_demo", stdout=io.StringIO())
    busy = services.session_create(task_description="Reconcile " + "the ledgers of every regional office " * 4)
    services.plan_enqueue(
        session_name=busy.name, **plan_fields(goal="Reconcile the " + "quarterly ledger exports and their totals " * 4)
    )
    services.plan_pull(session_name=busy.name)
    page.set_viewport_size({"width": width, "height": LAPTOP["height"]})
    base = live_server.url + "/admin/sessions_app/"
    for name, (path, text_cell) in LISTS.items():
        page.goto(base + path)
        widths = page.locator(text_cell).evaluate_all("cells => cells.map(c => c.getBoundingClientRect().width)")
        assert widths and min(widths) >= MIN_TEXT_COLUMN, (name, widths)
        if width in (1024, LAPTOP["width"]):
            shot(page, f"{name}-list-{width}")
        # Sorted by any column (a sorted header is wider: it holds the sort arrows) too.
        sorted_by = page.locator("#result_list thead th.sortable .text a").evaluate_all(
            "links => links.map(a => a.href)"
        )
        for url in [page.url, *sorted_by]:
            page.goto(url)
            shown = fit(page)
            assert shown["page"] <= shown["window"], (url, shown)
            assert shown["results"] <= 0, (url, shown)  # the table needs no scrolling of its own
            assert shown["lastRight"] <= min(shown["window"], shown["resultsRight"] + 1), (url, shown)
            assert shown["lastHeaderShown"], (url, shown)
    page.goto(base + "session/")
    assert page.locator("#result_list thead th").last.inner_text().strip().lower() == "last activity"
    goal = page.locator("td.field-active_plan").filter(has_text="quarterly ledger").first
    assert goal.evaluate("c => c.getBoundingClientRect().width") >= MIN_TEXT_COLUMN
    page.goto(base + "plan/")
    assert page.locator("#result_list thead th").last.inner_text().strip().lower() == "updated at"
    # One date format, with the zone, on the lists as on the pages.
    updated = page.locator("td.field-updated_at").first.inner_text()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", updated), updated
    page.goto(base + f"session/{busy.name}/change/")
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", page.inner_text("#np-summary"))
    assert page.dialogs == []


def test_reviewer_reads_a_new_session_images_and_search(page, live_server):
    fresh = services.session_create(task_description="Nothing yet")
    base = live_server.url + "/admin/sessions_app/"
    page.goto(base + f"session/{fresh.name}/change/")
    assert page.inner_text("#np-queue-empty") == "No plans queued yet."
    assert page.inner_text("#np-timeline h2") == "Timeline (1 event)"

    session = services.session_create(task_description="Draw")
    services.plan_enqueue(
        session_name=session.name,
        **plan_fields(
            goal="Draw the architecture", context="See ![the service map](http://127.0.0.1:9/map.png) first."
        ),
    )
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="Drew **3 diagrams** of the service map")
    plan = Plan.objects.get(session=session)
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(base + f"plan/{plan.id}/change/")
    assert "See [image: the service map] first." in page.inner_text("#np-section-1")
    assert page.locator("#content img").count() == 0
    assert not [url for url in requests if "map.png" in url]

    page.goto(base + f"session/{session.name}/change/")
    assert page.inner_text("#np-queue-empty") == "Task complete! 🎉 The queue is empty."
    assert page.locator("#np-history strong").first.inner_text() == "3 diagrams"

    follow(page, page.locator("#header .np-nav >> text=History search"))
    hint = page.locator("#np-search-hint")
    assert hint.is_visible() and "e.g." in hint.inner_text()
    page.fill("#np-q", "diagrams")
    follow(page, page.locator("form.np-search-form button[type=submit]"))
    assert page.locator("#np-search-hint").count() == 0
    result = page.locator("li.np-result").first
    assert "Drew 3 diagrams of the service map" in result.inner_text()
    # The plan id reads as a link: the link's colour, not the grey of code.
    link = result.locator("a.np-plan-link")
    colours = link.evaluate(
        """a => [getComputedStyle(a).color, getComputedStyle(a.querySelector('code')).color,
                 getComputedStyle(document.querySelector('#content a[href*="/session/"]')).color,
                 getComputedStyle(a).textDecorationLine]"""
    )
    assert colours[0] == colours[1] == colours[2], colours
    assert "underline" in colours[3], colours
    follow(page, link)
    assert page.inner_text("h1") == f"Plan {plan.id}"
    assert page.dialogs == []


def test_event_search_finds_a_discard_reason(page, live_server):
    session = services.session_create(task_description="Drop one")
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="Port the PDF export"))
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="Superseded by the reporting service")
    page.goto(live_server.url + "/admin/sessions_app/event/")
    page.fill("#searchbar", "reporting service")
    follow(page, page.locator("#changelist-search input[type=submit]"))
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 1
    assert "Superseded by the reporting service" in rows.first.inner_text()
    assert rows.first.locator("td.field-who").inner_text() == render.actor_label("agent") == "agent"
    assert Event.objects.filter(session=session, kind="plan_discarded").count() == 1


def test_pages_load_nothing_missing_and_the_icon_and_chart_labels_show(page, live_server):
    call_command("nineplan_demo", stdout=io.StringIO())
    session = Session.objects.get(task_description=demo.TASK)
    active = Plan.objects.get(session=session, status="active")
    failed: list[str] = []
    page.on(
        "response",
        lambda response: failed.append(f"{response.status} {response.url}") if response.status >= 400 else None,
    )
    for path in (
        "/admin/",
        f"/admin/sessions_app/session/{session.name}/change/",
        f"/admin/sessions_app/plan/{active.id}/change/",
        "/api/",
    ):
        page.goto(live_server.url + path)
        assert page.locator("link[rel=icon]").count() == (0 if path == "/api/" else 1), path
    # A page that names no icon (the REST API's) makes the browser ask for /favicon.ico.
    icon = page.evaluate("fetch('/favicon.ico').then(r => [r.status, r.headers.get('content-type'), r.redirected])")
    assert icon == [200, "image/svg+xml", True]
    assert failed == []
    page.goto(live_server.url + f"/admin/sessions_app/plan/{active.id}/change/")
    assert page.inner_text("#np-status") == "Active"
    page.goto(live_server.url + f"/admin/sessions_app/session/{session.name}/change/")
    start, end = page.text_content("#np-chart-start"), page.text_content("#np-chart-end")
    assert start and end and start != end
    shot(page, "session-chart")
