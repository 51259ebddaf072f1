"""`bench/teams.py` on its own: a short run against PostgreSQL completes without errors and
leaves nothing behind in the temp folder (its sessions folder and server logs included);
and as `make bench` runs it, beside the reference commit it is held to.

Only that the run works is checked: its figures are for the benchmark to report."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import REPO, bench_cells, run_bench

# The commit bench/teams.py compares with, read from its source (the benchmarks are scripts,
# not modules of the suite).
REFERENCE = re.search(r'^REFERENCE = "([0-9a-f]{40})"$', (REPO / "bench" / "teams.py").read_text(), re.M).group(1)

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.postgres]


def test_a_short_teams_run_answers_every_call_and_cleans_up(tmp_path):
    result = run_bench("teams.py", "--seconds", "1", "--rounds", "1", "--plans", "50", tmp_path=tmp_path, postgres=True)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = next(line for line in result.stdout.splitlines() if line.startswith("| "))
    assert "calls/s" in summary and "| 0 errors |" in summary, result.stdout
    assert list(tmp_path.glob("9plan-bench-teams-*")) == [], "the run left its data directory behind"


def test_make_bench_holds_the_teams_run_against_the_reference_commit(tmp_path):
    # The reference is exported from the repository's history: a clone that holds the
    # commit compares against it; one that does not (shallow) says the comparison was skipped.
    held = subprocess.run(["git", "cat-file", "-e", f"{REFERENCE}^{{commit}}"], cwd=str(REPO)).returncode == 0
    result = run_bench("run.py", "--quick", "--only", "teams-pg", tmp_path=tmp_path, postgres=True)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {
        cells[1]: cells for cells in map(bench_cells, result.stdout.splitlines()) if cells[:1] == ["teams (PostgreSQL)"]
    }
    assert rows["errors"][2] == "0", result.stdout
    against = [figure for figure in rows if REFERENCE[:7] in figure]
    if not held:
        assert against == [f"against {REFERENCE[:7]}: skipped (not in this repository's history)"], result.stdout
        return
    calls = rows[f"tool calls/s against {REFERENCE[:7]} (taking turns, median of 1)"]
    # Both sides ran: a baseline, a ratio and the guard beside it.
    assert calls[3].endswith("/s") and calls[4].endswith("x") and calls[5] == ">= 0.9x", calls
    p99 = rows[f"latency p99 against {REFERENCE[:7]}"]
    assert p99[3].endswith("ms") and p99[5] == "<= 1.2x", p99
    assert list(tmp_path.glob("nineplan-bench-*")) == [], "the run left its data directory behind"
