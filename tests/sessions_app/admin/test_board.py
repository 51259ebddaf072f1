"""A session's board (admin/board.py, reads/board.py): the columns and their cards, the
picture of dependencies, the moves and discards a manager makes on it, its live parts, and
a query count that does not grow with the plans (Django's test client)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Event, Plan
from tests.conftest import plan_fields
from tests.sessions_app.admin_fixtures import (  # noqa: F401 - fixtures
    client_for,
    demo,
    enqueue,
    one,
    outsider,
    reviewer,
    reviewer_client,
    staff,
    staff_client,
    text_of,
)

pytestmark = pytest.mark.django_db


def board_url(name: str) -> str:
    return reverse("admin:sessions_app_board", args=[name])


def column_ids(response, name: str) -> list[str]:
    return [c["plan"].id for c in response.context["columns"][name]]


def test_the_board_puts_each_plan_in_its_column(staff_client, demo):
    response = staff_client.get(board_url(demo.name))
    assert response.status_code == 200
    queued = Plan.objects.filter(session=demo, status="queued").order_by("sort_key")
    blocked = column_ids(response, "blocked")
    assert blocked and all(Plan.objects.get(id=i).status == "queued" for i in blocked)
    assert response.context["columns"]["blocked"][0]["waits_for"] == [one("held").id]
    assert column_ids(response, "held") == [one("held").id]
    assert column_ids(response, "in_review") == [one("in_review").id]
    assert column_ids(response, "waiting") == [one("queued", waiting_for_person=True).id]
    assert sorted(column_ids(response, "active")) == sorted(
        Plan.objects.filter(status="active", session=demo).values_list("id", flat=True)
    )
    assert column_ids(response, "completed") == [one("completed", session=demo).id]
    ready = column_ids(response, "ready")
    assert ready == [p.id for p in queued if p.id not in blocked and not p.waiting_for_person]
    html = text_of(response)
    for plan in Plan.objects.filter(session=demo).exclude(status="discarded"):
        assert f'data-plan="{plan.id}"' in html
        assert reverse("admin:sessions_app_plan_change", args=[plan.id]) in html
    # The picture: a node per plan, an edge per dependency between plans shown.
    svg = str(response.context["graph"])
    assert svg.count('class="np-node"') == Plan.objects.filter(session=demo).exclude(status="discarded").count()
    assert f'data-from="{blocked[0]}" data-to="{one("held").id}"' in svg
    assert f'data-plan="{blocked[0]}" data-state="blocked"' in svg


def test_the_board_is_linked_from_the_session_page_and_the_list(reviewer_client, demo):
    url = board_url(demo.name)
    assert f'href="{url}"' in text_of(
        reviewer_client.get(reverse("admin:sessions_app_session_change", args=[demo.name]))
    )
    assert f'href="{url}"' in text_of(reviewer_client.get(reverse("admin:sessions_app_session_changelist")))
    # A reviewer sees the board but gets no handles.
    html = text_of(reviewer_client.get(url))
    assert "draggable" not in html and "np-discard-zone" not in html


def grow(session, count: int) -> None:
    """``count`` more plans (in batches of at most 30), two of three depending on the plan
    before; then one more completed and one more active."""
    for start in range(0, count, 30):
        batch = [
            plan_fields(goal=f"Step {start + i}", **({"depends_on": [i - 1]} if i % 3 else {}))
            for i in range(min(30, count - start))
        ]
        services.plan_enqueue_many(session_name=session.name, plans=batch)
    services.plan_pull(session_name=session.name, worker=f"done{count}")
    services.plan_complete(session_name=session.name, worker=f"done{count}", outcome="done")
    services.plan_pull(session_name=session.name, worker=f"busy{count}")


def test_the_boards_queries_do_not_grow_with_its_plans(staff_client, session):
    grow(session, 4)
    with CaptureQueriesContext(connection) as few:
        assert staff_client.get(board_url(session.name)).status_code == 200
    grow(session, 60)
    with CaptureQueriesContext(connection) as many:
        response = staff_client.get(board_url(session.name))
    assert len(response.context["columns"]["blocked"]) > 30
    assert len(many.captured_queries) == len(few.captured_queries)
    with CaptureQueriesContext(connection) as live:
        assert staff_client.get(f"/admin/live/?view=board&session={session.name}").status_code == 200
    assert len(live.captured_queries) <= len(few.captured_queries) + 1


def move(client, session, **data):
    return client.post(
        reverse("admin:sessions_app_board_move", args=[session.name]), data, HTTP_ACCEPT="application/json"
    )


def order(session) -> list[str]:
    return list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("goal", flat=True)
    )


def test_a_manager_moves_a_card_before_another_or_to_the_back(staff_client, session):
    a, b, c = (enqueue(session, g) for g in "ABC")
    answer = move(staff_client, session, plan_id=c.id, before=a.id)
    assert answer.status_code == 200 and answer.json() == {
        "ok": True,
        "message": f"Moved plan {c.id} before plan {a.id}. It is number 1.",
    }
    assert order(session) == ["C", "A", "B"]
    move(staff_client, session, plan_id=c.id, before="back")
    assert order(session) == ["A", "B", "C"]
    assert list(Event.objects.filter(kind="plan_moved").values_list("actor", "detail")) == [
        ("user:sam", {"before": a.id}),
        ("user:sam", {"position": "back"}),
    ]
    # A refused move is told in the services' words, and moves nothing.
    refused = move(staff_client, session, plan_id=c.id, before=c.id)
    assert refused.status_code == 400 and "cannot be moved before itself" in refused.json()["message"]
    assert order(session) == ["A", "B", "C"]
    # The buttons post the same form without the script, and come back to the board.
    back = staff_client.post(
        reverse("admin:sessions_app_board_move", args=[session.name]),
        {"plan_id": b.id, "before": a.id, "next": board_url(session.name)},
    )
    assert back.status_code == 302 and back.url == board_url(session.name)
    assert order(session) == ["B", "A", "C"]


def test_a_manager_discards_a_card_with_a_reason(staff_client, session):
    plan = enqueue(session, "A")
    url = reverse("admin:sessions_app_board_discard", args=[session.name])
    assert staff_client.post(url, {"plan_id": plan.id, "reason": ""}).status_code == 302
    assert Plan.objects.get(id=plan.id).status == "queued"
    staff_client.post(url, {"plan_id": plan.id, "reason": "Not needed"})
    stored = Plan.objects.get(id=plan.id)
    assert (stored.status, stored.discard_reason) == ("discarded", "Not needed")
    assert Event.objects.filter(plan=plan).last().actor == "user:sam"


def test_the_live_board_answers_its_parts_and_counts(staff_client, demo):
    answer = staff_client.get(f"/admin/live/?view=board&session={demo.name}")
    assert answer.status_code == 200
    data = answer.json()
    assert set(data["parts"]) == {
        f"board-{n}" for n in ("ready", "blocked", "active", "in_review", "held", "waiting", "completed", "graph")
    }
    assert data["counts"]["board-held"] == 1
    assert one("in_review").id in data["parts"]["board-in_review"]
    assert staff_client.get("/admin/live/?view=board&session=../x").status_code == 404
    assert staff_client.get("/admin/live/?view=board&session=no-such-one").status_code == 404


def test_an_outsider_sees_no_board(outsider, demo):
    assert client_for(outsider).get(board_url(demo.name)).status_code == 403
