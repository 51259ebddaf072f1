#!/usr/bin/env python
"""9plan's benchmarks against its speed targets (`make bench`; docs/design.md, "Speed targets").

Each benchmark runs in its own process on its own data directory, created in the
system's temp folder and removed afterwards, and hands its figures back as JSON; this
script prints them as one table, the target beside each figure. See docs/benchmarks.md.

    bench/run.py                 the default run (a few minutes on 2 cores)
    bench/run.py --quick         tiny sizes and few repeats: a smoke run, figures are noise
    bench/run.py --only search   one benchmark (repeatable); names below
    bench/run.py --full-scale    admin/REST pages at 10,000 sessions and 1,000,000 plans
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PYTHON, REPO, bench_env

# Benchmark name -> (module in bench/, function taking the data dir and the parameters).
BENCHMARKS = {
    "startup": ("startup", "run"),
    "roundtrip": ("roundtrip", "run"),
    "roundtrip-http": ("http_roundtrip", "run"),
    "search": ("history", "run"),
    "search-pg": ("history", "run_postgres"),
    "throughput": ("throughput", "run"),
    "workers": ("workers", "run"),
    "workers-pg": ("workers", "run_postgres"),
    "teams-pg": ("teams", "run_postgres"),
    "pages": ("pages", "run"),
    "live-pages": ("live_pages", "run"),
    "peers": ("peers", "run"),
    "export": ("export", "run"),
    "import": ("export", "run_import"),
}

# Each benchmark's sizes: (a full run, a --quick run that only checks the benchmarks work).
SIZES = {
    "startup_runs": (10, 2),
    "startup_populated": ([1_000, 100], [5, 10]),
    "fresh_runs": (3, 1),
    "roundtrip_sizes": ([10, 10_000], [10, 100]),
    "roundtrip_cycles": (40, 3),
    "roundtrip_warmup": (3, 1),
    "http_cycles": (150, 3),
    "search_plans": (100_000, 2_000),
    "search_repeats": (20, 2),
    "throughput_processes": (4, 4),
    "throughput_seconds": (5, 1),
    "throughput_rounds": (3, 1),
    "workers_count": (8, 8),
    "workers_seconds": (5, 1),
    "workers_plans": (2_000, 200),
    "workers_rounds": (3, 1),
    "teams_seconds": (20, 2),
    "teams_plans": (3_000, 100),
    "teams_rounds": (2, 1),
    "peers_cycles": (30, 3),
    "peers_warmup": (3, 1),
    "peers_grown": (200, 4),
    "pages_sizes": ([[100, 10_000], [1_000, 100_000]], [[5, 100], [10, 200]]),
    "pages_repeats": (5, 1),
    "live_pages": (200, 20),
    "live_seconds": (30, 3),
    "export_sizes": ([10_000, 100_000], [100, 1_000]),
    "import_sizes": ([10_000, 100_000], [100, 1_000]),
    "import_long_plans": ([200, 2_000], [10, 40]),
}
DEFAULT = {name: full for name, (full, _) in SIZES.items()}
QUICK = {name: quick for name, (_, quick) in SIZES.items()}
FULL_SCALE_PAGES = [[1_000, 100_000], [10_000, 1_000_000]]


def child(name: str, data_dir: Path, params: dict) -> None:
    """Run one benchmark in this process and print its result line."""
    from common import emit

    if name not in BENCHMARKS:
        raise SystemExit(f"unknown benchmark {name!r}")
    module, function = BENCHMARKS[name]
    result = getattr(importlib.import_module(module), function)(data_dir, params)
    emit(result)


def run_child(name: str, data_dir: Path, params: dict) -> dict:
    data_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [PYTHON, __file__, "--child", name, str(data_dir), json.dumps(params)],
        stdout=subprocess.PIPE,
        env=bench_env(data_dir),
        cwd=str(REPO),
        text=True,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH-RESULT "):
            return json.loads(line[len("BENCH-RESULT ") :])
    return {
        "rows": [
            {
                "bench": name,
                "figure": f"FAILED (exit {proc.returncode}; its error is printed above)",
                "value": None,
                "baseline": None,
                "unit": "",
                "ratio": None,
                "target": "",
                "met": False,
            }
        ]
    }


# --- the table ----------------------------------------------------------------------------


def fmt(value, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "ms":
        digits = 2 if value < 10 else 1 if value < 100 else 0
        return f"{value:,.{digits}f} ms"
    if unit == "ops/s":
        return f"{value:,.0f}/s"
    if unit == "cycles/s":
        return f"{value:,.0f} cycles/s"
    if unit == "count":
        return f"{value:,.0f}"
    if unit == "MB":
        return f"{value:,.1f} MB"
    if unit == "bytes":
        return f"{value:,.0f} B"
    return f"{value}"


def memory_rows(memory: dict) -> list[dict]:
    rows = []
    labels = {
        "mcp_startup_kb": "manage.py mcp, start-up + one tool call",
        "mcp_startup_populated_kb": "manage.py mcp, start-up + one tool call, populated data dir",
        "bare_kb": "bare MCPServer, start-up",
    }
    for key in memory:
        if key.startswith("mcp_roundtrip_"):
            size = int(key.split("_")[2])
            labels[key] = f"manage.py mcp, after the round trips at {size:,} plans"
        if key == "bare_noop_kb":
            labels[key] = "bare MCPServer (no-op tool), after the round trips"
    for key, value in memory.items():
        if value:
            rows.append(
                {
                    "bench": "peak memory",
                    "figure": f"{labels.get(key, key)} (ru_maxrss)",
                    "value": value / 1024,
                    "baseline": None,
                    "unit": "MB",
                    "ratio": None,
                    "target": "(shown)",
                    "met": None,
                }
            )
    if not rows:
        rows.append(
            {
                "bench": "peak memory",
                "figure": "not measured (needs startup or roundtrip)",
                "value": None,
                "baseline": None,
                "unit": "MB",
                "ratio": None,
                "target": "(shown)",
                "met": None,
            }
        )
    return rows


def print_table(rows: list[dict]) -> None:
    header = ("benchmark", "figure", "9plan", "baseline", "ratio", "target", "met")
    table = [header]
    for r in rows:
        met = {True: "yes", False: "NO", None: ""}[r["met"]]
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        table.append(
            (
                r["bench"],
                r["figure"],
                fmt(r["value"], r["unit"]),
                fmt(r["baseline"], r["unit"]),
                ratio,
                r["target"],
                met,
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    right = {2, 3, 4}
    for n, row in enumerate(table):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        print("| " + " | ".join(cells) + " |")
        if n == 0:
            rules = [("-" * (w + 1) + ":") if i in right else "-" * (w + 2) for i, w in enumerate(widths)]
            print("|" + "|".join(rules) + "|")


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def _cpu_check() -> str:
    """Milliseconds for a fixed pure-Python loop, best of 3: the machine's speed at the time.
    A shared virtual machine's speed varies from one minute to the next (docs/benchmarks.md),
    and every figure moves with it; compare runs with similar checks."""
    best = math.inf
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(2_000_000):
            total += i
        best = min(best, time.perf_counter() - started)
    return f"{best * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description="9plan benchmarks (docs/design.md, 'Speed targets').")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, few repeats: a smoke run")
    parser.add_argument("--only", action="append", choices=BENCHMARKS, help="run only this benchmark (repeatable)")
    parser.add_argument("--full-scale", action="store_true", help="pages at 10,000 sessions / 1,000,000 plans")
    parser.add_argument("--keep", action="store_true", help="keep the data directories (path printed)")
    parser.add_argument("--child", nargs=3, metavar=("NAME", "DATA_DIR", "PARAMS"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--floor", nargs=5, metavar=("DATA_DIR", "DATABASE_URL", "SESSION", "WORKER", "SECONDS"), help=argparse.SUPPRESS
    )
    parser.add_argument("--worker", nargs=3, metavar=("DATA_DIR", "SESSION", "SECONDS"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--drain", nargs=5, metavar=("DATA_DIR", "DATABASE_URL", "SESSION", "WORKER", "SECONDS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()

    if args.child:
        name, data_dir, params = args.child
        child(name, Path(data_dir), json.loads(params))
        return
    if args.drain:
        import workers

        data_dir, database_url, session, worker, seconds = args.drain
        workers.drain(Path(data_dir), database_url, session, worker, float(seconds))
        return
    if args.floor:
        import workers

        _, database_url, session, worker, seconds = args.floor
        workers.floor(database_url, session, worker, float(seconds))
        return
    if args.worker:
        import throughput

        data_dir, session, seconds = args.worker
        throughput.worker(Path(data_dir), session, float(seconds))
        return

    params = dict(QUICK if args.quick else DEFAULT)
    if args.full_scale:
        params["pages_sizes"] = FULL_SCALE_PAGES
    url = os.environ.get("DATABASE_URL", "")
    params["postgres_url"] = url if url.startswith(("postgres://", "postgresql://")) else None
    chosen = [b for b in BENCHMARKS if not args.only or b in args.only]

    base = Path(tempfile.mkdtemp(prefix="nineplan-bench-"))
    load_before = _load()
    cpu_before = _cpu_check()
    started = time.perf_counter()
    rows: list[dict] = []
    memory: dict = {}
    try:
        for name in chosen:
            sys.stderr.write(f"== {name}\n")
            sys.stderr.flush()
            result = run_child(name, base / name, params)
            rows += result["rows"]
            memory.update(result.get("memory", {}))
    finally:
        if args.keep:
            sys.stderr.write(f"data kept in {base}\n")
        else:
            shutil.rmtree(base, ignore_errors=True)
    if "startup" in chosen or "roundtrip" in chosen:
        rows += memory_rows(memory)

    print(
        f"9plan benchmarks{' (--quick: smoke sizes, figures are not meaningful)' if args.quick else ''}: "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, {time.perf_counter() - started:.0f} s, "
        f"load average {load_before} before / {_load()} after (other work on the machine slows every figure), "
        f"CPU check {cpu_before} before / {_cpu_check()} after (a fixed Python loop: lower is faster)"
    )
    print()
    print_table(rows)
    missed = [r for r in rows if r["met"] is False]
    print()
    print(f"{len(rows)} figures; " + (f"{len(missed)} miss their target." if missed else "all targets met."))


if __name__ == "__main__":
    main()
