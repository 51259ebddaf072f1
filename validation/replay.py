"""Replay validation scenarios against a real `manage.py mcp` server over stdio.

A scenario is a YAML file of steps (tool calls, prompt reads, plan file edits, server
restarts) with the results each step must produce; validation/README.md describes the
format. Run every scenario, or the ones named, on a fresh temporary data directory:

    .venv/bin/python -m validation.replay
    .venv/bin/python -m validation.replay validation/scenarios/discard.yaml

Exit status 0 means every step of every scenario behaved as written.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = Path(__file__).resolve().parent / "scenarios"
SANDBOXES = Path(__file__).resolve().parent / "sandbox"
ERROR_LAYOUT = re.compile(
    r"\A\[Session: (?P<session>[^\]\n]+)\] Error: (?P<category>[A-Z_]+)\n\n"
    r"(?P<message>.+?)\n\nSuggested action: (?P<suggestion>.+)\Z",
    re.S,
)
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
STEP_KINDS = ("tool", "prompt", "edit_file", "restart", "run_tests")
TESTS_TIMEOUT = 300  # seconds for a sandbox's whole test run
EXPECT_KEYS = {
    "is_error",
    "category",
    "session",
    "field",
    "text_startswith",
    "text_contains",
    "text_not_contains",
    "structured",
}
REQUEST_TIMEOUT = 120  # seconds; a hung server fails its step instead of hanging the run


class ScenarioError(AssertionError):
    """A step did not behave as its scenario says, or the scenario itself is malformed."""


@dataclass
class Scenario:
    name: str
    description: str
    steps: list[dict[str, Any]]
    path: Path | None = None
    sandbox: str | None = None  # a folder of validation/sandbox/, copied fresh for each run


@dataclass
class Outcome:
    text: str
    is_error: bool
    structured: Any


@dataclass
class Run:
    scenario: Scenario
    variables: dict[str, Any] = field(default_factory=dict)
    steps_done: int = 0
    servers_started: int = 0


# --- loading ----------------------------------------------------------------------------


def load(path: Path) -> Scenario:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data["steps"]:
        raise ScenarioError(f"{path}: a scenario is a mapping with a non-empty 'steps' list")
    scenario = Scenario(
        name=str(data.get("name") or Path(path).stem),
        description=str(data.get("description") or "").strip(),
        steps=data["steps"],
        path=Path(path),
        sandbox=data.get("sandbox"),
    )
    if scenario.sandbox is not None and not (
        isinstance(scenario.sandbox, str)
        and re.fullmatch(r"[a-z][a-z0-9_-]*", scenario.sandbox)
        and (SANDBOXES / scenario.sandbox).is_dir()
    ):
        raise ScenarioError(f"{path}: sandbox {scenario.sandbox!r} is not a folder of {SANDBOXES}")
    for number, step in enumerate(scenario.steps, 1):
        _check_step_shape(scenario, number, step)
    return scenario


def _check_step_shape(scenario: Scenario, number: int, step: Any) -> None:
    where = f"{scenario.name} step {number}"
    if not isinstance(step, dict):
        raise ScenarioError(f"{where}: a step is a mapping")
    kinds = [k for k in STEP_KINDS if k in step]
    if len(kinds) != 1:
        raise ScenarioError(f"{where}: a step has exactly one of {', '.join(STEP_KINDS)}; found {kinds or 'none'}")
    unknown = set(step.get("expect") or {}) - EXPECT_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown expect key(s) {sorted(unknown)}; known: {sorted(EXPECT_KEYS)}")
    allowed = {"tool": {"args", "expect", "save", "note"}, "prompt": {"args", "expect", "note"}}
    extra = set(step) - {kinds[0]} - allowed.get(kinds[0], {"note"})
    if extra:
        raise ScenarioError(f"{where}: unknown key(s) {sorted(extra)} for a '{kinds[0]}' step")
    if kinds[0] == "run_tests":
        spec = step["run_tests"]
        if not isinstance(spec, dict) or spec.get("expect") not in ("pass", "fail"):
            raise ScenarioError(f"{where}: run_tests needs expect: pass or expect: fail")
        unknown = set(spec) - {"expect", "passed", "failed"}
        if unknown:
            raise ScenarioError(f"{where}: unknown run_tests key(s) {sorted(unknown)}; known: expect, passed, failed")
        if scenario.sandbox is None:
            raise ScenarioError(f"{where}: run_tests needs the scenario's 'sandbox'")


def all_scenarios(directory: Path = SCENARIOS) -> list[Path]:
    return sorted(directory.glob("*.yaml"))


# --- variables ----------------------------------------------------------------------------


def substitute(value: Any, variables: dict[str, Any]) -> Any:
    """Replace ``${name}`` in every string; a string that is exactly ``${name}`` takes the
    variable's value as it is (a number stays a number)."""
    if isinstance(value, str):
        whole = VARIABLE.fullmatch(value)
        if whole:
            return _lookup(whole.group(1), variables)
        return VARIABLE.sub(lambda m: str(_lookup(m.group(1), variables)), value)
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {substitute(k, variables): substitute(v, variables) for k, v in value.items()}
    return value


def _lookup(name: str, variables: dict[str, Any]) -> Any:
    if name not in variables:
        known = ", ".join(sorted(variables)) or "none yet"
        raise ScenarioError(f"variable ${{{name}}} is not saved by an earlier step (saved: {known})")
    return variables[name]


def dig(data: Any, path: str) -> Any:
    """``plans.0.plan_id`` -> data["plans"][0]["plan_id"]."""
    current = data
    for part in str(path).split("."):
        if isinstance(current, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(current) <= index < len(current):
                raise ScenarioError(f"cannot save {path!r}: index {index} is outside a list of {len(current)}")
            current = current[index]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            raise ScenarioError(f"cannot save {path!r}: no {part!r} in {json.dumps(current, default=str)[:200]}")
    return current


# --- checking -----------------------------------------------------------------------------


def subset_problems(expected: Any, actual: Any, where: str = "structured") -> list[str]:
    """Dicts match when every expected key matches; lists element by element, same length."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {json.dumps(actual, default=str)[:200]}"]
        problems = []
        for key, value in expected.items():
            if key not in actual:
                problems.append(f"{where}.{key}: missing")
            else:
                problems.extend(subset_problems(value, actual[key], f"{where}.{key}"))
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [
                f"{where}: expected {json.dumps(expected, default=str)[:300]}, got {json.dumps(actual, default=str)[:300]}"
            ]
        problems = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            problems.extend(subset_problems(e, a, f"{where}[{i}]"))
        return problems
    # True == 1 in Python, but not in a scenario: types must agree (ints and floats aside).
    if expected != actual or (type(expected) is not type(actual) and not _same_number(expected, actual)):
        return [f"{where}: expected {expected!r}, got {actual!r}"]
    return []


def _same_number(a: Any, b: Any) -> bool:
    numbers = (int, float)
    return isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool)


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def check_tool_result(outcome: Outcome, expect: dict[str, Any]) -> list[str]:
    """Everything wrong with one tool result, against its (substituted) expectations.

    Always checked: the text names a session first; an error has the exact layout of
    docs/design.md, "Errors"; is_error is as expected (an expected category implies an error)."""
    problems: list[str] = []
    text, data = outcome.text, outcome.structured
    want_error = expect.get("is_error", "category" in expect)
    if outcome.is_error != want_error:
        problems.append(f"is_error is {outcome.is_error}, expected {want_error}")
    header = re.match(r"\A\[Session: ([^\]\n]+)\]", text)
    if not header:
        problems.append("the text does not start with [Session: name]")
    elif isinstance(data, dict) and header.group(1) != (data.get("session_name") or "none"):
        problems.append(f"the text names session {header.group(1)!r} but the data says {data.get('session_name')!r}")
    if outcome.is_error:
        layout = ERROR_LAYOUT.match(text)
        if not layout:
            problems.append(
                "the error text is not '[Session: s] Error: CATEGORY\\n\\nmessage\\n\\nSuggested action: ...'"
            )
        elif isinstance(data, dict) and layout.group("category") != data.get("error"):
            problems.append(f"the text says {layout.group('category')} but the data says {data.get('error')}")
    if "category" in expect:
        got = data.get("error") if isinstance(data, dict) else None
        if got != expect["category"]:
            problems.append(f"category is {got}, expected {expect['category']}")
    if "session" in expect and header and header.group(1) != (expect["session"] or "none"):
        problems.append(f"the response names session {header.group(1)!r}, expected {expect['session']!r}")
    if "field" in expect:
        got = data.get("field") if isinstance(data, dict) else None
        if got != expect["field"]:
            problems.append(f"field is {got!r}, expected {expect['field']!r}")
    problems.extend(check_text(text, expect))
    if "structured" in expect:
        problems.extend(subset_problems(expect["structured"], data))
    return problems


def check_text(text: str, expect: dict[str, Any]) -> list[str]:
    problems = []
    if "text_startswith" in expect and not text.startswith(str(expect["text_startswith"])):
        problems.append(f"the text does not start with {expect['text_startswith']!r}")
    for needle in _as_list(expect.get("text_contains", [])):
        if needle not in text:
            problems.append(f"the text does not contain {needle!r}")
    for needle in _as_list(expect.get("text_not_contains", [])):
        if needle in text:
            problems.append(f"the text contains {needle!r}")
    return problems


# --- running ------------------------------------------------------------------------------


def server_environment(data_dir: Path, *, log_level: str = "warn", **extra: str) -> dict[str, str]:
    """The caller's environment with 9plan pointed at ``data_dir`` and nothing else of
    9plan's or Django's configuration leaking in (a real user's database, say)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "NINEPLAN_", "DJANGO_")) and k != "DATABASE_URL"
    }
    env.update(
        DJANGO_SETTINGS_MODULE="nineplan.settings",
        NINEPLAN_SESSIONS_PATH=str(data_dir / "sessions"),
        DATABASE_URL=f"sqlite:///{data_dir / 'db.sqlite3'}",
        NINEPLAN_LOG_LEVEL=log_level,
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


async def _start(stack: AsyncExitStack, run: Run, data_dir: Path, python: str) -> Client:
    run.servers_started += 1
    params = StdioServerParameters(
        command=python, args=[str(REPO / "manage.py"), "mcp"], env=server_environment(data_dir), cwd=str(REPO)
    )
    # The server's stderr (JSON log lines) goes to a file, quoted when a step fails.
    log = stack.enter_context(open(data_dir / f"server-{run.servers_started}.log", "a", encoding="utf-8"))
    client = Client(stdio_client(params, errlog=log), read_timeout_seconds=REQUEST_TIMEOUT)
    return await stack.enter_async_context(client)


async def replay(scenario: Scenario, data_dir: Path, *, python: str = sys.executable) -> Run:
    """Play every step against a server on ``data_dir``, one process until a restart step.
    Raises ScenarioError naming the first step that misbehaved."""
    data_dir.mkdir(parents=True, exist_ok=True)
    run = Run(scenario)
    if scenario.sandbox is not None:
        run.variables["sandbox"] = str(copy_sandbox(scenario.sandbox, data_dir))
    stack = AsyncExitStack()
    try:
        client = await _start(stack, run, data_dir, python)
        for number, step in enumerate(scenario.steps, 1):
            label = f"{scenario.name} step {number}"
            try:
                if "restart" in step:
                    await stack.aclose()
                    stack = AsyncExitStack()
                    client = await _start(stack, run, data_dir, python)
                elif "edit_file" in step:
                    _edit_file(substitute(step["edit_file"], run.variables))
                elif "run_tests" in step:
                    label += " (run_tests)"
                    run_tests(Path(run.variables["sandbox"]), step["run_tests"], python=python)
                elif "prompt" in step:
                    await _prompt_step(client, step, run)
                else:
                    label += f" ({step['tool']})"
                    await _tool_step(client, step, run)
            except ScenarioError as exc:
                raise ScenarioError(f"{label}: {exc}{_server_log_tail(data_dir, run)}") from None
            except MCPError as exc:  # includes a request that got no answer in time
                raise ScenarioError(f"{label}: {exc}{_server_log_tail(data_dir, run)}") from None
            run.steps_done = number
    finally:
        await stack.aclose()
    return run


async def _tool_step(client: Client, step: dict[str, Any], run: Run) -> None:
    args = substitute(step.get("args") or {}, run.variables)
    expect = substitute(step.get("expect") or {}, run.variables)
    result = await client.call_tool(step["tool"], args)
    text = "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")
    outcome = Outcome(text=text, is_error=bool(result.is_error), structured=result.structured_content)
    problems = check_tool_result(outcome, expect)
    if problems:
        raise ScenarioError("; ".join(problems) + f"\n--- response text ---\n{text[:1500]}")
    for name, path in (step.get("save") or {}).items():
        run.variables[name] = dig(outcome.structured, path)


async def _prompt_step(client: Client, step: dict[str, Any], run: Run) -> None:
    args = substitute(step.get("args") or {}, run.variables)
    expect = substitute(step.get("expect") or {}, run.variables)
    result = await client.get_prompt(step["prompt"], {k: str(v) for k, v in args.items()})
    text = "\n".join(m.content.text for m in result.messages if getattr(m.content, "type", None) == "text")
    problems = check_text(text, expect)
    if problems:
        raise ScenarioError("; ".join(problems) + f"\n--- prompt text ---\n{text[:1500]}")


def _edit_file(edit: dict[str, Any]) -> None:
    """An agent editing a plan file by hand: append text, or replace one text with another."""
    path = Path(edit["path"])
    text = path.read_text(encoding="utf-8")
    if "append" in edit:
        text += str(edit["append"])
    if "replace" in edit:
        old, new = str(edit["replace"]), str(edit.get("with", ""))
        if old not in text:
            raise ScenarioError(f"edit_file: {old!r} is not in {path.name}")
        text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")


def copy_sandbox(name: str, data_dir: Path) -> Path:
    """A fresh copy of validation/sandbox/NAME in the run's data directory: the agent's
    edits go there, never into the repository."""
    import shutil

    target = data_dir / "sandbox" / name
    shutil.copytree(SANDBOXES / name, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def run_tests(sandbox: Path, spec: dict[str, Any], *, python: str = sys.executable) -> str:
    """Runs the sandbox's own tests in a process of their own; checks that they pass or
    fail as expected (and, if given, how many passed and failed). Returns pytest's output."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_", "NINEPLAN_"))}
    env.pop("PYTHONPATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        done = subprocess.run(
            [python, "-m", "pytest", "-q"], cwd=sandbox, env=env, capture_output=True, text=True, timeout=TESTS_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise ScenarioError(f"the sandbox's tests ran longer than {TESTS_TIMEOUT} s") from None
    output = done.stdout + done.stderr
    counts = {
        word: int(n)
        for n, word in re.findall(r"(\d+) (passed|failed)", output.strip().splitlines()[-1] if output.strip() else "")
    }
    problems = []
    if spec["expect"] == "pass" and done.returncode != 0:
        problems.append(f"the sandbox's tests failed (exit {done.returncode}), expected them to pass")
    if spec["expect"] == "fail" and done.returncode != 1:
        problems.append(f"the sandbox's tests exited {done.returncode}, expected 1 (some tests failing)")
    for word in ("passed", "failed"):
        if word in spec and counts.get(word, 0) != spec[word]:
            problems.append(f"{counts.get(word, 0)} {word}, expected {spec[word]}")
    if problems:
        raise ScenarioError("; ".join(problems) + f"\n--- pytest output (end) ---\n{output[-2000:]}")
    return output


def _server_log_tail(data_dir: Path, run: Run) -> str:
    log = data_dir / f"server-{run.servers_started}.log"
    try:
        tail = log.read_text(encoding="utf-8").strip().splitlines()[-10:]
    except OSError:
        return ""
    return ("\n--- server stderr (last lines) ---\n" + "\n".join(tail)) if tail else ""


# --- command line -------------------------------------------------------------------------


async def _main_async(paths: list[Path], keep: bool) -> int:
    failures = 0
    root = Path(tempfile.mkdtemp(prefix="9plan-validation-"))
    for path in paths:
        try:
            scenario = load(path)
            run = await replay(scenario, root / path.stem)
            print(f"PASS {scenario.name}: {run.steps_done} steps, {run.servers_started} server process(es)")
        except ScenarioError as exc:
            failures += 1
            print(f"FAIL {path.stem}: {exc}")
    if keep:
        print(f"data kept in {root}")
    else:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Replay 9plan validation scenarios against `manage.py mcp`.")
    parser.add_argument("scenarios", nargs="*", type=Path, help="scenario files (default: all in validation/scenarios)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory for inspection")
    options = parser.parse_args(argv)
    return anyio.run(_main_async, options.scenarios or all_scenarios(), options.keep)


if __name__ == "__main__":
    sys.exit(main())
