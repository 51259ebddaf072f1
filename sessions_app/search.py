"""Full-text search over completed plans, one backend per database vendor.

Agents search with their own words, so a query is split into words (never passed to
the engine's query language), each word quoted, and the last one made a prefix. Plans
matching every word come first; when fewer than asked for match them all, the best
partial matches (any word) follow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection

FTS_TABLE = "sessions_app_plan_fts"
PLAN_TABLE = "sessions_app_plan"
WORD_RE = re.compile(r"\w+", re.UNICODE)

# Only completed plans are indexed (discarded ones are never searchable); the WHEN
# guards keep every other write off the index, which halves its cost.
SQLITE_SCHEMA = [
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(
        plan_id UNINDEXED, session_name UNINDEXED, goal, context, inputs, outputs, outcome,
        tokenize='unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ai AFTER INSERT ON {PLAN_TABLE}
        WHEN new.status = 'completed' BEGIN
        INSERT INTO {FTS_TABLE}(plan_id, session_name, goal, context, inputs, outputs, outcome)
        VALUES (new.id, new.session_name, new.goal, new.context, new.inputs, new.outputs, new.outcome);
        END""",
    # One trigger for both directions: two triggers on one event fire in an order
    # SQLite does not promise, and delete-after-insert would drop the row.
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_au AFTER UPDATE ON {PLAN_TABLE}
        WHEN old.status = 'completed' OR new.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE} WHERE old.status = 'completed' AND plan_id = old.id;
        INSERT INTO {FTS_TABLE}(plan_id, session_name, goal, context, inputs, outputs, outcome)
        SELECT new.id, new.session_name, new.goal, new.context, new.inputs, new.outputs, new.outcome
        WHERE new.status = 'completed';
        END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ad AFTER DELETE ON {PLAN_TABLE}
        WHEN old.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE} WHERE plan_id = old.id;
        END""",
]
SQLITE_TRIGGERS = (f"{FTS_TABLE}_ad", f"{FTS_TABLE}_ai", f"{FTS_TABLE}_au")


@dataclass(frozen=True)
class Hit:
    plan_id: str
    rank: int
    score: float


def words(query: str) -> list[str]:
    return WORD_RE.findall(query.lower())


def ensure_index(conn=None) -> None:
    """Create the search index and its triggers if missing; safe to run any number of times."""
    conn = conn or connection
    if conn.vendor != "sqlite":
        return
    with conn.cursor() as cur:
        for statement in SQLITE_SCHEMA:
            cur.execute(statement)


def ensure_index_after_migrate(sender, using="default", **kwargs) -> None:
    from django.db import connections

    ensure_index(connections[using])


def rebuild_index() -> int:
    """Re-fill the index from the completed plans (for repair); returns the row count."""
    if connection.vendor != "sqlite":
        return 0
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {FTS_TABLE}")
        cur.execute(
            f"""INSERT INTO {FTS_TABLE}(plan_id, session_name, goal, context, inputs, outputs, outcome)
            SELECT id, session_name, goal, context, inputs, outputs, outcome FROM {PLAN_TABLE}
            WHERE status = 'completed'"""
        )
        return cur.rowcount


def sqlite_triggers_present() -> list[str]:
    with connection.cursor() as cur:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE %s", [FTS_TABLE + "%"])
        return sorted(row[0] for row in cur.fetchall())


def _fts_query(terms: list[str], joiner: str) -> str:
    quoted = [f'"{t}"' for t in terms]
    quoted[-1] += "*"
    return f" {joiner} ".join(quoted)


def _sqlite_search(terms: list[str], session_name: str | None, limit: int) -> list[tuple[str, float]]:
    where = f"{FTS_TABLE} MATCH %s"
    found: list[tuple[str, float]] = []
    seen: set[str] = set()
    joiners = ["AND", "OR"] if len(terms) > 1 else ["AND"]
    with connection.cursor() as cur:
        for joiner in joiners:
            params: list = [_fts_query(terms, joiner)]
            sql = f"SELECT plan_id, rank FROM {FTS_TABLE} WHERE {where}"
            if session_name is not None:
                sql += " AND session_name = %s"
                params.append(session_name)
            sql += " ORDER BY rank LIMIT %s"
            params.append(limit + len(found))
            cur.execute(sql, params)
            for plan_id, score in cur.fetchall():
                if plan_id not in seen and len(found) < limit:
                    seen.add(plan_id)
                    found.append((plan_id, float(score)))
            if len(found) >= limit:
                break
    return found


def search(query: str, *, session_name: str | None, limit: int) -> list[Hit]:
    terms = words(query)
    if not terms:
        return []
    if connection.vendor == "sqlite":
        rows = _sqlite_search(terms, session_name, limit)
    else:
        rows = _postgres_search(terms, session_name, limit)
    return [Hit(plan_id=plan_id, rank=i + 1, score=score) for i, (plan_id, score) in enumerate(rows)]


def _postgres_search(terms: list[str], session_name: str | None, limit: int) -> list[tuple[str, float]]:
    # Until the tsvector index lands, PostgreSQL ranks by how many words a plan contains.
    from django.db.models import Case, IntegerField, Q, Value, When

    from sessions_app.models import Plan

    fields = ("goal", "context", "inputs", "outputs", "outcome")
    qs = Plan.objects.filter(status=Plan.Status.COMPLETED)
    if session_name is not None:
        qs = qs.filter(session_id=session_name)
    any_word = Q()
    score = Value(0)
    for term in terms:
        has = Q()
        for f in fields:
            has |= Q(**{f"{f}__icontains": term})
        any_word |= has
        score = score + Case(When(has, then=Value(1)), default=Value(0), output_field=IntegerField())
    rows = qs.filter(any_word).annotate(score=score).order_by("-score", "-completed_at").values_list("id", "score")
    return [(pid, -float(s)) for pid, s in rows[:limit]]
