"""History search on PostgreSQL: a stored tsvector column with a GIN index on completed plans."""

from __future__ import annotations

from django.db import connection, transaction

from sessions_app.search import hits
from sessions_app.search.words import shorter_stems

# --- PostgreSQL -----------------------------------------------------------------------------
#
# Migrations 0006, 0013 and 0015 build a stored generated tsvector column (goal weight A,
# outputs and outcome B, context and inputs C, notes D) and a GIN index on it for completed
# plans only; the column is not on the Django model, so it is read with raw SQL here. The
# text search configuration (PG_CONFIG) stems English words like FTS5's porter, without the
# stop words of PostgreSQL's own 'english' ("it", "the" and "not" are words an agent may
# search for, and FTS5 finds them); PG_FOLD takes accents off the text first, as
# remove_diacritics does in FTS5.
# PostgreSQL's parser would keep "billing/models.py" or "a@b.com" as one token where FTS5
# sees words, so every character that is not a letter or digit becomes a space first.

PG_VECTOR_COLUMN = "search_vector"
PG_INDEX = "sessions_app_plan_search_gin"
PG_CONFIG = "nineplan_search"
PG_FOLD = "nineplan_fold"
PG_NORMALIZE = "[^[:alnum:]]"
# Ranking every match of a word found in nearly every plan would read every plan's vector;
# the matches are ranked in the index's order up to this many, which is far more than any
# one session holds.
PG_RANK_CANDIDATES = 10_000


def _ts_query(words: list[str], joiner: str) -> str:
    # Each word is quoted as a lexeme: words hold only letters, digits and "_", so no
    # tsquery operator can get in. A word the parser splits (snake_case) becomes a phrase.
    quoted = [f"'{w}'" for w in words[:-1]]
    last = [f"'{words[-1]}':*", *(f"'{s}'" for s in shorter_stems(words[-1]))]
    quoted.append(last[0] if len(last) == 1 else "(" + " | ".join(last) + ")")
    return f" {joiner} ".join(quoted)


def search_plans(
    words: list[str], session_name: str | None, limit: int, projects: frozenset[str] | None = None
) -> list[tuple]:
    with transaction.atomic(), connection.cursor() as cur:
        # Each search is planned for its own parameters, never given the one plan the
        # connection would keep for a statement it prepared: the best plan depends on how many
        # plans the session holds, and one kept from large sessions' searches reads all their
        # matches to find a small session's few.
        cur.execute("SET LOCAL plan_cache_mode = force_custom_plan")
        return _postgres_matches(words, session_name, limit, projects)


def _postgres_matches(
    words: list[str], session_name: str | None, limit: int, projects: frozenset[str] | None
) -> list[tuple]:
    found: list[tuple] = []
    joiners = ["&", "|"] if len(words) > 1 else ["&"]
    for joiner in joiners:
        params: list = [_ts_query(words, joiner)]
        where = f"p.status = 'completed' AND p.{PG_VECTOR_COLUMN} @@ q.query"
        if session_name is not None:
            where += " AND p.session_name = %s"
            params.append(session_name)
        else:
            condition, more = hits.in_projects("p.session_name", projects)
            where += condition
            params += more
        if found:
            where += " AND NOT (p.id = ANY(%s))"
            params.append([plan.id for plan, _ in found])
        params += [PG_RANK_CANDIDATES, limit - len(found)]
        # Normalization 1 divides by the log of the plan's length, so that, as with BM25,
        # a word in a short plan counts for more than in a long one.
        rows = hits.ranked(
            f"""WITH q AS (SELECT to_tsquery('{PG_CONFIG}', {PG_FOLD}(%s)) AS query),
                matches AS (
                    SELECT p.id, p.completed_at, ts_rank(p.{PG_VECTOR_COLUMN}, q.query, 1) AS score
                    FROM {hits.PLAN_TABLE} p, q WHERE {where} LIMIT %s),
                best AS (SELECT id, score FROM matches ORDER BY score DESC, completed_at DESC, id LIMIT %s)
            SELECT {hits.HIT_COLUMNS}, best.score
            FROM best JOIN {hits.PLAN_TABLE} AS p ON p.id = best.id
            ORDER BY best.score DESC, p.completed_at DESC, p.id""",
            params,
        )
        found += [(plan, joiner == "&") for plan, _ in rows]
        if len(found) >= limit:
            break
    return found
