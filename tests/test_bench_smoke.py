"""`bench/run.py --quick` runs end to end and prints every figure with its target.

Only the table's shape is checked: timings are for the benchmarks to report, never for a
test to assert.
"""

from __future__ import annotations

import pytest

from tests.conftest import bench_cells, run_bench

pytestmark = [pytest.mark.slow, pytest.mark.serial]

FIGURES = [
    "spawn -> initialize answered (median of",
    "CPU time used until initialize answered",
    "spawn -> first tool answered (session_resume)",
    "spawn -> initialize answered, 5 sessions / 50 plans",
    "spawn -> first tool answered, 5 sessions / 50 plans",
    "fresh data dir -> first tool answered",
    *[f"{op} @ 10 plans" for op in ("add", "pull", "note", "complete", "search")],
    *[f"{op} @ 100 plans" for op in ("add", "pull", "note", "complete", "search")],
    *[f"{op}: 100 vs 10 plans" for op in ("add", "pull", "note", "complete", "search")],
    "bare MCPServer no-op tool round trip",
    "SQLite: selective (words in <= 1% of plans), 2,000 plans, median",
    "SQLite: selective (words in <= 1% of plans), 2,000 plans, p95",
    "SQLite: common (a word in every plan), 2,000 plans, median",
    "SQLite: common (a word in every plan), 2,000 plans, p95",
    "PostgreSQL",
    "operations/s in total (4 processes",
    "latency p50",
    "latency p99",
    "latency max",
    "'database is locked' errors",
    "other errors (every race)",
    "1 process alone, same mix: operations/s",
    "CPU time per operation",
    "ceiling: ",
    "CPU time per operation (1 process alone, sleeping 3x each operation's time after it",
    "vs 1 process alone sleeping likewise",
    "admin: sessions list",
    "admin: session page",
    "open home pages, 3 workers, a write every 2 s)",
    "/admin/ p99 while they poll, against no polls",
    "manage.py mcp, start-up + one tool call (ru_maxrss)",
    "manage.py mcp, after the round trips at 100 plans (ru_maxrss)",
    "nineplan_export, 100 plans",
    "REST export, 1,000 plans: peak RSS",
    "nineplan_export peak RSS: 1,000 vs 100 plans (flat)",
    "nineplan_import, 100 plans",
    "nineplan_import peak RSS: 1,000 vs 100 plans (flat)",
    "nineplan_import, 40 plans of ~160 KB (",
    "MB document, plans of ~160 KB (flat)",
    "| peers ",  # against the peers, or skipped when they are not installed
]


def test_quick_run_prints_every_figure_with_its_target(tmp_path):
    # Without PostgreSQL: its variants are optional, and here they report themselves skipped.
    result = run_bench("run.py", "--quick", tmp_path=tmp_path, postgres=False)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    header = bench_cells(lines[0])
    assert header == ["benchmark", "figure", "9plan", "baseline", "ratio", "target", "met"]
    for figure in FIGURES:
        row = next((line for line in lines if figure in line), None)
        assert row is not None, f"no row for {figure!r} in:\n{out}"
        cells = bench_cells(row)
        assert cells[5], f"row {figure!r} has no target: {row}"
    assert "FAILED" not in out, out
    assert "'database is locked' errors" in out
    locked = next(line for line in lines if "'database is locked' errors" in line)
    assert bench_cells(locked)[2] == "0", locked
    # Every error of every race is counted, and the throughput mix makes none of its own
    # (its notes stay within the notes limit however long it runs).
    other = next(line for line in lines if "other errors (every race)" in line)
    assert bench_cells(other)[2] == "0", other
    assert "figures;" in out.splitlines()[-1]
    assert list(tmp_path.glob("nineplan-bench-*")) == [], "the runner left its data directory behind"
