#!/usr/bin/env python
"""Teams on PostgreSQL: two stateless HTTP servers, twelve clients over MCP HTTP.

Two `manage.py mcp --transport http` processes in stateless mode share one PostgreSQL
database and one sessions folder. Twelve client processes post JSON-RPC tool calls to
them (each client keeps one connection to one server, the clients split evenly between
the two) for a fixed time: eight on sessions of their own loop add -> pull -> note ->
complete; four race to pull from one shared session, completing what they win (a pull
that finds the plan held or the queue empty is an answer, not an error). Every call's
latency is kept; an error is a call answered with an HTTP status other than 200, a
JSON-RPC error, or a tool error other than the two a race expects.

    bench/teams.py                          this checkout, one run
    bench/teams.py --repo /tmp/old --repo .  two checkouts taking turns (each run on a
                                             database of its own), side by side

`bench/run.py --only teams-pg` runs this checkout and REFERENCE, exported from the
repository's history, taking turns, and holds this checkout to the guard beside it.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    MCP_PROTOCOL,
    PYTHON,
    REPO,
    TextMaker,
    bench_env,
    free_port,
    mcp_meta,
    median,
    percentile,
    pg_admin,
    progress,
    scratch_database,
    skipped_without_postgres,
)

META = mcp_meta("9plan-bench")
OWN, RACERS, SERVERS = 8, 4, 2
# The commit before 9plan's core moved onto its libraries' public paths: a team's speed on
# it is the guard every later change is held to (docs/design.md, "Speed targets").
REFERENCE = "1275b85e1c1613fbde0dbad503aacef6db0575f5"
CALLS_TARGET, P99_TARGET = 0.9, 1.2
EXPECTED = {"PLAN_ALREADY_ACTIVE", "QUEUE_EMPTY"}  # what a racing pull may be told
SESSION_RE = re.compile(r"\[Session: ([a-z]+-[a-z]+-[a-z]+)\]")
ERROR_RE = re.compile(r"\] Error: ([A-Z_]+)")


class Connection:
    """One keep-alive HTTP connection to one server's /mcp."""

    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.next_id = 0

    def call(self, name: str, arguments: dict) -> tuple[bool, str, str]:
        """(answered as a tool result, its text, the error category or "")."""
        self.next_id += 1
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments, "_meta": META},
            }
        )
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": MCP_PROTOCOL,
            "mcp-method": "tools/call",
            "mcp-name": name,
        }
        self.conn.request("POST", "/mcp", body, headers)
        response = self.conn.getresponse()
        raw = response.read().decode()
        if response.status != 200:
            return False, f"HTTP {response.status}: {raw[:200]}", "HTTP"
        if "text/event-stream" in response.getheader("content-type", ""):
            raw = "\n".join(line[5:].strip() for line in raw.splitlines() if line.startswith("data:"))
        message = json.loads(raw.strip().splitlines()[-1])
        if "error" in message:
            return False, json.dumps(message["error"])[:200], "JSONRPC"
        result = message["result"]
        text = " ".join(c.get("text", "") for c in result.get("content", []))
        category = ""
        if result.get("isError"):
            found = ERROR_RE.search(text)
            category = found.group(1) if found else "UNKNOWN"
        return True, text, category


def client(port: int, role: str, session: str, seconds: float) -> None:
    """One client process: wait for "go", loop for ``seconds``, print its figures."""
    conn = Connection(port)
    text = TextMaker(seed=port + sum(map(ord, session + role)))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()
    latencies: list[float] = []
    errors: list[str] = []
    start = time.perf_counter()
    end = start + seconds

    def call(name: str, arguments: dict, expected: frozenset = frozenset()) -> str:
        t0 = time.perf_counter()
        _, answer, category = conn.call(name, {**arguments, "session_name": session})
        latencies.append(time.perf_counter() - t0)
        if category and category not in expected:
            errors.append(f"{name}: {category}: {answer[:160]}")
        return category

    while time.perf_counter() < end:
        if role == "own":
            call(
                "9plan_queue_add",
                {
                    "context": text.chars(150),
                    "goal": text.chars(60),
                    "approach": text.chars(250),
                    "success_criteria": text.chars(80),
                },
            )
            call("9plan_queue_pull", {})
            call("9plan_plan_note", {"text": text.chars(120)})
            call("9plan_plan_complete", {"outcome": text.chars(200)})
        elif call("9plan_queue_pull", {}, frozenset(EXPECTED)) == "":
            call("9plan_plan_complete", {"outcome": text.chars(200)}, frozenset({"NO_ACTIVE_PLAN"}))
    elapsed = time.perf_counter() - start
    sys.stdout.write(json.dumps({"latencies": latencies, "elapsed": elapsed, "errors": errors}) + "\n")
    sys.stdout.flush()


def _wait_listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"an HTTP server exited: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("an HTTP server did not start listening")


def one_run(
    repo: Path, postgres_url: str, seconds: float, racing_plans: int, servers: int = SERVERS, within: Path | None = None
) -> dict:
    """One run of the workload against ``repo``'s code on a database of its own, with its
    sessions folder and server logs in a new folder: inside ``within`` (which its owner
    deletes or keeps), or in the system's temp folder, deleted at the end."""
    scratch = f"nineplan_bench_teams_{os.getpid()}_{int(time.time() * 1000) % 100000}"
    with scratch_database(postgres_url, scratch) as db_url:
        data_dir = Path(tempfile.mkdtemp(prefix="9plan-bench-teams-", dir=within))
        (data_dir / "sessions").mkdir()
        env = bench_env(data_dir, db_url)
        env.update(PYTHONPATH=str(repo), NINEPLAN_HTTP_STATELESS="1")
        manage = str(repo / "manage.py")
        procs: list[subprocess.Popen] = []
        try:
            subprocess.run([PYTHON, manage, "migrate", "--verbosity", "0"], env=env, cwd=str(repo), check=True)
            ports = [free_port() for _ in range(servers)]
            for port in ports:
                log = data_dir / f"server-{port}.log"
                procs.append(
                    subprocess.Popen(
                        [PYTHON, manage, "mcp", "--transport", "http", "--port", str(port)],
                        env=env,
                        cwd=str(repo),
                        stdout=subprocess.DEVNULL,
                        stderr=log.open("w"),
                    )
                )
            for port, proc in zip(ports, procs):
                _wait_listening(proc, port, data_dir / f"server-{port}.log")
            setup = Connection(ports[0])
            names = []
            for i in range(OWN + 1):
                _, answer, category = setup.call("9plan_session_create", {"task_description": f"team member {i}"})
                if category:
                    raise RuntimeError(f"session_create failed: {answer}")
                names.append(SESSION_RE.search(answer).group(1))
            shared = names[-1]
            text = TextMaker()
            for start in range(0, racing_plans, 50):
                plans = [
                    {
                        "context": text.chars(150),
                        "goal": text.chars(60),
                        "approach": text.chars(250),
                        "success_criteria": text.chars(80),
                    }
                    for _ in range(min(50, racing_plans - start))
                ]
                _, answer, category = setup.call("9plan_queue_add_batch", {"plans": plans, "session_name": shared})
                if category:
                    raise RuntimeError(f"queue_add_batch failed: {answer}")
            setup.conn.close()
            pg_admin(db_url, "ANALYZE")
            assignments = [("own", name) for name in names[:OWN]] + [("race", shared)] * RACERS
            commands = [
                [PYTHON, __file__, "--client", str(ports[i % servers]), role, name, str(seconds)]
                for i, (role, name) in enumerate(assignments)
            ]
            cpu0, pg0 = _cpu([p.pid for p in procs]), _backends_cpu(scratch)
            from common import race

            results = race(commands, env, "teams")
            cpu = _cpu([p.pid for p in procs]) - cpu0
            pg1 = _backends_cpu(scratch)
            pg_cpu = sum(used - pg0.get(pid, 0.0) for pid, used in pg1.items())
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            if within is None:
                shutil.rmtree(data_dir, ignore_errors=True)
    latencies = [x * 1000 for r in results for x in r["latencies"]]
    elapsed = max(r["elapsed"] for r in results)
    errors = [e for r in results for e in r["errors"]]
    for e in errors[:5]:
        progress(f"teams error: {e}")
    return {
        "ops": len(latencies) / elapsed,
        "p50": median(latencies),
        "p99": percentile(latencies, 99),
        "errors": len(errors),
        "calls": len(latencies),
        "server_cpu_per_op": cpu / max(1, len(latencies)) * 1000,
        "pg_cpu_per_op": pg_cpu / max(1, len(latencies)) * 1000,
        "elapsed": elapsed,
        "server_cores": cpu / elapsed,
        "pg_cores": pg_cpu / elapsed,
    }


def _backends_cpu(database: str) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend serving ``database`` on this machine
    (found by the process title PostgreSQL gives its backends: "postgres: user database ...")."""
    found = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            title = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            if not title.startswith("postgres:") or f" {database} " not in title:
                continue
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    return found


def _cpu(pids: list[int]) -> float:
    """CPU seconds of the processes so far (user + system, every thread)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def take_turns(repos: list[Path], rounds: int, run: Callable[[Path], dict]) -> dict[Path, list[dict]]:
    """Each checkout's results of ``run``, ``rounds`` times, the checkouts taking turns and
    each going first in turn: the first of a round finds the machine as the last run left it."""
    runs: dict[Path, list[dict]] = {repo: [] for repo in repos}
    for n in range(rounds):
        for repo in repos if n % 2 == 0 else repos[::-1]:
            runs[repo].append(run(repo))
    return runs


def reference_checkout(into: Path) -> Path | None:
    """REFERENCE's files, exported from this repository's history into a new folder of
    ``into``; None when the history does not hold it (a copy without git's history, a
    shallow clone)."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", REFERENCE], capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    target = Path(tempfile.mkdtemp(prefix="reference-", dir=into))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


def run_postgres(data_dir: Path, params: dict) -> dict:
    """The benchmark as `bench/run.py --only teams-pg` runs it: this checkout, and
    REFERENCE taking turns with it when the history holds that commit."""
    url = params.get("postgres_url")
    if not url:
        return skipped_without_postgres("teams (PostgreSQL)")
    seconds = params["teams_seconds"]
    progress(f"teams: {SERVERS} stateless HTTP servers, {OWN + RACERS} clients for {seconds} s")
    reference = reference_checkout(data_dir)
    rounds = params["teams_rounds"] if reference else 1

    def run(repo: Path) -> dict:
        r = one_run(repo, url, seconds, params["teams_plans"], within=data_dir)
        progress(f"teams, {'this checkout' if repo == REPO else REFERENCE[:7]}: {r['ops']:.0f} calls/s")
        return r

    runs = take_turns([REPO, reference] if reference else [REPO], rounds, run)
    ours = runs[REPO]

    def row(figure, value, unit, baseline=None, target="(shown)", met=None):
        return {
            "bench": "teams (PostgreSQL)",
            "figure": figure,
            "value": value,
            "baseline": baseline,
            "unit": unit,
            "ratio": value / baseline if baseline else None,
            "target": target,
            "met": met,
        }

    def med(runs: list[dict], key: str) -> float:
        return median([r[key] for r in runs])

    label = f"{SERVERS} HTTP servers, {OWN} own sessions + {RACERS} racing on one"
    errors = sum(r["errors"] for r in ours)
    calls, p99 = med(ours, "ops"), med(ours, "p99")
    rows = [
        row(f"tool calls/s ({label})", calls, "ops/s"),
        row("latency p50", med(ours, "p50"), "ms"),
        row("latency p99", p99, "ms"),
        row("servers' CPU per call", med(ours, "server_cpu_per_op"), "ms"),
        row("PostgreSQL's CPU per call (the run's backends)", med(ours, "pg_cpu_per_op"), "ms"),
        row("errors", errors, "count", target="0", met=errors == 0),
    ]
    if reference is None:
        rows.append(row(f"against {REFERENCE[:7]}: skipped (not in this repository's history)", None, ""))
        return {"rows": rows}
    theirs = runs[reference]
    base_calls, base_p99 = med(theirs, "ops"), med(theirs, "p99")
    rows += [
        row(
            f"tool calls/s against {REFERENCE[:7]} (taking turns, median of {rounds})",
            calls,
            "ops/s",
            base_calls,
            f">= {CALLS_TARGET}x",
            calls >= CALLS_TARGET * base_calls,
        ),
        row(
            f"latency p99 against {REFERENCE[:7]}",
            p99,
            "ms",
            base_p99,
            f"<= {P99_TARGET}x",
            p99 <= P99_TARGET * base_p99,
        ),
    ]
    return {"rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", action="append", help="a checkout to run (repeatable; default this one)")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--plans", type=int, default=3000, help="plans queued in the shared session")
    parser.add_argument("--servers", type=int, default=SERVERS)
    parser.add_argument("--client", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        port, role, session, seconds = args.client
        client(int(port), role, session, float(seconds))
        return
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("DATABASE_URL must name PostgreSQL (a database beside it is created for each run).")
    repos = [Path(r).resolve() for r in (args.repo or [str(REPO)])]
    load = os.getloadavg()[0]

    def run(repo: Path) -> dict:
        r = one_run(repo, url, args.seconds, args.plans, args.servers)
        print(
            f"{repo}: {r['ops']:.0f} calls/s, p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms, "
            f"{r['errors']} errors, CPU per call: servers {r['server_cpu_per_op']:.2f} ms, PostgreSQL "
            f"{r['pg_cpu_per_op']:.2f} ms; cores used: servers {r['server_cores']:.2f}, PostgreSQL "
            f"{r['pg_cores']:.2f}",
            flush=True,
        )
        return r

    runs = take_turns(repos, args.rounds, run)
    print(
        f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; {args.servers} servers, "
        f"{args.rounds} rounds of {args.seconds:g} s"
    )
    first = repos[0]
    for repo in repos:
        ops = median([r["ops"] for r in runs[repo]])
        p99 = median([r["p99"] for r in runs[repo]])
        base_ops = median([r["ops"] for r in runs[first]])
        base_p99 = median([r["p99"] for r in runs[first]])
        print(
            f"| {repo} | {ops:.0f} calls/s ({ops / base_ops:.2f}x) | p99 {p99:.0f} ms ({p99 / base_p99:.2f}x) | "
            f"{sum(r['errors'] for r in runs[repo])} errors |"
        )


if __name__ == "__main__":
    main()
