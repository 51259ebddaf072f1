"""The admin's home ("Needs you"), the navigation's counts and the inbox deciding everything
that waits for a person (Django's test client). The live endpoint the pages poll has its
tests in test_live.py."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from sessions_app import services
from sessions_app.models import Event, Plan, Revision
from tests.sessions_app.admin_fixtures import (  # noqa: F401  (fixtures)
    PASSWORD,
    client_for,
    demo,
    one,
    reviewer,
    reviewer_client,
    staff,
    staff_client,
    text_of,
)

pytestmark = pytest.mark.django_db
INBOX = "/admin/sessions_app/plan/review/"
LIVE = "/admin/live/"


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
        f"/admin/sessions_app/plan/{plan.id}/review/",
        {"decision": "approve", "notes": "Ship it, <b>thanks</b>", "next": "/admin/"},
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
    staff_client.post(
        f"/admin/sessions_app/plan/{held.id}/act/discard/", {"reason": "Cursor work moves to v2", "next": INBOX}
    )
    stored = Plan.objects.get(id=held.id)
    assert (stored.status, stored.discard_reason) == ("discarded", "Cursor work moves to v2")


def test_a_reviewer_sees_held_and_waiting_plans_without_their_buttons(reviewer_client, demo):
    html = text_of(reviewer_client.get(INBOX))
    held = one("held")
    assert f'id="np-held-{held.id}"' in html
    assert "np-release" not in html and "np-requeue" not in html and "np-discard-button" not in html
