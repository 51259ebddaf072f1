"""A plan file written over an old one: the names swapped in one step where the system can
(sessions_app/planfiles/swap.py), a plain replace where it cannot, the same file either way."""

from __future__ import annotations

import os
import sys

import pytest

from sessions_app.planfiles import folders, swap


@pytest.fixture
def place(tmp_path):
    """A folder of its own (the suite keeps a sessions folder in tmp_path)."""
    path = tmp_path / "folder"
    path.mkdir()
    return path


@pytest.fixture
def folder(place):
    fd = os.open(place, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_the_two_names_are_swapped(place, folder):
    (place / "new").write_text("new text")
    (place / "old").write_text("old text")

    assert swap.swap_in(folder, "new", "old") is True

    assert (place / "old").read_text() == "new text"
    assert (place / "new").read_text() == "old text"


def test_without_an_old_file_nothing_moves_and_the_caller_replaces(place, folder):
    (place / "new").write_text("new text")

    assert swap.swap_in(folder, "new", "gone") is False

    assert sorted(p.name for p in place.iterdir()) == ["new"]
    assert (place / "new").read_text() == "new text"


def test_any_other_failure_moves_nothing_and_leaves_the_replace_to_report_it(place, folder):
    (place / "new").write_text("new text")
    (place / "old").write_text("old text")

    assert swap.swap_in(-1, "new", "old") is False  # not a descriptor (EBADF)

    assert (place / "old").read_text() == "old text" and (place / "new").read_text() == "new text"


@pytest.mark.parametrize("exists", [True, False], ids=["over an old file", "a new file"])
def test_a_write_leaves_the_new_text_and_nothing_else(place, folder, exists):
    if exists:
        (place / "k3x9q.txt").write_bytes(b"old text " * 100)
        before = os.stat(place / "k3x9q.txt").st_ino

    folders.write_in(folder, "k3x9q.txt", b"new text")

    assert sorted(p.name for p in place.iterdir()) == ["k3x9q.txt"]  # no temporary file left
    assert (place / "k3x9q.txt").read_bytes() == b"new text"
    if exists:
        assert os.stat(place / "k3x9q.txt").st_ino != before  # a new file, never the old one rewritten


def test_a_write_falls_back_to_a_replace_where_the_swap_is_not_to_be_had(place, folder, monkeypatch):
    (place / "k3x9q.txt").write_bytes(b"old text")
    monkeypatch.setattr(folders, "swap_in", lambda *args: False)  # a file system without the swap

    folders.write_in(folder, "k3x9q.txt", b"new text")

    assert sorted(p.name for p in place.iterdir()) == ["k3x9q.txt"]
    assert (place / "k3x9q.txt").read_bytes() == b"new text"


def test_a_link_in_the_files_place_is_left_alone(place, folder):
    (place / "outside").write_text("someone else's")
    (place / "k3x9q.txt").symlink_to(place / "outside")

    with pytest.raises(FileExistsError):
        folders.write_in(folder, "k3x9q.txt", b"new text")

    assert (place / "k3x9q.txt").is_symlink()
    assert (place / "outside").read_text() == "someone else's"
    assert sorted(p.name for p in place.iterdir()) == ["k3x9q.txt", "outside"]
