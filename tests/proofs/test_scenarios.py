"""The executable validation scenarios (validation/scenarios/*.yaml), each replayed against
a real `manage.py mcp` process over stdio, and the replayer's own checks.

The replays use a fresh data directory each, never the test database.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from validation import replay
from validation.replay import Outcome, ScenarioError, check_tool_result, dig, subset_problems, substitute

SCENARIOS = replay.all_scenarios()


def test_the_required_scenarios_exist():
    names = {path.stem for path in SCENARIOS}
    assert {"happy_path", "defer_decompose", "discard", "compaction_recovery", "error_cases", "notekeeper"} <= names
    for path in SCENARIOS:
        scenario = replay.load(path)
        assert scenario.name == path.stem and scenario.description


def test_compaction_recovery_restarts_the_server():
    scenario = replay.load(replay.SCENARIOS / "compaction_recovery.yaml")
    assert any(step.get("restart") for step in scenario.steps)


def sandbox_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
async def test_scenario(path: Path, tmp_path):
    scenario = replay.load(path)
    sandboxes = sandbox_files(replay.SANDBOXES)
    run = await replay.replay(scenario, tmp_path / "data")
    assert run.steps_done == len(scenario.steps)
    restarts = sum(1 for step in scenario.steps if step.get("restart"))
    assert run.servers_started == 1 + restarts
    # The agent's edits went into the run's own copy; the repository's sandbox is as it was.
    assert sandbox_files(replay.SANDBOXES) == sandboxes


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_notekeeper_tests_pass_because_of_the_scenarios_edits(tmp_path):
    scenario = replay.load(replay.SCENARIOS / "notekeeper.yaml")
    assert scenario.sandbox == "notekeeper"
    run = await replay.replay(scenario, tmp_path / "data")
    copy = Path(run.variables["sandbox"])
    assert copy.is_relative_to(tmp_path) and copy.name == "notekeeper"
    store = (copy / "notekeeper" / "store.py").read_text(encoding="utf-8")
    assert "NotImplementedError" not in store and "def _save(" in store
    # The same tests on a fresh copy (the skeleton) fail: it is the edits that made them pass.
    fresh = replay.copy_sandbox("notekeeper", tmp_path / "fresh")
    replay.run_tests(fresh, {"expect": "fail", "passed": 0, "failed": 7})
    replay.run_tests(copy, {"expect": "pass", "passed": 7, "failed": 0})
    with pytest.raises(ScenarioError, match="expected them to pass"):
        replay.run_tests(fresh, {"expect": "pass"})


def test_the_scenarios_that_edit_a_sandbox_say_which():
    for path in SCENARIOS:
        scenario = replay.load(path)
        edits_sandbox = any("run_tests" in step for step in scenario.steps)
        assert edits_sandbox == (scenario.sandbox is not None), path.stem


def test_the_repository_registers_the_server_for_mcp_clients():
    config = json.loads((REPO / ".mcp.json").read_text())
    assert config == {"mcpServers": {"9plan": {"command": ".venv/bin/python", "args": ["manage.py", "mcp"]}}}


# --- the replayer's checks, without a server -------------------------------------------------

OK = Outcome(
    text='[Session: brave-amber-otter] Plan added.\n{"session_name":"brave-amber-otter","plan_id":"k3x9q"}',
    is_error=False,
    structured={"session_name": "brave-amber-otter", "plan_id": "k3x9q", "queue_position": 1, "next": None},
)
ERROR = Outcome(
    text="[Session: brave-amber-otter] Error: QUEUE_EMPTY\n\nTask complete! 🎉\n\nSuggested action: Add plans.",
    is_error=True,
    structured={"session_name": "brave-amber-otter", "error": "QUEUE_EMPTY", "message": "m", "suggestion": "s"},
)


def test_a_result_matching_its_expectations_passes():
    assert (
        check_tool_result(OK, {"structured": {"plan_id": "k3x9q", "next": None}, "session": "brave-amber-otter"}) == []
    )
    assert check_tool_result(ERROR, {"category": "QUEUE_EMPTY", "text_contains": "Task complete! 🎉"}) == []


@pytest.mark.parametrize(
    ("outcome", "expect", "problem"),
    [
        (OK, {"category": "QUEUE_EMPTY"}, "is_error is False, expected True"),
        (ERROR, {}, "is_error is True, expected False"),
        (ERROR, {"category": "NO_ACTIVE_PLAN"}, "category is QUEUE_EMPTY, expected NO_ACTIVE_PLAN"),
        (OK, {"structured": {"plan_id": "zzzzz"}}, "structured.plan_id: expected 'zzzzz', got 'k3x9q'"),
        (OK, {"structured": {"queue_position": True}}, "structured.queue_position: expected True, got 1"),
        (OK, {"structured": {"missing": 1}}, "structured.missing: missing"),
        (OK, {"session": "other-grey-owl"}, "expected 'other-grey-owl'"),
        (OK, {"text_contains": ["Plan added.", "Plan pulled."]}, "does not contain 'Plan pulled.'"),
        (OK, {"text_not_contains": "Plan added."}, "the text contains 'Plan added.'"),
        (OK, {"field": "goal"}, "field is None, expected 'goal'"),
        (Outcome("Plan added.", False, {}), {}, "does not start with [Session: name]"),
        (
            Outcome("[Session: none] Error: QUEUE_EMPTY: nope", True, {"error": "QUEUE_EMPTY"}),
            {"category": "QUEUE_EMPTY"},
            "the error text is not",
        ),
    ],
)
def test_a_result_that_differs_is_reported(outcome, expect, problem):
    problems = check_tool_result(outcome, expect)
    assert any(problem in p for p in problems), problems


def test_lists_match_element_by_element_with_the_same_length():
    assert subset_problems([{"id": "a"}], [{"id": "a", "goal": "g"}]) == []
    assert subset_problems([{"id": "a"}], [{"id": "a"}, {"id": "b"}])
    assert subset_problems([{"id": "b"}], [{"id": "a"}])


def test_variables_are_substituted_and_saved():
    variables = {"session": "brave-amber-otter", "count": 3}
    assert substitute({"name": "${session}", "n": "${count}", "s": "x ${count}"}, variables) == {
        "name": "brave-amber-otter",
        "n": 3,
        "s": "x 3",
    }
    with pytest.raises(ScenarioError, match="plan_a"):
        substitute("${plan_a}", variables)
    assert dig({"plans": [{"plan_id": "k3x9q"}]}, "plans.0.plan_id") == "k3x9q"
    with pytest.raises(ScenarioError):
        dig({"plans": []}, "plans.0.plan_id")


@pytest.mark.parametrize(
    "text",
    [
        "steps: []\n",
        "steps:\n  - {tool: 9plan_queue_pull, restart: true}\n",
        "steps:\n  - {tool: 9plan_queue_pull, expect: {status: ok}}\n",
        "steps:\n  - {tool: 9plan_queue_pull, arguments: {}}\n",
        "steps:\n  - {run_tests: {expect: pass}}\n",
        "sandbox: notekeeper\nsteps:\n  - {run_tests: {expect: green}}\n",
        "sandbox: notekeeper\nsteps:\n  - {run_tests: {expect: pass, skipped: 1}}\n",
        "sandbox: ../scenarios\nsteps:\n  - {restart: true}\n",
        "sandbox: nothing-here\nsteps:\n  - {restart: true}\n",
    ],
)
def test_malformed_scenarios_are_refused(tmp_path, text):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError):
        replay.load(path)
