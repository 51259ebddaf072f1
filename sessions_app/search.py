"""Full-text search over completed plans, one backend per database vendor.

Agents search with their own words, so a query is split into words (never passed to
the engine's query language), each word quoted, and the last one made a prefix. Plans
matching every word come first; when fewer than asked for match them all, the best
partial matches (any word) follow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import connection

FTS_TABLE = "sessions_app_plan_fts"
PLAN_TABLE = "sessions_app_plan"
WORD_RE = re.compile(r"\w+", re.UNICODE)

# Only completed plans are indexed (discarded ones are never searchable); the WHEN
# guards keep every other write off the index, which makes it markedly cheaper
# (docs/benchmarks.md).
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


@dataclass(slots=True)
class Hit:
    plan_id: str
    rank: int
    score: float
    plan: Any = None  # the completed Plan


def words(query: str) -> list[str]:
    # "_" counts as a letter for \w but separates words in both engines: a run of
    # underscores alone is no word (FTS5 would read it as an empty phrase that matches
    # nothing, PostgreSQL would drop it: the two would disagree).
    return [w for w in WORD_RE.findall(query.lower()) if w.strip("_")]


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


def indexed_count(session_name: str | None = None) -> int | None:
    """How many plans the SQLite index holds (of one session, or all); None elsewhere.

    The whole index is counted from its docsize table (one row per document, no text);
    one session's count scans the index, as session_name is not an indexed column.
    """
    if connection.vendor != "sqlite":
        return None
    with connection.cursor() as cur:
        if session_name is None:
            cur.execute(f"SELECT count(*) FROM {FTS_TABLE}_docsize")
        else:
            cur.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE session_name = %s", [session_name])
        return cur.fetchone()[0]


def sqlite_triggers_present() -> list[str]:
    with connection.cursor() as cur:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE %s", [FTS_TABLE + "%"])
        return sorted(row[0] for row in cur.fetchall())


def _fts_query(terms: list[str], joiner: str) -> str:
    quoted = [f'"{t}"' for t in terms]
    quoted[-1] += "*"
    return f" {joiner} ".join(quoted)


def _sqlite_search(terms: list[str], session_name: str | None, limit: int) -> list[tuple]:
    """(plan, score) of the best matches; the plan rows come in the same statement as the
    matches (a second query for them was a large part of a selective search's cost;
    docs/benchmarks.md)."""
    from sessions_app import statements

    found: list[tuple] = []
    seen: set[str] = set()
    joiners = ["AND", "OR"] if len(terms) > 1 else ["AND"]
    for joiner in joiners:
        params: list = [_fts_query(terms, joiner)]
        matches = f"SELECT plan_id, rank FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s"
        if session_name is not None:
            matches += " AND session_name = %s"
            params.append(session_name)
        matches += " ORDER BY rank LIMIT %s"
        params.append(limit + len(found))
        sql = (
            f"SELECT {statements.HIT_COLUMNS}, hit.rank FROM ({matches}) AS hit "
            f"JOIN {PLAN_TABLE} AS p ON p.id = hit.plan_id ORDER BY hit.rank"
        )
        for plan, score in statements.hits_with_score(sql, params):
            if plan.id not in seen and len(found) < limit:
                seen.add(plan.id)
                found.append((plan, score))
        if len(found) >= limit:
            break
    return found


def search(query: str, *, session_name: str | None, limit: int) -> list[Hit]:
    """The best ``limit`` completed plans for the query, best first, each with its plan."""
    terms = words(query)
    if not terms:
        return []
    if connection.vendor == "sqlite":
        found = _sqlite_search(terms, session_name, limit)
    else:
        found = _postgres_search(terms, session_name, limit)
    return [Hit(plan_id=p.id, rank=i + 1, score=float(score), plan=p) for i, (p, score) in enumerate(found)]


# --- PostgreSQL -----------------------------------------------------------------------------
#
# Migration 0003 adds a stored generated tsvector column (goal weight A, outputs and outcome
# B, context and inputs C) and a GIN index on it for completed plans only; the column is not
# on the Django model, so it is read with raw SQL here. The 'simple' configuration only
# lowercases, like FTS5's unicode61. PostgreSQL's parser would keep "billing/models.py" or
# "a@b.com" as one token where FTS5 sees words, so the column is built from the text with
# every character that is not a letter or digit turned into a space (PG_NORMALIZE).

PG_VECTOR_COLUMN = "search_vector"
PG_INDEX = "sessions_app_plan_search_gin"
PG_NORMALIZE = "[^[:alnum:]]"
# Ranking every match of a word found in nearly every plan would read every plan's vector;
# the matches are ranked in the index's order up to this many, which is far more than any
# one session holds.
PG_RANK_CANDIDATES = 10_000


def _ts_query(terms: list[str], joiner: str) -> str:
    # Each word is quoted as a lexeme: words hold only letters, digits and "_", so no
    # tsquery operator can get in. A word the parser splits (snake_case) becomes a phrase.
    quoted = [f"'{t}'" for t in terms]
    quoted[-1] += ":*"
    return f" {joiner} ".join(quoted)


def _postgres_search(terms: list[str], session_name: str | None, limit: int) -> list[tuple]:
    from sessions_app import statements

    found: list[tuple] = []
    joiners = ["&", "|"] if len(terms) > 1 else ["&"]
    for joiner in joiners:
        params: list = [_ts_query(terms, joiner)]
        where = f"p.status = 'completed' AND p.{PG_VECTOR_COLUMN} @@ q.query"
        if session_name is not None:
            where += " AND p.session_name = %s"
            params.append(session_name)
        if found:
            where += " AND NOT (p.id = ANY(%s))"
            params.append([plan.id for plan, _ in found])
        params += [PG_RANK_CANDIDATES, limit - len(found)]
        # Normalization 1 divides by the log of the plan's length, so that, as with BM25,
        # a word in a short plan counts for more than in a long one. Scores are negated so
        # that, as with FTS5's rank, lower is better.
        found += statements.hits_with_score(
            f"""WITH q AS (SELECT to_tsquery('simple', %s) AS query),
                matches AS (
                    SELECT p.id, p.completed_at, ts_rank(p.{PG_VECTOR_COLUMN}, q.query, 1) AS score
                    FROM {PLAN_TABLE} p, q WHERE {where} LIMIT %s),
                best AS (SELECT id, score FROM matches ORDER BY score DESC, completed_at DESC, id LIMIT %s)
            SELECT {statements.HIT_COLUMNS}, -best.score
            FROM best JOIN {PLAN_TABLE} AS p ON p.id = best.id
            ORDER BY best.score DESC, p.completed_at DESC, p.id""",
            params,
        )
        if len(found) >= limit:
            break
    return found
