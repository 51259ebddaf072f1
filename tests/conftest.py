"""Named actors and factories shared by the whole suite."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sessions_app import services
from sessions_app.models import Plan, Session

REPO = Path(__file__).resolve().parent.parent


def _on_postgres() -> bool:
    from django.conf import settings

    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def pytest_collection_modifyitems(config, items):
    # Tests marked `postgres` run in the suite's PostgreSQL pass (CI runs the suite on
    # both databases); on SQLite they are skipped, visibly.
    if _on_postgres():
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL: run with DATABASE_URL=postgres://...")
    for item in items:
        if item.get_closest_marker("postgres"):
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    # In CI the PostgreSQL pass is the only place these tests run: a skip there (a missing
    # service, a wrong URL) would pass silently, so it fails instead.
    if report.skipped and item.get_closest_marker("postgres") and os.environ.get("CI") == "true" and _on_postgres():
        report.outcome = "failed"
        report.longrepr = f"a `postgres` test was skipped on the PostgreSQL run in CI: {report.longrepr}"
    return report


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(autouse=True)
def local_caller():
    """Every test calls 9plan as its local user, who may do everything, unless it says
    otherwise with access.acting_as (as the edges do for each request)."""
    from sessions_app import access

    with access.acting_as(access.LOCAL):
        yield access.LOCAL


@pytest.fixture(autouse=True)
def empty_live_cache():
    """Each test starts with no shared renders of the live pages: event ids start again in
    each test's database, so a render kept from another test could match a key."""
    from django.core.cache import caches

    caches["live"].clear()
    yield
    caches["live"].clear()


@pytest.fixture(autouse=True)
def sessions_dir(tmp_path, settings) -> Path:
    """Each test gets its own, empty sessions directory."""
    path = tmp_path / "sessions"
    path.mkdir()
    settings.NINEPLAN_SESSIONS_PATH = path
    return path


def plan_fields(**overrides) -> dict:
    fields = {
        "context": "Porting the billing service",
        "goal": "Model invoices",
        "approach": "1. Read the schema\n2. Write the models",
        "success_criteria": "Migrations apply; tests pass",
    }
    fields.update(overrides)
    return fields


def break_plans_folder(sessions_dir: Path, session_name: str) -> Path:
    """Makes the session's plans folder unwritable in a way that holds for root too (which
    ignores permission bits): the folder becomes a regular file. Returns its path."""
    plans = sessions_dir / session_name / "plans"
    shutil.rmtree(plans, ignore_errors=True)
    plans.write_text("a file where the folder should be")
    return plans


@pytest.fixture
def session(db) -> Session:
    """A session owned by 'the agent', with nothing queued."""
    return services.session_create(task_description="Port billing to Django")


@pytest.fixture
def make_plan(db):
    def make(session: Session, position: str | None = None, **overrides) -> Plan:
        return services.plan_enqueue(session_name=session.name, position=position, **plan_fields(**overrides)).plan

    return make


@pytest.fixture
def subprocess_env(tmp_path, settings) -> dict[str, str]:
    """Environment for a `manage.py` subprocess sharing this test's database and sessions dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    # pytest-django exported tests.settings, which would give the child a private sessions
    # folder of its own; the child must use this test's folder and database.
    env["DJANGO_SETTINGS_MODULE"] = "nineplan.settings"
    env["NINEPLAN_SESSIONS_PATH"] = str(settings.NINEPLAN_SESSIONS_PATH)
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        env["DATABASE_URL"] = f"sqlite:///{db['NAME']}"
    else:
        env["DATABASE_URL"] = postgres_url(db)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def postgres_url(db: dict) -> str:
    """A URL for the database in ``db`` (during a test run: the test database, which
    pytest-django has swapped into the settings), for processes started by the test."""
    from urllib.parse import quote

    user = quote(db.get("USER") or "", safe="")
    password = quote(db.get("PASSWORD") or "", safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = db.get("HOST") or "localhost"
    if ":" in host:
        host = f"[{host}]"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{quote(db['NAME'], safe='')}"


PYTHON = sys.executable
MANAGE = str(REPO / "manage.py")


def run_bench(script: str, *args: str, tmp_path: Path, postgres: bool) -> subprocess.CompletedProcess:
    """``bench/<script>`` run as a user runs it: without the test run's settings (and without
    DATABASE_URL unless ``postgres``), whatever it makes in the temp folder landing in
    ``tmp_path``, so a test can tell that it removed it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "NINEPLAN_", "DJANGO_"))}
    if not postgres:
        env.pop("DATABASE_URL", None)
    env["TMPDIR"] = str(tmp_path)
    return subprocess.run(
        [PYTHON, str(REPO / "bench" / script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO),
        timeout=600,
    )


def bench_cells(line: str) -> list[str]:
    """The cells of one row of bench/run.py's table: benchmark, figure, 9plan, baseline,
    ratio, target, met."""
    return [cell.strip() for cell in line.split("|")[1:-1]]


def manage(command: str, *args, **options) -> tuple[str, str]:
    """Runs a management command in this process, on this test's database and sessions
    folder; returns what it wrote on stdout and on stderr."""
    import io

    from django.core.management import call_command

    out, err = io.StringIO(), io.StringIO()
    call_command(command, *args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


# --- webhook receivers ---------------------------------------------------------------------

RECEIVER_WAIT = 60  # seconds a receiver waits for a POST, or holds a stalled one


class Receiver:
    """An HTTP server on loopback that records every POST and answers from a script: each
    answer a status, or "stall" (hold the request until ``release`` is set, then 200)."""

    def __init__(self, answers: list) -> None:
        self.answers = list(answers)
        self.got: list[tuple[dict, bytes]] = []
        self.arrived = threading.Condition()
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                with receiver.arrived:
                    receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    answer = receiver.answers.pop(0) if receiver.answers else 200
                    receiver.arrived.notify_all()
                if answer == "stall":
                    receiver.release.wait(RECEIVER_WAIT)
                    answer = 200
                self.send_response(answer)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/9plan"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count: int) -> None:
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.got) >= count, RECEIVER_WAIT), f"only {len(self.got)} arrived"

    def ids(self) -> list[str]:
        return [headers["webhook-id"] for headers, _ in self.got]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


class Trickler:
    """A receiver that takes each POST, then answers its status line one byte every
    ``every`` seconds and never finishes its headers: each read of the sender gets a byte
    long before any per-read timeout, so only a deadline for the whole attempt ends it.
    It counts the requests it got and the answers the sender cut off."""

    ANSWER = b"HTTP/1.1 200 OK\r\nx-slow: " + b"." * 200

    def __init__(self, every: float = 0.25) -> None:
        self.every = every
        self.requests: list[bytes] = []
        self.trickling = threading.Event()
        self.cut = threading.Event()  # the sender closed the connection mid-answer
        self.closing = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/slow"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            got = b""
            while b"\r\n\r\n" not in got:
                piece = conn.recv(65536)
                if not piece:
                    return
                got += piece
            head, _, body = got.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            while len(body) < length:
                body += conn.recv(65536)
            self.requests.append(got)
            self.trickling.set()
            try:
                for byte in self.ANSWER:
                    if self.closing.wait(self.every):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                self.cut.set()

    def close(self) -> None:
        self.closing.set()
        self.listener.close()


@pytest.fixture
def trickler():
    made = Trickler()
    yield made
    made.close()


@pytest.fixture
def receivers():
    made = []

    def make(*answers) -> Receiver:
        made.append(Receiver(list(answers)))
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()
