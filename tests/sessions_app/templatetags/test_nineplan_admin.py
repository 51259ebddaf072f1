"""The admin templates' filters and tags (sessions_app/templatetags/nineplan_admin.py), as a
template uses them: agent text excerpted and rendered safely, waits in words, one-button
forms, the site's names outside it, and the counts of what waits for a person."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template

from sessions_app import access, services
from sessions_app.models import Role
from sessions_app.templatetags import nineplan_admin
from tests.sessions_app.conftest import rejected_once


def rendered(source: str, **context) -> str:
    return Template("{% load nineplan_admin %}" + source).render(Context(context))


def test_excerpt_puts_the_text_on_one_line_cut_after_a_whole_word():
    text = "Model the invoices\n\nand their   line items in Django"
    assert rendered("{{ text|excerpt:24 }}", text=text) == "Model the invoices and…"
    assert rendered("{{ text|excerpt:200 }}", text=text) == "Model the invoices and their line items in Django"
    assert rendered("[{{ text|excerpt:10 }}]", text=None) == "[]"


def test_markdown_renders_agent_text_and_strips_what_is_unsafe():
    html = rendered(
        "{{ text|markdown }}", text="**Done**: see [the log](https://example.org/log)\n\n<script>alert(1)</script>"
    )
    assert "<strong>Done</strong>" in html
    assert 'href="https://example.org/log"' in html and 'rel="noopener noreferrer nofollow"' in html
    assert "<script" not in html
    assert rendered("[{{ text|markdown }}]", text=None) == "[]"
    # A link to a script is not made a link: it stays the words it was.
    assert "href" not in rendered("{{ text|markdown }}", text="[x](javascript:alert(1))")


@pytest.mark.parametrize(
    ("wait", "words"),
    [
        (None, ""),
        (timedelta(seconds=5), "1 minute"),
        (timedelta(minutes=15), "15 minutes"),
        (timedelta(minutes=60), "1 hour"),
        (timedelta(minutes=90), "1 hour 30 minutes"),
        (timedelta(hours=2, minutes=1), "2 hours 1 minute"),
        (timedelta(minutes=59, seconds=40), "1 hour"),
    ],
)
def test_a_wait_reads_in_words(wait, words):
    assert rendered("{{ wait|nineplan_duration }}", wait=wait) == words


def test_button_form_posts_to_its_action_with_its_fields_hidden():
    html = rendered(
        '{% button_form to "Front" position="front" next="/admin/s/" id="move-1" title="Move it" css="default" %}',
        to="/admin/sessions_app/plan/k3x9q/act/move/",
        csrf_token="tok123",
    )
    assert '<form method="post" action="/admin/sessions_app/plan/k3x9q/act/move/"' in html
    assert 'name="csrfmiddlewaretoken" value="tok123"' in html
    assert '<input type="hidden" name="next" value="/admin/s/">' in html
    assert '<input type="hidden" name="position" value="front">' in html
    assert '<button type="submit" class="button default" id="move-1" title="Move it">Front</button>' in html


def test_button_form_leaves_out_what_it_is_not_given_and_escapes_what_it_is():
    html = rendered('{% button_form "/act/" label %}', label="<b>Discard</b>")
    assert 'name="next"' not in html and " id=" not in html and " title=" not in html
    assert '<button type="submit" class="button">&lt;b&gt;Discard&lt;/b&gt;</button>' in html


def test_nineplan_site_names_the_admin_site_outside_it():
    assert rendered("{% nineplan_site as site %}{{ site.site_header }}") == "9plan review"


@pytest.mark.django_db
def test_waiting_for_people_counts_the_callers_projects_only(settings):
    settings.NINEPLAN_MAX_REJECTIONS = 1
    reviewed = services.session_create(task_description="reviewed", review="required")
    rejected_once(reviewed.name, "Held one", outcome="x", notes="no", actor="user:rita")
    source = "{% waiting_for_people as n %}{{ n.in_review }}/{{ n.held }}/{{ n.waiting }}"
    assert rendered(source) == "0/1/0"
    with access.acting_as(access.Caller(label="user:olga", roles={"elsewhere": Role.MANAGER})):
        assert rendered(source) == "0/0/0"


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0, "less than a minute"),
        (59, "less than a minute"),
        (60, "1\xa0minute"),
        (3 * 3600 + 60, "3\xa0hours, 1\xa0minute"),
    ],
)
def test_since_never_says_zero_minutes(seconds, words):
    now = datetime(2026, 1, 2, 12, 0, tzinfo=UTC)
    assert nineplan_admin.since(now - timedelta(seconds=seconds), now) == words
