"""The review inbox, approve and reject, revisions and restore in the admin (Django's test client)."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.models import Event, Plan, Revision, Session
from tests.conftest import plan_fields
from tests.sessions_app.admin_fixtures import (  # noqa: F401  (fixtures)
    approver,
    client_for,
    reviewer,
    reviewer_client,
    staff,
    staff_client,
)
from tests.sessions_app.conftest import db_rows, revised_plan

pytestmark = pytest.mark.django_db
INBOX = "/admin/sessions_app/plan/review/"


def submitted(goal: str = "Parse the config", outcome: str = "Parser in config.py") -> Plan:
    session = services.session_create(review="required")
    services.plan_enqueue(session_name=session.name, **plan_fields(goal=goal))
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Tried <script>alert(1)</script> as input")
    return services.plan_complete(session_name=session.name, outcome=outcome).plan


def test_create_reviewer_can_approve_grants_only_the_review_permission(approver, reviewer):
    assert approver.has_perm("sessions_app.review_plan") and not approver.has_perm("sessions_app.change_plan")
    assert not reviewer.has_perm("sessions_app.review_plan")


def test_the_inbox_lists_plans_in_review_oldest_first_with_what_changed(approver):
    submitted("First goal")
    submitted("Second goal", outcome="Done <b>bold</b>")
    page = client_for(approver).get(INBOX)
    html = page.content.decode()
    assert page.status_code == 200
    assert html.index("First goal") < html.index("Second goal")
    assert "Done &lt;b&gt;bold&lt;/b&gt;" in html
    assert "note by agent: Notes" in html
    assert html.count('class="button np-approve"') == 2


def test_a_plain_reviewer_sees_the_inbox_without_buttons_and_gets_403(reviewer_client):
    plan = submitted()
    html = reviewer_client.get(INBOX).content.decode()
    assert plan.id in html and "np-approve" not in html
    assert 'id="np-approve"' not in reviewer_client.get(f"/admin/sessions_app/plan/{plan.id}/change/").content.decode()
    before = db_rows()
    response = reviewer_client.post(f"/admin/sessions_app/plan/{plan.id}/review/", {"decision": "approve"})
    assert response.status_code == 403
    assert reviewer_client.post(f"/admin/sessions_app/plan/{plan.id}/restore/", {"revision": "1"}).status_code == 403
    assert db_rows() == before


def test_approve_and_reject_from_the_plan_page(approver):
    client = client_for(approver)
    plan = submitted()
    page = client.get(f"/admin/sessions_app/plan/{plan.id}/change/").content.decode()
    assert 'id="np-approve"' in page and "&lt;script&gt;" in page and "<script>alert" not in page
    response = client.post(f"/admin/sessions_app/plan/{plan.id}/review/", {"decision": "reject", "notes": "Add tests"})
    assert response.status_code == 302
    stored = Plan.objects.get(id=plan.id)
    assert stored.status == "queued" and "Add tests" in stored.notes
    services.plan_pull(session_name=plan.session_id)
    services.plan_complete(session_name=plan.session_id, outcome="With tests")
    client.post(f"/admin/sessions_app/plan/{plan.id}/review/", {"decision": "approve"})
    assert Plan.objects.get(id=plan.id).status == "completed"
    assert list(
        Event.objects.filter(plan=plan, kind__in=["plan_rejected", "plan_approved"]).values_list("kind", "actor")
    ) == [("plan_rejected", "user:ada"), ("plan_approved", "user:ada")]


def test_a_failed_decision_is_shown_and_changes_nothing(approver):
    plan = submitted()
    before = db_rows()
    response = client_for(approver).post(
        f"/admin/sessions_app/plan/{plan.id}/review/", {"decision": "reject", "notes": ""}, follow=True
    )
    assert "VALIDATION_ERROR" in response.content.decode()
    assert db_rows() == before


def test_revisions_are_listed_with_escaped_diffs_and_staff_restore(staff_client, session):
    plan = revised_plan(session, "<img src=x onerror=alert(1)>", "Wiped", goal="Write docs")
    html = staff_client.get(f"/admin/sessions_app/plan/{plan.id}/change/").content.decode()
    assert "Revisions (3)" in html
    assert "+&lt;img src=x onerror=alert(1)&gt;" in html and "<img src=x" not in html
    assert 'id="np-restore-2"' in html and 'id="np-restore-3"' not in html

    # The plan is active: its worker holds it, so the restore asks first and changes nothing.
    asked = staff_client.post(f"/admin/sessions_app/plan/{plan.id}/restore/", {"revision": "2"})
    assert asked.status_code == 200 and 'id="np-restore-confirm"' in asked.content.decode()
    assert "Worker <code>default</code> holds plan" in asked.content.decode()
    assert Plan.objects.get(id=plan.id).notes == "Wiped" and Revision.objects.filter(plan=plan).count() == 3
    response = staff_client.post(f"/admin/sessions_app/plan/{plan.id}/restore/", {"revision": "2", "confirmed": "yes"})
    assert response.status_code == 302
    stored = Plan.objects.get(id=plan.id)
    assert stored.notes == "<img src=x onerror=alert(1)>"
    assert list(Revision.objects.filter(plan=plan).values_list("number", "kind", "actor")) == [
        (1, "add", "agent"),
        (2, "note", "agent"),
        (3, "note", "agent"),
        (4, "restore", "user:sam"),
    ]
    # The restore is a revision too: the replaced text is one more restore away.
    staff_client.post(f"/admin/sessions_app/plan/{plan.id}/restore/", {"revision": "3", "confirmed": "yes"})
    assert Plan.objects.get(id=plan.id).notes == "Wiped"


def test_staff_set_the_session_review_policy(staff_client, reviewer_client, session):
    page = staff_client.get(f"/admin/sessions_app/session/{session.name}/change/").content.decode()
    assert 'id="np-review-select"' in page
    assert (
        'id="np-review-select"'
        not in reviewer_client.get(f"/admin/sessions_app/session/{session.name}/change/").content.decode()
    )
    staff_client.post(f"/admin/sessions_app/plan/session/{session.name}/review-policy/", {"review": "required"})
    assert Session.objects.get(name=session.name).review == "required"
    assert (
        reviewer_client.post(
            f"/admin/sessions_app/plan/session/{session.name}/review-policy/", {"review": "none"}
        ).status_code
        == 403
    )
    assert Session.objects.get(name=session.name).review == "required"


def _session_page(client, name: str) -> str:
    return client.get(f"/admin/sessions_app/session/{name}/change/").content.decode()


def test_the_session_page_shows_plans_awaiting_a_decision_not_task_complete(reviewer_client, settings):
    from sessions_app.admin import reads as admin_reads

    settings.NINEPLAN_MAX_REJECTIONS = 1
    first = submitted(goal="Parse the config")
    name = first.session_id
    html = _session_page(reviewer_client, name)
    card = html[html.index('id="np-awaiting"') :].split("</section>")[0]
    assert f'data-plan="{first.id}" data-status="in_review"' in card and "Parse the config" in card
    queue = html[html.index('id="np-queue"') :].split("</section>")[0]
    assert "but the task is not done: 1 plan awaits a decision." in queue and "Task complete" not in queue
    assert '<dd id="np-in-review-count" data-live-count="review_summary">1</dd>' in html

    services.plan_review(session_name=name, plan_id=first.id, decision="reject", notes="No.", actor="user:rita")
    services.plan_enqueue(session_name=name, **plan_fields(goal="Second"))
    services.plan_pull(session_name=name)
    second = services.plan_complete(session_name=name, outcome="done").plan
    html = _session_page(reviewer_client, name)
    card = html[html.index('id="np-awaiting"') :].split("</section>")[0]
    assert (
        f'data-plan="{first.id}" data-status="held"' in card
        and f'data-plan="{second.id}" data-status="in_review"' in card
    )
    assert (
        "2 plans await a decision." in html
        and '<dd id="np-in-review-count" data-live-count="review_summary">1, 1 held</dd>' in html
    )

    # The chart's replay: a rejection puts the plan back in the queue, the hold takes it out.
    series = [(q, d) for _, q, d in admin_reads.session_series(Session.objects.get(name=name))]
    # created, pulled, (submitted), rejected -> queued, held -> out, created, pulled, (submitted)
    assert series == [(1, 0), (0, 0), (1, 0), (0, 0), (1, 0), (0, 0)]

    services.plan_review(session_name=name, plan_id=second.id, decision="approve", actor="user:rita")
    services.plan_discard_any(session_name=name, plan_id=first.id, reason="Not needed", actor="user:pat")
    html = _session_page(reviewer_client, name)
    assert 'id="np-awaiting"' not in html and "Task complete! 🎉" in html
    assert [d for _, _, d in admin_reads.session_series(Session.objects.get(name=name))][-2:] == [1, 1]


def test_a_restore_is_not_even_asked_of_a_manager_of_another_project(session, settings):
    from django.contrib.auth import get_user_model

    plan = revised_plan(session, "Kept", "Replaced", goal="Write docs")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    services.project_create(name="elsewhere")
    get_user_model().objects.create_user("mo", password="x", is_staff=True)
    services.project_grant(project="elsewhere", username="mo", role="manager")
    services.project_grant(project="default", username="mo", role="reader")
    client = client_for(get_user_model().objects.get(username="mo"))
    before = db_rows()
    assert client.post(f"/admin/sessions_app/plan/{plan.id}/restore/", {"revision": "2"}).status_code == 403
    assert (
        client.post(f"/admin/sessions_app/plan/{plan.id}/restore/", {"revision": "2", "confirmed": "yes"}).status_code
        == 403
    )
    assert db_rows() == before


def test_a_held_plan_says_why_on_the_inbox_the_home_and_its_page(approver, settings):
    # A reviewer deciding on a held plan needs the last rejection's words, not only a count.
    settings.NINEPLAN_MAX_REJECTIONS = 1
    plan = submitted(goal="Parse the config")
    services.plan_review(
        session_name=plan.session_id, plan_id=plan.id, decision="reject", notes="Offsets skip rows", actor="user:rita"
    )
    assert Plan.objects.get(id=plan.id).status == "held"
    client = client_for(approver)
    for url, where in [(INBOX, f'id="np-held-{plan.id}"'), ("/admin/", f'data-key="{plan.id}"')]:
        html = client.get(url).content.decode()
        item = html[html.index(where) :].split("</div>")[0]
        assert "Last rejected by user:rita: Offsets skip rows" in item, url
    page = client.get(f"/admin/sessions_app/plan/{plan.id}/change/").content.decode()
    quote = page[page.index('id="np-last-rejection"') :].split("</blockquote>")[0]
    assert "Last rejected by user:rita" in quote and "Offsets skip rows" in quote


def test_the_plan_page_approves_with_notes(approver):
    plan = submitted()
    client = client_for(approver)
    page = client.get(f"/admin/sessions_app/plan/{plan.id}/change/").content.decode()
    assert 'id="np-approve-notes"' in page
    response = client.post(
        f"/admin/sessions_app/plan/{plan.id}/review/", {"decision": "approve", "notes": "Clear names, merged."}
    )
    assert response.status_code == 302
    assert Plan.objects.get(id=plan.id).status == "completed"
    approved = Event.objects.get(plan=plan, kind="plan_approved")
    assert approved.detail["notes"] == "Clear names, merged." and approved.actor == "user:ada"
