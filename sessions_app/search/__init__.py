"""Full-text search over completed plans, one backend per database vendor: the one surface
the rest of 9plan imports.

Agents search with their own words, never the stored ones (``words``). Both engines stem
English words, so a word finds its other forms: "invoice" finds "invoices", "caching" finds
"cache" and "cached". The last word is also a prefix, as the agent may still be typing it
("configura" finds "configuration"). Plans matching every word come first; when fewer than
asked for match them all, the best partial matches (any word) follow. Accents are folded on
both engines: "cafe" finds "café" (docs/design.md, "Search").
"""

from __future__ import annotations

from django.db import connection

from sessions_app.search import postgres, sqlite
from sessions_app.search.hits import Hit
from sessions_app.search.postgres import PG_CONFIG, PG_INDEX, PG_RANK_CANDIDATES, PG_VECTOR_COLUMN
from sessions_app.search.sqlite import (
    FTS_TABLE,
    SCOPE_TABLE,
    SQLITE_SCHEMA,
    SQLITE_TRIGGERS,
    ensure_index,
    ensure_index_after_migrate,
    indexed_count,
    rebuild_index,
    sqlite_triggers_present,
)
from sessions_app.search.words import ACCENTS, ENDINGS, MAX_TERMS, bases, fold, shorter_stems, terms, words

__all__ = [
    "ACCENTS",
    "ENDINGS",
    "FTS_TABLE",
    "MAX_TERMS",
    "PG_CONFIG",
    "PG_INDEX",
    "PG_RANK_CANDIDATES",
    "PG_VECTOR_COLUMN",
    "SCOPE_TABLE",
    "SQLITE_SCHEMA",
    "SQLITE_TRIGGERS",
    "Hit",
    "bases",
    "ensure_index",
    "ensure_index_after_migrate",
    "fold",
    "indexed_count",
    "rebuild_index",
    "search",
    "shorter_stems",
    "sqlite_triggers_present",
    "terms",
    "words",
]


def search(query: str, *, session_name: str | None, limit: int, projects: frozenset[str] | None = None) -> list[Hit]:
    """The best ``limit`` completed plans for the query, best first, each with its plan: of
    one session, or (``session_name`` None) of every session of ``projects`` (None: all)."""
    words = terms(query)
    if not words:
        return []
    if connection.vendor == "sqlite":
        found = sqlite.search_plans(words, session_name, limit, projects)
    else:
        found = postgres.search_plans(words, session_name, limit, projects)
    return [Hit(plan_id=p.id, rank=i + 1, every_word=every, plan=p) for i, (p, every) in enumerate(found)]
