"""A note keeper: notes in one JSON file."""

from notekeeper.store import add_note, delete_note, list_notes, search_notes

__all__ = ["add_note", "delete_note", "list_notes", "search_notes"]
