"""Peak memory of exporting a session, streamed (nineplan_export, the REST export) against
the same document built whole in memory, at two session sizes; and of importing that
document (nineplan_import, read as a stream) against the document decoded whole.

Each export or import runs in a process of its own, whose peak resident memory
(ru_maxrss, from wait4) is the figure: streamed, it should cost the same at 100,000 plans
as at 10,000, where a document held in memory grows with the session.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from common import (
    MANAGE,
    PLAN_COLUMNS,
    PYTHON,
    REPO,
    TextMaker,
    bench_env,
    bulk_insert,
    db_now,
    plan_ids,
    plan_row,
    progress,
    setup_django,
)

FLAT = 1.2  # the larger session's peak within this factor of the smaller one's
LONG_PLAN = 160_000  # about the characters of a long plan (within the field and plan limits)

# The document as 9plan built it before streaming: every row in a list, then one string.
IN_MEMORY = """
import json, sys, django
django.setup()
import nineplan.urls  # what the command's system checks load, so that both start alike
from sessions_app.maintenance import export_import
text = json.dumps(export_import.export_session(sys.argv[1]), ensure_ascii=False, indent=1)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    out.write(text)
"""

# The first step of the import before it streamed: the whole document decoded in memory.
DECODED = """
import json, sys
with open(sys.argv[1], "rb") as fh:
    document = json.loads(fh.read().decode("utf-8"))
print(len(document["plans"]))
"""

# The REST endpoint through Django's WSGI handler, as gunicorn would run it.
REST = """
import sys, django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
client = Client()
client.force_login(get_user_model().objects.get(username="bench-reader"))
response = client.get(f"/api/sessions/{sys.argv[1]}/export/")
assert response.status_code == 200, response.status_code
size = 0
for piece in response.streaming_content:
    size += len(piece)
print(size)
"""


# Seeds in a process of its own: the process a measured command is spawned from must stay
# small, since the child's peak (ru_maxrss) starts from what it shares of its parent's.
SEED_APART = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from common import setup_django
setup_django(Path(sys.argv[2]), migrate=False)
import export
export.seed(*json.loads(sys.argv[3]), chars=int(sys.argv[4]), batch=20)
"""


def seed_apart(data_dir: Path, session: str, start: int, count: int, total: int, chars: int) -> None:
    args = [PYTHON, "-c", SEED_APART, str(Path(__file__).parent), str(data_dir), json.dumps([session, start, count, total]),
            str(chars)]  # fmt: skip
    subprocess.run(args, env=bench_env(data_dir), cwd=str(REPO), check=True)


def seed(session: str, start: int, count: int, total: int, *, chars: int = 1500, batch: int = 500) -> None:
    """``count`` more completed plans of about ``chars`` characters, each with its three events."""
    text = TextMaker(seed=31 + start)
    now = db_now()
    # Plan ids are unique across sessions: the ids of every session seeded before are taken.
    ids = plan_ids(count, seed=start + 5, taken=set(_existing_ids()))
    plans = (
        plan_row(ids[i], session, "completed", None, text.plan(start + i, total, chars), now) for i in range(count)
    )
    bulk_insert("sessions_app_plan", PLAN_COLUMNS, plans, batch)
    events = (
        (session, plan_id, kind, "agent", "{}", now)
        for plan_id in ids
        for kind in ("plan_created", "plan_pulled", "plan_completed")
    )
    bulk_insert("sessions_app_event", ("session_name", "plan_id", "kind", "actor", "detail", "created_at"), events)


def _existing_ids() -> list[str]:
    from sessions_app.models import Plan

    return list(Plan.objects.values_list("id", flat=True))


# Starts the measured command from a small process: a child's peak (ru_maxrss) counts what
# it shared of its parent's memory before exec, and the benchmark's own process holds the
# ORM and what it seeded (tens of MB that a figure would otherwise include). Writes the
# command's peak RSS (KB) and its seconds to the file given first.
LAUNCH = """
import os, sys, time
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - started
with open(sys.argv[1], "w") as out:
    out.write(f"{usage.ru_maxrss} {seconds}")
sys.exit(min(abs(os.waitstatus_to_exitcode(status)), 255))
"""


def _peak(args: list[str], data_dir: Path) -> tuple[float, float, str]:
    """(peak RSS in MB, seconds, stdout) of one process running ``args``."""
    figures = data_dir / "peak.txt"
    with open(data_dir / "out.txt", "w+", encoding="utf-8") as out:
        proc = subprocess.Popen([PYTHON, "-c", LAUNCH, str(figures), *args], stdout=out, stderr=subprocess.PIPE,
                                env=bench_env(data_dir), cwd=str(REPO))  # fmt: skip
        err = proc.communicate()[1].decode(errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(f"{args[1:3]} failed ({proc.returncode}): {err[-2000:]}")
        out.seek(0)
        kilobytes, seconds = figures.read_text().split()
        return int(kilobytes) / 1024, float(seconds), out.read()


def run(data_dir: Path, params: dict) -> dict:
    setup_django(data_dir)
    from django.contrib.auth import get_user_model

    from sessions_app import services

    get_user_model().objects.create_superuser("bench-reader", password=None)
    session = services.session_create(task_description="export benchmark", actor="bench").name
    sizes = params["export_sizes"]
    rows, measured, done = [], {}, 0
    for size in sizes:
        t0 = time.perf_counter()
        seed(session, done, size - done, sizes[-1])
        done = size
        progress(f"export: seeded {size:,} plans in {time.perf_counter() - t0:.0f} s")
        target = data_dir / "export.json"
        streamed, seconds, _ = _peak([PYTHON, MANAGE, "nineplan_export", session, "-o", str(target)], data_dir)
        document_mb = target.stat().st_size / 1e6
        target.unlink()
        whole, whole_seconds, _ = _peak([PYTHON, "-c", IN_MEMORY, session, str(target)], data_dir)
        target.unlink()
        rest, rest_seconds, body = _peak([PYTHON, "-c", REST, session], data_dir)
        assert int(body) > 0
        progress(f"export: {size:,} plans measured")
        measured[size] = streamed
        label = f"{size:,} plans ({document_mb:,.0f} MB document)"
        rows += [
            _row(f"nineplan_export, {label}: peak RSS (baseline: built in memory)", streamed, whole, "MB", "(shown)"),
            _row(f"REST export, {size:,} plans: peak RSS", rest, None, "MB", "(shown)"),
            _row(
                f"nineplan_export, {size:,} plans: time (baseline: built in memory)",
                seconds * 1000,
                whole_seconds * 1000,
                "ms",
                "(shown)",
            ),
            _row(f"REST export, {size:,} plans: time", rest_seconds * 1000, None, "ms", "(shown)"),
        ]
    rows.append(_flat("export", "nineplan_export", measured))
    return {"rows": rows}


def _flat(bench: str, command: str, measured: dict[int, float]) -> dict:
    """The target: the peak at the largest size within FLAT of the peak at the smallest."""
    small, large = min(measured), max(measured)
    ratio = measured[large] / measured[small]
    return {
        "bench": bench,
        "figure": f"{command} peak RSS: {large:,} vs {small:,} plans (flat)",
        "value": measured[large],
        "baseline": measured[small],
        "unit": "MB",
        "ratio": ratio,
        "target": f"<= {FLAT}x",
        "met": ratio <= FLAT,
    }


def _row(figure: str, value: float, baseline: float | None, unit: str, target: str, *, bench: str = "export") -> dict:
    return {
        "bench": bench,
        "figure": figure,
        "value": value,
        "baseline": baseline,
        "unit": unit,
        "ratio": None if baseline is None else value / baseline,
        "target": target,
        "met": None,
    }


def run_import(data_dir: Path, params: dict) -> dict:
    """nineplan_import of an exported session at each size, each into a fresh database; then
    of a session of few, long plans at two document sizes (what a batch of rows holds)."""
    setup_django(data_dir)
    from sessions_app import services

    rows, measured, done = [], {}, 0
    session = services.session_create(task_description="import benchmark", actor="bench").name
    for size in params["import_sizes"]:
        seed(session, done, size - done, params["import_sizes"][-1])
        done = size
        measured[size], _ = _import_measured(session, f"{size:,} plans", data_dir, rows, size)
    rows.append(_flat("import", "nineplan_import", measured))

    long_plans, by_size, done = services.session_create(task_description="long plans", actor="bench").name, {}, 0
    what = f"plans of ~{LONG_PLAN // 1000} KB"
    for size in params["import_long_plans"]:
        seed_apart(data_dir, long_plans, done, size - done, size, LONG_PLAN)
        done = size
        streamed, megabytes = _import_measured(long_plans, f"{size:,} {what}", data_dir, rows, size)
        by_size[megabytes] = streamed
    small, large = min(by_size), max(by_size)
    ratio = by_size[large] / by_size[small]
    figure = f"nineplan_import peak RSS: {large:,.0f} vs {small:,.0f} MB document, {what} (flat)"
    rows.append({"bench": "import", "figure": figure,
                 "value": by_size[large], "baseline": by_size[small], "unit": "MB", "ratio": ratio,
                 "target": f"<= {FLAT}x", "met": ratio <= FLAT})  # fmt: skip
    return {"rows": rows}


def _import_measured(session: str, what: str, data_dir: Path, rows: list, count: int) -> tuple[float, float]:
    """Exports ``session``, imports it into a fresh data directory and adds the rows of the
    import's peak RSS and time; returns (peak RSS in MB, document size in MB)."""
    document = data_dir / "export-import.json"
    _peak([PYTHON, MANAGE, "nineplan_export", session, "-o", str(document)], data_dir)
    into = data_dir / f"into-{time.monotonic_ns()}"
    into.mkdir()
    # The tables first, on their own: the import's figure is the import's alone.
    _peak([PYTHON, MANAGE, "migrate", "--noinput", "-v", "0"], into)
    streamed, seconds, out = _peak([PYTHON, MANAGE, "nineplan_import", str(document)], into)
    assert out.strip() == session, out
    whole, whole_seconds, plans = _peak([PYTHON, "-c", DECODED, str(document)], data_dir)
    assert int(plans) == count
    progress(f"import: {what} measured")
    megabytes = document.stat().st_size / 1e6
    document.unlink()
    shutil.rmtree(into)
    rows += [
        _row(f"nineplan_import, {what} ({megabytes:,.0f} MB document): peak RSS (baseline: decoded whole)", streamed,
             whole, "MB", "(shown)", bench="import"),
        _row(f"nineplan_import, {what}: time (baseline: decoding alone)", seconds * 1000, whole_seconds * 1000, "ms",
             "(shown)", bench="import"),
    ]  # fmt: skip
    return streamed, megabytes
