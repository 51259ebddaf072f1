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
    matches (a second query for them cost as much as the match on a selective search)."""
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


# --- snippets ----------------------------------------------------------------------------

SNIPPET_FIELDS = ("goal", "outcome", "outputs", "context", "inputs")
SNIPPET_TOKENS = 16


@dataclass(frozen=True)
class Snippet:
    """A short excerpt of one field of a plan, around the words a query matched.

    ``text`` is plain text (never markup; "…" marks a cut) and ``spans`` are the
    ``[start, end)`` offsets of the matched words in it. A page escapes the pieces
    between and inside the spans on its own (``html()`` does exactly that), so text an
    agent wrote can never turn into markup, and no marker character inside the text can
    be mistaken for a highlight.
    """

    field: str
    text: str
    spans: tuple[tuple[int, int], ...]

    def html(self, tag: str = "mark") -> str:
        from django.utils.html import escape

        out, pos = [], 0
        for start, end in self.spans:
            out.append(escape(self.text[pos:start]))
            out.append(f"<{tag}>{escape(self.text[start:end])}</{tag}>")
            pos = end
        out.append(escape(self.text[pos:]))
        return "".join(out)


def _markers() -> tuple[str, str, re.Pattern[str]]:
    # Fresh random markers for every call: the database inserts them around matches, and
    # stored text cannot contain them by accident (or by an agent's design).
    import secrets

    nonce = secrets.token_hex(8)
    start, stop = f"S{nonce}S", f"E{nonce}E"
    return start, stop, re.compile(f"({start}|{stop})")


def _unmark(marked: str, start: str, stop: str, pattern: re.Pattern[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Marked text from the database as plain text and the offsets of its highlights."""
    text, spans, opened = [], [], None
    length = 0
    for piece in pattern.split(marked):
        if piece == start:
            opened = length
        elif piece == stop:
            if opened is not None and length > opened:
                spans.append((opened, length))
            opened = None
        else:
            text.append(piece)
            length += len(piece)
    return "".join(text), tuple(spans)


def _best(found: dict[str, dict[str, tuple[str, tuple]]]) -> dict[str, Snippet]:
    """For each plan, the field with the most highlighted words (ties: SNIPPET_FIELDS order)."""
    best: dict[str, Snippet] = {}
    for plan_id, by_field in found.items():
        ranked = sorted(
            ((name, *by_field[name]) for name in SNIPPET_FIELDS if by_field.get(name) and by_field[name][1]),
            key=lambda item: (-len(item[2]), SNIPPET_FIELDS.index(item[0])),
        )
        if ranked:
            name, text, spans = ranked[0]
            best[plan_id] = Snippet(field=name, text=text, spans=spans)
    return best


def snippets(plan_ids: list[str], query: str) -> dict[str, Snippet]:
    """Excerpts of the given plans around the words of ``query`` (any of them, the last one
    also as a prefix, as search() matches). Made by FTS5's snippet() on SQLite and by
    ts_headline() on PostgreSQL; meant for the few rows a search returned. Plans with no
    match (or that are not completed) are left out."""
    terms = words(query)
    ids = [plan_id for plan_id in dict.fromkeys(plan_ids) if isinstance(plan_id, str)]
    if not terms or not ids:
        return {}
    start, stop, pattern = _markers()
    found: dict[str, dict[str, tuple[str, tuple]]] = {}
    with connection.cursor() as cur:
        if connection.vendor == "sqlite":
            columns = ("goal", "context", "inputs", "outputs", "outcome")  # the FTS table's order
            calls = ", ".join(
                f"snippet({FTS_TABLE}, {2 + i}, %s, %s, '…', {SNIPPET_TOKENS})" for i in range(len(columns))
            )
            placeholders = ", ".join(["%s"] * len(ids))
            cur.execute(
                f"SELECT plan_id, {calls} FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s AND plan_id IN ({placeholders})",
                [start, stop] * len(columns) + [_fts_query(terms, "OR")] + ids,
            )
            for plan_id, *marked in cur.fetchall():
                found[plan_id] = {
                    name: _unmark(text or "", start, stop, pattern) for name, text in zip(columns, marked)
                }
        else:
            found = _postgres_snippets(cur, ids, terms, start, stop, pattern)
    return _best(found)


def _postgres_snippets(cur, ids, terms, start, stop, pattern) -> dict[str, dict[str, tuple[str, tuple]]]:
    # ts_headline runs on the field with every character that is not a letter or digit
    # replaced by one space: the words the index holds, at the same offsets as in the raw
    # text. The excerpt is then found in that normalized text and cut from the raw one, so
    # the page shows "billing/models.py", not "billing models py".
    options = (
        f"StartSel={start}, StopSel={stop}, MaxWords={SNIPPET_TOKENS + 4}, MinWords={SNIPPET_TOKENS // 2}, "
        "ShortWord=0, HighlightAll=false"
    )
    normalized = ", ".join(f"p.{name}, regexp_replace(p.{name}, %s, ' ', 'g') AS n_{name}" for name in SNIPPET_FIELDS)
    headlines = ", ".join(f"{name}, n_{name}, ts_headline('simple', n_{name}, q.query, %s)" for name in SNIPPET_FIELDS)
    cur.execute(
        f"""WITH q AS (SELECT to_tsquery('simple', %s) AS query)
        SELECT id, {headlines} FROM (
            SELECT p.id, {normalized} FROM {PLAN_TABLE} p, q
            WHERE p.id = ANY(%s) AND p.status = 'completed' AND p.{PG_VECTOR_COLUMN} @@ q.query
        ) AS p, q""",
        [_ts_query(terms, "|")] + [options] * len(SNIPPET_FIELDS) + [PG_NORMALIZE] * len(SNIPPET_FIELDS) + [ids],
    )
    found: dict[str, dict[str, tuple[str, tuple]]] = {}
    for plan_id, *values in cur.fetchall():
        by_field = {}
        for i, name in enumerate(SNIPPET_FIELDS):
            raw, flat, marked = (v or "" for v in values[3 * i : 3 * i + 3])
            plain, spans = _unmark(marked, start, stop, pattern)
            at = flat.find(plain)
            if not spans or at < 0:
                continue
            end = at + len(plain)
            before, after = ("…" if at > 0 else ""), ("…" if end < len(raw) else "")
            shift = len(before)
            by_field[name] = (before + raw[at:end] + after, tuple((a + shift, b + shift) for a, b in spans))
        found[plan_id] = by_field
    return found
