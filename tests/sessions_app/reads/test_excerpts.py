"""Excerpts: one line, a byte budget, and windows around what a search matched."""

from __future__ import annotations

import json

import pytest

from sessions_app.admin.render import highlight
from sessions_app.reads import excerpts


def test_one_line_folds_whitespace_and_keeps_short_text_whole():
    assert excerpts.one_line("  Model\n\tinvoices  ", 40) == "Model invoices"
    assert excerpts.one_line(None, 10) is None


def test_one_line_cuts_after_a_whole_word():
    got = excerpts.one_line("Model invoices with constraints and a migration", 25)
    assert got == "Model invoices with…"
    assert len(got) <= 25


def test_one_line_cuts_a_word_without_spaces_where_it_must():
    got = excerpts.one_line("x" * 100, 10)
    assert got == "x" * 9 + "…"


@pytest.mark.parametrize("text", ["plain ascii words " * 20, 'émoji 🎉 and quotes " \\ ' * 20, "🎉" * 100])
def test_fit_json_stays_within_its_byte_budget(text):
    for budget in (10, 37, 120):
        got = excerpts.fit_json(text, budget)
        assert len(json.dumps(got, ensure_ascii=False).encode()) - 2 <= budget
        assert got.endswith("…") and got[:-1].strip()


def test_match_pattern_matches_whole_words_and_the_last_as_a_prefix():
    pattern = excerpts.match_pattern("models invoice")
    assert [m.group(0) for m in pattern.finditer("Invoices models modelsx invoice")] == [
        "Invoices",
        "models",
        "invoice",
    ]
    assert excerpts.match_pattern("🎉 ( *") is None


def marked(query: str, text: str) -> list[str]:
    return [m.group(0) for m in excerpts.match_pattern(query).finditer(text)]


def test_match_pattern_marks_the_forms_stemming_matched():
    text = "The cache was cached; caching is on. A cachet is not. Invoiced invoices, one invoicing run."
    assert marked("caching", text) == ["cache", "cached", "caching"]
    assert marked("invoice caching", text) == ["cache", "cached", "caching", "Invoiced", "invoices", "invoicing"]
    # Not the last word, so not a prefix: "runway" is another word.
    assert marked("run zzz", "runs running runner runway") == ["runs", "running", "runner"]


def test_match_pattern_marks_a_word_typed_in_part_and_ignores_accents():
    assert marked("configura", "Configuration configured configs config") == ["Configuration", "configured"]
    assert marked("cafe", "Café menu, CAFÉ and cafes; a cafeteria") == ["Café", "CAFÉ", "cafes", "cafeteria"]
    assert marked("creme brulee", "crème brûlée") == ["crème", "brûlée"]
    # Repeated words are one word; the last word typed is the prefix.
    assert marked("note " * 500 + "plan", "notes planning plan") == ["notes", "planning", "plan"]


def test_around_match_starts_before_the_first_match_at_a_word_boundary():
    filler = " ".join(f"word{i}" for i in range(200))
    window = excerpts.around_match(f"{filler} needle {filler}", excerpts.match_pattern("needle"), 120)
    assert window.cut_before and window.cut_after
    assert [window.text[a:b] for a, b in window.spans] == ["needle"]
    # Whole words at both ends, not "…rd57" or "word6…".
    first, last = window.text.split(" ")[0], window.text.split(" ")[-1]
    assert first.startswith("word") and first in filler.split(" ")
    assert last.startswith("word") and last in filler.split(" ")
    assert window.plain().startswith("…") and window.plain().endswith("…")
    assert len(window.text) <= 120


def test_around_match_without_a_match_is_the_start_of_the_text():
    window = excerpts.around_match("Short goal", None, 120)
    assert (window.text, window.spans, window.cut_before, window.cut_after) == ("Short goal", (), False, False)


def test_first_matching_prefers_sections_in_order():
    class Plan:
        goal, outcome, context, inputs, outputs = "Ledger export", "ledger rows", "", "", ""

    pattern = excerpts.match_pattern("rows")
    assert excerpts.first_matching(Plan, pattern) == "outcome"
    assert excerpts.first_matching(Plan, pattern, ("goal",)) is None


def test_highlight_escapes_what_the_agent_wrote_and_marks_only_matches():
    html = highlight(
        'Harden the <script>alert(1)</script> page; <mark> "quotes" & a page', excerpts.match_pattern("page")
    )
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<mark>") == 2 and "&lt;mark&gt;" in html
    assert html.count("<mark>page</mark>") == 2
