"""A plan's page in the admin (admin/plans.py): every section as sanitised Markdown, its
place in the queue, the file check, and agent text that never becomes markup; and what it
shows of parallel work (an expired lease, dependencies both ways and late writes). The
session page's view of the workers and a reclaim are in test_sessions.py; who may take the
staff actions is in test_roles.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from sessions_app import clock, services
from sessions_app.admin import render
from sessions_app.errors import LeaseLost
from sessions_app.models import Plan
from tests.conftest import plan_fields
from tests.sessions_app.admin_fixtures import (  # noqa: F401 - fixtures
    HOSTILE,
    busy,
    enqueue,
    plan_url,
    reviewer,
    reviewer_client,
    session_url,
    team,
    text_of,
)
from tests.sessions_app.conftest import plan_file, revised_plan

pytestmark = pytest.mark.django_db


def test_plan_page_shows_every_section_as_markdown(busy, reviewer_client):
    active = busy["active"]
    response = reviewer_client.get(plan_url(active.id))
    assert response.status_code == 200
    html = text_of(response)
    for title in ("Context", "Goal", "Inputs", "Outputs", "Approach", "Success Criteria", "Notes"):
        assert f"<h2>{title}</h2>" in html
    assert "<ol>\n<li>Dry run</li>\n<li>Fix rows</li>\n<li>Run for real</li>\n</ol>" in html
    assert "<em>lowercase</em>" in html
    assert 'id="np-status">Active<' in html
    assert response.context["file"].path.endswith(f"{busy['session'].name}/plans/{active.id}.txt")
    assert response.context["file"].matches
    # Newest first, as the session's timeline.
    assert [row["event"].kind for row in response.context["timeline"]] == ["plan_note", "plan_pulled", "plan_created"]


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


def test_the_status_badge_shows_the_status_label(reviewer_client):
    reviewed = services.session_create(review="required")
    services.plan_enqueue(session_name=reviewed.name, **plan_fields(goal="Parse the config"))
    services.plan_pull(session_name=reviewed.name)
    plan = services.plan_complete(session_name=reviewed.name, outcome="Parser written").plan
    html = text_of(reviewer_client.get(plan_url(plan.id)))
    assert 'id="np-status">In Review<' in html
    assert "In_review" not in html and ">in_review<" not in html


def test_a_finished_plans_page_shows_no_path_of_a_file_that_is_not_there(busy, reviewer_client, sessions_dir):
    done = busy["done1"]
    response = reviewer_client.get(plan_url(done.id))
    assert not plan_file(sessions_dir, done).exists()
    html = text_of(response)
    assert response.context["file"].path not in html and 'id="np-file-path"' not in html
    assert "a plan that is completed keeps no file" in html
    # A queued plan whose file is there shows where it is; one whose file went missing says so.
    q1, q2, _ = busy["queued"]
    assert f'id="np-file-path">{plan_file(sessions_dir, q1)}<' in text_of(reviewer_client.get(plan_url(q1.id)))
    plan_file(sessions_dir, q2).unlink()
    missing = text_of(reviewer_client.get(plan_url(q2.id)))
    assert f'none at <code id="np-file-path">{plan_file(sessions_dir, q2)}</code>, where it should be' in missing


def test_the_version_and_the_revisions_are_told_apart(session, reviewer_client):
    plan = revised_plan(session, "first note", "replaced notes")
    services.plan_complete(session_name=session.name, outcome="Done")
    plan.refresh_from_db()
    response = reviewer_client.get(plan_url(plan.id))
    html = text_of(response)
    count = response.context["revision_count"]
    # Completing changed the plan but not its text: more versions than revisions, and the page says why.
    assert (plan.version, count) == (4, 3)
    assert f"Revisions ({count})" in html
    assert (
        f"version {plan.version}: one per change to the plan, its status included; {count} of them changed its text"
        in html
    )


def test_an_expired_lease_is_flagged_as_still_held(team, reviewer_client, monkeypatch):
    page = reviewer_client.get(plan_url(team["a"].id)).content.decode()
    assert "lease until" in page and 'id="np-lease-expired"' not in page
    later = timezone.now() + timedelta(seconds=120)
    monkeypatch.setattr(clock, "now", lambda: later)
    page = reviewer_client.get(session_url(team["session"].name)).content.decode()
    assert page.count('np-badge np-fail">expired') == 2
    assert page.count("still held until another worker pulls") == 2
    page = reviewer_client.get(plan_url(team["a"].id)).content.decode()
    worker = page[page.index('id="np-worker"') :][:600]
    assert 'id="np-lease-expired"' in worker and "(still held until another worker pulls)" in worker
    # Looking moved nothing.
    assert Plan.objects.get(id=team["a"].id).worker == "alice"


def test_the_plan_page_shows_dependencies_both_ways_and_late_writes(team, reviewer_client, monkeypatch):
    a, merge = team["a"], team["merge"]
    page = reviewer_client.get(plan_url(merge.id)).content.decode()
    depends = page[page.index('id="np-depends-on"') : page.index('id="np-dependents"')]
    assert a.id in depends and team["b"].id in depends and "blocked" in depends
    page = reviewer_client.get(plan_url(a.id)).content.decode()
    needed = page[page.index('id="np-dependents"') :]
    assert merge.id in needed[:400]
    assert "<code>alice</code>" in page[page.index('id="np-worker"') :][:200]

    services.plan_reclaim(session_name=team["session"].name, plan_id=a.id, actor="user:sam")
    with pytest.raises(LeaseLost):
        services.plan_note(session_name=team["session"].name, worker="alice", text="my <b>late</b> finding")
    page = reviewer_client.get(plan_url(a.id)).content.decode()
    late = page[page.index('id="np-late-writes"') :]
    assert "alice" in late and "my &lt;b&gt;late&lt;/b&gt; finding" in late
