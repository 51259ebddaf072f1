"""The sessions in the admin (admin/sessions.py): the list with its counts, filters and
sorting, and a session's page (queue, active plan, history, timeline, invariant check,
chart, each worker's plan and a staff reclaim that fences the worker off)."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from sessions_app import services
from sessions_app.admin import reads as admin_reads
from sessions_app.admin import render
from sessions_app.models import Event, Plan, Session
from sessions_app.reads import excerpts, interventions
from tests.conftest import plan_fields
from tests.sessions_app.admin_fixtures import (  # noqa: F401 - fixtures
    HOSTILE,
    act_url,
    busy,
    enqueue,
    plan_url,
    quiet,
    reviewer,
    reviewer_client,
    session_url,
    staff,
    staff_client,
    team,
    text_of,
)
from tests.sessions_app.admin_fixtures import (
    sessions_listed as listed,
)
from tests.sessions_app.conftest import plan_file

pytestmark = pytest.mark.django_db


# --- sessions list -------------------------------------------------------------------


def test_sessions_list_shows_counts_active_plan_and_last_activity(busy, quiet, reviewer_client):
    rows = listed(reviewer_client)
    row = rows[busy["session"].name]
    assert (row.queue_length, row.completed_count, row.discarded_count) == (3, 2, 1)
    assert (row.active_plan_id, row.active_plan_goal) == (busy["active"].id, "Migrate the customers")
    assert row.last_activity == Event.objects.filter(session=busy["session"]).latest("created_at").created_at
    empty = rows[quiet.name]
    assert (empty.queue_length, empty.completed_count, empty.discarded_count, empty.active_plan_id) == (0, 0, 0, None)
    html = text_of(reviewer_client.get(reverse("admin:sessions_app_session_changelist")))
    assert f'href="{plan_url(busy["active"].id)}"' in html
    assert "Migrate the customers" in html


def test_sessions_list_search_and_dates(busy, quiet, reviewer_client):
    name = busy["session"].name
    assert set(listed(reviewer_client, "?q=release")) == {quiet.name}
    assert set(listed(reviewer_client, f"?q={name}")) == {name}
    # The parameters the "created at" filter's own links use.
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    assert set(listed(reviewer_client, "?" + urlencode({"created_at__gte": str(today)}))) == {name, quiet.name}
    assert set(listed(reviewer_client, "?" + urlencode({"created_at__lt": str(today - timedelta(days=1))}))) == set()


# Column numbers count list_display from 0: 3 queue, 5 completed, 6 discarded, 7 last activity.
def test_sessions_list_shows_what_waits_for_a_person_and_how_many_workers(reviewer_client, sessions_dir):
    call_command("nineplan_demo", stdout=io.StringIO())
    parallel = Session.objects.get(review="required")
    rows = listed(reviewer_client)
    row = rows[parallel.name]
    assert (row.queue_length, row.waiting_count, row.in_review_count, row.held_count, row.workers_count) == (
        3,
        1,
        1,
        1,
        2,
    )
    calm = rows[Session.objects.exclude(name=parallel.name).get().name]
    assert (calm.waiting_count, calm.in_review_count, calm.held_count, calm.workers_count) == (0, 0, 0, 1)
    html = text_of(reviewer_client.get(reverse("admin:sessions_app_session_changelist")))
    cells = html[html.index(f">{parallel.name}<") :].split("</tr>")[0]
    assert '3 <span class="np-muted np-sub">1 waiting</span>' in cells
    assert '1<span class="np-muted np-sub">1 in review</span><span class="np-muted np-sub">1 held</span>' in cells
    assert '<span class="np-muted np-sub np-workers">2 workers hold plans</span>' in cells
    assert "np-workers" not in html[html.index(f">{calm.name}<") :].split("</tr>")[0]


@pytest.mark.parametrize("column", [3, 5, 6, 7])
def test_sessions_list_sorts_by_the_computed_columns(busy, quiet, reviewer_client, column):
    response = reviewer_client.get(reverse("admin:sessions_app_session_changelist") + f"?o={column}")
    ascending = [s.name for s in response.context["cl"].result_list]
    response = reviewer_client.get(reverse("admin:sessions_app_session_changelist") + f"?o=-{column}")
    descending = [s.name for s in response.context["cl"].result_list]
    # The quiet session was created after the busy one's last event, so it is the more recent.
    fewer_first = [busy["session"].name, quiet.name] if column == 7 else [quiet.name, busy["session"].name]
    assert ascending == fewer_first
    assert descending == fewer_first[::-1]


def test_sessions_list_sorts_by_the_active_plan_goal(busy, quiet, reviewer_client, make_plan):
    other = services.session_create(task_description="Audit")
    make_plan(other, goal="Audit the invoices")
    services.plan_pull(session_name=other.name)
    working = {busy["session"].name, other.name}

    def order(query):
        response = reviewer_client.get(reverse("admin:sessions_app_session_changelist") + query)
        names = [s.name for s in response.context["cl"].result_list]
        assert set(names) == working | {quiet.name}
        # Where a session without an active plan goes is the database's choice (SQLite
        # puts NULL first, PostgreSQL last); the sessions with one are in goal order.
        return [n for n in names if n in working]

    # Column 4 is "active plan", sorted by its goal: "Audit ..." before "Migrate ...".
    assert order("?o=4") == [other.name, busy["session"].name]
    assert order("?o=-4") == [busy["session"].name, other.name]


# --- session page --------------------------------------------------------------------


def test_session_page_shows_queue_active_history_and_timeline(busy, reviewer_client):
    session = busy["session"]
    response = reviewer_client.get(session_url(session.name))
    assert response.status_code == 200
    ctx = response.context
    assert [(place, p.id) for place, p in ctx["queue"]] == [(i + 1, p.id) for i, p in enumerate(busy["queued"])]
    assert ctx["active"].id == busy["active"].id
    assert [p.id for p in ctx["completed"]] == [busy["done2"].id, busy["done1"].id]
    assert [p.id for p in ctx["discarded"]] == [busy["discarded"].id]
    html = text_of(response)
    assert "Found 23 routes in four blueprints" in html
    assert "Superseded by the reporting service" in html
    for plan in busy["queued"]:
        assert f'href="{plan_url(plan.id)}"' in html
    assert html.index(busy["queued"][0].goal) < html.index(busy["queued"][2].goal)
    kinds = [row["event"].kind for row in ctx["timeline"]]
    assert kinds[0] == "plan_created" and kinds[-1] == "session_created"
    assert ctx["event_count"] == Event.objects.filter(session=session).count()


def test_the_summary_names_every_worker_holding_a_plan(busy, reviewer_client):
    # Two workers hold plans: the summary says so, rather than naming one as "the" active plan.
    session, active = busy["session"], busy["active"]
    second = services.plan_pull(session_name=session.name, worker="tests-2")
    html = text_of(reviewer_client.get(session_url(session.name)))
    shown = html[html.index('id="np-active-summary"') :].split("</dd>")[0]
    assert shown.startswith('id="np-active-summary">2: ')
    assert f">{active.id}</a> (default)" in shown and f">{second.id}</a> (tests-2)" in shown


def test_timeline_names_who_did_it(busy, reviewer_client):
    session, (q1, q2, _) = busy["session"], busy["queued"]
    services.plan_move(session_name=session.name, plan_id=q2.id, position="front", actor="user:sam")
    services.plan_move(session_name=session.name, plan_id=q1.id, position="front", actor="api:ci-bot")
    services.plan_note(session_name=session.name, text="from the laptop", actor="agent:alice-laptop")
    response = reviewer_client.get(session_url(session.name))
    top = [(r["who"], r["event"].kind) for r in response.context["timeline"][:4]]
    assert top == [
        ("agent:alice-laptop", "plan_note"),
        ("api:ci-bot", "plan_moved"),
        ("user:sam", "plan_moved"),
        ("agent", "plan_created"),
    ]
    whos = re.findall(r'<td class="np-who">(.*?)</td>', text_of(response))
    assert whos[:4] == ["agent:alice-laptop", "api:ci-bot", "user:sam", "agent"]
    assert "agent agent" not in text_of(response)


@pytest.mark.parametrize(
    "actor, label",
    [
        ("agent", "agent"),
        ("agent/alpha", "agent/alpha"),
        ("agent:alice/laptop", "agent:alice/laptop"),
        ("agent:alice/laptop/alpha", "agent:alice/laptop/alpha"),
        ("user:sam", "user:sam"),
        ("lease", "lease"),
        ("repair", "repair"),
        ("import", "import"),
    ],
)
def test_each_actor_has_one_label_the_one_the_event_stores(actor, label):
    assert render.actor_label(actor) == label


def test_a_person_reads_the_same_in_the_notes_heading_the_timeline_and_what_an_agent_is_told(reviewer_client):
    session = services.session_create(review="required")
    plan = services.plan_enqueue(session_name=session.name, **plan_fields(goal="Reviewed")).plan
    services.plan_pull(session_name=session.name, worker="alpha")
    services.plan_complete(session_name=session.name, worker="alpha", outcome="done")
    services.plan_review(session_name=session.name, plan_id=plan.id, decision="reject", notes="No.", actor="user:rita")
    assert "### Rejected in review by user:rita," in Plan.objects.get(id=plan.id).notes
    whos = re.findall(r'<td class="np-who">(.*?)</td>', text_of(reviewer_client.get(session_url(session.name))))
    assert {"user:rita", "agent/alpha"} <= set(whos)
    (told,) = interventions.interventions(session.name)
    assert told.describe().startswith(f"Plan {plan.id} was sent back in review to the front of the queue by user:rita")


def test_timeline_heading_counts_in_the_singular_and_plural(session, reviewer_client):
    assert Event.objects.filter(session=session).count() == 1
    assert "Timeline (1 event)" in text_of(reviewer_client.get(session_url(session.name)))
    enqueue(session, "One more")
    assert "Timeline (2 events)" in text_of(reviewer_client.get(session_url(session.name)))


def queue_card(response) -> str:
    html = text_of(response)
    return html[html.index('id="np-queue"') :].split("</section>")[0]


def test_the_empty_queue_of_a_new_session_says_no_plans_yet(session, reviewer_client):
    card = queue_card(reviewer_client.get(session_url(session.name)))
    assert "No plans queued yet." in card
    assert "Task complete" not in card


def test_the_empty_queue_says_task_complete_only_when_work_was_done(session, reviewer_client):
    enqueue(session, "Only plan")
    services.plan_pull(session_name=session.name)
    # Still being worked on: the queue is empty, the task is not complete.
    card = queue_card(reviewer_client.get(session_url(session.name)))
    assert "Task complete" not in card and "No plans queued yet." not in card
    services.plan_complete(session_name=session.name, outcome="done")
    assert "Task complete! 🎉" in queue_card(reviewer_client.get(session_url(session.name)))
    enqueue(session, "Next")
    assert "Task complete" not in queue_card(reviewer_client.get(session_url(session.name)))


def test_the_empty_queue_after_only_discards_is_just_empty(session, reviewer_client):
    enqueue(session, "Dropped")
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="wrong")
    card = queue_card(reviewer_client.get(session_url(session.name)))
    assert "The queue is empty." in card
    assert "Task complete" not in card and "No plans queued yet." not in card


def test_session_page_shows_each_invariant_passing(busy, reviewer_client):
    response = reviewer_client.get(session_url(busy["session"].name))
    checks = {c["name"]: c for c in response.context["invariants"]}
    assert {"single_active_plan", "queue_order_preserved", "files_match_database", "no_orphaned_files"} <= set(checks)
    assert all(c["ok"] and not c["issues"] for c in checks.values())
    assert response.context["valid"] is True
    assert re.search(r'np-badge np-pass">valid<', text_of(response))


def test_session_page_shows_failing_invariants_with_their_issues(busy, reviewer_client, sessions_dir):
    q1 = busy["queued"][0]
    plan_file(sessions_dir, q1).unlink()
    (sessions_dir / busy["session"].name / "plans" / "zz999.txt").write_text("# Goal\nstray\n")
    response = reviewer_client.get(session_url(busy["session"].name))
    checks = {c["name"]: c for c in response.context["invariants"]}
    assert checks["files_match_database"]["ok"] is False
    assert any(q1.id in issue for issue in checks["files_match_database"]["issues"])
    assert checks["no_orphaned_files"]["ok"] is False
    assert any("zz999.txt" in issue for issue in checks["no_orphaned_files"]["issues"])
    assert checks["single_active_plan"]["ok"] is True
    html = text_of(response)
    assert 'np-badge np-fail">invalid<' in html
    assert "zz999.txt" in html


def test_session_page_chart_is_inline_svg_from_the_event_log(busy, reviewer_client):
    response = reviewer_client.get(session_url(busy["session"].name))
    chart = response.context["chart"]
    assert (chart.peak_queue, chart.final_queue, chart.completions) == (3, 3, 2)
    html = text_of(response)
    assert '<svg class="np-chart"' in html
    assert html.count("<polyline") == 2
    for points in (chart.queue_points, chart.done_points):
        for pair in points.split():
            x, y = (float(v) for v in pair.split(","))
            assert 0 <= x <= chart.width and 0 <= y <= chart.height
    assert "<script" not in html.split('<svg class="np-chart"')[1].split("</svg>")[0]


def xs(points: str) -> list[float]:
    return [float(pair.split(",")[0]) for pair in points.split()]


def test_a_short_sessions_chart_spans_its_events_and_its_axis_labels_differ(busy, reviewer_client):
    # The busy session's events were written within a second or so.
    response = reviewer_client.get(session_url(busy["session"].name))
    chart = response.context["chart"]
    assert chart.end - chart.start < timedelta(minutes=1)
    # The steps spread over the width, not all at the left edge then a flat line: the
    # queue's last change is at the right end of the axis.
    steps = sorted(set(xs(chart.queue_points)))
    assert steps[0] == chart.x_left and steps[-1] == chart.x_right
    assert max(x for x in steps if x < chart.x_right) > (chart.x_left + chart.x_right) / 2
    assert chart.start_label != chart.end_label and re.fullmatch(r"\+\d+(\.\d)? s", chart.end_label)
    html = text_of(response)
    assert f'id="np-chart-start">{chart.start_label}<' in html and f'id="np-chart-end">{chart.end_label}<' in html


@pytest.mark.parametrize(
    "span, end_label",
    [
        (timedelta(seconds=0), "+1.0 s"),
        (timedelta(seconds=2.5), "+2.5 s"),
        (timedelta(seconds=42), "+42 s"),
        (timedelta(minutes=90), "13:30 UTC"),
        (timedelta(days=2), "2026-03-03 12:00 UTC"),
    ],
)
def test_the_chart_labels_its_axis_as_precisely_as_the_span_needs(settings, span, end_label):
    settings.TIME_ZONE = "UTC"
    start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    chart = render.chart([(start, 1, 0), (start + span, 0, 1)])
    assert (chart.start_label, chart.end_label) == ("2026-03-01 12:00 UTC", end_label)


def test_session_series_replays_the_queue(session, make_plan):
    make_plan(session)  # a
    make_plan(session)  # b
    c = make_plan(session)
    services.plan_pull(session_name=session.name)  # a active
    services.plan_discard_any(session_name=session.name, plan_id=c.id, reason="dup", actor="user:sam")
    services.plan_discard(session_name=session.name, reason="wrong")  # a, the active one
    services.plan_pull(session_name=session.name)  # b
    services.plan_defer(session_name=session.name, reason="later")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="ok")
    series = [(q, d) for _, q, d in admin_reads.session_series(session)]
    # created x3, pull a, discard c (queued), discard a (active), pull b, defer b, pull b, complete b
    assert series == [(1, 0), (2, 0), (3, 0), (2, 0), (1, 0), (1, 0), (0, 0), (1, 0), (0, 0), (0, 1)]


def test_unknown_or_malformed_session_is_404(reviewer_client):
    assert reviewer_client.get(session_url("nope-nope-nope")).status_code == 404
    assert reviewer_client.get("/admin/sessions_app/session/..%2F..%2Fetc/change/").status_code == 404


def test_session_page_links_to_its_plans_and_events(busy, quiet, reviewer_client):
    enqueue(quiet, "Elsewhere")
    name = busy["session"].name
    html = text_of(reviewer_client.get(session_url(name)))
    plans_link = f"{reverse('admin:sessions_app_plan_changelist')}?session__exact={name}"
    events_link = f"{reverse('admin:sessions_app_event_changelist')}?session__exact={name}"
    assert f'href="{plans_link}"' in html and f'href="{events_link}"' in html
    plans = reviewer_client.get(plans_link + "&status__exact=completed").context["cl"].result_list
    assert {p.id for p in plans} == {busy["done1"].id, busy["done2"].id}
    events = reviewer_client.get(events_link).context["cl"].result_list
    assert {e.session_id for e in events} == {name}
    assert len(events) == Event.objects.filter(session_id=name).count()


def test_session_page_renders_outcomes_and_reasons_as_markdown(session, reviewer_client):
    enqueue(session, "Inventory the routes")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="Found **23 routes** in `app/urls.py`")
    enqueue(session, "Port the export")
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="Superseded by *reporting* " + HOSTILE)
    html = text_of(reviewer_client.get(session_url(session.name)))
    history = html[html.index('id="np-history"') :].split("</section>")[0]
    assert "<strong>23 routes</strong>" in history and "<code>app/urls.py</code>" in history
    assert "**23 routes**" not in history
    assert "<em>reporting</em>" in history
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in history and "<script>" not in history


def test_session_page_cuts_goals_after_whole_words(session, reviewer_client):
    goal = "Rework " + "the invoice numbering scheme " * 12
    plan = enqueue(session, goal)
    html = text_of(reviewer_client.get(session_url(session.name)))
    row = html[html.index(f'href="{plan_url(plan.id)}"') :].split("</tr>")[0]
    shown = re.findall(r"<td>([^<]*…)</td>", row)
    assert len(shown) == 1, row
    words = set(goal.split())
    assert all(word in words for word in shown[0].rstrip("…").split()), shown[0]
    assert shown[0] == excerpts.one_line(goal, len(shown[0]))


def test_session_series_counts_a_reclaimed_plan_back_in_the_queue(session, make_plan):
    plan = make_plan(session)
    services.plan_pull(session_name=session.name, worker="w1")
    services.plan_reclaim(session_name=session.name, plan_id=plan.id, actor="user:sam")
    services.plan_pull(session_name=session.name, worker="w2")
    services.plan_complete(session_name=session.name, worker="w2", outcome="ok")
    series = [(q, d) for _, q, d in admin_reads.session_series(session)]
    # created, pulled by w1, reclaimed (back at the front), pulled by w2, completed
    assert series == [(1, 0), (0, 0), (1, 0), (0, 0), (0, 1)]


def test_what_awaits_a_decision_comes_first_on_a_session_page(admin_client):
    """On a review-gated session the plans waiting for a person sit above the invariant check
    and the chart, with the way to the inbox that decides them."""
    from sessions_app import services as writes

    gated = writes.session_create(task_description="gated", review="required")
    writes.plan_enqueue(session_name=gated.name, **plan_fields(goal="Needs a look"))
    writes.plan_pull(session_name=gated.name)
    writes.plan_complete(session_name=gated.name, outcome="done")
    html = admin_client.get(reverse("admin:sessions_app_session_change", args=[gated.name])).content.decode()
    assert html.index('id="np-awaiting"') < html.index('id="np-invariants"') < html.index('id="np-chart"')
    assert reverse("admin:sessions_app_plan_review_inbox") in html[html.index('id="np-awaiting"') :]


def test_the_session_page_lists_each_worker_and_what_the_merge_waits_for(team, reviewer_client):
    page = reviewer_client.get(session_url(team["session"].name)).content.decode()
    assert 'data-worker="alice"' in page and 'data-worker="bob"' in page
    assert team["a"].id in page and "1 of 1" in page
    blocked = page[page.index('id="np-blocked"') :]
    assert team["merge"].id in blocked and "worker <code>alice</code>" in blocked
    # A reviewer may look, not act.
    assert act_url(team["a"].id, "reclaim") not in page


def test_staff_reclaim_a_claim_and_the_worker_is_fenced_off(team, staff_client):
    name, a = team["session"].name, team["a"]
    page = staff_client.get(session_url(name)).content.decode()
    assert act_url(a.id, "reclaim") in page
    response = staff_client.post(act_url(a.id, "reclaim"), {"next": session_url(name)})
    assert response.status_code == 302
    plan = Plan.objects.get(id=a.id)
    assert plan.status == Plan.Status.QUEUED and plan.attempts == 1 and plan.waiting_for_person
    event = Event.objects.get(plan_id=a.id, kind=Event.Kind.PLAN_RECLAIMED)
    assert event.actor.startswith("user:") and event.detail["worker"] == "alice"
    with pytest.raises(Exception) as info:
        services.plan_note(session_name=name, worker="alice", text="late")
    assert getattr(info.value, "category", "") == "LEASE_LOST"

    # With max_attempts 1 it now waits for a person: listed, and requeued from the page.
    page = staff_client.get(session_url(name)).content.decode()
    waiting = page[page.index('id="np-waiting"') :]
    assert f'data-plan="{a.id}"' in waiting
    staff_client.post(act_url(a.id, "requeue"), {"position": "front", "next": session_url(name)})
    plan = Plan.objects.get(id=a.id)
    assert not plan.waiting_for_person and plan.attempts == 0
    assert services.plan_pull(session_name=name, worker="carol").id == a.id
