"""A data directory made ready (nineplan/tables.py): its folders made, and the database
migrated only when it lacks migrations."""

from __future__ import annotations

import pytest

from nineplan import tables


@pytest.mark.django_db
def test_an_up_to_date_database_lacks_no_migration_and_is_left_as_it_is(settings, tmp_path):
    settings.NINEPLAN_SESSIONS_PATH = tmp_path / "data" / "sessions"
    assert tables.unapplied() == 0
    tables.make_if_missing()
    assert tables.unapplied() == 0
    # The folders are made all the same.
    assert settings.NINEPLAN_SESSIONS_PATH.is_dir()


@pytest.mark.django_db
def test_make_folders_makes_the_sessions_folder_and_keeps_what_is_in_it(settings, tmp_path):
    settings.NINEPLAN_SESSIONS_PATH = tmp_path / "a" / "b" / "sessions"
    tables.make_folders()
    kept = settings.NINEPLAN_SESSIONS_PATH / "kept.txt"
    kept.write_text("mine", encoding="utf-8")
    tables.make_folders()
    assert kept.read_text(encoding="utf-8") == "mine"
