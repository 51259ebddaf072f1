"""Session names, plan ids and project names (sessions_app/identifiers.py): the checks accept
the shapes 9plan makes and refuse every other, and what it makes passes them."""

from __future__ import annotations

import pytest

from sessions_app import identifiers


def test_what_is_made_passes_the_checks():
    for _ in range(50):
        assert identifiers.is_session_name(identifiers.new_session_name())
        assert identifiers.is_plan_id(identifiers.new_plan_id())


def test_plan_ids_use_every_character_at_every_position():
    # 3,000 ids: a character missing from a position by chance has odds of about e**-83.
    ids = [identifiers.new_plan_id() for _ in range(3000)]
    for position in range(5):
        assert {i[position] for i in ids} == set(identifiers.PLAN_ID_ALPHABET), position
    assert len(set(ids)) > 2990  # 60 million ids: a repeat among 3,000 is rare


def test_a_plan_id_reads_the_system_s_random_source_once(monkeypatch):
    drawn = []
    real = identifiers.secrets.randbelow

    def counted(n):
        drawn.append(n)
        return real(n)

    monkeypatch.setattr(identifiers.secrets, "randbelow", counted)
    assert identifiers.is_plan_id(identifiers.new_plan_id())
    assert drawn == [36**5]


@pytest.mark.parametrize("name", ["calm-blue-heron", "a-b-c"])
def test_three_lowercase_words_are_a_session_name(name):
    assert identifiers.is_session_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "calm-blue",
        "calm-blue-heron-x",
        "Calm-blue-heron",
        "calm_blue_heron",
        "../etc/passwd",
        "calm-blue-heron\n",
        "a-b-" + "c" * 61,
        None,
        5,
    ],
)
def test_anything_else_is_not_a_session_name(name):
    assert not identifiers.is_session_name(name)


def test_a_plan_id_is_five_of_a_to_z_and_0_to_9():
    assert identifiers.is_plan_id("ab12z") and identifiers.is_plan_id("00000")
    assert not any(identifiers.is_plan_id(bad) for bad in ("AB12Z", "ab12", "ab12zz", "ab-12", "", None))


def test_a_project_name_is_up_to_63_of_a_to_z_0_to_9_and_hyphens_not_first():
    assert all(identifiers.is_project_name(good) for good in ("default", "ab-12", "b", "a" * 63))
    assert not any(identifiers.is_project_name(bad) for bad in ("Billing", "-abcd", "a" * 64, "a b", "", None))
