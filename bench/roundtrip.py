"""Tool round trips over stdio, against (a bare MCPServer no-op round trip + the same
service called in-process), at two queue sizes.

One cycle is add, pull, note, complete, search: the queue keeps its length, the
session's history grows by one plan. The MCP side and the in-process side run in
alternating blocks of cycles (the server alone on the database, then this process), and
every MCP call is paired with a no-op call to the bare server, so a burst of load from
elsewhere on the machine hits all sides alike.
"""

from __future__ import annotations

import json
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
    write_plan_files,
)
from rpc import StdioServer

OPS = ("add", "pull", "note", "complete", "search")
TARGET_MS = {"add": 5.0, "pull": 5.0, "complete": 5.0, "search": 6.0}
RATIO_TARGET = 1.5
GROWTH_TARGET = 1.2
# Words the text generator never makes, planted in exactly 5 completed plans at every
# size: each search ranks the same 5 matches and returns them all, so the two sizes differ
# only in how many plans the session holds. (How search cost grows with the number of
# matches is the history-search benchmark's subject.)
QUERY = "obsidian meridian"


def seed_session(size: int, text: TextMaker, taken: set[str]) -> str:
    """A session with ``size`` queued plans (with their files) and ``size`` completed ones."""
    from sessions_app import services
    from sessions_app.models import Plan

    name = services.session_create(task_description="benchmark session", actor="bench").name
    # Plans the measured calls of a smaller size added have ids of their own, drawn at
    # random: the seeded ones must not take them again.
    taken.update(Plan.objects.values_list("id", flat=True))
    ids = plan_ids(2 * size, taken=taken)
    now = db_now()
    queued = [(ids[i], text.plan(i, size, size=1000)) for i in range(size)]
    done = [(ids[size + i], text.plan(i, size, size=1000)) for i in range(size)]
    for _, sections in done[:5]:
        sections["goal"] += f" {QUERY}"
    rows = [plan_row(pid, name, "queued", i, sections, now) for i, (pid, sections) in enumerate(queued)]
    rows += [plan_row(pid, name, "completed", None, sections, now) for pid, sections in done]
    bulk_insert("sessions_app_plan", PLAN_COLUMNS, rows)
    write_plan_files(name, queued)
    return name


def _new_plan(text: TextMaker) -> dict[str, str]:
    return {
        "context": text.chars(150),
        "goal": text.chars(60),
        "approach": text.chars(250),
        "success_criteria": text.chars(80),
    }


def _mcp_op(server: StdioServer, op: str, text: TextMaker) -> tuple[float, int]:
    """Seconds for one call and the size of its result in bytes."""
    if op == "add":
        took, result = server.timed_call("9plan_queue_add", _new_plan(text))
    elif op == "pull":
        took, result = server.timed_call("9plan_queue_pull", {})
    elif op == "note":
        took, result = server.timed_call("9plan_plan_note", {"text": text.chars(120)})
    elif op == "complete":
        took, result = server.timed_call("9plan_plan_complete", {"outcome": text.chars(200)})
    else:
        took, result = server.timed_call("9plan_history_search", {"query": QUERY})
    return took, len(json.dumps(result))


def _service_op(session: str, op: str, text: TextMaker) -> float:
    from sessions_app import services
    from sessions_app.reads import queries

    t0 = time.perf_counter()
    if op == "add":
        services.plan_enqueue(session_name=session, **_new_plan(text))
    elif op == "pull":
        services.plan_pull(session_name=session)
    elif op == "note":
        services.plan_note(session_name=session, text=text.chars(120))
    elif op == "complete":
        services.plan_complete(session_name=session, outcome=text.chars(200))
    else:
        queries.history_search(QUERY, session_name=session, max_results=5)
    return time.perf_counter() - t0


def measure_size(size: int, cycles: int, warmup: int, env: dict, bare: StdioServer, taken: set[str]) -> dict:
    from django.db import connection, connections

    text = TextMaker(seed=size)
    progress(f"round trip: seeding two sessions of {size:,} queued + {size:,} completed plans")
    over_mcp = seed_session(size, text, taken)
    in_process = seed_session(size, text, taken)
    samples = {op: {"mcp": [], "service": [], "noop": [], "sized": []} for op in OPS}
    blocks = max(1, cycles // 5)
    per_block = [cycles // blocks + (1 if b < cycles % blocks else 0) for b in range(blocks)]
    with StdioServer([PYTHON, MANAGE, "mcp"], env, cwd=str(REPO)) as server:
        server.initialize()
        server.call_tool("9plan_session_resume", {"session_name": over_mcp})
        for block, count in enumerate(per_block):
            skip = warmup if block == 0 else 0
            # The server gets the database to itself, as an agent working alone has it: a
            # connection held open here would hide what the server's own connections cost.
            connections.close_all()
            for cycle in range(skip + count):
                for op in OPS:
                    t_mcp, nbytes = _mcp_op(server, op, text)
                    t_noop = bare.timed_call("noop", {"value": "x"})[0]
                    t_sized = bare.timed_call("sized", {"size": nbytes})[0]
                    if cycle >= skip:
                        samples[op]["mcp"].append(t_mcp)
                        samples[op]["noop"].append(t_noop)
                        samples[op]["sized"].append(t_sized)
            connection.ensure_connection()
            for cycle in range(skip + count):
                for op in OPS:
                    t_service = _service_op(in_process, op, text)
                    if cycle >= skip:
                        samples[op]["service"].append(t_service)
        rss = server.close()
    progress(f"round trip at {size:,} plans: {cycles} cycles measured")
    figures = {}
    for op in OPS:
        mcp = median(samples[op]["mcp"]) * 1000
        service = median(samples[op]["service"]) * 1000
        noop = median(samples[op]["noop"]) * 1000
        sized = median(samples[op]["sized"]) * 1000
        figures[op] = {"mcp": mcp, "service": service, "noop": noop, "sized": sized}
    return {"figures": figures, "rss": rss}


def run(data_dir: Path, params: dict) -> dict:
    from common import setup_django

    setup_django(data_dir)
    env = bench_env(data_dir)
    sizes = params["roundtrip_sizes"]
    taken: set[str] = set()
    results = {}
    with StdioServer([PYTHON, BARE_SERVER, "--noop"], env, cwd=str(REPO)) as bare:
        bare.initialize()
        for size in sizes:
            results[size] = measure_size(size, params["roundtrip_cycles"], params["roundtrip_warmup"], env, bare, taken)
        bare_rss = bare.close()

    rows = []
    noop_all = []
    for size in sizes:
        for op in OPS:
            f = results[size]["figures"][op]
            noop_all.append(f["noop"])
            base = f["noop"] + f["service"]
            ratio = f["mcp"] / base
            limit = TARGET_MS.get(op)
            target = f"<= {RATIO_TARGET}x" + (f"; < {limit:g} ms" if limit else "")
            rows.append(
                {
                    "bench": "round trip",
                    "figure": f"{op} @ {size:,} plans (noop {f['noop']:.2f} + service {f['service']:.2f} ms;"
                    f" SDK alone for a result this size {f['sized']:.2f} ms)",
                    "value": f["mcp"],
                    "baseline": base,
                    "unit": "ms",
                    "ratio": ratio,
                    "target": target,
                    "met": ratio <= RATIO_TARGET and (limit is None or f["mcp"] < limit),
                }
            )
    small, large = sizes[0], sizes[-1]
    for op in OPS:
        a = results[small]["figures"][op]["mcp"]
        b = results[large]["figures"][op]["mcp"]
        rows.append(
            {
                "bench": "round trip",
                "figure": f"{op}: {large:,} vs {small:,} plans (flat)",
                "value": b,
                "baseline": a,
                "unit": "ms",
                "ratio": b / a,
                "target": f"<= {GROWTH_TARGET}x",
                "met": b / a <= GROWTH_TARGET,
            }
        )
    rows.append(
        {
            "bench": "round trip",
            "figure": "bare MCPServer no-op tool round trip",
            "value": median(noop_all),
            "baseline": None,
            "unit": "ms",
            "ratio": None,
            "target": "(shown)",
            "met": None,
        }
    )
    memory = {f"mcp_roundtrip_{size}_kb": results[size]["rss"] for size in sizes}
    memory["bare_noop_kb"] = bare_rss
    return {"rows": rows, "memory": memory}
