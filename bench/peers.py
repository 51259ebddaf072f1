#!/usr/bin/env python
"""9plan against two task servers for agents, through one client, on one workload.

The peers are npm packages (Task Master, `task-master-ai`; Shrimp Task Manager,
`mcp-shrimp-task-manager`), installed into bench/.peers/ by `make bench-peers-install`
(not part of 9plan). Each server is driven over stdio by the same client, the Python
`mcp` SDK's ClientSession, and a figure is the time from sending a tool call to its
parsed result: the server's work plus the same client and pipe cost for all.

The workload is one agent's session: add a task, take the next one, complete it, search
the completed ones for a word every task holds. The three servers run side by side and
take turns call by call, so a slow spell of a shared machine hits all alike.

| step     | 9plan                 | Task Master               | Shrimp                      |
|----------|-----------------------|---------------------------|-----------------------------|
| add      | 9plan_queue_add       | add_task (manual fields)  | split_tasks (append one)    |
| pull     | 9plan_queue_pull      | next_task                 | execute_task (oldest open)  |
| complete | 9plan_plan_complete   | set_task_status done      | verify_task (score 100)     |
| search   | 9plan_history_search  | get_tasks status=done     | query_task                  |

Task Master has no search and its next_task claims nothing (it only reads): both are
cheaper than what 9plan does in that step, so the comparison leans their way.

Each server keeps its tasks in one session (a folder of its own), so the session grows by
one completed task a cycle. The steps are measured twice in one run: in a fresh session
(the first cycles after the warm-up) and again from ``--grown`` completed tasks on, the
cycles in between run but not measured. Both sizes are an agent's session partway
through a long task; the peers read and rewrite their whole task file on every call.

    bench/peers.py                   the default run
    bench/peers.py --cycles 5 --grown 20   fewer cycles (a smoke run)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    MANAGE,
    PYTHON,
    REPO,
    TextMaker,
    bench_env,
    median,
    progress,
    setup_django,
)

PEERS_DIR = Path(__file__).resolve().parent / ".peers" / "node_modules"
TASK_MASTER = PEERS_DIR / "task-master-ai" / "dist" / "mcp-server.js"
SHRIMP = PEERS_DIR / "mcp-shrimp-task-manager" / "dist" / "index.js"
STEPS = ("add", "pull", "complete", "search")
# 9plan's time over the fastest peer's: at least as fast in a fresh session, and at least
# twice as fast once the session has grown (the peers rewrite their whole task file).
RATIO_TARGET = {"fresh": 1.0, "grown": 0.5}
WORD = "invoice"  # in every task's title, so every search finds every completed task


def installed() -> bool:
    return TASK_MASTER.is_file() and SHRIMP.is_file() and shutil.which("node") is not None


def _version(package: str) -> str:
    try:
        return json.loads((PEERS_DIR / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


def _task(text: TextMaker, n: int) -> dict[str, str]:
    return {
        "title": f"{WORD} step {n}: {text.chars(40)}",
        "context": text.chars(150),
        "approach": text.chars(250),
        "criteria": text.chars(80),
        "outcome": text.chars(200),
    }


def _newest_child() -> int:
    """The process id of this process's youngest child: the server just started."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.append((int(fields[19]), int(entry)))  # start time, pid
    return max(found)[1]


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` so far, to the nanosecond (the scheduler's own
    count; a figure the machine's other load hardly moves, unlike the time a call takes)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
        except OSError:
            continue  # a thread that just ended
    return total / 1e9


class Server:
    """One stdio server and the client session driving it."""

    name = ""

    def __init__(self, root: Path):
        self.root = root
        self.session = None

    def params(self):
        raise NotImplementedError

    async def start(self, stack) -> None:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        # The server's stderr goes to a file: an unread pipe would fill up and stall it.
        errlog = stack.enter_context((self.root / "stderr.log").open("w"))
        read, write = await stack.enter_async_context(stdio_client(self.params(), errlog=errlog))
        self.session = await stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        self.pid = _newest_child()
        await self.setup()

    async def setup(self) -> None:
        pass

    async def call(self, tool: str, arguments: dict):
        result = await self.session.call_tool(tool, arguments)
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            raise RuntimeError(f"{self.name} {tool} failed: {text[:400]}")
        return result

    async def timed(self, step: str, task: dict[str, str]) -> tuple[float, float]:
        """Seconds of the call, and CPU seconds the server spent meanwhile."""
        tool, arguments = self.step(step, task)
        cpu0 = cpu_seconds(self.pid)
        t0 = time.perf_counter()
        await self.call(tool, arguments)
        took = time.perf_counter() - t0
        cpu = cpu_seconds(self.pid) - cpu0
        await self.after(step)
        return took, cpu

    def step(self, step: str, task: dict[str, str]) -> tuple[str, dict]:
        raise NotImplementedError

    async def after(self, step: str) -> None:
        pass


class Nineplan(Server):
    name = "9plan"

    def params(self):
        from mcp import StdioServerParameters

        return StdioServerParameters(
            command=PYTHON,
            args=[MANAGE, "mcp"],
            env=bench_env(self.root),
            cwd=str(REPO),
        )

    async def setup(self) -> None:
        await self.call("9plan_session_create", {"task_description": "benchmark against the peers"})

    def step(self, step, task):
        if step == "add":
            return "9plan_queue_add", {
                "goal": task["title"],
                "context": task["context"],
                "approach": task["approach"],
                "success_criteria": task["criteria"],
            }
        if step == "pull":
            return "9plan_queue_pull", {}
        if step == "complete":
            return "9plan_plan_complete", {"outcome": task["outcome"]}
        return "9plan_history_search", {"query": WORD}


class TaskMaster(Server):
    name = f"Task Master {_version('task-master-ai')}"

    def params(self):
        from mcp import StdioServerParameters

        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["TASK_MASTER_TOOLS"] = "standard"
        return StdioServerParameters(command="node", args=[str(TASK_MASTER)], env=env, cwd=str(self.root))

    def __init__(self, root):
        super().__init__(root)
        self.next_id = 1

    def step(self, step, task):
        root = str(self.root)
        if step == "add":
            return "add_task", {
                "projectRoot": root,
                "title": task["title"],
                "description": task["context"],
                "details": task["approach"],
                "testStrategy": task["criteria"],
            }
        if step == "pull":
            return "next_task", {"projectRoot": root}
        if step == "complete":
            return "set_task_status", {
                "projectRoot": root,
                "id": str(self.next_id),
                "status": "done",
            }
        return "get_tasks", {"projectRoot": root, "status": "done"}

    async def after(self, step):
        if step == "complete":
            self.next_id += 1


class Shrimp(Server):
    name = f"Shrimp {_version('mcp-shrimp-task-manager')}"

    def params(self):
        from mcp import StdioServerParameters

        env = {
            **os.environ,
            "DATA_DIR": str(self.root / "data"),
            "TEMPLATES_USE": "en",
            "ENABLE_GUI": "false",
        }
        return StdioServerParameters(command="node", args=[str(SHRIMP)], env=env, cwd=str(self.root))

    def _oldest_open(self) -> str:
        # Read outside the clock: the agent would have the id from an earlier answer.
        tasks = json.loads((self.root / "data" / "tasks.json").read_text())["tasks"]
        return next(t["id"] for t in tasks if t["status"] != "completed")

    def step(self, step, task):
        if step == "add":
            raw = [
                {
                    "name": task["title"],
                    "description": task["context"],
                    "implementationGuide": task["approach"],
                    "verificationCriteria": task["criteria"],
                }
            ]
            return "split_tasks", {"updateMode": "append", "tasksRaw": json.dumps(raw)}
        if step == "pull":
            return "execute_task", {"taskId": self._oldest_open()}
        if step == "complete":
            return "verify_task", {
                "taskId": self._oldest_open(),
                "summary": task["outcome"],
                "score": 100,
            }
        return "query_task", {"query": WORD}


async def _measure(
    root: Path, cycles: int, warmup: int, grown: int
) -> dict[int, dict[str, dict[str, dict[str, list[float]]]]]:
    """Samples per session size (0: fresh; ``grown``), per server, per step."""
    from contextlib import AsyncExitStack

    servers = [
        Nineplan(root / "9plan"),
        TaskMaster(root / "taskmaster"),
        Shrimp(root / "shrimp"),
    ]
    for s in servers:
        s.root.mkdir(parents=True, exist_ok=True)
    sizes = (0, grown) if grown else (0,)
    samples = {size: {s.name: {step: {"wall": [], "cpu": []} for step in STEPS} for s in servers} for size in sizes}
    # Cycle n starts with n completed tasks in the session: which size each measured one counts for.
    measured = {warmup + i: 0 for i in range(cycles)}
    if grown:
        if grown < warmup + cycles:
            raise ValueError(f"the grown session ({grown} tasks) must hold more than the first measurement's cycles")
        measured.update({grown + i: grown for i in range(cycles)})
    text = TextMaker()
    async with AsyncExitStack() as stack:
        for s in servers:
            await s.start(stack)
        for n in range(max(measured) + 1):
            if n == warmup + cycles and grown:
                progress(f"peers: growing each session to {grown} completed tasks")
            task = _task(text, n)
            size = measured.get(n)
            for i, step in enumerate(STEPS):
                # Each step in turn on every server, starting with a different one each time.
                order = servers[(n + i) % len(servers) :] + servers[: (n + i) % len(servers)]
                for s in order:
                    took, cpu = await s.timed(step, task)
                    if size is not None:
                        samples[size][s.name][step]["wall"].append(took * 1000)
                        samples[size][s.name][step]["cpu"].append(cpu * 1000)
    return samples


def rows(samples: dict, size: int) -> list[dict]:
    """Per step: 9plan's median time against the fastest peer's (the target), then the
    server's mean CPU per call against the peer using the least (shown)."""
    peers = [name for name in samples if name != "9plan"]
    where = "fresh session" if not size else f"from {size} completed tasks"
    limit = RATIO_TARGET["grown" if size else "fresh"]
    out = []
    for step in STEPS:
        for what, figure, target in (
            ("wall", "median time of the call", f"<= {limit:.2f}x"),
            ("cpu", "server CPU per call (mean)", "(shown)"),
        ):
            pick = median if what == "wall" else statistics.fmean
            mine = pick(samples["9plan"][step][what])
            theirs = {name: pick(samples[name][step][what]) for name in peers}
            best = min(theirs.values())
            shown = ", ".join(f"{name} {value:.2f} ms" for name, value in theirs.items())
            ratio = mine / best if best else math.nan
            out.append(
                {
                    "bench": "peers",
                    "figure": f"{step}, {where}: {figure} ({shown})",
                    "value": mine,
                    "baseline": best,
                    "unit": "ms",
                    "ratio": ratio,
                    "target": target,
                    "met": ratio <= limit if what == "wall" else None,
                    "step": step,
                    "what": what,
                    "peers": theirs,
                    "size": size,
                }
            )
    return out


def run(data_dir: Path, params: dict) -> dict:
    """The benchmark as `bench/run.py --only peers` runs it."""
    if not installed():
        return {
            "rows": [
                {
                    "bench": "peers",
                    "figure": "skipped (not installed: make bench-peers-install)",
                    "value": None,
                    "baseline": None,
                    "unit": "",
                    "ratio": None,
                    "target": "(optional)",
                    "met": None,
                }
            ]
        }
    setup_django(data_dir / "9plan")
    progress(
        f"peers: {params['peers_cycles']} cycles of add, pull, complete, search on 9plan and two peers, "
        f"in a fresh session and in one of {params['peers_grown']} completed tasks"
    )
    by_size = asyncio.run(_measure(data_dir, params["peers_cycles"], params["peers_warmup"], params["peers_grown"]))
    return {
        "rows": [
            {k: v for k, v in r.items() if k not in ("step", "what", "peers", "size")}
            for size, samples in by_size.items()
            for r in rows(samples, size)
        ]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=40, help="measured cycles at each session size")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument(
        "--grown", type=int, default=200, help="completed tasks of the second measurement (0: fresh session only)"
    )
    args = parser.parse_args()
    if not installed():
        raise SystemExit("The peers are not installed: make bench-peers-install (npm, into bench/.peers/).")
    with tempfile.TemporaryDirectory(prefix="9plan-bench-peers-") as tmp:
        root = Path(tmp)
        (root / "9plan" / "sessions").mkdir(parents=True)
        import subprocess

        # The schema first, in a process of its own (this one stays free of Django).
        subprocess.run(
            [PYTHON, MANAGE, "migrate", "--verbosity", "0"],
            env=bench_env(root / "9plan"),
            cwd=str(REPO),
            check=True,
        )
        load = os.getloadavg()[0]
        by_size = asyncio.run(_measure(root, args.cycles, args.warmup, args.grown))
        print(
            f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; {args.cycles} cycles per server "
            "at each session size"
        )
        for size, samples in by_size.items():
            names = [n for n in samples if n != "9plan"]
            print(f"| completed tasks | step | figure | 9plan | {' | '.join(names)} | 9plan / best peer |")
            print("|---:|---|---|---:|" + "---:|" * len(samples))
            for r in rows(samples, size):
                figure = "median time" if r["what"] == "wall" else "server CPU (mean)"
                peers = " | ".join(f"{r['peers'][n]:.2f} ms" for n in names)
                print(f"| {size} | {r['step']} | {figure} | {r['value']:.2f} ms | {peers} | {r['ratio']:.2f}x |")


if __name__ == "__main__":
    main()
