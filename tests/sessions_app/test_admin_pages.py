"""What the reviewer pages show: the sessions list with its counts, filters and sorting;
the session page (queue, active plan, history, timeline, invariant check, chart); the
plan page (sections as sanitised Markdown, file check); and the history search."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import dateformat, timezone

from sessions_app import excerpts, services
from sessions_app.admin import reads as admin_reads
from sessions_app.admin import render
from sessions_app.models import Event, Plan
from tests.sessions_app.admin_fixtures import session_url, plan_url, busy, enqueue, reviewer, reviewer_client  # noqa: F401 - fixtures
from tests.sessions_app.conftest import plan_file

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert(1)</script> and <img src=x onerror=alert(1)>"




def text_of(response) -> str:
    return response.content.decode()


# --- sessions list ---------------------------------------------------------------------


@pytest.fixture
def quiet(db):
    return services.session_create(task_description="Write the release notes")


def listed(client, query=""):
    response = client.get(reverse("admin:sessions_app_session_changelist") + query)
    assert response.status_code == 200
    return {s.name: s for s in response.context["cl"].result_list}


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


def test_sessions_list_filters_and_search(busy, quiet, reviewer_client):
    name = busy["session"].name
    assert set(listed(reviewer_client, "?active=yes")) == {name}
    assert set(listed(reviewer_client, "?active=no")) == {quiet.name}
    assert set(listed(reviewer_client, "?queued=yes")) == {name}
    assert set(listed(reviewer_client, "?queued=no")) == {quiet.name}
    assert set(listed(reviewer_client, "?q=release")) == {quiet.name}
    assert set(listed(reviewer_client, f"?q={name}")) == {name}
    # The parameters the "created at" filter's own links use.
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    assert set(listed(reviewer_client, "?" + urlencode({"created_at__gte": str(today)}))) == {name, quiet.name}
    assert set(listed(reviewer_client, "?" + urlencode({"created_at__lt": str(today - timedelta(days=1))}))) == set()


# Column numbers count list_display from 0: 3 queue, 5 completed, 6 discarded, 7 last activity.
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


# --- session page ----------------------------------------------------------------------


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


def test_timeline_names_who_did_it(busy, reviewer_client):
    session, (q1, q2, _) = busy["session"], busy["queued"]
    services.plan_move(session_name=session.name, plan_id=q2.id, position="front", actor="user:sam")
    services.plan_move(session_name=session.name, plan_id=q1.id, position="front", actor="api:ci-bot")
    services.plan_note(session_name=session.name, text="from the laptop", actor="agent:alice-laptop")
    response = reviewer_client.get(session_url(session.name))
    top = [(r["who"], r["event"].kind) for r in response.context["timeline"][:4]]
    assert top == [
        ("agent: alice-laptop", "plan_note"),
        ("API: ci-bot", "plan_moved"),
        ("staff: sam", "plan_moved"),
        ("agent (MCP)", "plan_created"),
    ]
    whos = re.findall(r'<td class="np-who">(.*?)</td>', text_of(response))
    assert whos[:4] == ["agent: alice-laptop", "API: ci-bot", "staff: sam", "agent (MCP)"]
    assert "agent agent" not in text_of(response)


@pytest.mark.parametrize(
    "actor, label",
    [("agent", "agent (MCP)"), ("agent:alice-laptop", "agent: alice-laptop"), ("user:sam", "staff: sam"), ("api:ci-bot", "API: ci-bot"), ("repair", "repair"), ("import", "import")],
)
def test_each_actor_has_one_label(actor, label):
    assert render.actor_label(actor) == label


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


def test_session_series_replays_the_queue(session, make_plan):
    a, b, c = make_plan(session), make_plan(session), make_plan(session)
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


# --- dates -------------------------------------------------------------------------------


def stamp(at) -> str:
    return dateformat.format(timezone.localtime(at), "Y-m-d H:i T")


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_every_page_writes_dates_one_way_with_the_zone(busy, reviewer_client, settings, zone):
    settings.TIME_ZONE = zone
    session, active = busy["session"], busy["active"]
    expected_zone = "UTC" if zone == "UTC" else ("EST", "EDT")
    pages = {
        "sessions list": reverse("admin:sessions_app_session_changelist"),
        "plans list": reverse("admin:sessions_app_plan_changelist"),
        "events list": reverse("admin:sessions_app_event_changelist"),
        "session page": session_url(session.name),
        "plan page": plan_url(active.id),
        "search": reverse("admin:sessions_app_history_search") + "?q=routes",
    }
    for name, url in pages.items():
        html = text_of(reviewer_client.get(url))
        assert not re.search(r"\b[ap]\.m\.|(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\.? \d", html), name
        stamps = re.findall(r"\b\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?(?: [A-Z]{3,4})?", html)
        assert stamps, name
        for found in stamps:
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d [A-Z]{3,4}", found), (name, found)
            assert found.endswith(expected_zone), (name, found)
    assert stamp(session.created_at) in text_of(reviewer_client.get(reverse("admin:sessions_app_session_changelist")))
    assert stamp(active.created_at) in text_of(reviewer_client.get(plan_url(active.id)))


# --- plan page -------------------------------------------------------------------------


def test_plan_page_shows_every_section_as_markdown(busy, reviewer_client):
    active = busy["active"]
    response = reviewer_client.get(plan_url(active.id))
    assert response.status_code == 200
    html = text_of(response)
    for title in ("Context", "Goal", "Inputs", "Outputs", "Approach", "Success Criteria", "Notes"):
        assert f"<h2>{title}</h2>" in html
    assert "<ol>\n<li>Dry run</li>\n<li>Fix rows</li>\n<li>Run for real</li>\n</ol>" in html
    assert "<em>lowercase</em>" in html
    assert 'id="np-status">active<' in html
    assert response.context["file"].path.endswith(f"{busy['session'].name}/plans/{active.id}.txt")
    assert response.context["file"].matches
    assert [row["event"].kind for row in response.context["timeline"]] == ["plan_created", "plan_pulled", "plan_note"]


def test_plan_page_shows_place_in_queue_and_history_fields(busy, reviewer_client):
    q2 = busy["queued"][1]
    response = reviewer_client.get(plan_url(q2.id))
    assert response.context["place"] == 2
    assert "#2 in the queue" in text_of(response) and "(position" not in text_of(response)
    done = reviewer_client.get(plan_url(busy["done1"].id))
    assert "Found 23 routes in four blueprints" in text_of(done)
    assert done.context["file"].matches and not done.context["file"].exists
    gone = reviewer_client.get(plan_url(busy["discarded"].id))
    assert "Superseded by the reporting service" in text_of(gone)


def test_plan_page_reports_how_the_file_differs(busy, reviewer_client, sessions_dir):
    q1, q2, q3 = busy["queued"]
    path = plan_file(sessions_dir, q1)
    path.write_text(path.read_text().rstrip("\n") + "\nAgent wrote this.\n")
    edited = reviewer_client.get(plan_url(q1.id))
    assert edited.context["file"].differing == ["notes"]
    assert "differs" in text_of(edited)
    plan_file(sessions_dir, q2).unlink()
    missing = reviewer_client.get(plan_url(q2.id))
    assert not missing.context["file"].exists and not missing.context["file"].matches
    assert ">missing<" in text_of(missing)
    stale = plan_file(sessions_dir, busy["done1"])
    stale.write_text("# Goal\nleft behind\n")
    left = reviewer_client.get(plan_url(busy["done1"].id))
    assert ">left over<" in text_of(left)
    untouched = reviewer_client.get(plan_url(q3.id))
    assert untouched.context["file"].matches


def test_plan_text_from_agents_is_never_markup(session, reviewer_client):
    plan = enqueue(
        session,
        HOSTILE,
        context="[click](javascript:alert(1)) <a href=javascript:alert(1)>x</a>",
        approach='<iframe src="https://evil.example"></iframe>\n\n![pixel](https://evil.example/p.png)',
    )
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text=HOSTILE + '\n\n<svg onload="alert(1)">')
    pages = [
        reviewer_client.get(plan_url(plan.id)),
        reviewer_client.get(session_url(session.name)),
        reviewer_client.get(reverse("admin:sessions_app_session_changelist")),
        reviewer_client.get(reverse("admin:sessions_app_plan_changelist")),
    ]
    for response in pages:
        assert response.status_code == 200
        html = text_of(response)
        lowered = html.lower()
        assert "<script>alert(1)" not in html
        assert "<img src=x" not in html and '<img src="https://evil.example' not in html
        assert 'href="javascript' not in lowered and "<a href=javascript" not in lowered
        assert "<iframe" not in html and "<svg onload" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    plan_html = text_of(pages[0])
    assert "&lt;img src=x onerror=alert(1)&gt;" in plan_html
    assert "&lt;iframe" in plan_html


def test_markdown_images_show_their_alt_text_and_load_nothing(session, reviewer_client):
    plan = enqueue(
        session,
        "Draw it",
        context='See ![the "architecture" <diagram>](https://evil.example/p.png) here.\n\n![](https://evil.example/q.png)',
    )
    html = text_of(reviewer_client.get(plan_url(plan.id)))
    assert '[image: the "architecture" &lt;diagram&gt;]' in html
    assert "[image]" in html
    # The rendered sections drop the address; the revisions' diffs show the raw text, escaped.
    rendered, diffs = html.split('id="np-revisions"')
    assert "<img" not in html and "evil.example" not in rendered
    assert "+See ![the &quot;architecture&quot; &lt;diagram&gt;](https://evil.example/p.png) here." in diffs
    assert str(render.markdown("![a *b*](x.png)")) == "<p>[image: a b]</p>\n"


def test_unknown_plan_is_404(reviewer_client):
    assert reviewer_client.get(plan_url("zzzzz")).status_code == 404
    assert reviewer_client.get(plan_url("NOT-AN-ID")).status_code == 404


# --- history search --------------------------------------------------------------------


def search(client, **params):
    response = client.get(reverse("admin:sessions_app_history_search"), params)
    assert response.status_code == 200
    return response


def test_search_ranks_and_highlights(busy, reviewer_client):
    response = search(reviewer_client, q="routes blueprints")
    results = response.context["results"]
    assert [r["plan"].id for r in results][0] == busy["done1"].id
    assert [r["hit"].rank for r in results] == list(range(1, len(results) + 1))
    html = text_of(response)
    assert "<mark>routes</mark>" in html and "<mark>blueprints</mark>" in html
    # Rank and a relevance where bigger is better; no engine score.
    relevance = [r["hit"].relevance for r in results]
    assert relevance == sorted(relevance, reverse=True)
    assert f"relevance {results[0]['hit'].relevance:.2f}" in html and "score" not in html


def test_search_highlights_the_word_forms_it_matched(busy, reviewer_client):
    html = text_of(search(reviewer_client, q="route blueprint"))
    assert "<mark>routes</mark>" in html and "<mark>blueprints</mark>" in html


def test_search_within_one_session_or_all(busy, reviewer_client, quiet):
    enqueue(quiet, "Draft the routes section")
    services.plan_pull(session_name=quiet.name)
    services.plan_complete(session_name=quiet.name, outcome="Routes section drafted")
    everywhere = {r["plan"].session_id for r in search(reviewer_client, q="routes").context["results"]}
    assert everywhere == {busy["session"].name, quiet.name}
    one = search(reviewer_client, q="routes", session=quiet.name).context["results"]
    assert {r["plan"].session_id for r in one} == {quiet.name}


def test_search_never_returns_discarded_or_open_plans(busy, reviewer_client):
    ids = {r["plan"].id for r in search(reviewer_client, q="PDF export customers refund").context["results"]}
    assert busy["discarded"].id not in ids and busy["active"].id not in ids
    assert not ids & {p.id for p in busy["queued"]}


def test_search_reports_bad_input_without_failing(busy, reviewer_client):
    response = search(reviewer_client, q="routes", session="no-such-session")
    assert response.context["error"].startswith("SESSION_NOT_FOUND: ")
    assert 'id="np-search-error"' in text_of(response)
    bad = search(reviewer_client, q="routes", session="../../etc")
    assert bad.context["error"].startswith("VALIDATION_ERROR: ")
    for odd in ('"foo', "foo AND", "NEAR(", "*", "c++", "col:val"):
        assert search(reviewer_client, q=odd).context["error"] is None
    empty = search(reviewer_client, q="   ")
    assert empty.context["results"] == [] and not empty.context["searched"]


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_search_shows_what_to_type(busy, reviewer_client, query):
    response = search(reviewer_client, q=query)
    html = text_of(response)
    assert 'id="np-search-hint"' in html
    hint = html[html.index('id="np-search-hint"') :].split("</section>")[0]
    assert "words" in hint.lower() and "e.g." in hint
    assert 'id="np-results"' not in html
    assert 'id="np-search-hint"' not in text_of(search(reviewer_client, q="routes"))


def test_search_snippets_show_markdown_as_read_and_start_at_a_word(session, reviewer_client):
    enqueue(session, "Model the invoices")
    services.plan_pull(session_name=session.name)
    outcome = "Wrote " + "the billing models and their tests " * 10 + "Invoice and LineItem **models** with constraints"
    services.plan_complete(session_name=session.name, outcome=outcome)
    (result,) = search(reviewer_client, q="constraints").context["results"]
    snippet = str(result["outcome"])
    assert snippet.startswith("…") and "<mark>constraints</mark>" in snippet
    first = snippet[1:].split()[0]
    assert first in outcome.split(), first
    assert "**" not in snippet and "models with <mark>constraints</mark>" in snippet


def test_search_snippets_escape_agent_text(session, reviewer_client):
    enqueue(session, HOSTILE)
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="alert handled " + HOSTILE)
    html = text_of(search(reviewer_client, q="alert"))
    assert "&lt;script&gt;<mark>alert</mark>(1)&lt;/script&gt;" in html
    assert "<script>alert" not in html and "<img src=x" not in html


def test_discarded_plans_stay_out_even_when_they_match(session, reviewer_client):
    enqueue(session, "Unique zebra word")
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="zebra")
    response = search(reviewer_client, q="zebra")
    assert response.context["results"] == []
    assert Plan.objects.filter(status="discarded").count() == 1


# --- events list -------------------------------------------------------------------------


def events_found(client, query: str) -> list[Event]:
    response = client.get(reverse("admin:sessions_app_event_changelist"), {"q": query})
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


def test_event_search_looks_into_the_details(busy, reviewer_client):
    (found,) = events_found(reviewer_client, "reporting service")
    assert (found.kind, found.plan_id) == ("plan_discarded", busy["discarded"].id)
    assert events_found(reviewer_client, "no such words anywhere") == []
    # Still by session name and actor, as before.
    assert len(events_found(reviewer_client, busy["session"].name)) == Event.objects.filter(session=busy["session"]).count()


@pytest.mark.parametrize("reason", ['Café menü: "duplicate" of a\\b', "naïve 🎉 plan"])
def test_event_search_finds_any_text_of_a_detail(session, reviewer_client, reason):
    enqueue(session, "To drop")
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason=reason)
    for word in reason.split():
        (found,) = events_found(reviewer_client, word)
        assert found.kind == "plan_discarded", word


def test_event_list_names_who_did_it_once(busy, reviewer_client):
    services.plan_move(session_name=busy["session"].name, plan_id=busy["queued"][2].id, position="front", actor="user:sam")
    html = text_of(reviewer_client.get(reverse("admin:sessions_app_event_changelist")))
    assert '<td class="field-who">staff: sam</td>' in html
    assert '<td class="field-who">agent (MCP)</td>' in html


def test_session_series_counts_a_reclaimed_plan_back_in_the_queue(session, make_plan):
    plan = make_plan(session)
    services.plan_pull(session_name=session.name, worker="w1")
    services.plan_reclaim(session_name=session.name, plan_id=plan.id, actor="user:sam")
    services.plan_pull(session_name=session.name, worker="w2")
    services.plan_complete(session_name=session.name, worker="w2", outcome="ok")
    series = [(q, d) for _, q, d in admin_reads.session_series(session)]
    # created, pulled by w1, reclaimed (back at the front), pulled by w2, completed
    assert series == [(1, 0), (0, 0), (1, 0), (0, 0), (0, 1)]
