"""What the history search's tests share: the SQLite-only mark, both SQLite search paths,
and a session's hits as plan ids."""

from __future__ import annotations

import pytest
from django.db import connection

from sessions_app.reads import queries

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="FTS5 is the SQLite backend")
# Each test of the ranking and the index runs on both SQLite paths: a small session's own
# temporary index, and the shared one.
on_both_sqlite_paths = pytest.mark.usefixtures("search_path")

FILLER = " ".join(f"word{i}" for i in range(60))


def found(query, session, **kwargs) -> list[str]:
    return [h.plan.id for h in queries.history_search(query, session_name=session.name, **kwargs)]
