"""When these pass, the note keeper is done."""

import json
import subprocess
import sys

import pytest

from notekeeper import add_note, delete_note, list_notes, search_notes


@pytest.fixture
def path(tmp_path):
    return tmp_path / "notes.json"


def test_notes_are_added_with_growing_ids_and_listed_oldest_first(path):
    assert list_notes(path) == []
    assert add_note(path, "Groceries", "milk and eggs", tags=("home",)) == 1
    assert add_note(path, "Standup", "demo the search") == 2
    assert list_notes(path) == [
        {"id": 1, "title": "Groceries", "body": "milk and eggs", "tags": ["home"]},
        {"id": 2, "title": "Standup", "body": "demo the search", "tags": []},
    ]
    json.loads(path.read_text(encoding="utf-8"))  # the file is plain JSON


def test_an_empty_title_is_refused_and_nothing_is_written(path):
    with pytest.raises(ValueError):
        add_note(path, "   ", "no title")
    assert list_notes(path) == []


def test_notes_survive_a_new_process(path, tmp_path):
    add_note(path, "Kept", "across processes")
    code = f"from notekeeper import list_notes; print(list_notes({str(path)!r})[0]['title'])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path.parent,
                          env={"PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parents[1])})
    assert done.stdout.strip() == "Kept", done.stderr


def test_search_needs_every_word_in_title_body_or_tags_whatever_the_case(path):
    add_note(path, "Groceries", "Milk and eggs", tags=("home",))
    add_note(path, "Standup", "demo the search", tags=("work",))
    add_note(path, "Milk run", "for the office", tags=("work",))
    assert [n["id"] for n in search_notes(path, "milk")] == [1, 3]
    assert [n["id"] for n in search_notes(path, "MILK work")] == [3]
    assert search_notes(path, "nothing-like-this") == []


def test_search_on_a_missing_file_finds_nothing(path):
    assert search_notes(path, "anything") == []


def test_delete_removes_one_note_and_ids_are_never_reused(path):
    add_note(path, "One", "")
    add_note(path, "Two", "")
    assert delete_note(path, 2) is True
    assert [n["title"] for n in list_notes(path)] == ["One"]
    assert add_note(path, "Three", "") == 3


def test_deleting_a_missing_note_changes_nothing(path):
    add_note(path, "One", "")
    before = path.read_text(encoding="utf-8")
    assert delete_note(path, 42) is False
    assert path.read_text(encoding="utf-8") == before
