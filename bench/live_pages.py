"""Many open "Needs you" pages against one `serve`: the poll's latency while an agent writes.

`manage.py serve` runs as a real process with three gunicorn workers. Simulated pages
(asyncio, one HTTP client each, signed in as one of a few managers and reviewers) poll the
home's live endpoint the way sessions_app/static/sessions_app/live.js does: with the last
ETag and a page id of its own, again one second after an answer, or after the answer's
Poll-After or twice the answer's time when those are longer (at most ten seconds). An agent, in a process of its own, adds a plan, pulls it and completes it
into review every two seconds, so every poll after a write finds a changed view. Beside the
pollers one person opens the full home page (`/admin/`) every second; its time, from the end
of the warm-up like the polls', is compared with the same page before the pollers started
(every half second for ten seconds).

    python bench/live_pages.py --pages 200 --seconds 30    this benchmark alone
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PYTHON, REPO, bench_env, free_port, median, percentile, progress, setup_django

WORKERS = 3
WRITE_EVERY = 2.0
PERIOD, SLOWEST = 1.0, 10.0
USERS = 20  # the pages' viewers: half managers, half reviewers of the one project
WARMUP = 5.0
LIVE = "/admin/live/?view=home"


def _prepare(data_dir: Path) -> tuple[str, list[str]]:
    """A reviewed session with plans waiting in review, and a signed-in cookie per viewer."""
    setup_django(data_dir)
    from django.contrib.auth import get_user_model
    from django.test import Client

    from sessions_app import services

    session = services.session_create(task_description="live pages benchmark", review="required")
    for i in range(20):
        services.plan_enqueue(
            session_name=session.name,
            context="benchmark",
            goal=f"step {i}",
            approach="write it",
            success_criteria="done",
        )
    for i in range(10):
        services.plan_pull(session_name=session.name)
        services.plan_complete(session_name=session.name, outcome=f"step {i} done")
    cookies = []
    for i in range(USERS):
        name = f"viewer{i}"
        get_user_model().objects.create_user(name, is_staff=True)
        services.project_grant(project="default", username=name, role="manager" if i % 2 else "reviewer")
        client = Client()
        client.force_login(get_user_model().objects.get(username=name))
        cookies.append(client.cookies["sessionid"].value)
    return session.name, cookies


def write(session: str, seconds: float) -> None:
    """The agent: a plan added, pulled and completed into review every WRITE_EVERY seconds."""
    import django

    django.setup()
    from sessions_app import services

    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        started = time.monotonic()
        services.plan_enqueue(
            session_name=session, context="benchmark", goal=f"late step {i}", approach="write", success_criteria="ok"
        )
        services.plan_pull(session_name=session)
        services.plan_complete(session_name=session, outcome=f"late step {i} done")
        i += 1
        time.sleep(max(0.0, WRITE_EVERY - (time.monotonic() - started)))


async def _poller(
    port: int, cookie: str, start: float, end: float, out: list[float], failures: list[int], pauses: list[float]
) -> None:
    import httpx2

    await asyncio.sleep(random.uniform(0, PERIOD))
    etag = None
    page = secrets.token_hex(12)
    async with httpx2.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", cookies={"sessionid": cookie}, timeout=60
    ) as client:
        while time.monotonic() < end:
            headers = {"Accept": "application/json", "Live-Page": page}
            if etag:
                headers["If-None-Match"] = etag
            began = time.monotonic()
            try:
                response = await client.get(LIVE, headers=headers)
                await response.aread()
                ok = response.status_code in (200, 304)
            except Exception:
                ok = False
            took = time.monotonic() - began
            asked = float(response.headers.get("Poll-After", PERIOD)) if ok else PERIOD
            if began >= start:
                out.append(took * 1000)
                pauses.append(asked * 1000)
                if not ok:
                    failures.append(1)
            if ok and response.status_code == 200:
                etag = response.headers.get("ETag")
            await asyncio.sleep(min(SLOWEST, max(PERIOD, asked, 2 * took)))


async def _person(port: int, cookie: str, start: float, end: float, out: list[float], every: float = 1.0) -> None:
    """One person opening the full home page every ``every`` seconds; counted from ``start``,
    like the polls, so the moment all the pages open at once is not what is measured."""
    import httpx2

    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", cookies={"sessionid": cookie}, timeout=60) as c:
        while time.monotonic() < end:
            began = time.monotonic()
            response = await c.get("/admin/")
            await response.aread()
            if response.status_code == 200 and began >= start:
                out.append((time.monotonic() - began) * 1000)
            await asyncio.sleep(max(0.0, every - (time.monotonic() - began)))


async def _warm(port: int, cookie: str) -> None:
    """Every worker's first requests import and connect: not what is measured."""
    import httpx2

    async def one() -> None:
        async with httpx2.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", cookies={"sessionid": cookie}, timeout=120
        ) as c:
            for _ in range(3):
                for url in ("/admin/", LIVE):
                    (await c.get(url)).raise_for_status()

    await asyncio.gather(*(one() for _ in range(WORKERS * 2)))


async def _load(port: int, cookies: list[str], pages: int, seconds: float) -> dict:
    now = time.monotonic()
    start, end = now + WARMUP, now + WARMUP + seconds
    polls: list[float] = []
    failures: list[int] = []
    home: list[float] = []
    pauses: list[float] = []
    tasks = [_poller(port, cookies[i % len(cookies)], start, end, polls, failures, pauses) for i in range(pages)]
    tasks.append(_person(port, cookies[1], start, end, home))
    await asyncio.gather(*tasks)
    return {"polls": polls, "failures": len(failures), "home": home, "pauses": pauses}


def _wait_listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("serve did not start listening")


def measure(data_dir: Path, pages: int, seconds: float) -> dict:
    session, cookies = _prepare(data_dir)
    env = bench_env(data_dir)
    port = free_port()
    log = data_dir / "serve.log"
    server = subprocess.Popen(
        [PYTHON, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", str(WORKERS)],
        env=env,
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    writer = None
    try:
        _wait_listening(server, port, log)
        asyncio.run(_warm(port, cookies[1]))
        idle: list[float] = []
        asyncio.run(_person(port, cookies[1], time.monotonic(), time.monotonic() + 10, idle, every=0.5))
        writer = subprocess.Popen([PYTHON, __file__, "--write", session, str(WARMUP + seconds)], env=env, cwd=str(REPO))
        progress(
            f"live pages: {pages} open home pages, {WORKERS} workers, a write every {WRITE_EVERY:g} s, {seconds:g} s"
        )
        found = asyncio.run(_load(port, cookies, pages, seconds))
        writer.wait(timeout=60)
    finally:
        for proc in (writer, server):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    return {**found, "idle": idle}


def run(data_dir: Path, params: dict) -> dict:
    pages, seconds = params["live_pages"], params["live_seconds"]
    r = measure(data_dir, pages, seconds)
    polls, home, idle = r["polls"], r["home"], r["idle"]
    label = f"{pages} open home pages, {WORKERS} workers, a write every {WRITE_EVERY:g} s"
    p99 = percentile(polls, 99)
    home_p99, idle_p99 = percentile(home, 99), percentile(idle, 99)
    ratio = home_p99 / idle_p99 if idle_p99 else None

    def row(figure, value, unit, target="(shown)", met=None, baseline=None, ratio=None):
        return {
            "bench": "live pages",
            "figure": figure,
            "value": value,
            "baseline": baseline,
            "unit": unit,
            "ratio": ratio,
            "target": target,
            "met": met,
        }

    return {
        "rows": [
            row(f"poll p99 ({label})", p99, "ms", "≤ 1,000 ms", p99 <= 1000 and r["failures"] == 0),
            row("poll median", median(polls), "ms"),
            row("polls answered", len(polls), "count"),
            row("pause between polls the server asked for (median)", median(r["pauses"]), "ms"),
            row("polls failed", r["failures"], "count", "0", r["failures"] == 0),
            row(
                "/admin/ p99 while they poll, against no polls",
                home_p99,
                "ms",
                "≤ 2x",
                ratio is not None and ratio <= 2.0,
                idle_p99,
                ratio,
            ),
        ]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--write", nargs=2, metavar=("SESSION", "SECONDS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        write(args.write[0], float(args.write[1]))
        return
    data_dir = Path(tempfile.mkdtemp(prefix="9plan-bench-live-"))
    try:
        os.environ.update(bench_env(data_dir))
        result = run(data_dir, {"live_pages": args.pages, "live_seconds": args.seconds})
        print(json.dumps(result["rows"], indent=1))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
