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


def test_a_plan_id_is_five_of_a_to_z_and_0_to_9():
    assert identifiers.is_plan_id("ab12z") and identifiers.is_plan_id("00000")
    assert not any(identifiers.is_plan_id(bad) for bad in ("AB12Z", "ab12", "ab12zz", "ab-12", "", None))


def test_a_project_name_is_up_to_63_of_a_to_z_0_to_9_and_hyphens_not_first():
    assert all(identifiers.is_project_name(good) for good in ("default", "ab-12", "b", "a" * 63))
    assert not any(identifiers.is_project_name(bad) for bad in ("Billing", "-abcd", "a" * 64, "a b", "", None))
