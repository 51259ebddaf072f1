"""Tool round trips over streamable HTTP with plan files off (what `mcp --transport http`
does by default), against (the bare SDK's HTTP no-op round trip + the same service called
in-process).

The same client drives both servers: plain stateless JSON-RPC requests over one kept-alive
HTTP connection each, so what is measured is the server's side. One cycle is add, pull,
note, complete; every 9plan call is followed by a no-op call to the bare server and by the
same service call in-process, so a burst of load from elsewhere on the machine hits all
three alike.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

from common import (
    BARE_SERVER,
    MANAGE,
    MCP_PROTOCOL,
    PYTHON,
    REPO,
    TextMaker,
    bench_env,
    free_port,
    mcp_meta,
    median,
    progress,
)

OPS = ("add", "pull", "note", "complete")
RATIO_TARGET = 1.5
META = mcp_meta("bench")
START_TIMEOUT = 120


class HttpServer:
    def __init__(self, command: list[str], port: int, env: dict):
        self.port = port
        self.proc = subprocess.Popen(
            command, env=env, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{command[1]} did not start on port {port}") from None
                time.sleep(0.1)
        import httpx2

        self.http = httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        self.next_id = 0

    def timed_call(self, tool: str, arguments: dict) -> tuple[float, dict]:
        self.next_id += 1
        payload = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments, "_meta": META}}  # fmt: skip
        headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MCP_PROTOCOL,
                   "mcp-method": "tools/call", "mcp-name": tool}  # fmt: skip
        t0 = time.perf_counter()
        response = self.http.post("/mcp", json=payload, headers=headers)
        took = time.perf_counter() - t0
        text = response.text
        if not text.lstrip().startswith("{"):
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
        result = json.loads(text)["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result['content'][0]['text']}")
        return took, result

    def close(self) -> None:
        self.http.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _args(op: str, session: str, text: TextMaker) -> tuple[str, dict]:
    if op == "add":
        plan = {"context": text.chars(100), "goal": text.chars(60), "approach": text.chars(150),
                "success_criteria": text.chars(80)}  # fmt: skip
        return "9plan_queue_add", {**plan, "session_name": session}
    if op == "pull":
        return "9plan_queue_pull", {"session_name": session}
    if op == "note":
        return "9plan_plan_note", {"text": text.chars(120), "session_name": session}
    return "9plan_plan_complete", {"outcome": text.chars(200), "session_name": session}


def _service(op: str, session: str, text: TextMaker) -> float:
    from sessions_app import services

    tool, args = _args(op, session, text)
    args = {k: v for k, v in args.items() if k != "session_name"}
    t0 = time.perf_counter()
    {
        "9plan_queue_add": lambda: services.plan_enqueue(session_name=session, **args),
        "9plan_queue_pull": lambda: services.plan_pull(session_name=session),
        "9plan_plan_note": lambda: services.plan_note(session_name=session, **args),
        "9plan_plan_complete": lambda: services.plan_complete(session_name=session, **args),
    }[tool]()
    return time.perf_counter() - t0


def run(data_dir: Path, params: dict) -> dict:
    from common import setup_django
    from django.db import connections
    from django.test import override_settings

    setup_django(data_dir)
    from sessions_app import services

    # The server has a database of its own: sharing this process's, each side would read
    # again, after every commit of the other, the pages that commit changed.
    server_dir = data_dir / "server"
    server_dir.mkdir()
    env = bench_env(server_dir)
    cycles, warmup = params["http_cycles"], params["roundtrip_warmup"]
    text = TextMaker(seed=7)
    first = {"context": "c", "goal": "first", "approach": "a", "success_criteria": "s"}
    in_process = services.session_create(task_description="in-process bench", actor="bench").name
    services.plan_enqueue(session_name=in_process, **first)
    connections.close_all()
    port, bare_port = free_port(), free_port()
    nineplan = HttpServer([PYTHON, MANAGE, "mcp", "--transport", "http", "--port", str(port)], port, env)
    bare = HttpServer([PYTHON, BARE_SERVER, "--noop", "--http", str(bare_port)], bare_port, env)
    samples = {op: {"http": [], "noop": [], "service": [], "alone": []} for op in OPS}
    try:
        created = nineplan.timed_call("9plan_session_create", {"task_description": "http bench"})[1]
        over_http = created["structuredContent"]["session_name"]
        nineplan.timed_call("9plan_queue_add", {**first, "session_name": over_http})
        progress(f"http round trip: {cycles} cycles over HTTP, files off")
        # Each 9plan call over HTTP, the bare no-op and the same service call in-process
        # (on a session of its own) run one after another, so that a burst of load from
        # elsewhere on the machine hits the figure and its baseline alike.
        with override_settings(NINEPLAN_PLAN_FILES="off"):
            for cycle in range(warmup + cycles):
                for op in OPS:
                    took = nineplan.timed_call(*_args(op, over_http, text))[0]
                    noop = bare.timed_call("noop", {"value": "x"})[0]
                    service = _service(op, in_process, text)
                    if cycle >= warmup:
                        samples[op]["http"].append(took)
                        samples[op]["noop"].append(noop)
                        samples[op]["service"].append(service)
            # Shown beside: the service in a tight loop, its caches warm, as no server
            # answering calls between other processes' work ever runs it.
            for cycle in range(warmup + cycles):
                for op in OPS:
                    took = _service(op, in_process, text)
                    if cycle >= warmup:
                        samples[op]["alone"].append(took)
    finally:
        nineplan.close()
        bare.close()
    rows = []
    for op in OPS:
        http, noop, service = (median(samples[op][k]) * 1000 for k in ("http", "noop", "service"))
        ratio = http / (noop + service)
        rows.append({
            "bench": "http round trip",
            "figure": f"{op}, files off (bare SDK HTTP no-op {noop:.2f} + service {service:.2f} ms)",
            "value": http, "baseline": noop + service, "unit": "ms", "ratio": ratio,
            "target": f"<= {RATIO_TARGET}x", "met": ratio <= RATIO_TARGET,
        })  # fmt: skip
    alone = " / ".join(f"{op} {median(samples[op]['alone']) * 1000:.2f}" for op in OPS)
    rows.append({"bench": "http round trip", "figure": f"service alone in a tight loop: {alone} ms",
                 "value": None, "baseline": None, "unit": "ms", "ratio": None, "target": "(shown)", "met": None})  # fmt: skip
    return {"rows": rows}
