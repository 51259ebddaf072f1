"""`bench/teams.py` on its own: a short run against PostgreSQL completes without errors and
leaves nothing behind in the temp folder (its sessions folder and server logs included).

Only that the run works is checked: its figures are for the benchmark to report."""

from __future__ import annotations

import pytest

from tests.conftest import run_bench

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.postgres]


def test_a_short_teams_run_answers_every_call_and_cleans_up(tmp_path):
    result = run_bench("teams.py", "--seconds", "1", "--rounds", "1", "--plans", "50", tmp_path=tmp_path, postgres=True)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = next(line for line in result.stdout.splitlines() if line.startswith("| "))
    assert "calls/s" in summary and "| 0 errors |" in summary, result.stdout
    assert list(tmp_path.glob("9plan-bench-teams-*")) == [], "the run left its data directory behind"
