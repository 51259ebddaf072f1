"""How the admin shows agent text (sessions_app/admin/render.py): Markdown rendered and then
cleaned to an allow-list, its plain words for snippets, and a search snippet where the
only markup is the <mark> added around each match."""

from __future__ import annotations

import re

from sessions_app.admin import render
from tests.sessions_app.admin_fixtures import HOSTILE


def test_markdown_keeps_its_formatting_and_drops_every_script():
    html = render.markdown(f"**23 routes** and [docs](https://example.com)\n\n{HOSTILE}\n\n[x](javascript:alert(1))")
    assert "<strong>23 routes</strong>" in html
    assert 'href="https://example.com"' in html and 'rel="noopener noreferrer nofollow"' in html
    # Raw HTML from an agent is shown as text, and a javascript: link is no link.
    assert "<p>&lt;script&gt;alert(1)&lt;/script&gt; and &lt;img src=x onerror=alert(1)&gt;</p>" in html
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html
    assert render.markdown(None) == "" and render.markdown("") == ""


def test_markdown_text_is_the_words_a_reader_sees_without_markup():
    assert render.markdown_text("**23 routes** in `api/`") == "23 routes in api/\n"
    assert render.markdown_text("a &lt;b&gt; tag") == "a <b> tag\n"
    assert render.markdown_text(None) == ""


def test_a_snippet_escapes_the_text_and_marks_only_the_matches():
    snippet = render.highlight("<b>invoice</b> for the Invoice run", re.compile("invoice", re.IGNORECASE))
    assert snippet == "&lt;b&gt;<mark>invoice</mark>&lt;/b&gt; for the <mark>Invoice</mark> run"
    assert render.highlight(HOSTILE, None).count("<") == 0


def test_an_event_detail_is_one_line_of_its_pairs():
    assert render.event_detail({"worker": "alpha", "plans": ["ab12z", "cd34e"]}) == "worker: alpha; plans: ab12z, cd34e"
    assert render.event_detail("not a dict") == ""
