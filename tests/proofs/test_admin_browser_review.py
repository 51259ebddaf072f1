"""The review gate and revisions in a real headless Chromium: the inbox, approve and
reject, revisions and restore, and a plain reviewer who sees no buttons and is refused."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from sessions_app import services
from sessions_app.models import Event, Plan, Revision
from tests.conftest import plan_fields
from tests.proofs.test_admin_browser import LAPTOP, PASSWORD, browser, follow, shot  # noqa: F401  (fixture)
from tests.sessions_app.conftest import revised_plan

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]
SCRIPT = "<script>alert(1)</script>"


def login(browser, live_server, username: str):
    context = browser.new_context(viewport=LAPTOP)
    page = context.new_page()
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto(live_server.url + "/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    follow(page, page.locator("input[type=submit]"))
    return page


@pytest.fixture
def people(monkeypatch, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    monkeypatch.setenv("NINEPLAN_REVIEWER_PASSWORD", PASSWORD)
    call_command("create_reviewer", "rita", stdout=io.StringIO())
    call_command("create_reviewer", "ada", "--can-approve", stdout=io.StringIO())
    get_user_model().objects.create_user("sam", password=PASSWORD, is_staff=True)
    services.project_grant(project="default", username="sam", role="manager")


def submitted(session_name: str, goal: str) -> Plan:
    services.plan_enqueue(session_name=session_name, **plan_fields(goal=goal))
    services.plan_pull(session_name=session_name)
    services.plan_note(session_name=session_name, text=f"Tried {SCRIPT}")
    return services.plan_complete(session_name=session_name, outcome=f"Done {SCRIPT}").plan


@pytest.fixture
def in_review(people) -> Plan:
    """A plan waiting for review, alone in a session that requires it."""
    return submitted(services.session_create(review="required").name, "Parse the config")


def plan_page(live_server, plan_id: str) -> str:
    return f"{live_server.url}/admin/sessions_app/plan/{plan_id}/change/"


def test_approver_works_the_inbox(browser, live_server, people):
    session = services.session_create(review="required")
    first, second = submitted(session.name, "Parse the config"), submitted(session.name, "Write the docs")
    page = login(browser, live_server, "ada")
    follow(page, page.locator("#header .np-nav >> text=Review inbox"))
    assert page.inner_text("#np-inbox-count").startswith("2 plans waiting for review")
    items = page.locator(".np-inbox-item")
    assert "Parse the config" in items.nth(0).inner_text() and "Write the docs" in items.nth(1).inner_text()
    assert f"Done {SCRIPT}" in items.nth(0).inner_text()  # shown as text, never run
    shot(page, "review-inbox")

    card = page.locator(f"#np-inbox-{first.id}")
    card.locator(".np-reject-notes").fill("Handle an empty file")
    follow(page, card.locator(".np-reject"))
    assert "Sent plan" in page.inner_text(".messagelist")
    assert page.url.endswith("/admin/sessions_app/plan/review/")
    follow(page, page.locator(f"#np-inbox-{second.id} .np-approve"))
    assert "Nothing is waiting for review." in page.inner_text("#content-main")
    assert page.dialogs == []

    assert Plan.objects.get(id=first.id).status == "queued"
    assert Plan.objects.get(id=second.id).status == "completed"
    assert "Handle an empty file" in Plan.objects.get(id=first.id).notes
    assert Event.objects.filter(kind="plan_rejected", actor="user:ada").count() == 1

    # The plan page of the rejected plan: its revisions include the review note.
    page.goto(plan_page(live_server, first.id))
    assert "review · user:ada" in page.inner_text("#np-revisions")
    assert "+Handle an empty file" in page.inner_text(f"#np-revision-{Revision.objects.filter(plan=first).count()}")
    page.context.close()


def test_approve_and_reject_on_the_plan_page(browser, live_server, in_review):
    page = login(browser, live_server, "ada")
    page.goto(plan_page(live_server, in_review.id))
    assert page.inner_text("#np-status") == "In Review"
    assert "note by agent: Notes" in page.inner_text("#np-changed-since-pulled")
    page.fill("#np-reject-notes", "Missing tests")
    follow(page, page.locator("#np-reject"))
    assert page.inner_text("#np-status") == "Queued"
    services.plan_pull(session_name=in_review.session_id)
    services.plan_complete(session_name=in_review.session_id, outcome="With tests")
    page.reload()
    follow(page, page.locator("#np-approve"))
    assert page.inner_text("#np-status") == "Completed"
    shot(page, "review-approved")
    page.context.close()


def test_staff_restore_a_revision(browser, live_server, people, session):
    plan = revised_plan(session, "Long careful findings", "oops", goal="Write docs")
    page = login(browser, live_server, "sam")
    page.goto(plan_page(live_server, plan.id))
    assert page.inner_text("#np-revisions h2").startswith("Revisions (3)")
    page.locator("#np-revision-2 summary").click()
    assert "+Long careful findings" in page.inner_text("#np-revision-2")
    follow(page, page.locator("#np-restore-2"))
    # Its worker holds it: the restore asks first.
    assert "holds plan" in page.inner_text("#np-restore-question")
    follow(page, page.locator("#np-restore-confirm"))
    assert "Restored plan" in page.inner_text(".messagelist")
    assert Plan.objects.get(id=plan.id).notes == "Long careful findings"
    assert page.inner_text("#np-revisions h2").startswith("Revisions (4)")
    assert "restore · user:sam" in page.inner_text("#np-revision-4")
    shot(page, "revisions-restored")
    page.context.close()


def test_a_plain_reviewer_sees_no_buttons_and_is_refused(browser, live_server, in_review):
    page = login(browser, live_server, "rita")
    page.goto(f"{live_server.url}/admin/sessions_app/plan/review/")
    assert "Parse the config" in page.inner_text("#content-main")
    assert page.locator(".np-approve, .np-reject").count() == 0
    page.goto(plan_page(live_server, in_review.id))
    assert page.locator("#np-approve, #np-reject, [id^=np-restore-]").count() == 0
    # A hand-made POST, with the CSRF token, is refused by the permission check.
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        f"{live_server.url}/admin/sessions_app/plan/{in_review.id}/review/",
        form={"decision": "approve", "csrfmiddlewaretoken": token},
        headers={"Referer": page.url, "X-CSRFToken": token},
    )
    assert response.status == 403 and "CSRF" not in response.text()
    assert Plan.objects.get(id=in_review.id).status == "in_review"
    page.context.close()
