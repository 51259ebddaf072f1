"""Start-up: spawn `manage.py mcp` until its `initialize` answer, against a bare MCPServer
with no tools spawned the same way, alternating the two so that load on the machine hits
both alike. Also: the CPU time each process used until it answered (what the wall time
would be on an idle machine), the first tool answer after start, and both on a data
directory holding many sessions and plans."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from common import (
    BARE_SERVER,
    MANAGE,
    PLAN_COLUMNS,
    PYTHON,
    REPO,
    TextMaker,
    bench_env,
    bulk_insert,
    db_now,
    median,
    plan_ids,
    plan_row,
    progress,
    session_names,
    setup_django,
    write_plan_files,
)
from rpc import StdioServer

RATIO_TARGET = 1.3


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a running process has used so far (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spawn(argv: list[str], env: dict[str, str], session: str | None = None) -> dict:
    """Seconds to the initialize answer (and to the first tool answer when ``session`` is
    given), the CPU used until initialize, and the process's peak memory."""
    with StdioServer(argv, env, cwd=str(REPO)) as server:
        server.initialize()
        out = {"init": time.perf_counter() - server.started, "cpu": cpu_seconds(server.proc.pid)}
        if session is not None:
            server.call_tool("9plan_session_resume", {"session_name": session})
            out["first"] = time.perf_counter() - server.started
        out["rss"] = server.close()
    return out


def first_session(env: dict[str, str]) -> str:
    """Start a server once on ``env``'s data directory (migrating it) and create a session."""
    with StdioServer([PYTHON, MANAGE, "mcp"], env, cwd=str(REPO)) as server:
        server.initialize()
        name = server.call_tool("9plan_session_create", {"task_description": "start-up"})["structuredContent"][
            "session_name"
        ]
        server.close()
    return name


# tools/list is sent with every model turn: its size is what every turn pays (bytes).
TOOLS_LIST_TARGETS = {"all": 12 * 1024, "core": 7 * 1024}


def tools_list_bytes(env: dict[str, str], tools: str) -> int:
    """The size of tools/list's result, as compact JSON, from a real server listing
    ``tools`` ('all' or 'core')."""
    with StdioServer([PYTHON, MANAGE, "mcp", "--tools", tools], env, cwd=str(REPO)) as server:
        server.initialize()
        listed = server.request("tools/list")["result"]
        server.close()
    return len(json.dumps(listed, separators=(",", ":"), ensure_ascii=False).encode())


def seed_populated(data_dir: Path, sessions: int, plans_each: int) -> str:
    """A data directory with ``sessions`` sessions of ``plans_each`` plans (a tenth queued,
    with their files; the rest completed) for the start-up at scale."""
    setup_django(data_dir)
    maker = TextMaker(seed=5)
    pool = [maker.plan(i, 1000, size=400) for i in range(200)]
    now = db_now()
    names = session_names(sessions, seed=77)
    bulk_insert("sessions_app_session", ("name", "task_description", "created_at"), ((n, "seeded", now) for n in names))
    ids = iter(plan_ids(sessions * plans_each, seed=78))
    queued_each = max(1, plans_each // 10)
    rows = []
    k = 0
    for name in names:
        files = []
        for j in range(plans_each):
            pid = next(ids)
            sections = pool[k % len(pool)]
            k += 1
            if j < queued_each:
                rows.append(plan_row(pid, name, "queued", j, sections, now))
                files.append((pid, sections))
            else:
                rows.append(plan_row(pid, name, "completed", None, sections, now))
        write_plan_files(name, files)
    bulk_insert("sessions_app_plan", PLAN_COLUMNS, rows)
    from django.db import connections

    connections.close_all()
    return names[0]


def run(data_dir: Path, params: dict) -> dict:
    runs = params["startup_runs"]
    env = bench_env(data_dir)
    session = first_session(env)
    ours, bare = [], []
    for i in range(runs):
        ours.append(spawn([PYTHON, MANAGE, "mcp"], env, session))
        bare.append(spawn([PYTHON, BARE_SERVER], env))
        ms = ours[-1]["init"] * 1000, bare[-1]["init"] * 1000
        progress(f"start-up run {i + 1}/{runs}: 9plan {ms[0]:.0f} ms, bare {ms[1]:.0f} ms")

    sessions, plans_each = params["startup_populated"]
    populated_dir = data_dir / "populated"
    t0 = time.perf_counter()
    big_session = seed_populated(populated_dir, sessions, plans_each)
    took = time.perf_counter() - t0
    progress(f"start-up: seeded {sessions:,} sessions / {sessions * plans_each:,} plans in {took:.0f} s")
    big_env = bench_env(populated_dir)
    spawn([PYTHON, MANAGE, "mcp"], big_env, big_session)  # the first start repairs nothing, but migrates
    populated = [spawn([PYTHON, MANAGE, "mcp"], big_env, big_session) for _ in range(max(2, runs // 3))]

    fresh = []
    for i in range(params["fresh_runs"]):
        fresh_dir = data_dir / f"fresh-{i}"
        with StdioServer([PYTHON, MANAGE, "mcp"], bench_env(fresh_dir), cwd=str(REPO)) as server:
            server.initialize()
            server.call_tool("9plan_admin_sessions", {})
            fresh.append(time.perf_counter() - server.started)
            server.close()
        shutil.rmtree(fresh_dir, ignore_errors=True)

    def med(rows: list[dict], key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return median(values) if values else None

    init, init_bare = med(ours, "init"), med(bare, "init")
    cpu, cpu_bare = med(ours, "cpu"), med(bare, "cpu")
    scale = f"{sessions:,} sessions / {sessions * plans_each:,} plans"

    def row(figure, value, baseline, target="(shown)", met=None):
        value = None if value is None else value * 1000
        baseline = None if baseline is None else baseline * 1000
        ratio = value / baseline if value is not None and baseline else None
        return {
            "bench": "start-up",
            "figure": figure,
            "value": value,
            "baseline": baseline,
            "unit": "ms",
            "ratio": ratio,
            "target": target,
            "met": met,
        }

    rows = [
        row(
            f"spawn -> initialize answered (median of {runs})",
            init,
            init_bare,
            f"<= {RATIO_TARGET}x bare",
            init / init_bare <= RATIO_TARGET,
        ),
        row("CPU time used until initialize answered", cpu, cpu_bare),
        row(
            "spawn -> first tool answered (session_resume)",
            med(ours, "first"),
            init_bare,
            f"<= {RATIO_TARGET}x bare initialize",
            med(ours, "first") / init_bare <= RATIO_TARGET,
        ),
        row(f"spawn -> initialize answered, {scale}", med(populated, "init"), init_bare),
        row(f"spawn -> first tool answered, {scale}", med(populated, "first"), init_bare),
        row(f"fresh data dir -> first tool answered (median of {len(fresh)})", median(fresh) if fresh else None, None),
    ]
    for tools, limit in TOOLS_LIST_TARGETS.items():
        size = tools_list_bytes(env, tools)
        rows.append(
            {
                "bench": "start-up",
                "figure": f"tools/list size, {'every tool' if tools == 'all' else 'the core set'}",
                "value": size,
                "baseline": None,
                "unit": "bytes",
                "ratio": None,
                "target": f"<= {limit // 1024} KB",
                "met": size <= limit,
            }
        )
    memory = {
        "mcp_startup_kb": max(r["rss"] or 0 for r in ours),
        "mcp_startup_populated_kb": max(r["rss"] or 0 for r in populated),
        "bare_kb": max(r["rss"] or 0 for r in bare),
    }
    return {"rows": rows, "memory": memory}
