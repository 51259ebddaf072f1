"""Who may see and do what in the admin: anonymous visitors are sent to the login page,
reviewers read everything and change nothing, staff with change rights act only through
the services (recorded as themselves, plan files in step), and nobody edits a plan
through the generic forms."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from sessions_app import planfiles
from sessions_app.admin.plans import DISCARDED, MOVED, REQUEUED
from sessions_app.admin.roles import REVIEWERS_GROUP, ensure_reviewers_group
from sessions_app.models import Event, Plan
from tests.sessions_app.admin_fixtures import (  # noqa: F401 - fixtures
    act_url,
    busy,
    client_for,
    outsider,
    plan_url,
    reviewer,
    reviewer_client,
    session_url,
    staff,
    staff_client,
    superuser,
)
from tests.sessions_app.conftest import plan_file

pytestmark = pytest.mark.django_db


def view_urls(busy) -> list[str]:
    session, active = busy["session"], busy["active"]
    return [
        reverse("admin:index"),
        reverse("admin:app_list", args=["sessions_app"]),
        reverse("admin:sessions_app_session_changelist"),
        session_url(session.name),
        reverse("admin:sessions_app_plan_changelist"),
        plan_url(active.id),
        plan_url(busy["done1"].id),
        plan_url(busy["discarded"].id),
        reverse("admin:sessions_app_event_changelist"),
        reverse("admin:sessions_app_event_change", args=[Event.objects.filter(plan=active).first().pk]),
        reverse("admin:sessions_app_history_search") + "?q=routes",
    ]


def change_requests(busy) -> list[tuple[str, str, dict]]:
    """Every way to ask for a change: generic forms, the staff actions, list actions."""
    session, active, queued = busy["session"], busy["active"], busy["queued"][1]
    event = Event.objects.filter(plan=active).first()
    forged_plan = {"status": "completed", "sort_key": "", "goal": "forged", "session": session.name}
    return [
        ("get", reverse("admin:sessions_app_session_add"), {}),
        ("post", reverse("admin:sessions_app_session_add"), {"name": "evil-red-fox", "task_description": "x"}),
        ("post", session_url(session.name), {"task_description": "forged"}),
        ("get", reverse("admin:sessions_app_session_delete", args=[session.name]), {}),
        ("post", reverse("admin:sessions_app_session_delete", args=[session.name]), {"post": "yes"}),
        ("get", reverse("admin:sessions_app_plan_add"), {}),
        ("post", reverse("admin:sessions_app_plan_add"), {**forged_plan, "id": "zzzzz"}),
        ("post", plan_url(active.id), forged_plan),
        ("post", plan_url(queued.id), {**forged_plan, "status": "active"}),
        ("get", reverse("admin:sessions_app_plan_delete", args=[queued.id]), {}),
        ("post", reverse("admin:sessions_app_plan_delete", args=[queued.id]), {"post": "yes"}),
        ("get", reverse("admin:sessions_app_event_add"), {}),
        ("post", reverse("admin:sessions_app_event_change", args=[event.pk]), {"actor": "forged"}),
        ("post", reverse("admin:sessions_app_event_delete", args=[event.pk]), {"post": "yes"}),
        ("post", act_url(queued.id, "move"), {"position": "front"}),
        ("post", act_url(active.id, "requeue"), {"position": "front"}),
        ("post", act_url(queued.id, "discard"), {"reason": "reviewers may not"}),
        ("get", act_url(queued.id, "discard"), {}),
        (
            "post",
            reverse("admin:sessions_app_plan_changelist"),
            {"action": "discard_plans", "_selected_action": [queued.id], "confirm": "yes", "reason": "x", "index": 0},
        ),
        (
            "post",
            reverse("admin:sessions_app_plan_changelist"),
            {"action": "move_to_front", "_selected_action": [queued.id], "index": 0},
        ),
        (
            "post",
            reverse("admin:sessions_app_session_changelist"),
            {"action": "delete_selected", "_selected_action": [session.name], "post": "yes", "index": 0},
        ),
        (
            "post",
            reverse("admin:sessions_app_event_changelist"),
            {"action": "delete_selected", "_selected_action": [event.pk], "post": "yes", "index": 0},
        ),
    ]


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


# --- anonymous -------------------------------------------------------------------------


def test_anonymous_is_sent_to_the_login_page(busy, snapshot):
    client = Client()
    before = snapshot()
    for url in view_urls(busy)[1:]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("admin:login") + "?next="), url
    for method, url, data in change_requests(busy):
        response = getattr(client, method)(url, data)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("admin:login")), url
    assert snapshot() == before


def test_the_index_without_login_shows_the_login_form():
    response = Client().get(reverse("admin:index"), follow=True)
    assert response.status_code == 200
    assert b'name="password"' in response.content


# --- reviewers -------------------------------------------------------------------------


def test_reviewer_can_view_every_page(busy, reviewer_client):
    for url in view_urls(busy):
        response = reviewer_client.get(url)
        assert response.status_code == 200, url


def test_reviewer_gets_403_for_every_change_and_nothing_changes(busy, reviewer_client, snapshot):
    before = snapshot()
    for method, url, data in change_requests(busy):
        response = getattr(reviewer_client, method)(url, data)
        assert response.status_code == 403, (method, url, response.status_code)
    assert snapshot() == before


def test_reviewer_sees_no_action_controls(busy, reviewer_client):
    listing = reviewer_client.get(reverse("admin:sessions_app_plan_changelist"))
    assert b'name="action"' not in listing.content
    assert b"Add plan" not in listing.content
    page = reviewer_client.get(plan_url(busy["queued"][0].id))
    assert b"Intervene" not in page.content
    assert act_url(busy["queued"][0].id, "move").encode() not in page.content
    session_page = reviewer_client.get(session_url(busy["session"].name))
    assert b"/act/" not in session_page.content


def test_staff_without_9plan_permissions_sees_nothing(busy, outsider, snapshot):
    client = client_for(outsider)
    before = snapshot()
    assert client.get(session_url(busy["session"].name)).status_code == 403
    assert client.get(plan_url(busy["active"].id)).status_code == 403
    assert client.get(reverse("admin:sessions_app_history_search") + "?q=routes").status_code == 403
    assert client.post(act_url(busy["queued"][0].id, "move"), {"position": "back"}).status_code == 403
    assert snapshot() == before


# --- staff actions ---------------------------------------------------------------------


def test_staff_moves_a_queued_plan_to_the_front(busy, staff_client, sessions_dir):
    session, (q1, q2, q3) = busy["session"], busy["queued"]
    file_before = plan_file(sessions_dir, q3).read_text()
    response = staff_client.post(act_url(q3.id, "move"), {"position": "front"}, follow=True)
    assert response.status_code == 200
    assert MOVED.format(plan=q3.id, position="front") in messages_of(response)
    order = list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("id", flat=True)
    )
    assert order == [q3.id, q1.id, q2.id]
    event = Event.objects.filter(plan=q3).latest("id")
    assert (event.kind, event.actor, event.detail) == ("plan_moved", "user:sam", {"position": "front"})
    assert plan_file(sessions_dir, q3).read_text() == file_before


def test_staff_moves_a_queued_plan_to_the_back_and_returns_to_next(busy, staff_client):
    session, (q1, q2, q3) = busy["session"], busy["queued"]
    back_to = session_url(session.name)
    response = staff_client.post(act_url(q1.id, "move"), {"position": "back", "next": back_to})
    assert response.status_code == 302
    assert response["Location"] == back_to
    order = list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("id", flat=True)
    )
    assert order == [q2.id, q3.id, q1.id]


def test_an_offsite_next_is_ignored(busy, staff_client):
    q1 = busy["queued"][0]
    response = staff_client.post(act_url(q1.id, "move"), {"position": "back", "next": "https://evil.example/"})
    assert response["Location"] == plan_url(q1.id)


def test_staff_requeues_the_active_plan_keeping_the_agents_file_edits(busy, staff_client, sessions_dir):
    session, active = busy["session"], busy["active"]
    path = plan_file(sessions_dir, active)
    path.write_text(path.read_text().rstrip("\n") + "\n\nHalf of the rows are done.\n")
    response = staff_client.post(act_url(active.id, "requeue"), {"position": "front"}, follow=True)
    assert REQUEUED.format(plan=active.id, position="front") in messages_of(response)
    plan = Plan.objects.get(id=active.id)
    assert plan.status == "queued"
    first = Plan.objects.filter(session=session, status="queued").order_by("sort_key").first()
    assert first.id == active.id
    assert plan.notes.endswith("Half of the rows are done.")
    assert path.read_text() == planfiles.render(plan.sections())
    kinds = list(Event.objects.filter(plan=plan).order_by("id").values_list("kind", "actor"))[-2:]
    assert kinds == [("file_edits_kept", "user:sam"), ("plan_requeued", "user:sam")]


def test_staff_discards_a_queued_plan_with_a_reason(busy, staff_client, sessions_dir):
    q2 = busy["queued"][1]
    assert plan_file(sessions_dir, q2).exists()
    response = staff_client.post(act_url(q2.id, "discard"), {"reason": "Out of scope"}, follow=True)
    assert DISCARDED.format(plan=q2.id) in messages_of(response)
    plan = Plan.objects.get(id=q2.id)
    assert (plan.status, plan.sort_key, plan.discard_reason) == ("discarded", None, "Out of scope")
    assert not plan_file(sessions_dir, q2).exists()
    event = Event.objects.filter(plan=plan).latest("id")
    assert (event.kind, event.actor, event.detail) == ("plan_discarded", "user:sam", {"reason": "Out of scope"})


@pytest.mark.parametrize(
    "target, action, data, category",
    [
        ("active", "move", {"position": "front"}, "VALIDATION_ERROR"),
        ("queued", "move", {"position": "Front"}, "VALIDATION_ERROR"),
        ("queued", "move", {}, "VALIDATION_ERROR"),
        ("queued", "requeue", {"position": "front"}, "VALIDATION_ERROR"),
        ("queued", "discard", {"reason": "\u3000\u00a0"}, "VALIDATION_ERROR"),
        ("done", "discard", {"reason": "too late"}, "VALIDATION_ERROR"),
    ],
)
def test_a_refused_action_shows_the_error_and_changes_nothing(
    busy, staff_client, snapshot, target, action, data, category
):
    plan = {"active": busy["active"], "queued": busy["queued"][0], "done": busy["done1"]}[target]
    before = snapshot()
    response = staff_client.post(act_url(plan.id, action), data, follow=True)
    assert response.status_code == 200
    errors = [m for m in get_messages(response.wsgi_request) if m.level_tag == "error"]
    assert len(errors) == 1
    assert str(errors[0]).startswith(f"Plan {plan.id}: {category}: ")
    assert snapshot() == before


def test_unknown_plan_or_action_is_404(busy, staff_client, snapshot):
    before = snapshot()
    assert staff_client.post(act_url("zzzzz", "move"), {"position": "front"}).status_code == 404
    assert staff_client.post(act_url(busy["queued"][0].id, "explode"), {}).status_code == 404
    assert staff_client.post(act_url("../..", "move"), {"position": "front"}).status_code == 404
    assert snapshot() == before


def test_actions_are_post_only_and_need_the_csrf_token(busy, staff, snapshot):
    q1 = busy["queued"][0]
    before = snapshot()
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    assert client.get(act_url(q1.id, "discard")).status_code == 405
    assert client.post(act_url(q1.id, "discard"), {"reason": "no token"}).status_code == 403
    assert snapshot() == before
    page = client.get(plan_url(q1.id))
    token = page.context["csrf_token"]
    response = client.post(act_url(q1.id, "discard"), {"reason": "with token", "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert Plan.objects.get(id=q1.id).status == "discarded"


def test_list_action_moves_selected_plans_keeping_their_order(busy, staff_client):
    session, (q1, q2, q3) = busy["session"], busy["queued"]
    data = {"action": "move_to_front", "_selected_action": [q2.id, q3.id], "index": 0}
    response = staff_client.post(reverse("admin:sessions_app_plan_changelist"), data, follow=True)
    assert response.status_code == 200
    order = list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("id", flat=True)
    )
    assert order == [q2.id, q3.id, q1.id]
    actors = set(Event.objects.filter(kind="plan_moved").values_list("actor", flat=True))
    assert actors == {"user:sam"}


def test_list_action_requeue_reports_plans_it_cannot_requeue(busy, staff_client):
    active, q1 = busy["active"], busy["queued"][0]
    data = {"action": "requeue_plans", "_selected_action": [active.id, q1.id], "index": 0}
    response = staff_client.post(reverse("admin:sessions_app_plan_changelist"), data, follow=True)
    texts = messages_of(response)
    assert REQUEUED.format(plan=active.id, position="front") in texts
    assert any(t.startswith(f"Plan {q1.id}: VALIDATION_ERROR: ") for t in texts)
    assert Plan.objects.get(id=active.id).status == "queued"


def test_list_action_discard_asks_for_a_reason_first(busy, staff_client, snapshot, sessions_dir):
    q1, q3 = busy["queued"][0], busy["queued"][2]
    url = reverse("admin:sessions_app_plan_changelist")
    before = snapshot()
    ask = staff_client.post(url, {"action": "discard_plans", "_selected_action": [q1.id, q3.id], "index": 0})
    assert ask.status_code == 200
    assert b'name="reason"' in ask.content and q1.id.encode() in ask.content
    blank = staff_client.post(
        url, {"action": "discard_plans", "_selected_action": [q1.id, q3.id], "confirm": "yes", "reason": ""}
    )
    assert blank.status_code == 200 and b"This field is required" in blank.content
    assert snapshot() == before
    done = staff_client.post(
        url, {"action": "discard_plans", "_selected_action": [q1.id, q3.id], "confirm": "yes", "reason": "Dropped"}
    )
    assert done.status_code == 302
    for plan in Plan.objects.filter(id__in=[q1.id, q3.id]):
        assert (plan.status, plan.discard_reason) == ("discarded", "Dropped")
        assert not plan_file(sessions_dir, plan).exists()
        assert Event.objects.filter(plan=plan).latest("id").actor == "user:sam"


@pytest.mark.parametrize("who", ["staff", "superuser"])
def test_generic_forms_stay_closed_even_to_staff(busy, who, request, snapshot):
    client = client_for(request.getfixturevalue(who))
    before = snapshot()
    generic = [r for r in change_requests(busy) if "/act/" not in r[1] and r[2].get("action") is None]
    assert len(generic) >= 10
    for method, url, data in generic:
        assert getattr(client, method)(url, data).status_code == 403, (method, url)
    assert snapshot() == before


def test_the_reviewers_group_is_reset_to_view_only():
    group = ensure_reviewers_group()
    group.permissions.add(Permission.objects.get(codename="change_plan"))
    ensure_reviewers_group()
    codenames = set(Group.objects.get(name=REVIEWERS_GROUP).permissions.values_list("codename", flat=True))
    assert codenames == {"view_session", "view_plan", "view_event"}
