"""Serialized writes (docs/design.md, "Transactions and writer turns") with real OS
processes: several workers share the test's database (the SQLite file, or PostgreSQL) and
sessions folder, are released together, and race the services.

Each worker is a ``tests.proofs.race_worker`` subprocess that runs many rounds, so
Django starts once per worker. The worker answers with the service's result or the error
category, and every round checks that no worker ever saw a database error (none may be
"database is locked": docs/design.md, "Speed targets")."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections import Counter
from pathlib import Path

import pytest

from sessions_app import planfiles, services
from sessions_app.maintenance import invariants
from sessions_app.models import Event, Plan, Session
from sessions_app.store import plan_counts
from tests.conftest import PYTHON, REPO, plan_fields

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]

# A guard against a wedged worker hanging the suite, not a speed assertion: SQLite may
# make one write wait many seconds under contention.
REPLY_TIMEOUT = 120


class Worker:
    def __init__(self, env: dict[str, str], stderr: Path):
        self.stderr_path = stderr
        self._stderr = stderr.open("w")
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "tests.proofs.race_worker"],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def send(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def reply(self) -> dict:
        try:
            line = self._lines.get(timeout=REPLY_TIMEOUT)
        except queue.Empty:
            pytest.fail(f"worker {self.proc.pid} did not answer; stderr:\n{self.stderr_path.read_text()}")
        if line is None:
            pytest.fail(f"worker {self.proc.pid} exited; stderr:\n{self.stderr_path.read_text()}")
        return json.loads(line)

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=REPLY_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        finally:
            self._stderr.close()


class Pool:
    def __init__(self, workers: list[Worker]):
        self.workers = workers
        for worker in workers:
            assert "ready" in worker.reply()

    def race(self, ops_per_worker: list[list[dict]]) -> list[list[dict]]:
        """Arms one worker per list of ops, releases them together, returns their results."""
        assert len(ops_per_worker) <= len(self.workers)
        taking_part = self.workers[: len(ops_per_worker)]
        for worker, ops in zip(taking_part, ops_per_worker):
            worker.send(json.dumps({"ops": ops}))
        # Every worker has its connection open and its ops parsed before any is released.
        for worker in taking_part:
            assert worker.reply() == {"armed": True}
        for worker in taking_part:
            worker.send("go")
        results = [worker.reply()["results"] for worker in taking_part]
        for result in (r for per_worker in results for r in per_worker):
            assert_no_database_error(result)
        return results


def assert_no_database_error(result: dict) -> None:
    if result["ok"]:
        return
    assert result["category"] not in ("DATABASE_ERROR", "EXCEPTION"), result["message"]
    assert "locked" not in result["message"], result["message"]


@pytest.fixture
def start_workers(subprocess_env, tmp_path):
    started: list[Worker] = []

    def start(count: int) -> Pool:
        for _ in range(count):
            started.append(Worker(subprocess_env, tmp_path / f"worker-{len(started)}.stderr"))
        return Pool(started[-count:])

    yield start
    for worker in started:
        worker.close()
    for worker in started:
        log = worker.stderr_path.read_text()
        assert "database is locked" not in log, log
        assert "Traceback" not in log, log


def op(name: str, **kwargs) -> dict:
    return {"op": name, "kwargs": kwargs}


def file_notes(session: Session, plan_id: str) -> str:
    text = planfiles.read_plan(session.name, plan_id)
    assert text is not None, f"plan {plan_id} has no file"
    return planfiles.parse(text).sections["notes"]


def assert_valid(session: Session) -> None:
    result = invariants.check_invariants(session.name)
    assert result.valid, result.issues
    # The plan counts on the session row kept step with every racing writer.
    assert plan_counts.drifted(session.name) == {}


def test_only_one_of_eight_racing_pulls_wins(session, make_plan, start_workers):
    plans = [make_plan(session, goal=f"plan {i}") for i in range(5)]
    pool = start_workers(8)

    for round_no in range(1, 4):
        results = pool.race([[op("plan_pull", session_name=session.name)] for _ in range(8)])

        flat = [r for per_worker in results for r in per_worker]
        winners = [r for r in flat if r["ok"]]
        assert len(winners) == 1, flat
        assert Counter(r["category"] for r in flat if not r["ok"]) == {"PLAN_ALREADY_ACTIVE": 7}
        # The winner took the front of the queue, and nobody else holds a plan.
        assert winners[0]["plan"]["id"] == plans[round_no - 1].id
        active = list(Plan.objects.filter(session=session, status=Plan.Status.ACTIVE).values_list("id", flat=True))
        assert active == [plans[round_no - 1].id]
        assert Event.objects.filter(session=session, kind=Event.Kind.PLAN_PULLED).count() == round_no
        assert_valid(session)

        services.plan_complete(session_name=session.name, outcome=f"round {round_no}")


def test_concurrent_appends_keep_every_fragment(session, make_plan, start_workers):
    plan = make_plan(session)
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="Started before the race.")
    pool = start_workers(8)
    per_worker = 4

    fragments = [[f"[w{w}-n{n}] finding from worker {w}" for n in range(per_worker)] for w in range(8)]
    pool.race([[op("plan_note", session_name=session.name, text=f, mode="append") for f in mine] for mine in fragments])

    plan.refresh_from_db()
    on_disk = file_notes(session, plan.id)
    assert on_disk == plan.notes
    parts = plan.notes.split("\n\n")
    assert parts[0] == "Started before the race."
    assert Counter(parts[1:]) == Counter(f for mine in fragments for f in mine)
    # Each worker's own appends stay in the order it made them.
    for mine in fragments:
        assert [p for p in parts if p in mine] == mine
    assert plan.version == 1 + 1 + 8 * per_worker
    assert Event.objects.filter(plan=plan, kind=Event.Kind.PLAN_NOTE).count() == 1 + 8 * per_worker
    assert_valid(session)


def test_append_racing_replace_ends_as_a_serial_outcome(session, make_plan, start_workers):
    plan = make_plan(session)
    services.plan_pull(session_name=session.name)
    pool = start_workers(2)

    for k in range(10):
        services.plan_note(session_name=session.name, text=f"old notes {k}", mode="replace")
        replace = [op("plan_note", session_name=session.name, text=f"new notes {k}", mode="replace")]
        append = [op("plan_note", session_name=session.name, text=f"fragment {k}", mode="append")]
        # Alternate which process does which, so neither is always the first released.
        ops = [replace, append] if k % 2 == 0 else [append, replace]
        results = pool.race(ops)

        assert all(r["ok"] for per_worker in results for r in per_worker), results
        plan.refresh_from_db()
        assert plan.notes in (f"new notes {k}", f"new notes {k}\n\nfragment {k}"), plan.notes
        assert file_notes(session, plan.id) == plan.notes
        assert_valid(session)


def test_concurrent_front_and_back_adds_keep_positions_unique_and_ordered(session, make_plan, start_workers):
    seeded = [make_plan(session, goal="seed 0"), make_plan(session, goal="seed 1")]
    pool = start_workers(4)

    def ops_for(w: int) -> tuple[list[dict], dict[str, list[str]]]:
        ops, made = [], {"back": [], "front": [], "batch": []}
        for j in range(12):
            position = "front" if j % 3 == 1 else "back"
            goal = f"w{w} {position} {len(made[position])}"
            made[position].append(goal)
            ops.append(op("plan_enqueue", session_name=session.name, position=position, **plan_fields(goal=goal)))
            if j == 5:
                made["batch"] = [f"w{w} batch {i}" for i in range(3)]
                batch = [plan_fields(goal=g) for g in made["batch"]]
                ops.append(op("plan_enqueue_many", session_name=session.name, plans=batch, position="front"))
        return ops, made

    plans_by_worker = [ops_for(w) for w in range(4)]
    results = pool.race([ops for ops, _ in plans_by_worker])

    queued = list(Plan.objects.filter(session=session, status=Plan.Status.QUEUED).order_by("sort_key"))
    goals = [p.goal for p in queued]
    positions = [p.sort_key for p in queued]
    assert len(set(positions)) == len(positions) == 2 + 4 * 15
    expected = {"seed 0", "seed 1"} | {g for _, made in plans_by_worker for kind in made.values() for g in kind}
    assert Counter(goals) == Counter(expected)

    # What each worker was told matches what the database holds.
    by_id = {p.id: p.sort_key for p in queued}
    for per_worker in results:
        for r in per_worker:
            assert r["ok"], r
            for p in r.get("plans", [r.get("plan")]):
                assert by_id[p["id"]] == p["sort_key"]

    # Every front add went ahead of everything then queued and every back add behind it,
    # so fronts precede the seeds, which precede the backs.
    seeds_at = [goals.index(p.goal) for p in seeded]
    assert seeds_at[1] == seeds_at[0] + 1
    for _, made in plans_by_worker:
        assert all(goals.index(g) < seeds_at[0] for g in made["front"] + made["batch"])
        assert all(goals.index(g) > seeds_at[1] for g in made["back"])
        # One process's back adds keep its order; its front adds are each more urgent
        # than the one before.
        assert [g for g in goals if g in made["back"]] == made["back"]
        assert [g for g in goals if g in made["front"]] == made["front"][::-1]
        # A batch stays together and in the order given.
        start = goals.index(made["batch"][0])
        assert goals[start : start + 3] == made["batch"]

    assert Event.objects.filter(session=session, kind=Event.Kind.PLAN_CREATED).count() == 2 + 4 * 15
    assert set(planfiles.list_plan_files(session.name)) == {p.id for p in queued}
    assert_valid(session)


def test_complete_racing_defer_has_one_winner(session, make_plan, start_workers):
    for i in range(3):
        make_plan(session, goal=f"plan {i}")
    pool = start_workers(2)

    for k in range(8):
        pulled = services.plan_pull(session_name=session.name)
        complete = [op("plan_complete", session_name=session.name, outcome=f"done {k}")]
        defer = [op("plan_defer", session_name=session.name, reason=f"blocked {k}")]
        ops = [complete, defer] if k % 2 == 0 else [defer, complete]
        results = pool.race(ops)

        by_op = {ops[i][0]["op"]: results[i][0] for i in range(2)}
        winners = [name for name, r in by_op.items() if r["ok"]]
        assert len(winners) == 1, by_op
        loser = next(r for r in by_op.values() if not r["ok"])
        assert loser["category"] == "NO_ACTIVE_PLAN", loser

        plan = Plan.objects.get(id=pulled.id)
        kinds = set(Event.objects.filter(plan=plan).values_list("kind", flat=True))
        if winners == ["plan_complete"]:
            assert plan.status == Plan.Status.COMPLETED
            assert plan.outcome == f"done {k}"
            assert f"blocked {k}" not in plan.notes
            assert planfiles.read_plan(session.name, plan.id) is None
            assert Event.Kind.PLAN_COMPLETED in kinds
            deferred_now = Event.objects.filter(plan=plan, kind=Event.Kind.PLAN_DEFERRED, detail__reason=f"blocked {k}")
            assert not deferred_now.exists()
            # Keep the queue from running dry for the next round.
            make_plan(session, goal=f"refill {k}")
        else:
            assert plan.status == Plan.Status.QUEUED
            assert plan.outcome == ""
            assert f"blocked {k}" in plan.notes
            assert f"blocked {k}" in file_notes(session, plan.id)
            assert Event.Kind.PLAN_COMPLETED not in kinds
            # Deferred to the back (the default), behind everything else queued.
            last = Plan.objects.filter(session=session, status=Plan.Status.QUEUED).order_by("sort_key").last()
            assert last.id == plan.id
        assert not Plan.objects.filter(session=session, status=Plan.Status.ACTIVE).exists()
        assert_valid(session)


def test_mixed_operations_from_eight_processes_stay_consistent(session, start_workers):
    pool = start_workers(8)

    def ops_for(w: int) -> list[dict]:
        ops = []
        for i in range(5):
            ops.append(op("plan_enqueue", session_name=session.name, **plan_fields(goal=f"w{w} add {i}")))
            ops.append(op("plan_pull", session_name=session.name))
            ops.append(op("plan_note", session_name=session.name, text=f"[w{w}-n{i}] noted"))
            if (w + i) % 2:
                ops.append(op("plan_defer", session_name=session.name, reason=f"[w{w}-d{i}] blocked"))
            else:
                ops.append(op("plan_complete", session_name=session.name, outcome=f"[w{w}-c{i}] done"))
        return ops

    all_ops = [ops_for(w) for w in range(8)]
    results = pool.race(all_ops)

    succeeded: Counter[str] = Counter()
    for ops, per_worker in zip(all_ops, results):
        for sent, r in zip(ops, per_worker):
            if not r["ok"]:
                # Losing a race is an ordinary, named outcome; nothing else may go wrong.
                assert r["category"] in ("PLAN_ALREADY_ACTIVE", "NO_ACTIVE_PLAN", "QUEUE_EMPTY"), r
                continue
            succeeded[sent["op"]] += 1
            plan = Plan.objects.get(id=r["plan"]["id"])
            kwargs = sent["kwargs"]
            if sent["op"] == "plan_note":
                assert plan.notes.count(kwargs["text"]) == 1, plan.notes
            elif sent["op"] == "plan_defer":
                assert plan.notes.count(kwargs["reason"]) == 1, plan.notes
            elif sent["op"] == "plan_complete":
                assert plan.status == Plan.Status.COMPLETED and plan.outcome == kwargs["outcome"]

    # Every success left exactly one event, and nothing happened that nobody was told of.
    assert succeeded["plan_enqueue"] == Plan.objects.filter(session=session).count() == 8 * 5
    events = Counter(Event.objects.filter(session=session).values_list("kind", flat=True))
    assert events[Event.Kind.PLAN_PULLED] == succeeded["plan_pull"]
    assert events[Event.Kind.PLAN_NOTE] == succeeded["plan_note"]
    assert events[Event.Kind.PLAN_DEFERRED] == succeeded["plan_defer"]
    assert events[Event.Kind.PLAN_COMPLETED] == succeeded["plan_complete"]
    assert Plan.objects.filter(session=session, status=Plan.Status.COMPLETED).count() == succeeded["plan_complete"]
    assert Plan.objects.filter(session=session, status=Plan.Status.ACTIVE).count() <= 1
    assert_valid(session)
