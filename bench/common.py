"""Shared parts of the benchmarks: the private environment, statistics, seeded text and
fast bulk seeding.

Every benchmark runs against a data directory the runner creates in the system's temp
folder, never the user's: the environment below points 9plan's database, plan files and
secret key there before Django is imported.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
MANAGE = str(REPO / "manage.py")
BARE_SERVER = str(Path(__file__).resolve().parent / "bare_server.py")
PYTHON = sys.executable
SEED = 9  # every generated text and id derives from it, so runs are comparable


def bench_env(data_dir: Path, database_url: str | None = None) -> dict[str, str]:
    """Environment for a benchmark process: 9plan's settings aimed at ``data_dir``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NINEPLAN_", "DJANGO_", "PYTEST"))}
    env.pop("DATABASE_URL", None)
    # 9plan's modules are compiled once and kept, as an installed package's are (pip compiles
    # them at install, and so does the first run from a checkout): a shell that turns that
    # off would charge every start-up for compiling what the baselines load compiled.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        DJANGO_SETTINGS_MODULE="nineplan.settings",
        DJANGO_SECRET_KEY="benchmarks-only-not-a-secret",
        DJANGO_ALLOWED_HOSTS="testserver,127.0.0.1,localhost",
        NINEPLAN_SESSIONS_PATH=str(data_dir / "sessions"),
        NINEPLAN_LOG_LEVEL="error",
        DATABASE_URL=database_url or f"sqlite:///{data_dir / '9plan.sqlite3'}",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")])),
    )
    return env


def setup_django(data_dir: Path, database_url: str | None = None, *, migrate: bool = True) -> None:
    """Point this process at ``data_dir``, set Django up and create the schema."""
    os.environ.update(bench_env(data_dir, database_url))
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import django

    django.setup()
    if migrate:
        import io

        from django.core.management import call_command

        (data_dir / "sessions").mkdir(parents=True, exist_ok=True)
        call_command("migrate", interactive=False, verbosity=0, stdout=io.StringIO())


# --- statistics ---------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile: the smallest value with ``pct`` % of the values at or below."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def emit(result: dict) -> None:
    """A benchmark process hands its figures to the runner as one JSON line on stdout."""
    sys.stdout.write("BENCH-RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()


def progress(message: str) -> None:
    sys.stderr.write(f"  .. {message}\n")
    sys.stderr.flush()


# --- servers and clients ---------------------------------------------------------------------

# What a stateless streamable-HTTP client sends in every request's _meta.
MCP_PROTOCOL = "2026-07-28"


def mcp_meta(client: str) -> dict:
    return {
        "io.modelcontextprotocol/protocolVersion": MCP_PROTOCOL,
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def skipped_without_postgres(bench: str, unit: str = "") -> dict:
    """The result of a PostgreSQL benchmark when DATABASE_URL does not name PostgreSQL."""
    return {
        "rows": [
            {
                "bench": bench,
                "figure": "skipped (DATABASE_URL does not name PostgreSQL)",
                "value": None,
                "baseline": None,
                "unit": unit,
                "ratio": None,
                "target": "(optional)",
                "met": None,
            }
        ]
    }


# --- PostgreSQL scratch databases -----------------------------------------------------------


@contextmanager
def scratch_database(url: str, name: str) -> Iterator[str]:
    """A throw-away database ``name`` on the PostgreSQL server ``url`` names, beside the
    database it names: its URL while the block runs; dropped after, whatever happened."""
    parts = urlsplit(url)
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    pg_admin(admin_url, f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path="/" + name))
    finally:
        pg_drop(admin_url, name)


def pg_drop(admin_url: str, name: str) -> None:
    """Drop the scratch database, waiting for an autovacuum worker that may still be in it
    (FORCE cannot end a superuser's process)."""
    for attempt in range(30):
        try:
            pg_admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        except Exception as exc:
            if attempt == 29:
                raise
            progress(f"waiting to drop {name} ({type(exc).__name__})")
            time.sleep(1)


def pg_admin(url: str, sql: str) -> None:
    """One statement outside a transaction (CREATE and DROP DATABASE need that)."""
    try:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql)
    except ImportError:
        import psycopg2

        conn = psycopg2.connect(url)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(sql)
        conn.close()


# --- seeded text ----------------------------------------------------------------------------

# Planted words with known frequencies, so "selective" and "common" mean measured shares
# of the plans, not guesses. None of them is a prefix of a generated word.
COMMON_WORDS = ("service", "module")  # in every plan
SELECTIVE_WORDS = {"zircon": 0.01, "quasar": 0.005, "velvet": 0.002, "lantern": 0.001}


class TextMaker:
    """Plan text from a fixed vocabulary with a Zipf-like spread, reproducible from a seed."""

    SYLLABLES = ("ka", "lo", "mi", "ner", "tus", "pra", "ven", "di", "rho", "sel", "ta", "gor", "fin", "bu", "xe")

    def __init__(self, seed: int = SEED, vocabulary: int = 4000):
        self.rng = random.Random(seed)
        words = set()
        while len(words) < vocabulary:
            n = self.rng.randint(2, 4)
            words.add("".join(self.rng.choice(self.SYLLABLES) for _ in range(n)))
        self.words = sorted(words)
        # Cumulative weights: choices() then bisects instead of summing the list every call.
        self.cum_weights = list(itertools.accumulate(1 / (i + 1) for i in range(len(self.words))))

    def sentence(self, n: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cum_weights, k=n))

    def chars(self, approx: int) -> str:
        # About six characters per generated word with its space.
        return self.sentence(max(1, approx // 6))

    def plan(self, index: int, total: int, size: int = 1500) -> dict[str, str]:
        """Sections of one plan of about ``size`` characters; planted words by index so that
        each selective word is in exactly its share of the plans."""
        planted = [w for w, share in SELECTIVE_WORDS.items() if index % max(1, round(1 / share)) == 0]
        part = max(20, size // 8)
        return {
            "context": f"{COMMON_WORDS[0]} " + self.chars(part),
            "goal": self.chars(min(part, 90)) + (" " + " ".join(planted) if planted else ""),
            "inputs": self.chars(part // 2),
            "outputs": self.chars(part // 2),
            "approach": self.chars(part * 2),
            "success_criteria": self.chars(part // 2),
            "notes": "",
            "outcome": f"{COMMON_WORDS[1]} " + self.chars(part * 2),
        }


def _distinct(count: int, draw, valid, taken: set[str] | None) -> list[str]:
    """``count`` values of ``draw()`` that are ``valid`` and not ``taken`` (which they join)."""
    taken = set() if taken is None else taken
    out = []
    while len(out) < count:
        value = draw()
        if value not in taken and valid(value):
            taken.add(value)
            out.append(value)
    return out


def plan_ids(count: int, seed: int = SEED, taken: set[str] | None = None) -> list[str]:
    """``count`` distinct plan ids in the real id format, reproducible from a seed."""
    from sessions_app.identifiers import is_plan_id

    rng = random.Random(seed * 7919 + count)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return _distinct(count, lambda: "".join(rng.choice(alphabet) for _ in range(5)), is_plan_id, taken)


def session_names(count: int, seed: int = SEED, taken: set[str] | None = None) -> list[str]:
    """``count`` distinct session names of the real three-word shape."""
    from sessions_app.identifiers import is_session_name

    rng = random.Random(seed * 104729 + count)
    letters = "abcdefghijklmnopqrstuvwxyz"

    def draw() -> str:
        return "-".join("".join(rng.choice(letters) for _ in range(rng.randint(4, 7))) for _ in range(3))

    return _distinct(count, draw, is_session_name, taken)


# --- bulk seeding ---------------------------------------------------------------------------

PLAN_COLUMNS = (
    "id",
    "session_name",
    "status",
    "sort_key",
    "context",
    "goal",
    "inputs",
    "outputs",
    "approach",
    "success_criteria",
    "notes",
    "outcome",
    "discard_reason",
    "version",
    "created_at",
    "updated_at",
    "completed_at",
    "discarded_at",
    "worker",
    "claimed_at",
    "lease_expires_at",
)


def bulk_insert(table: str, columns: tuple[str, ...], rows, batch: int = 500) -> int:
    """Multi-row INSERTs through Django's connection (triggers fire, so completed plans land
    in the search index, and the session rows' plan counts move, exactly as the services
    would make them). One statement per ``batch`` rows: PostgreSQL's counting triggers run
    once per statement, and one statement per row updated a session row 100,000 times in
    one transaction, each update slower than the last."""
    from django.db import connection, transaction

    columns_sql = ", ".join(columns)
    row_marks = "(" + ", ".join(["%s"] * len(columns)) + ")"
    done = 0
    chunk: list = []

    def flush(cur) -> None:
        cur.execute(
            f"INSERT INTO {table} ({columns_sql}) VALUES {', '.join([row_marks] * len(chunk))}",
            [value for row in chunk for value in row],
        )

    with transaction.atomic(), connection.cursor() as cur:
        for row in rows:
            chunk.append(row)
            if len(chunk) >= batch:
                flush(cur)
                done += len(chunk)
                chunk = []
        if chunk:
            flush(cur)
            done += len(chunk)
    return done


def db_now():
    """Now, in the form the database backend stores a DateTimeField (raw INSERTs bypass the ORM)."""
    from django.db import connection
    from django.utils import timezone

    return connection.ops.adapt_datetimefield_value(timezone.now())


def plan_row(plan_id: str, session: str, status: str, position: int | None, sections: dict, when) -> tuple:
    done = when if status == "completed" else None
    gone = when if status == "discarded" else None
    # An active plan is held by the session's default worker, with a lease that outlasts the run.
    held = status == "active"
    return (
        plan_id,
        session,
        status,
        position,
        sections["context"],
        sections["goal"],
        sections["inputs"],
        sections["outputs"],
        sections["approach"],
        sections["success_criteria"],
        sections.get("notes", ""),
        sections.get("outcome", "") if status == "completed" else "",
        "",
        1,
        when,
        when,
        done,
        gone,
        "default" if held else None,
        when if held else None,
        _day_after(when) if held else None,
    )


def _day_after(when):
    """``when`` (as the backend stores it) a day later, in the same form."""
    from datetime import datetime, timedelta

    from django.db import connection

    if isinstance(when, str):
        return connection.ops.adapt_datetimefield_value(datetime.fromisoformat(when) + timedelta(days=1))
    return when + timedelta(days=1)


def write_plan_files(session: str, rows: list[tuple[str, dict]]) -> None:
    """Plan files for seeded queued plans, without the per-file fsync of the real writer:
    seeding is set-up, not what is measured."""
    from sessions_app import planfiles

    folder = planfiles.plans_dir(session)
    folder.mkdir(parents=True, exist_ok=True)
    for plan_id, sections in rows:
        (folder / f"{plan_id}.txt").write_text(planfiles.render(sections), encoding="utf-8")


def take_turns(rounds: int, races: dict[str, Callable[[], dict]]) -> dict[str, list[dict]]:
    """Each race ``rounds`` times, taking turns in alternating order (A B, B A, A B ...), so
    that a slow spell of a shared machine does not land on one side only; each race's
    results, in order."""
    names = list(races)
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            runs[name].append(races[name]())
    return runs


def race(commands: list[list[str]], env: dict, what: str) -> list[dict]:
    """Start one process per command, wait until each says "ready", release them together
    (each waits on its stdin until then) and return the JSON line each prints at the end."""
    procs = [
        subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=str(REPO), text=True)
        for cmd in commands
    ]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError(f"a {what} process failed to start")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [json.loads(p.stdout.readline()) for p in procs]
    for p in procs:
        p.stdin.close()
        p.wait()
    return results
