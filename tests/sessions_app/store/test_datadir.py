"""A data directory made ready (nineplan/datadir.py): its folders made, and the database
migrated only when it lacks migrations."""

from __future__ import annotations

import pytest

from sessions_app.store import datadir


@pytest.mark.django_db
def test_an_up_to_date_database_lacks_no_migration_and_is_left_as_it_is(settings, tmp_path):
    settings.NINEPLAN_SESSIONS_PATH = tmp_path / "data" / "sessions"
    assert datadir.unapplied() == 0
    datadir.make_if_missing()
    assert datadir.unapplied() == 0
    # The folders are made all the same.
    assert settings.NINEPLAN_SESSIONS_PATH.is_dir()


@pytest.mark.django_db
def test_make_folders_makes_the_sessions_folder_and_keeps_what_is_in_it(settings, tmp_path):
    settings.NINEPLAN_SESSIONS_PATH = tmp_path / "a" / "b" / "sessions"
    datadir.make_folders()
    kept = settings.NINEPLAN_SESSIONS_PATH / "kept.txt"
    kept.write_text("mine", encoding="utf-8")
    datadir.make_folders()
    assert kept.read_text(encoding="utf-8") == "mine"
