"""A plan's text as a file (sessions_app/planfiles/text.py): a section edited in the file merged
against the text the file was written from."""

from __future__ import annotations

import pytest

from sessions_app.planfiles import text as plan_text


@pytest.mark.parametrize(
    ("base", "current", "edited", "merged", "both"),
    [
        ("a", "a", "a b", "a b", False),  # only the file changed: it wins
        ("a", "a c", "a", "a c", False),  # only the database changed: it stays
        ("a", "a c", "a c", "a c", False),  # the same change on both sides
        ("a", "a\n\nc", "a\n\nb", "a\n\nc\n\nb", True),  # an append on each side: both, in that order
        ("x", "y", "z", f"y\n\n{plan_text.BOTH_KEPT}\nz", True),  # rewritten on both sides: both texts
        ("", "", "new", "new", False),
        ("", "mine", "theirs", "mine\n\ntheirs", True),  # an empty section filled on both sides
    ],
)
def test_a_section_is_merged_against_its_base(base, current, edited, merged, both):
    assert plan_text.merge_section(base, current, edited) == (merged, both)


@pytest.mark.parametrize(
    "base, onto, edited, rebased",
    [
        ("Written", "Found", "Written", "Found"),  # left alone: the text found stands
        ("Written", "Found", "Written\n\nAppended", "Found\n\nAppended"),  # an append moves onto it
        ("Written", "Found", "Rewritten", "Rewritten"),  # a rewrite stands
        ("Same", "Same", "Same\n\nAppended", "Same\n\nAppended"),
        ("", "Found", "Typed into an empty section", "Found\n\nTyped into an empty section"),
    ],
)
def test_a_section_edited_after_a_write_is_moved_onto_the_text_found_before_it(base, onto, edited, rebased):
    assert plan_text.rebase_section(base, onto, edited) == rebased


def test_a_parsed_file_renders_back_with_only_its_own_sections_and_its_preamble():
    parsed = plan_text.parse("Above\n# Goal\nA goal\n\n# Notes\n\\# Goal in a note\n")
    text = plan_text.render(parsed.sections, every=False, preamble=parsed.preamble)
    assert text == "Above\n# Goal\nA goal\n\n# Notes\n\\# Goal in a note\n"
    assert plan_text.parse(text) == parsed
