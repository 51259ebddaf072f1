"""Notes kept in one JSON file (see README.md for what each function must do)."""

from __future__ import annotations

from pathlib import Path


def add_note(path: Path, title: str, body: str, tags: tuple[str, ...] = ()) -> int:
    raise NotImplementedError("add_note: store the note and return its id")


def list_notes(path: Path) -> list[dict]:
    raise NotImplementedError("list_notes: every note, oldest first")


def search_notes(path: Path, query: str) -> list[dict]:
    raise NotImplementedError("search_notes: notes containing every word of the query")


def delete_note(path: Path, note_id: int) -> bool:
    raise NotImplementedError("delete_note: remove the note; False if there is none")
