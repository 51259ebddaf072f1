"""History search over many completed plans: 9plan's search (what 9plan_history_search
calls) against the same query hand-written against FTS5 on a plain sqlite3 connection.

All plans sit in one session, the worst case for the tool: the session filter removes
nothing. Selective queries use words planted in a known share (<= 1%) of the plans;
common queries use words that are in every plan.

A small session (4 plans) is searched too, once before the big session is loaded and once
beside it: with a word of every plan, and with that word repeated 500 times. Its cost must
not grow with what other sessions hold; the hand-written search (match everything, then
keep the session's rows, every repeat kept) is shown beside it.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from common import (
    COMMON_WORDS,
    PLAN_COLUMNS,
    TextMaker,
    bulk_insert,
    db_now,
    median,
    percentile,
    plan_ids,
    plan_row,
    progress,
    scratch_database,
    setup_django,
)

SELECTIVE = ("zircon", "quasar", "lantern", "zircon quasar", "velvet lantern")
COMMON = (COMMON_WORDS[0], COMMON_WORDS[1], f"{COMMON_WORDS[0]} {COMMON_WORDS[1]}")
LIMIT = 5
FTS = "sessions_app_plan_fts"
SELECTIVE_MS, COMMON_MS, RATIO = 10.0, 200.0, 1.2
SMALL_PLANS, REPEATS_OF_WORD = 4, 500
SMALL_MS = 10.0
# The small session's search is its own size's cost: beside the big session it may cost
# only what a deeper B-tree and a colder cache add to the same search alone.
SMALL_RATIO = 1.5
# A small session's search takes well under a millisecond: many more runs than the big
# session's searches, so that the median is not one run's noise.
SMALL_RUNS_PER_REPEAT = 20
# label -> query of the small-session cases.
SMALL_QUERIES = {
    "a word of every plan": COMMON_WORDS[0],
    f"one word x{REPEATS_OF_WORD}": " ".join([COMMON_WORDS[0]] * REPEATS_OF_WORD),
}


def seed(total: int) -> str:
    from sessions_app import services

    name = services.session_create(task_description="search benchmark", actor="bench").name
    text = TextMaker()
    now = db_now()
    ids = plan_ids(total)
    t0 = time.perf_counter()
    rows = (plan_row(ids[i], name, "completed", None, text.plan(i, total), now) for i in range(total))
    bulk_insert("sessions_app_plan", PLAN_COLUMNS, rows)
    progress(f"history: {total:,} completed plans inserted and indexed in {time.perf_counter() - t0:.0f} s")
    return name


def seed_small() -> str:
    """A session of SMALL_PLANS completed plans holding the common words."""
    from sessions_app import services

    name = services.session_create(task_description="search benchmark, small", actor="bench").name
    text = TextMaker(seed=7)
    now = db_now()
    rows = [
        plan_row(pid, name, "completed", None, text.plan(i, SMALL_PLANS), now)
        for i, pid in enumerate(plan_ids(SMALL_PLANS))
    ]
    bulk_insert("sessions_app_plan", PLAN_COLUMNS, rows)
    return name


def _allow_long_queries() -> None:
    # The repeated word makes a query longer than the default limit allows; a deployment
    # may raise it, and the search must stay cheap when it does.
    from django.conf import settings

    longest = max(map(len, SMALL_QUERIES.values()))
    settings.NINEPLAN_MAX_QUERY_CHARS = max(settings.NINEPLAN_MAX_QUERY_CHARS, longest)


def _time(call, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def _small_times(session: str, query: str, repeats: int) -> list[float]:
    from sessions_app.reads import queries as reads

    return _time(
        lambda: reads.history_search(query, session_name=session, max_results=LIMIT),
        repeats * SMALL_RUNS_PER_REPEAT,
    )


def _small_alone(session: str, repeats: int) -> dict[str, list[float]]:
    return {label: _small_times(session, query, repeats) for label, query in SMALL_QUERIES.items()}


def _small_rows(engine: str, total: int, session: str, alone: dict, hand, repeats: int) -> list[dict]:
    """The small session searched beside ``total`` plans of another session, against the
    same search before those plans were there (the baseline); then the hand-written search
    of the same, which matches every session's plans before it keeps this one's."""
    rows = []
    for label, query in SMALL_QUERIES.items():
        beside = _small_times(session, query, repeats)
        med, base = median(beside), median(alone[label])
        rows.append(
            {
                "bench": "history search",
                "figure": f"{engine}: {SMALL_PLANS}-plan session beside {total:,} plans, {label}, median (baseline: alone)",
                "value": med,
                "baseline": base,
                "unit": "ms",
                "ratio": med / base if base else None,
                "target": f"<= {SMALL_MS:g} ms; <= {SMALL_RATIO:g}x",
                "met": med <= SMALL_MS and med <= SMALL_RATIO * base,
            }
        )
        if query != SMALL_QUERIES["a word of every plan"]:
            # The hand-written search keeps every repeat of the word: against the big
            # session each run takes minutes.
            continue
        theirs = _time(lambda q=query: hand.search(q, session), repeats)
        rows.append(
            {
                "bench": "history search",
                "figure": f"{engine}: {SMALL_PLANS}-plan session beside {total:,} plans, {label}, hand-written match-then-filter, median",
                "value": median(theirs),
                "baseline": None,
                "unit": "ms",
                "ratio": None,
                "target": "(shown)",
                "met": None,
            }
        )
    return rows


class HandWritten:
    """What a developer would write straight against FTS5: all words first, then any word."""

    def __init__(self, path: str):
        self.db = sqlite3.connect(path)

    @staticmethod
    def _match(words: list[str], joiner: str) -> str:
        quoted = [f'"{w}"' for w in words]
        quoted[-1] += "*"
        return f" {joiner} ".join(quoted)

    def search(self, query: str, session: str, limit: int = LIMIT) -> list[tuple]:
        words = query.lower().split()
        sql = (
            "SELECT p.* FROM (SELECT plan_id, rank FROM " + FTS + " WHERE " + FTS + " MATCH ? AND session_name = ?"
            " ORDER BY rank LIMIT ?) AS hit JOIN sessions_app_plan AS p ON p.id = hit.plan_id ORDER BY hit.rank"
        )
        rows = self.db.execute(sql, (self._match(words, "AND"), session, limit)).fetchall()
        if len(rows) < limit and len(words) > 1:
            seen = {r[0] for r in rows}
            more = self.db.execute(sql, (self._match(words, "OR"), session, limit + len(rows))).fetchall()
            rows += [r for r in more if r[0] not in seen][: limit - len(rows)]
        return rows


def _measure(queries: tuple[str, ...], session: str, hand, repeats: int, compare: bool = True) -> tuple[list, list]:
    from sessions_app.reads import queries as reads

    ours, theirs = [], []
    for query in queries:
        # Both sides return the same plans; a benchmark of two different answers is no comparison.
        a = [h.plan.id for h in reads.history_search(query, session_name=session, max_results=LIMIT)]
        b = [r[0] for r in hand.search(query, session)]
        if compare and a != b:
            raise AssertionError(f"search {query!r}: 9plan found {a}, hand-written FTS5 found {b}")
        for i in range(repeats):
            # Which side goes first alternates: the second one finds the pages and the CPU
            # caches warmed by the first.
            sides = [(ours, lambda q=query: reads.history_search(q, session_name=session, max_results=LIMIT))]
            sides.append((theirs, lambda q=query: hand.search(q, session)))
            for times, call in sides if i % 2 == 0 else sides[::-1]:
                t0 = time.perf_counter()
                call()
                times.append((time.perf_counter() - t0) * 1000)
    return ours, theirs


def _rows(label: str, total: int, ours: list, theirs: list | None, limit_ms: float, engine: str) -> list[dict]:
    med, p95 = median(ours), percentile(ours, 95)
    base_med = median(theirs) if theirs else None
    base_p95 = percentile(theirs, 95) if theirs else None
    ratio = med / base_med if base_med else None
    met = med <= limit_ms and (ratio is None or ratio <= RATIO)
    ratio_target = f"; <= {RATIO}x" if theirs else ""
    return [
        {
            "bench": "history search",
            "figure": f"{engine}: {label}, {total:,} plans, median",
            "value": med,
            "baseline": base_med,
            "unit": "ms",
            "ratio": ratio,
            "target": f"<= {limit_ms:g} ms{ratio_target}",
            "met": met,
        },
        {
            "bench": "history search",
            "figure": f"{engine}: {label}, {total:,} plans, p95",
            "value": p95,
            "baseline": base_p95,
            "unit": "ms",
            "ratio": p95 / base_p95 if base_p95 else None,
            "target": "(shown)",
            "met": None,
        },
    ]


def _seeded(params: dict) -> tuple:
    """The small session measured alone, then the big session seeded beside it."""
    total, repeats = params["search_plans"], params["search_repeats"]
    _allow_long_queries()
    small = seed_small()
    alone = _small_alone(small, repeats)
    return total, repeats, small, alone, seed(total)


def run(data_dir: Path, params: dict) -> dict:
    setup_django(data_dir)
    from django.conf import settings

    total, repeats, small, alone, session = _seeded(params)
    hand = HandWritten(settings.DATABASES["default"]["NAME"])
    sel_ours, sel_hand = _measure(SELECTIVE, session, hand, repeats)
    progress("history: selective queries measured")
    com_ours, com_hand = _measure(COMMON, session, hand, repeats)
    progress("history: common queries measured")
    rows = _rows("selective (words in <= 1% of plans)", total, sel_ours, sel_hand, SELECTIVE_MS, "SQLite")
    rows += _rows("common (a word in every plan)", total, com_ours, com_hand, COMMON_MS, "SQLite")
    rows += _small_rows("SQLite", total, small, alone, hand, repeats)
    progress("history: the small session measured")
    return {"rows": rows}


class HandWrittenPostgres:
    """The same search hand-written for PostgreSQL's full-text search: the plans whose
    stored tsvector matches all words, best ts_rank first, then any word."""

    COLUMNS = ", ".join(f"p.{c}" for c in PLAN_COLUMNS)

    def __init__(self, url: str):
        import psycopg

        self.db = psycopg.connect(url, autocommit=True)

    def search(self, query: str, session: str, limit: int = LIMIT) -> list[tuple]:
        words = query.lower().split()

        def tsquery(joiner: str) -> str:
            quoted = [f"'{w}'" for w in words]
            quoted[-1] += ":*"
            return f" {joiner} ".join(quoted)

        sql = (
            f"SELECT {self.COLUMNS} FROM sessions_app_plan p, to_tsquery('nineplan_search', %s) q"
            " WHERE p.status = 'completed' AND p.session_name = %s AND p.search_vector @@ q"
            " ORDER BY ts_rank(p.search_vector, q, 1) DESC LIMIT %s"
        )
        rows = self.db.execute(sql, (tsquery("&"), session, limit)).fetchall()
        if len(rows) < limit and len(words) > 1:
            seen = {r[0] for r in rows}
            more = self.db.execute(sql, (tsquery("|"), session, limit + len(rows))).fetchall()
            rows += [r for r in more if r[0] not in seen][: limit - len(rows)]
        return rows


def run_postgres(data_dir: Path, params: dict) -> dict:
    """The same comparison on PostgreSQL, in a throw-away database created beside the one
    DATABASE_URL names (never inside it) and dropped afterwards."""
    url = params.get("postgres_url")
    if not url:
        return {
            "rows": [
                {
                    "bench": "history search",
                    "figure": "PostgreSQL: skipped (DATABASE_URL does not name PostgreSQL)",
                    "value": None,
                    "baseline": None,
                    "unit": "ms",
                    "ratio": None,
                    "target": "(optional)",
                    "met": None,
                }
            ]
        }
    import os

    with scratch_database(url, f"nineplan_bench_{os.getpid()}") as bench_url:
        return {"rows": _postgres_rows(data_dir, params, bench_url)}


def _postgres_rows(data_dir: Path, params: dict, bench_url: str) -> list[dict]:
    """The figures on the scratch database at ``bench_url``; every connection to it is
    closed after, so that it can be dropped."""
    hand = None
    try:
        setup_django(data_dir, database_url=bench_url)
        total, repeats, small, alone, session = _seeded(params)
        # A database that just took 100,000 rows has no statistics until autovacuum gets
        # to it; without them the planner scans every plan instead of using the index.
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("ANALYZE sessions_app_plan")
        hand = HandWrittenPostgres(bench_url)
        # PostgreSQL ranks at most search.PG_RANK_CANDIDATES matches of a common word, the
        # hand-written query ranks them all: the two may pick different plans, so the
        # answers are not compared here (tests/ compare the engines).
        sel_ours, sel_hand = _measure(SELECTIVE, session, hand, params["search_repeats"], compare=False)
        com_ours, com_hand = _measure(COMMON, session, hand, params["search_repeats"], compare=False)
        rows = _rows("selective (words in <= 1% of plans)", total, sel_ours, sel_hand, SELECTIVE_MS, "PostgreSQL")
        rows += _rows("common (a word in every plan)", total, com_ours, com_hand, COMMON_MS, "PostgreSQL")
        rows += _small_rows("PostgreSQL", total, small, alone, hand, repeats)
    finally:
        from django.db import connections

        if hand is not None:
            hand.db.close()
        connections.close_all()
    return rows
