"""Many workers on one session against the same workers each on a session of its own.

Eight processes loop pull -> note -> complete. In the first race all eight are workers of
one session (each names its worker); in the second each has a session of its own. One
session must not become the bottleneck: the shared race reaches at least 0.8x the cycles
per second of the separate one, with every step's p99 within 100 ms and no errors
(docs/design.md, "Speed targets"). On SQLite, and on PostgreSQL when DATABASE_URL names it
(in a throw-away database beside it).

On PostgreSQL a third race sets the floor: the same cycle by the same eight processes on
one session, written as bare SQL over psycopg (claim the front plan with FOR UPDATE SKIP
LOCKED, then one UPDATE and one event INSERT per step, each step its own transaction),
without 9plan's checks, plan files or events' detail: 9plan reaches at least 0.5x its
cycles per second.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from common import (
    PLAN_COLUMNS,
    PYTHON,
    TextMaker,
    bench_env,
    bulk_insert,
    db_now,
    median,
    percentile,
    plan_ids,
    plan_row,
    progress,
    race,
    scratch_database,
    setup_django,
    skipped_without_postgres,
    take_turns,
    write_plan_files,
)

STEPS = ("pull", "note", "complete")
RATIO_TARGET, P99_TARGET_MS, FLOOR_TARGET = 0.8, 100.0, 0.5
RUNNER = str(Path(__file__).resolve().parent / "run.py")


def drain(data_dir: Path, database_url: str, session: str, worker: str, seconds: float) -> None:
    """One worker process: wait for "go", loop pull -> note -> complete for ``seconds`` (or
    until its queue is empty), print its figures as one JSON line."""
    setup_django(data_dir, database_url if database_url != "-" else None, migrate=False)
    from sessions_app import services
    from sessions_app.errors import NineplanError, QueueEmpty

    text = TextMaker(seed=sum(map(ord, worker)))
    tally = _Tally(seconds)
    while tally.running():
        try:
            t0 = time.perf_counter()
            services.plan_pull(session_name=session, worker=worker)
            t1 = time.perf_counter()
            services.plan_note(session_name=session, worker=worker, text=text.chars(120))
            t2 = time.perf_counter()
            services.plan_complete(session_name=session, worker=worker, outcome=text.chars(200))
            t3 = time.perf_counter()
        except QueueEmpty:
            break
        except NineplanError as exc:
            tally.errors.append(f"{exc.category}: {exc.message}")
            continue
        tally.record(t0, t1, t2, t3)
    tally.report()


class _Tally:
    """A racing process's figures, as drain and floor both keep them: made once the process
    is ready (it says so, then waits for the runner's "go" line), one record a cycle, and
    one result line at the end."""

    def __init__(self, seconds: float):
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        sys.stdin.readline()
        self.latencies: dict[str, list[float]] = {step: [] for step in STEPS}
        self.errors: list[str] = []
        self.cycles = 0
        self.cpu_start = time.process_time()
        self.start = time.perf_counter()
        self.end = self.start + seconds

    def running(self) -> bool:
        return time.perf_counter() < self.end

    def record(self, t0: float, t1: float, t2: float, t3: float) -> None:
        """One cycle's pull, note and complete, timed between its four instants."""
        self.latencies["pull"].append(t1 - t0)
        self.latencies["note"].append(t2 - t1)
        self.latencies["complete"].append(t3 - t2)
        self.cycles += 1

    def report(self) -> None:
        elapsed = time.perf_counter() - self.start
        cpu = time.process_time() - self.cpu_start
        figures = {
            "latencies": self.latencies,
            "cycles": self.cycles,
            "elapsed": elapsed,
            "cpu": cpu,
            "errors": self.errors,
        }
        sys.stdout.write(json.dumps(figures) + "\n")
        sys.stdout.flush()


def floor(database_url: str, session: str, worker: str, seconds: float) -> None:
    """One floor process: the cycle as bare SQL (see the module's docstring), printed as drain prints it."""
    import psycopg

    text = TextMaker(seed=sum(map(ord, worker)))
    conn = psycopg.connect(database_url)
    event = "INSERT INTO sessions_app_event (session_name, plan_id, kind, actor, detail, created_at) VALUES (%s, %s, %s, %s, '{}', now())"
    tally = _Tally(seconds)
    while tally.running():
        try:
            t0 = time.perf_counter()
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(
                    "SELECT id FROM sessions_app_plan WHERE session_name = %s AND status = 'queued' "
                    "ORDER BY sort_key LIMIT 1 FOR UPDATE SKIP LOCKED",
                    [session],
                )
                row = cur.fetchone()
                if row is None:
                    break
                plan_id = row[0]
                cur.execute(
                    "UPDATE sessions_app_plan SET status = 'active', sort_key = NULL, worker = %s, claimed_at = now(), "
                    "lease_expires_at = now() + interval '15 minutes', updated_at = now() WHERE id = %s",
                    [worker, plan_id],
                )
                cur.execute(event, [session, plan_id, "pulled", "bench"])
            t1 = time.perf_counter()
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(
                    "UPDATE sessions_app_plan SET notes = %s, updated_at = now() WHERE id = %s",
                    [text.chars(120), plan_id],
                )
                cur.execute(event, [session, plan_id, "noted", "bench"])
            t2 = time.perf_counter()
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(
                    "UPDATE sessions_app_plan SET status = 'completed', outcome = %s, completed_at = now(), worker = NULL, "
                    "claimed_at = NULL, lease_expires_at = NULL, updated_at = now() WHERE id = %s",
                    [text.chars(200), plan_id],
                )
                cur.execute(event, [session, plan_id, "completed", "bench"])
            t3 = time.perf_counter()
        except psycopg.Error as exc:
            tally.errors.append(f"{type(exc).__name__}: {exc}")
            continue
        tally.record(t0, t1, t2, t3)
    tally.report()
    conn.close()


def _race(
    data_dir: Path, database_url: str, assignments: list[tuple[str, str]], seconds: float, mode: str = "--drain"
) -> dict:
    env = bench_env(data_dir, None if database_url == "-" else database_url)
    commands = [
        [PYTHON, RUNNER, mode, str(data_dir), database_url, session, worker, str(seconds)]
        for session, worker in assignments
    ]
    results = race(commands, env, "workers benchmark")
    errors = [e for r in results for e in r["errors"]]
    for e in errors[:5]:
        progress(f"workers error: {e}")
    cycles = sum(r["cycles"] for r in results)
    elapsed = max(r["elapsed"] for r in results)
    return {
        "cycles_per_s": cycles / elapsed,
        "cycles": cycles,
        "latencies": {s: [x * 1000 for r in results for x in r["latencies"][s]] for s in STEPS},
        "cpu_per_cycle": sum(r["cpu"] for r in results) / max(1, cycles) * 1000,
        "errors": len(errors),
        "busy_workers": sum(1 for r in results if r["cycles"]),
    }


def _pooled(runs: list[dict]) -> dict:
    """Several races of one side as one: the median race's rate, every latency, all counts."""
    return {
        "cycles_per_s": median([r["cycles_per_s"] for r in runs]),
        "cycles": sum(r["cycles"] for r in runs),
        "latencies": {s: [x for r in runs for x in r["latencies"][s]] for s in STEPS},
        "cpu_per_cycle": median([r["cpu_per_cycle"] for r in runs]),
        "errors": sum(r["errors"] for r in runs),
        "busy_workers": min(r["busy_workers"] for r in runs),
    }


def _seed(sessions: dict[str, int]) -> None:
    """Queued plans, inserted directly: the set-up is not what is measured."""
    text = TextMaker()
    now = db_now()
    taken: set[str] = set()
    for name, count in sessions.items():
        ids = plan_ids(count, taken=taken, seed=len(taken) + 11)
        taken.update(ids)
        rows, files = [], []
        for i, pid in enumerate(ids):
            sections = {
                "context": text.chars(100),
                "goal": text.chars(50),
                "inputs": "",
                "outputs": "",
                "approach": text.chars(150),
                "success_criteria": text.chars(40),
            }
            rows.append(plan_row(pid, name, "queued", i, sections, now))
            files.append((pid, sections))
        bulk_insert("sessions_app_plan", PLAN_COLUMNS, rows)
        write_plan_files(name, files)


def _measure(data_dir: Path, database_url: str, params: dict, label: str) -> list[dict]:
    from django.db import connections

    from sessions_app import services

    workers, seconds, per_worker = params["workers_count"], params["workers_seconds"], params["workers_plans"]
    shared = services.session_create(task_description="one session, many workers", actor="bench").name
    own = [services.session_create(task_description=f"worker {i} alone", actor="bench").name for i in range(workers)]
    postgres = connections["default"].vendor == "postgresql"
    bare = services.session_create(task_description="the floor: bare SQL", actor="bench").name if postgres else None
    _seed(
        {
            shared: workers * per_worker,
            **dict.fromkeys(own, per_worker),
            **({bare: workers * per_worker} if bare else {}),
        }
    )
    if connections["default"].vendor == "postgresql":
        # Statistics for the plans just loaded, as a database in use has them: left to
        # autovacuum, they arrived at a random point of the races and the planner's choice
        # (and the figures) changed with it.
        with connections["default"].cursor() as cur:
            cur.execute("ANALYZE")
    connections.close_all()

    # The two races take turns, several times each: eight processes on two cores make one
    # five-second race noisy (docs/benchmarks.md), and each side's median is compared.
    races = {
        "together": lambda: _race(data_dir, database_url, [(shared, f"w{i}") for i in range(workers)], seconds),
        "apart": lambda: _race(data_dir, database_url, [(name, "default") for name in own], seconds),
    }
    if bare:
        races["floor"] = lambda: _race(
            data_dir, database_url, [(bare, f"w{i}") for i in range(workers)], seconds, mode="--floor"
        )
    runs = take_turns(params["workers_rounds"], races)
    together, apart = _pooled(runs["together"]), _pooled(runs["apart"])
    progress(
        f"workers ({label}): {together['cycles']:,} cycles on one session, {apart['cycles']:,} on {workers} sessions"
        f" ({len(runs['together'])} races each)"
    )
    ratio = together["cycles_per_s"] / apart["cycles_per_s"] if apart["cycles_per_s"] else 0.0

    def row(figure, value, unit, target, met, baseline=None, r=None):
        return {
            "bench": f"workers ({label})",
            "figure": figure,
            "value": value,
            "baseline": baseline,
            "unit": unit,
            "ratio": r,
            "target": target,
            "met": met,
        }

    rows = [
        row(
            f"{workers} workers on one session: pull-note-complete cycles/s (vs each on its own session)",
            together["cycles_per_s"],
            "cycles/s",
            f">= {RATIO_TARGET:g}x",
            ratio >= RATIO_TARGET,
            baseline=apart["cycles_per_s"],
            r=ratio,
        ),
    ]
    for step in STEPS:
        p99 = percentile(together["latencies"][step], 99)
        rows.append(
            row(
                f"one session: {step} p99 (p50 {median(together['latencies'][step]):.1f} ms)",
                p99,
                "ms",
                f"<= {P99_TARGET_MS:g} ms",
                p99 <= P99_TARGET_MS,
                baseline=percentile(apart["latencies"][step], 99),
            )
        )
    if bare:
        bottom = _pooled(runs["floor"])
        share = together["cycles_per_s"] / bottom["cycles_per_s"] if bottom["cycles_per_s"] else 0.0
        rows.append(
            row(
                f"{workers} workers on one session: cycles/s against the same cycle as bare SQL (the floor;"
                f" its p99 pull {percentile(bottom['latencies']['pull'], 99):.1f} ms, {bottom['errors']} errors)",
                together["cycles_per_s"],
                "cycles/s",
                f">= {FLOOR_TARGET:g}x",
                share >= FLOOR_TARGET,
                baseline=bottom["cycles_per_s"],
                r=share,
            )
        )
    rows += [
        row("one session: errors", together["errors"], "count", "0", together["errors"] == 0),
        row("own sessions: errors", apart["errors"], "count", "0", apart["errors"] == 0),
        row(
            "one session: workers that completed plans",
            together["busy_workers"],
            "count",
            f"{workers}",
            together["busy_workers"] == workers,
        ),
        row(
            "one session: CPU per cycle",
            together["cpu_per_cycle"],
            "ms",
            "(shown)",
            None,
            baseline=apart["cpu_per_cycle"],
        ),
    ]
    return rows


def run(data_dir: Path, params: dict) -> dict:
    setup_django(data_dir)
    return {"rows": _measure(data_dir, "-", params, "SQLite")}


def run_postgres(data_dir: Path, params: dict) -> dict:
    url = params.get("postgres_url")
    if not url:
        return skipped_without_postgres("workers (PostgreSQL)")
    import os

    with scratch_database(url, f"nineplan_bench_workers_{os.getpid()}") as bench_url:
        try:
            setup_django(data_dir, database_url=bench_url)
            return {"rows": _measure(data_dir, bench_url, params, "PostgreSQL")}
        finally:
            from django.db import connections

            connections.close_all()
