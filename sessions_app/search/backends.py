"""Full-text search over completed plans, one backend per database vendor.

Agents search with their own words, never the stored ones, so a query is split into words
(never passed to the engine's query language), repeated words counted once and at most
``MAX_TERMS`` of them kept. Both engines stem English words, so a word finds its other
forms: "invoice" finds "invoices", "caching" finds "cache" and "cached". The last word is
also a prefix, as the agent may still be typing it ("configura" finds "configuration").
Plans matching every word come first; when fewer than asked for match them all, the best
partial matches (any word) follow. Accents are folded on both engines: "cafe" finds "café".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from sessions_app.models import Plan, Session

PLAN_TABLE = Plan._meta.db_table
SESSION_TABLE = Session._meta.db_table
FTS_TABLE = f"{PLAN_TABLE}_fts"
WORD_RE = re.compile(r"\w+", re.UNICODE)
# Words past this many (after repeats are dropped) are ignored: each word is a term the
# engine must look up, and a query that names sixteen things has said what it wants.
MAX_TERMS = 16

# Endings an English stemmer takes off a word (Porter's on SQLite, Snowball's on
# PostgreSQL), alone or one after the other. A word typed in part may run past its stem
# ("configura" for "configuration", stored as "configur"); a shorter stem stands in for
# it only when what the word adds to that stem starts one of these endings, so that
# "configura" finds "configure" but not "config". The highlighter reads the same list
# to mark the forms a word matched.
ENDINGS = (
    "s",
    "es",
    "ies",
    "ied",
    "ed",
    "eed",
    "ing",
    "ings",
    "e",
    "er",
    "ers",
    "y",
    "ly",
    "ily",
    "ion",
    "ions",
    "ional",
    "ionally",
    "ation",
    "ations",
    "ational",
    "ate",
    "ated",
    "ates",
    "ating",
    "ator",
    "ators",
    "ative",
    "ment",
    "ments",
    "ement",
    "al",
    "ally",
    "alism",
    "ality",
    "alize",
    "alized",
    "alization",
    "ize",
    "ized",
    "izes",
    "izing",
    "izer",
    "izers",
    "ization",
    "izations",
    "ity",
    "ities",
    "ive",
    "ively",
    "iveness",
    "ivity",
    "ness",
    "ful",
    "fully",
    "fulness",
    "able",
    "ably",
    "ability",
    "ible",
    "ibly",
    "ibility",
    "ance",
    "ances",
    "ence",
    "ences",
    "ency",
    "ant",
    "ants",
    "ent",
    "ently",
    "ic",
    "ical",
    "ically",
    "icate",
    "icity",
    "ism",
    "isms",
    "ous",
    "ously",
    "ousness",
)
_ENDING_PREFIXES = frozenset(e[:i] for e in ENDINGS for i in range(1, len(e) + 1))
_LONGEST_ENDING = max(map(len, ENDINGS))
# A word is never cut shorter than this: too many words begin with two letters.
MIN_STEM = 3
# A shorter stem standing in for a word typed in part is at least this long: three letters
# left of a long word are a stem of too many other words ("rel" of "relati").
MIN_SHORTER_STEM = 4


def _accent_table() -> dict[str, str]:
    """Each Latin letter with diacritics and the letter it folds to: the letters FTS5's
    ``remove_diacritics 2`` folds (migration 0006 writes the same table out for PostgreSQL)."""
    table = {"ſ": "s", "ẛ": "s"}
    for code in [*range(0xC0, 0x250), *range(0x1E00, 0x1F00)]:
        parts = unicodedata.normalize("NFD", chr(code))
        base = parts[0]
        if len(parts) > 1 and base.isascii() and base.isalpha() and all(map(unicodedata.combining, parts[1:])):
            table[chr(code)] = base
    return table


ACCENTS = _accent_table()
_FOLD = str.maketrans(ACCENTS)


def fold(text: str) -> str:
    """``text`` with the accents both engines ignore taken off ("Café" -> "Cafe")."""
    return text.translate(_FOLD)


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


def _relevance(score: float, every_word: bool) -> float:
    score = max(score, 0.0)
    return (0.5 if every_word else 0.0) + 0.5 * score / (1.0 + score)


def words(query: str) -> list[str]:
    # "_" counts as a letter for \w but separates words in both engines: a run of
    # underscores alone is no word (FTS5 would read it as an empty phrase that matches
    # nothing, PostgreSQL would drop it: the two would disagree).
    return [w for w in WORD_RE.findall(query.lower()) if w.strip("_")]


def terms(query: str) -> list[str]:
    """The words a search looks for: each once, at most ``MAX_TERMS``, in the order typed,
    and the query's last word last (it is the one read as a prefix)."""
    found = words(query)
    if not found:
        return []
    last = found[-1]
    before = list(dict.fromkeys(w for w in found[:-1] if w != last))
    return before[: MAX_TERMS - 1] + [last]


def _ending_of(word: str) -> str:
    """The longest of ENDINGS that ``word`` ends with and can lose, or ""."""
    return max(
        (e for e in ENDINGS if word.endswith(e) and len(word) - len(e) >= MIN_STEM),
        key=len,
        default="",
    )


def bases(word: str) -> list[str]:
    """``word`` and what is left of it without an ending (its stem, near enough), with a
    doubled last consonant undone ("running" -> "runn", "run")."""
    word = fold(word)
    found = [word]
    for ending in ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_STEM:
            base = word[: -len(ending)]
            found.append(base)
            if len(base) > MIN_STEM and base[-1] == base[-2] and base[-1] not in "aeiou":
                found.append(base[:-1])
            if base.endswith("i"):
                found.append(base[:-1] + "y")
    return list(dict.fromkeys(found))


def shorter_stems(word: str) -> list[str]:
    """The stems shorter than a word typed in part that a word it begins may be stored as:
    "configura" -> ["configur"] (as "configuration" is). Only stems shorter than the
    engine's own stem of ``word`` are given, as that one its prefix search finds already."""
    word = fold(word)
    own = len(word) - len(_ending_of(word))
    found = []
    for k in range(max(MIN_SHORTER_STEM, len(word) - _LONGEST_ENDING - 1), own):
        stem, tail = word[:k], word[k:]
        doubled = tail[0] == stem[-1] and stem[-1] not in "aeiou" and (len(tail) == 1 or tail[1:] in _ENDING_PREFIXES)
        if tail in _ENDING_PREFIXES or doubled:
            found.append(stem)
    return found


# --- SQLite ---------------------------------------------------------------------------------
#
# An FTS5 table over the completed plans only (the WHEN guards keep every other write off
# it, which halves its cost), kept by triggers. Porter's stemmer over unicode61 with
# diacritics removed: "invoices" is stored as "invoic", "café" as "cafe".
#
# session_key holds the session's name as one word (U+E000 then the name with "0" for
# "-": "brave-amber-otter" -> "\ue000brave0amber0otter"), so that a search in a small
# session matches on it inside FTS5 and reads that session's entries only, whatever other
# sessions hold. FTS5 reads a private-use character as a letter, and a query's words
# (\w runs) never hold one, so no word, nor any prefix, can match a key. Two names could
# give one stem, so session_name (not indexed) is compared as well. BM25 weighs the key 0.
# A session holding a good share of the index (SESSION_SHARE or more) is searched without
# the key: its entries are most of what a word matches, and keeping them by name is
# cheaper than merging the key's long list of entries with the word's.
#
# Even through its key, a search reads more than its session's entries in two places:
# FTS5 gathers every stored word that begins with the query's last word (a prefix) in the
# whole index, and BM25 counts how many plans of the whole index hold each word. So a
# small session (at most SMALL_SESSION completed plans holding at most SMALL_SESSION_CHARS
# of text) is searched in an index of its own, in the connection's temporary database,
# from its plans' rows: its cost is the session's size alone, whatever other sessions
# hold, and BM25 weighs a word by how common it is in that session. The index stays from
# one search to the next and each search brings it up to date with what changed since
# (_fill_scope), so an agent searching its own session pays for the plans completed since
# its last search, not for indexing the whole session again.

SESSION_SHARE = 4  # the key is matched on while the session holds less than 1/4 of the index
SMALL_SESSION = 64  # completed plans
SMALL_SESSION_CHARS = 65_536  # of searched text in them
SCOPE_TABLE = "nineplan_session_scope"
# The index's columns, and the SQL that gives them from a plan row ("new." or "old." in a
# trigger, nothing in a plain SELECT): the session's key is made the way session_key()
# makes it.
INDEXED = "plan_id, session_name, session_key, goal, context, inputs, outputs, outcome"


def _indexed_values(row: str) -> str:
    return (
        f"{row}id, {row}session_name, char(57344) || replace({row}session_name, '-', '0'), "
        f"{row}goal, {row}context, {row}inputs, {row}outputs, {row}outcome"
    )


# The old row's entry, found through its session's key (see _session_match), so that a
# delete reads that session's entries only.
_OLD_ENTRY = (
    f"""{FTS_TABLE} MATCH 'session_key : "' || char(57344) || replace(replace(old.session_name, '-', '0'), '"', '""') || '"'"""
    " AND plan_id = old.id"
)

SQLITE_SCHEMA = [
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(
        plan_id UNINDEXED, session_name UNINDEXED, session_key,
        goal, context, inputs, outputs, outcome,
        tokenize='porter unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ai AFTER INSERT ON {PLAN_TABLE}
        WHEN new.status = 'completed' BEGIN
        INSERT INTO {FTS_TABLE}({INDEXED}) VALUES ({_indexed_values("new.")});
        END""",
    # One trigger for both directions: two triggers on one event fire in an order
    # SQLite does not promise, and delete-after-insert would drop the row.
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_au AFTER UPDATE ON {PLAN_TABLE}
        WHEN old.status = 'completed' OR new.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE} WHERE old.status = 'completed' AND {_OLD_ENTRY};
        INSERT INTO {FTS_TABLE}({INDEXED}) SELECT {_indexed_values("new.")} WHERE new.status = 'completed';
        END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ad AFTER DELETE ON {PLAN_TABLE}
        WHEN old.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE} WHERE {_OLD_ENTRY};
        END""",
]
SQLITE_TRIGGERS = (f"{FTS_TABLE}_ad", f"{FTS_TABLE}_ai", f"{FTS_TABLE}_au")
# BM25 weights in column order: plan_id, session_name, session_key, then the searched
# sections. Given as the query's rank function, so that FTS5 sorts by it itself (sorting
# by a bm25() column outside FTS5 cost twice as much on a word in every plan).
RANK = "bm25(0, 0, 0, 1, 1, 1, 1, 1)"
# The session's own index: plan_id, then the searched sections.
SCOPE_SCHEMA = f"""CREATE VIRTUAL TABLE IF NOT EXISTS temp.{SCOPE_TABLE} USING fts5(
    plan_id UNINDEXED, goal, context, inputs, outputs, outcome,
    tokenize='porter unicode61 remove_diacritics 2')"""
SCOPE_RANK = "bm25(0, 1, 1, 1, 1, 1)"
SCOPE_COLUMNS = ("goal", "context", "inputs", "outputs", "outcome")


def session_key(session_name: str) -> str:
    return "\ue000" + session_name.replace("-", "0")


def _session_match(session_name: str) -> str:
    return 'session_key : "' + session_key(session_name).replace('"', '""') + '"'


def ensure_index(conn=None) -> None:
    """Create the search index and its triggers if missing; safe to run any number of times.

    An index of the shape before migration 0006 (no session_key) is left alone: its
    migration rebuilds it, and triggers for the new shape would break every write to it.
    """
    conn = conn or connection
    if conn.vendor != "sqlite":
        return
    with conn.cursor() as cur:
        cur.execute(f"SELECT name FROM pragma_table_info('{FTS_TABLE}')")
        columns = {row[0] for row in cur.fetchall()}
        if columns and "session_key" not in columns:
            return
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
            f"INSERT INTO {FTS_TABLE}({INDEXED}) SELECT {_indexed_values('')} FROM {PLAN_TABLE} WHERE status = 'completed'"
        )
        return cur.rowcount


def indexed_count(session_name: str | None = None) -> int | None:
    """How many plans the SQLite index holds (of one session, or all); None elsewhere.

    The whole index is counted from its docsize table (one row per document, no text);
    one session's count reads that session's entries through its key.
    """
    if connection.vendor != "sqlite":
        return None
    with connection.cursor() as cur:
        if session_name is None:
            cur.execute(f"SELECT count(*) FROM {FTS_TABLE}_docsize")
        else:
            cur.execute(
                f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s AND session_name = %s",
                [_session_match(session_name), session_name],
            )
        return cur.fetchone()[0]


def sqlite_triggers_present() -> list[str]:
    with connection.cursor() as cur:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE %s", [FTS_TABLE + "%"])
        return sorted(row[0] for row in cur.fetchall())


def _fts_query(words: list[str], joiner: str, session_name: str | None = None) -> str:
    """The FTS5 query: each word quoted (so no operator gets in), the last one a prefix or
    one of its shorter stems. No word can match a session key (see above), so the words
    need no column filter, which made a prefix cost twice as much."""
    quoted = [f'"{w}"' for w in words[:-1]]
    last = [f'"{words[-1]}"*', *(f'"{s}"' for s in shorter_stems(words[-1]))]
    quoted.append(last[0] if len(last) == 1 else "(" + " OR ".join(last) + ")")
    query = "(" + f" {joiner} ".join(quoted) + ")"
    if session_name is not None:
        query = f"{_session_match(session_name)} AND {query}"
    return query


# How one session is searched (_search_way): in an index of its own, in the shared index
# through the session's key, or in the shared index keeping the session's rows by name.
OWN_INDEX, BY_KEY, BY_NAME = "own index", "by key", "by name"


_SEARCH_WAY = f"""SELECT CASE WHEN count_completed <= %s AND (
        SELECT coalesce(sum(length(goal) + length(context) + length(inputs) + length(outputs) + length(outcome)), 0)
        FROM {PLAN_TABLE} WHERE session_name = %s AND status = 'completed') <= %s THEN %s
    WHEN count_completed * %s < (SELECT coalesce(max(id), 0) FROM {FTS_TABLE}_docsize) THEN %s
    ELSE %s END
FROM {SESSION_TABLE} WHERE name = %s"""
_SCOPE_SAME_TEXT = " AND ".join(f"p.{column} IS s.{column}" for column in SCOPE_COLUMNS)
_SCOPE_DROP_STALE = f"""DELETE FROM temp.{SCOPE_TABLE} WHERE rowid IN (
    SELECT s.rowid FROM temp.{SCOPE_TABLE} AS s LEFT JOIN {PLAN_TABLE} AS p
    ON p.id = s.plan_id AND p.session_name = %s AND p.status = 'completed' AND {_SCOPE_SAME_TEXT}
    WHERE p.id IS NULL)"""
_SCOPE_ADD_NEW = f"""INSERT INTO temp.{SCOPE_TABLE}(plan_id, {", ".join(SCOPE_COLUMNS)})
    SELECT id, {", ".join(SCOPE_COLUMNS)} FROM {PLAN_TABLE}
    WHERE session_name = %s AND status = 'completed'
    AND id NOT IN (SELECT plan_id FROM temp.{SCOPE_TABLE})"""


def _raw(sql: str, params: list | None = None) -> tuple | None:
    """Runs a statement of the search's own on Django's cursor, raw because it reads or
    writes an FTS5 index, which no model maps; its first row, if it returns any."""
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchone() if cur.description else None


# What a hit is read with (the tools, the admin and the REST API): its identity, the searched
# sections and when it was completed, from the plan row aliased p. The rest (the approach and
# notes above all, often the longest sections) loads on first access.
HIT_COLUMNS = ", ".join(
    f"p.{Plan._meta.get_field(name).column}"
    for name in ("id", "session", "status", "goal", "context", "inputs", "outputs", "outcome", "completed_at")
)


def _hits(sql: str, params: list) -> list[tuple[Plan, float]]:
    """Each row of ``sql`` (HIT_COLUMNS, then the match's ``score``) as its plan and score.
    Raw because it matches and ranks (FTS5's MATCH and rank, PostgreSQL's @@ and ts_rank),
    which the ORM cannot say; the ORM makes the plans of its rows."""
    return [(plan, plan.score) for plan in Plan.objects.raw(sql, params)]


def _search_way(session_name: str) -> str:
    """How to search the session, read in one statement from its row: a small session (few
    completed plans, and little text in them: indexing is that path's cost) in an index of
    its own; one holding less than 1/SESSION_SHARE of the shared index through its key;
    any other by name. The text is summed only when the count is small.

    The index's size is the highest row number it has given out (one end of a b-tree): it
    counts the entries of deleted sessions too, so a session may be searched through its
    key where its name would have been a little faster, never the wrong plans. Counting
    the entries instead read every page of the index's size table on every search (0.35
    ms at 100,000 plans once the search's own pages had pushed them out of SQLite's
    cache), and so did the CASE that chose the MATCH text inside the search's statement."""
    row = _raw(
        _SEARCH_WAY,
        [SMALL_SESSION, session_name, SMALL_SESSION_CHARS, OWN_INDEX, SESSION_SHARE, BY_KEY, BY_NAME, session_name],
    )
    # No such session: nothing of it is indexed, and matching by name finds nothing.
    return row[0] if row else BY_NAME


def _fill_scope(session_name: str) -> None:
    """The session's completed plans, alone in the connection's temporary index. The
    temporary database is the connection's own: nothing is written to the database file,
    and no other connection waits.

    The index is kept from one search to the next and brought up to date in two
    statements: entries whose plan is no longer the session's completed plan with the
    same text go, completed plans without an entry come in. A search after one more plan
    was completed indexes that plan alone, not the whole session again; a search in
    another session replaces every entry. The index is a table of the connection, so a
    rolled-back transaction takes its changes back with the rest."""
    _raw(SCOPE_SCHEMA)
    _raw(_SCOPE_DROP_STALE, [session_name])
    _raw(_SCOPE_ADD_NEW, [session_name])


def _in_projects(column: str, projects: frozenset[str] | None) -> tuple[str, list]:
    """A condition keeping the rows whose session (``column``) belongs to ``projects``
    (every row when None), and its parameters."""
    if projects is None:
        return "", []
    if not projects:
        return " AND 1 = 0", []
    marks = ", ".join(["%s"] * len(projects))
    return f" AND {column} IN (SELECT name FROM {SESSION_TABLE} WHERE project_name IN ({marks}))", sorted(projects)


def _sqlite_search(
    words: list[str], session_name: str | None, limit: int, projects: frozenset[str] | None = None
) -> list[tuple]:
    """(plan, relevance) of the best matches; the plan rows come in the same statement as
    the matches (a second query for them cost as much as the match on a selective search)."""

    way = _search_way(session_name) if session_name is not None else None
    scoped = way == OWN_INDEX
    if scoped:
        _fill_scope(session_name)
    found: list[tuple] = []
    seen: set[str] = set()
    joiners = ["AND", "OR"] if len(words) > 1 else ["AND"]
    for joiner in joiners:
        if scoped:
            table, rank, match, params = f"temp.{SCOPE_TABLE}", SCOPE_RANK, "%s", [_fts_query(words, joiner)]
        elif session_name is None:
            table, rank, match, params = FTS_TABLE, RANK, "%s", [_fts_query(words, joiner)]
        else:
            keyed = session_name if way == BY_KEY else None
            table, rank, match, params = FTS_TABLE, RANK, "%s", [_fts_query(words, joiner, keyed)]
        name = table.rpartition(".")[2]
        matches = f"SELECT plan_id, rank FROM {table} WHERE {name} MATCH {match} AND rank MATCH '{rank}'"
        if session_name is not None and not scoped:
            matches += " AND session_name = %s"
            params.append(session_name)
        if session_name is None:
            condition, more = _in_projects("session_name", projects)
            matches += condition
            params += more
        matches += " ORDER BY rank LIMIT %s"
        params.append(limit + len(found))
        sql = (
            f"SELECT {HIT_COLUMNS}, hit.rank AS score FROM ({matches}) AS hit "
            f"JOIN {PLAN_TABLE} AS p ON p.id = hit.plan_id ORDER BY hit.rank"
        )
        for plan, score in _hits(sql, params):
            if plan.id not in seen and len(found) < limit:
                seen.add(plan.id)
                # BM25 in FTS5 is negative, more so for a better match.
                found.append((plan, _relevance(-score, joiner == "AND")))
        if len(found) >= limit:
            break
    return found


def search(query: str, *, session_name: str | None, limit: int, projects: frozenset[str] | None = None) -> list[Hit]:
    """The best ``limit`` completed plans for the query, best first, each with its plan: of
    one session, or (``session_name`` None) of every session of ``projects`` (None: all)."""
    words = terms(query)
    if not words:
        return []
    if connection.vendor == "sqlite":
        found = _sqlite_search(words, session_name, limit, projects)
    else:
        found = _postgres_search(words, session_name, limit, projects)
    return [Hit(plan_id=p.id, rank=i + 1, relevance=r, plan=p) for i, (p, r) in enumerate(found)]


# --- PostgreSQL -----------------------------------------------------------------------------
#
# Migration 0006 builds a stored generated tsvector column (goal weight A, outputs and outcome
# B, context and inputs C) and a GIN index on it for completed plans only; the column is not
# on the Django model, so it is read with raw SQL here. The text search configuration
# (PG_CONFIG) stems English words like FTS5's porter, without the stop words of PostgreSQL's
# own 'english' ("it", "the" and "not" are words an agent may search for, and FTS5 finds
# them); PG_FOLD takes accents off the text first, as remove_diacritics does in FTS5.
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


def _postgres_search(
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
            condition, more = _in_projects("p.session_name", projects)
            where += condition
            params += more
        if found:
            where += " AND NOT (p.id = ANY(%s))"
            params.append([plan.id for plan, _ in found])
        params += [PG_RANK_CANDIDATES, limit - len(found)]
        # Normalization 1 divides by the log of the plan's length, so that, as with BM25,
        # a word in a short plan counts for more than in a long one.
        rows = _hits(
            f"""WITH q AS (SELECT to_tsquery('{PG_CONFIG}', {PG_FOLD}(%s)) AS query),
                matches AS (
                    SELECT p.id, p.completed_at, ts_rank(p.{PG_VECTOR_COLUMN}, q.query, 1) AS score
                    FROM {PLAN_TABLE} p, q WHERE {where} LIMIT %s),
                best AS (SELECT id, score FROM matches ORDER BY score DESC, completed_at DESC, id LIMIT %s)
            SELECT {HIT_COLUMNS}, best.score
            FROM best JOIN {PLAN_TABLE} AS p ON p.id = best.id
            ORDER BY best.score DESC, p.completed_at DESC, p.id""",
            params,
        )
        found += [(plan, _relevance(score, joiner == "&")) for plan, score in rows]
        if len(found) >= limit:
            break
    return found
