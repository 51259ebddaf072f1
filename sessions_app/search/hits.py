"""What a search finds: each completed plan with its rank and whether it holds every word
of the query, read from the plan rows by the ORM."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sessions_app.models import Plan, Session

PLAN_TABLE = Plan._meta.db_table
SESSION_TABLE = Session._meta.db_table


@dataclass(slots=True)
class Hit:
    """No score is shown, only the place (``rank``, 1 the best) and ``every_word``: the
    engines' scores depend on what else is indexed (BM25 weighs a word by how many plans
    hold it, on SQLite in the whole index or in the session's own), so one plan read 0.00
    in one search and 0.16 in the next, and a word in nearly every plan scored 0 while
    matching. Whether the plan holds every word of the query depends on the plan and the
    query alone."""

    plan_id: str
    rank: int
    every_word: bool
    plan: Any = None  # the completed Plan


# What a hit is read with (the tools, the admin and the REST API): its identity, the sections
# answers show or excerpt and when it was completed, from the plan row aliased p. The rest
# (the approach and Notes above all, often the longest sections) loads on first access: the
# Notes, though searched, only for an excerpt when no other section holds a match.
_COLUMNS = {field.name: field.column for field in Plan._meta.concrete_fields}
HIT_COLUMNS = ", ".join(
    f"p.{_COLUMNS[name]}"
    for name in ("id", "session", "status", "goal", "context", "inputs", "outputs", "outcome", "completed_at")
)


def ranked(sql: str, params: list) -> list[tuple[Plan, float]]:
    """Each row of ``sql`` (HIT_COLUMNS, then the match's ``score``) as its plan and score.
    Raw because it matches and ranks (FTS5's MATCH and rank, PostgreSQL's @@ and ts_rank),
    which the ORM cannot say; the ORM makes the plans of its rows."""
    # The score is the statement's own column, which raw() sets on each plan it makes.
    return [(plan, plan.score) for plan in Plan.objects.raw(sql, params)]  # type: ignore[attr-defined]


def in_projects(column: str, projects: frozenset[str] | None) -> tuple[str, list]:
    """A condition keeping the rows whose session (``column``) belongs to ``projects``
    (every row when None), and its parameters."""
    if projects is None:
        return "", []
    if not projects:
        return " AND 1 = 0", []
    marks = ", ".join(["%s"] * len(projects))
    return f" AND {column} IN (SELECT name FROM {SESSION_TABLE} WHERE project_name IN ({marks}))", sorted(projects)
