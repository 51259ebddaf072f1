"""Session names, plan ids and project names (sessions_app/identifiers.py): the checks accept
the shapes 9plan makes and refuse every other, and what it makes passes them."""

from __future__ import annotations

import pytest

from sessions_app import identifiers


def test_what_is_made_passes_the_checks():
    for _ in range(50):
        assert identifiers.is_session_name(identifiers.new_session_name())
        assert identifiers.is_plan_id(identifiers.new_plan_id())


@pytest.mark.parametrize("name", ["calm-blue-heron", "a-b-c"])
def test_three_lowercase_words_are_a_session_name(name):
    assert identifiers.is_session_name(name)


@pytest.mark.parametrize(
    "name", ["", "calm-blue", "calm-blue-heron-x", "Calm-blue-heron", "calm_blue_heron", "../etc/passwd",
             "calm-blue-heron\n", "a-b-" + "c" * 61, None, 5]  # fmt: skip
)
def test_anything_else_is_not_a_session_name(name):
    assert not identifiers.is_session_name(name)


@pytest.mark.parametrize(
    ("value", "plan", "project"),
    [
        ("ab12z", True, True),
        ("AB12Z", False, False),
        ("ab12", False, True),
        ("ab12zz", False, True),
        ("ab-12", False, True),
        ("-abcd", False, False),
        ("a" * 63, False, True),
        ("a" * 64, False, False),
        ("", False, False),
        (None, False, False),
    ],
)
def test_plan_ids_and_project_names(value, plan, project):
    assert identifiers.is_plan_id(value) is plan
    assert identifiers.is_project_name(value) is project
