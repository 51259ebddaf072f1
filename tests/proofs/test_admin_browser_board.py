"""A session's board in a real headless Chromium: a card dragged onto another is moved in
the database, the keyboard moves one too, a card dropped on "Discard" is discarded with its
reason; an agent's completion moves its card without a reload while a reason being typed
stays; and at 1024 px no column is cut off."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from sessions_app import services
from sessions_app.models import Plan, Session
from tests.proofs.test_admin_browser import PASSWORD, browser, follow, shot  # noqa: F401  (fixture)
from tests.proofs.test_admin_browser_review import login
from tests.sessions_app.admin_fixtures import enqueue

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]
# The bound the board is held to: a change is on the page within 2 seconds, without a reload.
LIVE_WAIT_MS = 2000


@pytest.fixture
def manager(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    get_user_model().objects.create_user("sam", password=PASSWORD, is_staff=True)
    services.project_grant(project="default", username="sam", role="manager")
    return "sam"


def board(browser, live_server, session: Session):
    page = login(browser, live_server, "sam")
    page.goto(f"{live_server.url}/admin/sessions_app/session/{session.name}/board/")
    return page


def order(session: Session) -> list[str]:
    return list(Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("id", flat=True))


def first_ready_is(page, plan_id: str) -> None:
    page.wait_for_function(
        "id => document.querySelector('#np-col-ready .np-bcard').dataset.plan === id", arg=plan_id, timeout=LIVE_WAIT_MS
    )


def shown_as(page, expected: list[str]) -> None:
    page.wait_for_function(
        "ids => [...document.querySelectorAll('#np-col-ready .np-bcard')].map(e => e.dataset.plan).join() === ids",
        arg=",".join(expected),
        timeout=LIVE_WAIT_MS,
    )


def test_cards_are_moved_by_drag_and_by_keyboard_and_discarded_by_drop(browser, live_server, manager):
    session = services.session_create(task_description="Board moves")
    a, b, c = (enqueue(session, goal).id for goal in ("Alpha", "Bravo", "Charlie"))
    page = board(browser, live_server, session)
    assert [el.get_attribute("data-plan") for el in page.query_selector_all("#np-col-ready .np-bcard")] == [a, b, c]

    page.drag_and_drop(f'[data-plan="{c}"]', f'[data-plan="{a}"]')
    first_ready_is(page, c)
    assert order(session) == [c, a, b]

    page.focus(f'[data-plan="{b}"]')
    for key, expected in (("Alt+ArrowUp", [c, b, a]), ("Alt+ArrowUp", [b, c, a]), ("Alt+ArrowDown", [c, b, a])):
        page.keyboard.press(key)
        shown_as(page, expected)
        assert order(session) == expected, key
    shot(page, "board-moved")

    page.drag_and_drop(f'[data-plan="{b}"]', "#np-discard-zone")
    page.fill("#np-discard-reason", "Folded into Charlie")
    follow(page, page.locator("#np-discard-confirm"))
    stored = Plan.objects.get(id=b)
    assert (stored.status, stored.discard_reason) == ("discarded", "Folded into Charlie")
    assert order(session) == [c, a]
    assert page.locator(f'#np-col-ready [data-plan="{b}"]').count() == 0


def test_an_agents_completion_moves_its_card_while_a_reason_being_typed_stays(browser, live_server, manager):
    session = services.session_create(task_description="Board live")
    working = enqueue(session, "Write the parser").id
    waiting = enqueue(session, "Write the docs").id
    services.plan_pull(session_name=session.name, worker="w1")
    page = board(browser, live_server, session)
    assert page.locator(f'#np-col-active [data-plan="{working}"]').count() == 1
    # The manager starts discarding the queued plan and types a reason...
    page.drag_and_drop(f'[data-plan="{waiting}"]', "#np-discard-zone")
    page.fill("#np-discard-reason", "Half-written reason")
    # ...while the agent completes its plan.
    services.plan_complete(session_name=session.name, worker="w1", outcome="Parser done")
    page.wait_for_selector(f'#np-col-completed [data-plan="{working}"]', timeout=LIVE_WAIT_MS)
    assert page.locator(f'#np-col-active [data-plan="{working}"]').count() == 0
    assert page.input_value("#np-discard-reason") == "Half-written reason"
    assert page.inner_text('[data-live-count="board-completed"]') == "1"
    page.click("#np-discard-cancel")
    assert Plan.objects.get(id=waiting).status == "queued"


def test_at_1024_px_every_column_is_in_view(browser, live_server, manager):
    call_command("nineplan_demo", stdout=io.StringIO())
    session = Session.objects.get(review="required")
    page = board(browser, live_server, session)
    page.set_viewport_size({"width": 1024, "height": 768})
    page.reload()
    width = page.evaluate("() => document.documentElement.clientWidth")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    columns = page.query_selector_all(".np-col")
    assert len(columns) == 8  # seven columns and the discard zone
    for column in columns:
        box = column.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
    for state in ("ready", "blocked", "active", "in_review", "held", "waiting", "completed"):
        assert page.locator(f"#np-col-{state} .np-bcard").count() >= 1, state
    assert (
        page.locator("#np-graph-svg .np-node").count()
        == Plan.objects.filter(session=session).exclude(status="discarded").count()
    )
    shot(page, "board-1024")
