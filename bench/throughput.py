"""Throughput: several processes doing mixed queue operations on one SQLite file.

Each worker is a separate process with its own session (as agents working side by side
are) and calls the services in a loop: add, pull, note, defer, pull, complete, then a
state read and a history search. Every call's latency is kept; a "database is locked"
error is counted apart from any other failure.

Three more races say where the processes' extra CPU goes (shown, no target): the same
processes each on a copy of the database file of its own (nothing shared), on the one
file with the writer turns left out (``BENCH_WRITER_TURNS=off``: SQLite's own
sleep-and-retry orders the writers), and one process alone that sleeps after each
operation for as long as the other processes' turns would take (``BENCH_PAUSE_FACTOR``:
that many times the operation's own time). A process taking turns waits before nearly
every write; the last race is that waiting with nothing else running, and says what it
alone costs the operations on this machine.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from common import PYTHON, TextMaker, bench_env, median, percentile, progress, race, setup_django, take_turns

CYCLE = ("add", "pull", "note", "defer", "pull", "complete", "state", "search")
# Ratios that hold on any machine: several processes together do at least nearly what
# one does alone (writers of one file queue for its lock, so more processes cannot add
# much on SQLite, but they must not lose throughput to each other either), and each
# operation costs no more CPU among several than alone.
SCALING_TARGET, P99_TARGET_MS = 0.9, 50.0
# A deferred plan comes back with its notes, and each cycle appends to them: past this
# many characters a cycle's note replaces them instead, so that they stay well within
# the notes limit however long the run (appending past it is refused, as it must be).
NOTES_RESET = 16_000
RUNNER = str(Path(__file__).resolve().parent / "run.py")


def worker(data_dir: Path, session: str, seconds: float) -> None:
    """One worker process: wait for "go" on stdin, loop for ``seconds``, print JSON figures."""
    setup_django(data_dir, migrate=False)
    from sessions_app import services
    from sessions_app.reads import queries
    from sessions_app.store import transactions

    if os.environ.get("BENCH_WRITER_TURNS") == "off":
        transactions.writer_turn = nullcontext  # what the turns cost: see the module's docstring
    pause_factor = float(os.environ.get("BENCH_PAUSE_FACTOR", "0"))

    text = TextMaker(seed=sum(map(ord, session)))
    pulled = {"notes": 0}

    def pull() -> None:
        pulled["notes"] = len(services.plan_pull(session_name=session).notes)

    def note() -> None:
        mode = "replace" if pulled["notes"] > NOTES_RESET else "append"
        pulled["notes"] = len(services.plan_note(session_name=session, text=text.chars(120), mode=mode).plan.notes)

    calls = {
        "add": lambda: services.plan_enqueue(
            session_name=session,
            context=text.chars(150),
            goal=text.chars(60),
            approach=text.chars(250),
            success_criteria=text.chars(80),
        ),
        "pull": pull,
        "note": note,
        "defer": lambda: services.plan_defer(session_name=session, reason="waiting on a dependency"),
        "complete": lambda: services.plan_complete(session_name=session, outcome=text.chars(200)),
        "state": lambda: queries.session_state(session, limit=10),
        "search": lambda: queries.history_search("module service", session_name=session, max_results=5),
    }
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()
    latencies: list[float] = []
    locked = other = 0
    errors: list[str] = []
    cpu_start = time.process_time()
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        for op in CYCLE:
            t0 = time.perf_counter()
            try:
                calls[op]()
            except Exception as exc:  # domain errors included: counted, never fatal, the run goes on
                if "locked" in str(exc).lower():
                    locked += 1
                else:
                    other += 1
                    if len(errors) < 3:
                        errors.append(f"{op}: {type(exc).__name__}: {exc}")
            took = time.perf_counter() - t0
            latencies.append(took)
            if pause_factor:
                time.sleep(pause_factor * took)  # off the CPU, as a process waiting for its turn
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    sys.stdout.write(
        json.dumps(
            {"latencies": latencies, "elapsed": elapsed, "cpu": cpu, "locked": locked, "other": other, "errors": errors}
        )
        + "\n"
    )
    sys.stdout.flush()


def _race(
    data_dir: Path | list[Path], sessions: list[str], seconds: float, *, turns: bool = True, pause_factor: float = 0
) -> dict:
    """Run one worker per session (on ``data_dir``, or on each of a list of them in turn),
    all started at once; their pooled figures. ``pause_factor``: each worker sleeps after
    every operation for that many times the operation's time."""
    dirs = data_dir if isinstance(data_dir, list) else [data_dir] * len(sessions)
    env = bench_env(dirs[0])
    if not turns:
        env["BENCH_WRITER_TURNS"] = "off"
    if pause_factor:
        env["BENCH_PAUSE_FACTOR"] = str(pause_factor)
    # All start together: each is blocked on its stdin until every one is ready.
    commands = [[PYTHON, RUNNER, "--worker", str(d), name, str(seconds)] for d, name in zip(dirs, sessions)]
    results = race(commands, env, "throughput")
    for r in results:
        for e in r["errors"]:
            progress(f"throughput error: {e}")
    latencies = [x * 1000 for r in results for x in r["latencies"]]
    elapsed = max(r["elapsed"] for r in results)
    return {
        "latencies": latencies,
        "ops": len(latencies) / elapsed,
        "cpu_per_op": sum(r["cpu"] for r in results) / max(1, len(latencies)) * 1000,
        "locked": sum(r["locked"] for r in results),
        "other": sum(r["other"] for r in results),
        "elapsed": elapsed,
    }


def _pooled(runs: list[dict]) -> dict:
    """Several races of one side as one: the median race's rate and CPU per operation,
    every latency, all errors."""
    return {
        "latencies": [x for r in runs for x in r["latencies"]],
        "ops": median([r["ops"] for r in runs]),
        "cpu_per_op": median([r["cpu_per_op"] for r in runs]),
        "locked": sum(r["locked"] for r in runs),
        "other": sum(r["other"] for r in runs),
        "elapsed": sum(r["elapsed"] for r in runs),
    }


def run(data_dir: Path, params: dict) -> dict:
    setup_django(data_dir)
    from sessions_app import services

    text = TextMaker()
    processes = params["throughput_processes"]
    sessions = []
    for _ in range(processes + 1):
        name = services.session_create(task_description="throughput", actor="bench").name
        for _ in range(5):
            services.plan_enqueue(
                session_name=name, context=text.chars(100), goal=text.chars(50), approach="a", success_criteria="s"
            )
        sessions.append(name)
    from django.db import connections

    connections.close_all()  # the last connection closed folds the WAL into the file
    copies = _copies(data_dir, processes)
    seconds = params["throughput_seconds"]
    # One process alone (its rate and CPU per operation bound what several processes can
    # reach on this machine's cores) and the processes together take turns, several times
    # each: one five-second race of each is noisy (docs/benchmarks.md), and each side's
    # median is compared.
    runs = take_turns(
        params["throughput_rounds"],
        {
            "alone": lambda: _race(data_dir, sessions[:1], seconds),
            "together": lambda: _race(data_dir, sessions[1:], seconds),
            "apart": lambda: _race(copies, sessions[1:], seconds),
            "no turns": lambda: _race(data_dir, sessions[1:], seconds, turns=False),
            # Waiting as a turn-taker does: for the other processes' operations, each
            # about as long as its own.
            "pausing": lambda: _race(data_dir, sessions[:1], seconds, pause_factor=processes - 1),
        },
    )
    alone, race = _pooled(runs["alone"]), _pooled(runs["together"])
    apart, unturned = _pooled(runs["apart"]), _pooled(runs["no turns"])
    pausing = _pooled(runs["pausing"])
    for copy in copies:
        shutil.rmtree(copy, ignore_errors=True)
    latencies = race["latencies"]
    progress(
        f"throughput: {len(latencies):,} operations in {race['elapsed']:.1f} s by {processes} processes"
        f" ({len(runs['together'])} races)"
    )
    label = f"{processes} processes, {seconds:g} s"
    cores = os.cpu_count() or 1

    def row(figure, value, unit, target, met):
        return {
            "bench": "throughput",
            "figure": figure,
            "value": value,
            "baseline": None,
            "unit": unit,
            "ratio": None,
            "target": target,
            "met": met,
        }

    p99 = percentile(latencies, 99)
    ops = race["ops"]
    ceiling = cores / alone["cpu_per_op"] * 1000
    scaling = ops / alone["ops"] if alone["ops"] else 0.0
    cpu_ratio = race["cpu_per_op"] / alone["cpu_per_op"] if alone["cpu_per_op"] else 0.0
    return {
        "rows": [
            {
                **row(
                    f"operations/s in total ({label}) vs 1 process alone",
                    ops,
                    "ops/s",
                    f">= {SCALING_TARGET:g}x",
                    scaling >= SCALING_TARGET,
                ),
                "baseline": alone["ops"],
                "ratio": scaling,
            },
            {
                **row(
                    f"CPU time per operation ({label}) vs 1 process alone", race["cpu_per_op"], "ms", "(shown)", None
                ),
                "baseline": alone["cpu_per_op"],
                "ratio": cpu_ratio,
            },
            row("latency p50", median(latencies), "ms", "(shown)", None),
            row("latency p99", p99, "ms", f"<= {P99_TARGET_MS:g} ms", p99 <= P99_TARGET_MS),
            row("latency max", max(latencies), "ms", "(shown)", None),
            # Errors of every race count, the process alone's as well as the processes together.
            row(
                "'database is locked' errors (every race)",
                race["locked"] + alone["locked"],
                "count",
                "0",
                race["locked"] + alone["locked"] == 0,
            ),
            row(
                "other errors (every race)",
                race["other"] + alone["other"],
                "count",
                "0",
                race["other"] + alone["other"] == 0,
            ),
            row("1 process alone, same mix: operations/s", alone["ops"], "ops/s", "(shown)", None),
            row("CPU time per operation (1 process alone)", alone["cpu_per_op"], "ms", "(shown)", None),
            row(f"ceiling: {cores} cores / CPU per operation", ceiling, "ops/s", "(shown)", None),
            {
                **row(
                    f"CPU time per operation ({processes} processes, a copy of the file each) vs 1 process alone",
                    apart["cpu_per_op"],
                    "ms",
                    "(shown)",
                    None,
                ),
                "baseline": alone["cpu_per_op"],
                "ratio": apart["cpu_per_op"] / alone["cpu_per_op"],
            },
            {
                **row(
                    f"CPU time per operation ({processes} processes, one file, no writer turns) vs 1 process alone",
                    unturned["cpu_per_op"],
                    "ms",
                    "(shown)",
                    None,
                ),
                "baseline": alone["cpu_per_op"],
                "ratio": unturned["cpu_per_op"] / alone["cpu_per_op"],
            },
            {
                **row(
                    f"operations/s ({processes} processes, one file, no writer turns) vs 1 process alone",
                    unturned["ops"],
                    "ops/s",
                    "(shown)",
                    None,
                ),
                "baseline": alone["ops"],
                "ratio": unturned["ops"] / alone["ops"],
            },
            row("latency p99, no writer turns", percentile(unturned["latencies"], 99), "ms", "(shown)", None),
            {
                **row(
                    f"CPU time per operation (1 process alone, sleeping {processes - 1}x each operation's time after it,"
                    " as turns make it wait) vs 1 process alone",
                    pausing["cpu_per_op"],
                    "ms",
                    "(shown)",
                    None,
                ),
                "baseline": alone["cpu_per_op"],
                "ratio": pausing["cpu_per_op"] / alone["cpu_per_op"],
            },
            {
                **row(
                    f"CPU time per operation ({label}) vs 1 process alone sleeping likewise",
                    race["cpu_per_op"],
                    "ms",
                    "(shown)",
                    None,
                ),
                "baseline": pausing["cpu_per_op"],
                "ratio": race["cpu_per_op"] / pausing["cpu_per_op"],
            },
            row(
                "errors of the last three races (a file each; no writer turns; alone, sleeping)",
                sum(r["locked"] + r["other"] for r in (apart, unturned, pausing)),
                "count",
                "(shown)",
                None,
            ),
        ]
    }


def _copies(data_dir: Path, count: int) -> list[Path]:
    """``count`` copies of the benchmark's data directory (its database file and plan
    files), for processes that share nothing."""
    copies = []
    for i in range(count):
        copy = data_dir.parent / f"{data_dir.name}-copy{i}"
        shutil.copytree(data_dir, copy)
        copies.append(copy)
    return copies
