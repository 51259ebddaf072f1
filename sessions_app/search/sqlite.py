"""History search on SQLite: an FTS5 index over the completed plans, kept by triggers."""

from __future__ import annotations

from django.db import connection

from sessions_app.search import hits
from sessions_app.search.words import shorter_stems

FTS_TABLE = f"{hits.PLAN_TABLE}_fts"

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
INDEXED = "plan_id, session_name, session_key, goal, context, inputs, outputs, outcome, notes"


def _indexed_values(row: str) -> str:
    return (
        f"{row}id, {row}session_name, char(57344) || replace({row}session_name, '-', '0'), "
        f"{row}goal, {row}context, {row}inputs, {row}outputs, {row}outcome, {row}notes"
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
        goal, context, inputs, outputs, outcome, notes,
        tokenize='porter unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ai AFTER INSERT ON {hits.PLAN_TABLE}
        WHEN new.status = 'completed' BEGIN
        INSERT INTO {FTS_TABLE}({INDEXED}) VALUES ({_indexed_values("new.")});
        END""",
    # One trigger for both directions: two triggers on one event fire in an order
    # SQLite does not promise, and delete-after-insert would drop the row.
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_au AFTER UPDATE ON {hits.PLAN_TABLE}
        WHEN old.status = 'completed' OR new.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE} WHERE old.status = 'completed' AND {_OLD_ENTRY};
        INSERT INTO {FTS_TABLE}({INDEXED}) SELECT {_indexed_values("new.")} WHERE new.status = 'completed';
        END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ad AFTER DELETE ON {hits.PLAN_TABLE}
        WHEN old.status = 'completed' BEGIN
        DELETE FROM {FTS_TABLE} WHERE {_OLD_ENTRY};
        END""",
]
SQLITE_TRIGGERS = (f"{FTS_TABLE}_ad", f"{FTS_TABLE}_ai", f"{FTS_TABLE}_au")
# BM25 weights in column order: plan_id, session_name, session_key, then the searched
# sections, the Notes (an agent's working record, long and loose) weighing half what the
# others do. Given as the query's rank function, so that FTS5 sorts by it itself (sorting
# by a bm25() column outside FTS5 cost twice as much on a word in every plan).
RANK = "bm25(0, 0, 0, 1, 1, 1, 1, 1, 0.5)"
# The session's own index: plan_id, then the searched sections.
SCOPE_SCHEMA = f"""CREATE VIRTUAL TABLE IF NOT EXISTS temp.{SCOPE_TABLE} USING fts5(
    plan_id UNINDEXED, goal, context, inputs, outputs, outcome, notes,
    tokenize='porter unicode61 remove_diacritics 2')"""
SCOPE_RANK = "bm25(0, 1, 1, 1, 1, 1, 0.5)"
SCOPE_COLUMNS = ("goal", "context", "inputs", "outputs", "outcome", "notes")


def session_key(session_name: str) -> str:
    return "\ue000" + session_name.replace("-", "0")


def _session_match(session_name: str) -> str:
    return 'session_key : "' + session_key(session_name).replace('"', '""') + '"'


def ensure_index(conn=None) -> None:
    """Create the search index and its triggers if missing; safe to run any number of times.

    An index of an older shape (before migration 0015: no notes column) is left alone:
    its migration rebuilds it, and triggers for the new shape would break every write to it.
    """
    conn = conn or connection
    if conn.vendor != "sqlite":
        return
    # Raw: the FTS5 index and its triggers are schema no model maps.
    with conn.cursor() as cur:
        cur.execute(f"SELECT name FROM pragma_table_info('{FTS_TABLE}')")
        columns = {row[0] for row in cur.fetchall()}
        if columns and "notes" not in columns:
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
    # Raw: the FTS5 index and its triggers are schema no model maps.
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {FTS_TABLE}")
        cur.execute(
            f"INSERT INTO {FTS_TABLE}({INDEXED}) SELECT {_indexed_values('')} FROM {hits.PLAN_TABLE} WHERE status = 'completed'"
        )
        return cur.rowcount


def indexed_count(session_name: str | None = None) -> int | None:
    """How many plans the SQLite index holds (of one session, or all); None elsewhere.

    The whole index is counted from its docsize table (one row per document, no text);
    one session's count reads that session's entries through its key.
    """
    if connection.vendor != "sqlite":
        return None
    # Raw: the FTS5 index and its triggers are schema no model maps.
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
    # Raw: the FTS5 index and its triggers are schema no model maps.
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
        SELECT coalesce(sum(length(goal) + length(context) + length(inputs) + length(outputs) + length(outcome) + length(notes)), 0)
        FROM {hits.PLAN_TABLE} WHERE session_name = %s AND status = 'completed') <= %s THEN %s
    WHEN count_completed * %s < (SELECT coalesce(max(id), 0) FROM {FTS_TABLE}_docsize) THEN %s
    ELSE %s END
FROM {hits.SESSION_TABLE} WHERE name = %s"""
_SCOPE_SAME_TEXT = " AND ".join(f"p.{column} IS s.{column}" for column in SCOPE_COLUMNS)
_SCOPE_DROP_STALE = f"""DELETE FROM temp.{SCOPE_TABLE} WHERE rowid IN (
    SELECT s.rowid FROM temp.{SCOPE_TABLE} AS s LEFT JOIN {hits.PLAN_TABLE} AS p
    ON p.id = s.plan_id AND p.session_name = %s AND p.status = 'completed' AND {_SCOPE_SAME_TEXT}
    WHERE p.id IS NULL)"""
_SCOPE_ADD_NEW = f"""INSERT INTO temp.{SCOPE_TABLE}(plan_id, {", ".join(SCOPE_COLUMNS)})
    SELECT id, {", ".join(SCOPE_COLUMNS)} FROM {hits.PLAN_TABLE}
    WHERE session_name = %s AND status = 'completed'
    AND id NOT IN (SELECT plan_id FROM temp.{SCOPE_TABLE})"""


def _raw(sql: str, params: list | None = None) -> tuple | None:
    """Runs a statement of the search's own on Django's cursor, raw because it reads or
    writes an FTS5 index, which no model maps; its first row, if it returns any."""
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchone() if cur.description else None


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


def search_plans(
    words: list[str], session_name: str | None, limit: int, projects: frozenset[str] | None = None
) -> list[tuple]:
    """(plan, whether it holds every word) of the best matches; the plan rows come in the
    same statement as the matches (a second query for them cost as much as the match on a
    selective search)."""

    way = _search_way(session_name) if session_name is not None else None
    scoped = way == OWN_INDEX
    if scoped and session_name is not None:
        _fill_scope(session_name)
    found: list[tuple] = []
    seen: set[str] = set()
    joiners = ["AND", "OR"] if len(words) > 1 else ["AND"]
    params: list[object]
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
            condition, more = hits.in_projects("session_name", projects)
            matches += condition
            params += more
        matches += " ORDER BY rank LIMIT %s"
        params.append(limit + len(found))
        sql = (
            f"SELECT {hits.HIT_COLUMNS}, hit.rank AS score FROM ({matches}) AS hit "
            f"JOIN {hits.PLAN_TABLE} AS p ON p.id = hit.plan_id ORDER BY hit.rank"
        )
        for plan, _ in hits.ranked(sql, params):
            if plan.id not in seen and len(found) < limit:
                seen.add(plan.id)
                found.append((plan, joiner == "AND"))
        if len(found) >= limit:
            break
    return found
