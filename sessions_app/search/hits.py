"""What a search finds: each completed plan with its rank and a relevance both backends
give on one scale, read from the plan rows by the ORM."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sessions_app.models import Plan, Session

PLAN_TABLE = Plan._meta.db_table
SESSION_TABLE = Session._meta.db_table


@dataclass(slots=True)
class Hit:
    plan_id: str
    rank: int
    # Bigger is better, from 0 to 1, and never bigger than the hit ranked before it: 0.5
    # and above for a plan holding every word of the query, below 0.5 for one holding only
    # some; within each, the engine's score (BM25 on SQLite, ts_rank on PostgreSQL),
    # squeezed into that half.
    relevance: float
    plan: Any = None  # the completed Plan


def relevance(score: float, every_word: bool) -> float:
    score = max(score, 0.0)
    return (0.5 if every_word else 0.0) + 0.5 * score / (1.0 + score)


# What a hit is read with (the tools, the admin and the REST API): its identity, the searched
# sections and when it was completed, from the plan row aliased p. The rest (the approach and
# notes above all, often the longest sections) loads on first access.
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
