"""A plan file put in an old one's place, or removed, after the caller read it: the old file
is read once it has left the path, and what was written in it since the read is never lost
(sessions_app/planfiles/displaced.py). Lines added at its end join the new file; any other
change keeps the old file aside whole. No second name is ever made for it."""

from __future__ import annotations

import os

import pytest

from sessions_app import planfiles
from sessions_app.planfiles import displaced, folders

SESSION = "brave-amber-otter"
OLD = "# Notes\nfirst line\n"
NEW = "# Notes\nfirst line\n\nthe note written\n"


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


@pytest.fixture
def plans(sessions_dir):
    path = sessions_dir / SESSION / "plans"
    planfiles.write_file(SESSION, "abcde", OLD)
    return path


def preserved(sessions_dir) -> list[bytes]:
    folder = sessions_dir / SESSION / planfiles.PRESERVED_DIR
    return [p.read_bytes() for p in sorted(folder.iterdir())] if folder.exists() else []


def append(path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, text.encode())
    os.close(fd)


# --- folders.write_in: the old file held across the replace --------------------------------


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


def test_the_replaced_file_is_read_after_it_left_the_path(place, folder):
    (place / "k3x9q.txt").write_bytes(b"old text")
    seen = []

    def after(old, inode):
        seen.append((os.pread(old, 100, 0), os.fstat(old).st_nlink, (place / "k3x9q.txt").read_bytes(), inode))

    folders.write_in(folder, "k3x9q.txt", b"new text", after_replace=after)

    # No name is left for the old file: it was never linked anywhere else.
    assert seen == [(b"old text", 0, b"new text", os.stat(place / "k3x9q.txt").st_ino)]
    assert sorted(p.name for p in place.iterdir()) == ["k3x9q.txt"]


def test_without_an_old_file_there_is_nothing_to_hold(place, folder):
    seen = []

    folders.write_in(folder, "k3x9q.txt", b"new text", after_replace=lambda old, inode: seen.append(old))

    assert seen == [None]


def test_a_link_in_the_files_place_is_left_alone(place, folder):
    (place / "outside").write_text("someone else's")
    (place / "k3x9q.txt").symlink_to(place / "outside")

    with pytest.raises(FileExistsError):
        folders.write_in(folder, "k3x9q.txt", b"new text", after_replace=lambda old, inode: None)

    assert (place / "k3x9q.txt").is_symlink()
    assert (place / "outside").read_text() == "someone else's"
    assert sorted(p.name for p in place.iterdir()) == ["k3x9q.txt", "outside"]


@pytest.mark.parametrize("link", ["hard", "symbolic"])
def test_a_link_put_in_the_files_place_during_the_write_is_never_read_through(place, folder, link):
    secret = place / "secret"
    secret.write_text("a file outside the plans")
    (place / "k3x9q.txt").write_text("old text")

    def swap_in_a_link(inode):
        (place / "k3x9q.txt").unlink()
        if link == "hard":
            os.link(secret, place / "k3x9q.txt")
        else:
            (place / "k3x9q.txt").symlink_to(secret)

    seen = []
    folders.write_in(folder, "k3x9q.txt", b"new text", swap_in_a_link, lambda old, inode: seen.append(old))

    assert seen == [None]  # not held, so never read
    assert (place / "k3x9q.txt").read_text() == "new text"
    assert secret.read_text() == "a file outside the plans" and secret.stat().st_nlink == 1


# --- file_io.write_file: what the old file gained since the caller read it --------------------


def test_an_old_file_as_it_was_read_leaves_nothing_behind(plans, sessions_dir):
    late = planfiles.write_file(SESSION, "abcde", NEW, found=OLD)

    assert late == displaced.NOTHING
    assert (plans / "abcde.txt").read_text() == NEW
    assert preserved(sessions_dir) == []
    assert sorted(p.name for p in plans.iterdir()) == ["abcde.txt"]


def test_lines_added_after_the_read_join_the_end_of_the_new_file(plans, sessions_dir):
    # Between the caller's read and the replace (here: while the base is written).
    late = planfiles.write_file(
        SESSION, "abcde", NEW, lambda inode: append(plans / "abcde.txt", "appended line\n"), found=OLD
    )

    assert late == displaced.Late(moved=b"appended line\n")
    assert (plans / "abcde.txt").read_text() == NEW + "appended line\n"
    assert preserved(sessions_dir) == []


def test_lines_written_through_a_descriptor_opened_before_the_replace_are_read_after_it(
    plans, sessions_dir, monkeypatch
):
    # An agent opened the file before the replace and writes once it is done: its line lands
    # in the old file, which no longer has a name, and is read there.
    opened = os.open(plans / "abcde.txt", os.O_WRONLY | os.O_APPEND)
    real_replace = os.replace

    def replace_then_write(*args, **kwargs):
        real_replace(*args, **kwargs)
        os.write(opened, b"written late\n")

    monkeypatch.setattr(os, "replace", replace_then_write)
    try:
        late = planfiles.write_file(SESSION, "abcde", NEW, found=OLD)
    finally:
        os.close(opened)

    assert late.moved == b"written late\n"
    assert (plans / "abcde.txt").read_text() == NEW + "written late\n"


def test_a_file_edited_in_place_after_the_read_is_kept_aside_whole(plans, sessions_dir):
    edited = "# Notes\nfirst line, edited in place\n"

    def edit(inode):
        fd = os.open(plans / "abcde.txt", os.O_WRONLY | os.O_TRUNC)
        os.write(fd, edited.encode())
        os.close(fd)

    late = planfiles.write_file(SESSION, "abcde", NEW, edit, found=OLD)

    assert late.moved == b"" and late.problem == displaced.CHANGED
    assert late.kept_as.startswith(f"{planfiles.PRESERVED_DIR}/abcde-")
    assert preserved(sessions_dir) == [edited.encode()]
    assert (plans / "abcde.txt").read_text() == NEW


def test_a_file_that_appeared_where_none_was_found_is_kept_aside(plans, sessions_dir):
    late = planfiles.write_file(SESSION, "abcde", NEW, found=None)

    assert late.problem == displaced.APPEARED
    assert preserved(sessions_dir) == [OLD.encode()]
    assert (plans / "abcde.txt").read_text() == NEW


def test_a_file_that_appeared_with_the_very_text_written_loses_nothing(plans, sessions_dir):
    assert planfiles.write_file(SESSION, "abcde", OLD, found=None) == displaced.NOTHING
    assert preserved(sessions_dir) == []


def test_lines_are_kept_aside_when_the_new_file_was_replaced_before_they_could_join_it(
    plans, sessions_dir, monkeypatch
):
    real_replace = os.replace

    def replace_then_save(*args, **kwargs):
        monkeypatch.setattr(os, "replace", real_replace)  # once: the copy kept aside is written as usual
        real_replace(*args, **kwargs)
        # The agent's editor saves by writing a file of its own and renaming it into place.
        (plans / "saved").write_text("the agent's save")
        real_replace(plans / "saved", plans / "abcde.txt")

    monkeypatch.setattr(os, "replace", replace_then_save)
    late = planfiles.write_file(
        SESSION, "abcde", NEW, lambda inode: append(plans / "abcde.txt", "appended line\n"), found=OLD
    )

    assert late.problem == displaced.REPLACED
    assert preserved(sessions_dir) == [(OLD + "appended line\n").encode()]
    assert (plans / "abcde.txt").read_text() == "the agent's save"


def test_more_than_is_held_is_moved_all_the_same(plans, sessions_dir, settings):
    settings.NINEPLAN_MAX_PLAN_CHARS = 100
    many = "appended line\n" * 1000  # over read_cap()

    late = planfiles.write_file(SESSION, "abcde", NEW, lambda inode: append(plans / "abcde.txt", many), found=OLD)

    assert late.moved is None and not late.kept_as
    assert (plans / "abcde.txt").read_text() == NEW + many


# --- file_io.delete_plan: a removed file read after it left the path -------------------------


def test_a_removed_file_as_it_was_read_leaves_nothing_behind(plans, sessions_dir):
    assert planfiles.delete_plan(SESSION, "abcde", found=OLD) == displaced.NOTHING

    assert not (plans / "abcde.txt").exists()
    assert preserved(sessions_dir) == []


def test_a_removed_file_that_changed_after_the_read_is_kept_aside(plans, sessions_dir):
    append(plans / "abcde.txt", "appended line\n")

    late = planfiles.delete_plan(SESSION, "abcde", found=OLD)

    assert late.problem == displaced.REMOVED
    assert not (plans / "abcde.txt").exists()
    assert preserved(sessions_dir) == [(OLD + "appended line\n").encode()]
