"""A base's record of a write: read back against the plan's version and the file's inode, a
write that never committed is read as never having happened."""

from __future__ import annotations

from sessions_app.planfiles import bases
from sessions_app.planfiles.text import parse, render


def text(notes: str, approach: str = "1. Read the schema") -> str:
    return render({"goal": "Model invoices", "approach": approach, "notes": notes})


T0 = text("First")  # the committed text
EDITED = text("First\n\nEdited in the file")  # the agent's file before the write
T1 = text("First\n\nEdited in the file\n\nWritten, never committed")  # the write's text


def write(version=2, *, inode=11, stored: str | None = T0, before=EDITED, before_inode=10) -> str:
    return bases.dump(bases.file_write(version, T1, inode, stored, before, before_inode))


def test_a_plain_base_is_its_text_and_a_record_reads_back_as_written():
    assert bases.load(T0) == T0
    assert bases.load(None) is None
    record = bases.load(write())
    assert record == bases.FileWrite(2, T1, 11, T0, EDITED, 10)


def test_text_that_is_not_json_is_a_plain_base():
    stored = '{"version": "two"'
    assert bases.load(stored) == stored and not bases.unreadable(stored)
    assert bases.as_committed(bases.load(stored), stored, 3, 0) == (stored, stored)


def test_json_that_is_no_record_is_no_base_at_all():
    deep = '{"version": ' + "[" * 100_000
    for stored in (
        '{"written": "no version"}',
        '{"version": 1, "written": "x", "inode": 3, "before": 7}',
        '{"version": 1e999, "written": "x", "inode": 3}',
        '{"version": 1, "written": "x", "inode": 1e999}',
        '{"version": 2.5, "written": "x", "inode": 3}',
        '{"version": 1, "written": ["x"], "inode": 3}',
        deep,
        '{"version": 2, "written": "x", "inode": 3, "earlier": ' + "[" * 100_000,
    ):
        assert bases.load(stored) is None, stored[:60]
        assert bases.unreadable(stored)
        # Read against nothing: the file's text, with no base to merge it against.
        assert bases.as_committed(bases.load(stored), "the file", 3, 0) == (None, "the file")
    # A record inside a record is read the same way: a bad one makes the whole unreadable.
    nested = bases.dump(bases.FileWrite(3, T1, 11, bases.FileWrite(2, T0, 10)))
    assert not bases.unreadable(nested)
    assert bases.unreadable(nested.replace('"version":2', '"version":1e999'))


def test_a_committed_write_s_text_is_the_base():
    stored = bases.load(write())
    for version in (2, 3, None):  # committed, moved on since, or unknown
        assert bases.as_committed(stored, T1, 11, version) == (T1, T1)
        assert bases.as_committed(stored, EDITED, 99, version) == (T1, EDITED)


def test_a_write_that_never_put_its_file_in_place_leaves_the_file_it_found():
    stored = bases.load(write())
    assert bases.as_committed(stored, EDITED, 10, 1) == (T0, EDITED)


def test_a_write_that_put_its_file_in_place_is_read_as_the_file_it_found():
    stored = bases.load(write())
    assert bases.as_committed(stored, T1, 11, 1) == (T0, EDITED)
    # Appended to in place after the kill: the append moves onto the file it found.
    later = T1.rstrip("\n") + "\n\nAppended after the kill\n"
    assert bases.as_committed(stored, later, 11, 1) == (
        T0,
        text("First\n\nEdited in the file\n\nAppended after the kill"),
    )


def test_a_heading_removed_before_the_killed_write_stays_removed():
    found = EDITED.replace("# Approach\n1. Read the schema\n\n", "")
    stored = bases.load(bases.dump(bases.file_write(2, T1, 11, T0, found, 10)))
    later = T1.rstrip("\n") + "\n\nAppended after the kill\n"
    base, text = bases.as_committed(stored, later, 11, 1)
    assert base == T0
    assert "approach" not in parse(text).sections
    assert parse(text).sections["notes"] == "First\n\nEdited in the file\n\nAppended after the kill"


def test_a_write_of_a_first_file_is_its_own_base():
    stored = bases.load(bases.dump(bases.file_write(2, T1, 11, None, None, None)))
    assert bases.as_committed(stored, T1, 11, 1) == (T1, T1)
    assert bases.as_committed(stored, None, None, 1) == (None, None)  # its file gone since: nothing to read


def test_a_committed_record_is_kept_as_its_text_and_an_uncommitted_one_whole():
    committed = write(version=2)
    assert bases.file_write(3, T1, 12, committed, T1, 11).earlier == T1
    uncommitted = bases.file_write(2, T1, 12, committed, T1, 11)
    assert uncommitted.earlier == bases.load(committed)


def test_writes_killed_in_turn_are_remembered_up_to_a_limit():
    stored = T0
    for inode in range(20, 20 + bases.MOST_UNCOMMITTED + 3):
        stored = bases.dump(bases.file_write(2, T1, inode, stored, T1, inode - 1))
    depth, record = 0, bases.load(stored)
    while isinstance(record, bases.FileWrite):
        depth, record = depth + 1, record.earlier
    assert depth == bases.MOST_UNCOMMITTED
    assert record == T1  # the oldest remembered write is taken as committed
