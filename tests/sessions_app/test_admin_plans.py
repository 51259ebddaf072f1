"""A plan's page in the admin (admin/plans.py): every section as sanitised Markdown, its
place in the queue, the file check, and agent text that never becomes markup. The staff
actions are in test_admin_permissions.py and test_admin_workers.py."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessions_app import services
from sessions_app.admin import render
from tests.sessions_app.admin_fixtures import HOSTILE, busy, enqueue, plan_url, reviewer, reviewer_client, session_url, text_of  # noqa: F401 - fixtures
from tests.sessions_app.conftest import plan_file

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
