"""The admin's home ("Needs you"), the navigation's counts, the inbox deciding everything
that waits for a person, and the live endpoint the pages poll (Django's test client)."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from sessions_app import clock, needs_you, services
from sessions_app.models import Event, Plan, Revision, Session
from tests.sessions_app.admin_fixtures import (  # noqa: F401  (fixtures)
    PASSWORD,
    client_for,
    outsider,
    reviewer,
    reviewer_client,
    staff,
    staff_client,
    text_of,
)

pytestmark = pytest.mark.django_db
INBOX = "/admin/sessions_app/plan/review/"
LIVE = "/admin/live/"


@pytest.fixture
def demo(sessions_dir) -> Session:
    """The demo's reviewed session: a plan in each state a person decides or watches."""
    call_command("nineplan_demo", stdout=io.StringIO())
    return Session.objects.get(review="required")


def one(status: str, **fields) -> Plan:
    return Plan.objects.get(status=status, **fields)


def test_the_home_lists_what_needs_a_person_each_item_linking_to_its_decision(staff_client, demo):
    html = text_of(staff_client.get("/admin/"))
    in_review, held = one("in_review"), one("held")
    waiting = one("queued", waiting_for_person=True)
    review_card = html[html.index('id="np-home-review"') :].split("</section>")[0]
    assert "In review (" in review_card and f"/admin/sessions_app/plan/{in_review.id}/review/" in review_card
    assert re.search(r"· waiting \d+\s(minute|hour)", review_card)  # its age
    held_card = html[html.index('id="np-home-held"') :].split("</section>")[0]
    assert f'href="{INBOX}#np-held-{held.id}"' in held_card and "rejected 3 times" in held_card
    waiting_card = html[html.index('id="np-home-waiting"') :].split("</section>")[0]
    assert f'href="{INBOX}#np-waiting-{waiting.id}"' in waiting_card
    blocked_card = html[html.index('id="np-home-blocked"') :].split("</section>")[0]
    assert held.id in blocked_card and "(held)" in blocked_card
    trouble = html[html.index('id="np-home-trouble"') :].split("</section>")[0]
    assert "late write" in trouble and "lease lost" in trouble and "worker <code>gamma</code>" in trouble
    workers = html[html.index('id="np-home-workers"') :].split("</section>")[0]
    assert 'data-worker="alpha"' in workers and 'data-worker="beta"' in workers and "left on its lease" in workers
    # Django's list of apps is still there, below.
    assert html.index('id="np-apps"') > html.index('id="np-home-workers"')
    assert 'href="/admin/sessions_app/session/"' in html[html.index('id="np-apps"') :]


def test_the_navigation_counts_what_waits_for_a_person_on_every_page(reviewer_client, demo):
    for url in ("/admin/", "/admin/sessions_app/session/", f"/admin/sessions_app/session/{demo.name}/change/"):
        html = text_of(reviewer_client.get(url))
        assert 'Review inbox (<span data-live-count="inbox">3</span>)' in html, url


def test_a_member_of_another_project_sees_none_of_it(demo, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    services.project_create(name="elsewhere")
    get_user_model().objects.create_user("eve", password=PASSWORD, is_staff=True)
    services.project_grant(project="elsewhere", username="eve", role="manager")
    client = client_for(get_user_model().objects.get(username="eve"))
    html = text_of(client.get("/admin/"))
    assert "Nothing waits for review." in html and "No worker holds a plan." in html
    # A manager made by a role alone (no Django group) has the navigation, with its counts.
    assert 'Review inbox (<span data-live-count="inbox">0</span>)' in html
    assert demo.name not in html
    assert client.get(f"{LIVE}?view=session&session={demo.name}").status_code == 404
    assert client.get(f"{LIVE}?view=home").json()["counts"]["inbox"] == 0


def test_approve_from_the_home_keeps_the_notes_in_the_event_and_a_revision(staff_client, demo):
    plan = one("in_review")
    response = staff_client.post(
        f"/admin/sessions_app/plan/{plan.id}/review/", {"decision": "approve", "notes": "Ship it, <b>thanks</b>", "next": "/admin/"}
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"
    stored = Plan.objects.get(id=plan.id)
    assert stored.status == "completed" and stored.notes.endswith("Ship it, <b>thanks</b>")
    event = Event.objects.filter(plan=plan).last()
    assert (event.kind, event.actor, event.detail["notes"]) == ("plan_approved", "user:sam", "Ship it, <b>thanks</b>")
    revision = Revision.objects.filter(plan=plan).order_by("number").last()
    assert (revision.kind, revision.actor, revision.sections) == ("review", "user:sam", ["notes"])


def test_approve_without_notes_records_no_revision(staff_client, demo):
    plan = one("in_review")
    count = Revision.objects.filter(plan=plan).count()
    staff_client.post(f"/admin/sessions_app/plan/{plan.id}/review/", {"decision": "approve", "notes": ""})
    assert Plan.objects.get(id=plan.id).status == "completed"
    assert Revision.objects.filter(plan=plan).count() == count
    assert Event.objects.filter(plan=plan).last().detail == {"decision": "approve", "notes": ""}


def test_the_inbox_decides_held_and_waiting_plans(staff_client, demo):
    held, waiting = one("held"), one("queued", waiting_for_person=True)
    html = text_of(staff_client.get(INBOX))
    assert f'id="np-held-{held.id}"' in html and f'id="np-waiting-{waiting.id}"' in html
    assert "Held after their rejections (1)" in html and "Waiting for a person after their attempts ran out (1)" in html

    response = staff_client.post(f"/admin/sessions_app/plan/{held.id}/release/", {"next": INBOX})
    assert response["Location"] == INBOX
    assert (Plan.objects.get(id=held.id).status, Plan.objects.get(id=held.id).rejections) == ("queued", 0)
    staff_client.post(f"/admin/sessions_app/plan/{waiting.id}/act/requeue/", {"position": "front", "next": INBOX})
    requeued = Plan.objects.get(id=waiting.id)
    assert (requeued.waiting_for_person, requeued.attempts) == (False, 0)
    html = text_of(staff_client.get(INBOX))
    assert "No plan is held." in html and "No plan waits for a person." in html


def test_the_inbox_discards_a_held_plan_with_its_reason(staff_client, demo):
    held = one("held")
    staff_client.post(f"/admin/sessions_app/plan/{held.id}/act/discard/", {"reason": "Cursor work moves to v2", "next": INBOX})
    stored = Plan.objects.get(id=held.id)
    assert (stored.status, stored.discard_reason) == ("discarded", "Cursor work moves to v2")


def test_a_reviewer_sees_held_and_waiting_plans_without_their_buttons(reviewer_client, demo):
    html = text_of(reviewer_client.get(INBOX))
    held = one("held")
    assert f'id="np-held-{held.id}"' in html
    assert "np-release" not in html and "np-requeue" not in html and "np-discard-button" not in html


# --- the live endpoint ------------------------------------------------------------------------


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


def test_counts_read_only_visible_plans(demo):
    assert needs_you.counts() == needs_you.Counts(in_review=1, held=1, waiting=1)
