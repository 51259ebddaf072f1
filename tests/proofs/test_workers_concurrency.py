"""Parallel agents on one session, as real OS processes sharing the test's database (the
SQLite file, or PostgreSQL) and sessions folder: no plan is ever taken twice or lost, a
crashed worker's plan comes back after its lease, and no plan is handed out before the
plans it depends on are completed (docs/design.md, "Transactions and writer turns")."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from sessions_app import services
from sessions_app.models import Event, Plan
from sessions_app.reads import queries
from tests.conftest import plan_fields
from tests.proofs.test_concurrency import assert_valid, op, start_workers  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]


def test_eight_workers_drain_four_hundred_plans_each_taken_exactly_once(start_workers):
    session = services.session_create(task_description="eight workers, one session")
    for start in range(0, 400, 50):
        services.plan_enqueue_many(
            session_name=session.name, plans=[plan_fields(goal=f"plan {i}") for i in range(start, start + 50)]
        )
    pool = start_workers(8)
    workers = [f"w{i}" for i in range(8)]

    results = pool.race([[op("drain", session_name=session.name, worker=w)] for w in workers])

    done_by = {w: r[0]["done"] for w, r in zip(workers, results)}
    claimed = [plan_id for ids in done_by.values() for plan_id in ids]
    assert len(claimed) == len(set(claimed)) == 400
    # Work was shared, not taken by one process while the others waited.
    assert sum(1 for ids in done_by.values() if ids) >= 4, {w: len(ids) for w, ids in done_by.items()}
    plans = {p.id: p for p in Plan.objects.filter(session=session)}
    assert {p.status for p in plans.values()} == {Plan.Status.COMPLETED}
    for worker, ids in done_by.items():
        for plan_id in ids:
            plan = plans[plan_id]
            # Completed by the worker that claimed it, holding that worker's note only.
            assert plan.worker == worker
            assert plan.notes == f"[{worker}] worked on {plan_id}"
            assert plan.outcome == f"{plan_id} done by {worker}"
    kinds = Counter(Event.objects.filter(session=session).values_list("kind", "actor"))
    for worker, ids in done_by.items():
        actor = f"agent/{worker}"
        assert kinds[("plan_pulled", actor)] == kinds[("plan_completed", actor)] == len(ids)
    assert not Event.objects.filter(session=session, kind=Event.Kind.PLAN_RECLAIMED).exists()
    assert_valid(session)


def test_a_killed_workers_plan_comes_back_after_its_lease_and_the_revived_worker_is_fenced(start_workers):
    session = services.session_create(task_description="a crash", lease_seconds=2)
    first = services.plan_enqueue(session_name=session.name, **plan_fields(goal="survives a crash")).plan
    services.plan_enqueue(session_name=session.name, **plan_fields(goal="the next one"))
    doomed, survivor = start_workers(2).workers

    [pulled, noted] = _run(
        doomed,
        [
            op("plan_pull", session_name=session.name, worker="doomed"),
            op("plan_note", session_name=session.name, worker="doomed", text="found the cause: a stale cache"),
        ],
    )
    assert pulled["plan"]["id"] == first.id and noted["ok"]
    doomed.proc.kill()  # SIGKILL: no chance to clean up
    doomed.proc.wait()

    # Within its lease nobody else gets it; after it, the next pull does.
    [early] = _run(survivor, [op("plan_pull", session_name=session.name, worker="survivor")])
    assert early["ok"] and early["plan"]["id"] != first.id
    _run(survivor, [op("plan_complete", session_name=session.name, worker="survivor", outcome="next done")])
    time.sleep(2.3)
    [late] = _run(survivor, [op("plan_pull", session_name=session.name, worker="survivor")])
    assert late["plan"]["id"] == first.id and late["plan"]["attempts"] == 1  # attempt 2
    plan = Plan.objects.get(id=first.id)
    assert plan.worker == "survivor"
    assert plan.notes.startswith("found the cause: a stale cache\n\nReclaimed ")
    assert "worker 'doomed'" in plan.notes

    # The dead worker, revived under its name, is told its claim was lost; nothing changes.
    [revived] = start_workers(1).workers
    before = Plan.objects.get(id=first.id)
    [refused] = _run(
        revived,
        [
            op("plan_complete", session_name=session.name, worker="doomed", outcome="fixed the stale cache"),
        ],
    )
    assert refused["category"] == "LEASE_LOST" and first.id in refused["message"]
    after = Plan.objects.get(id=first.id)
    assert (after.status, after.notes, after.outcome, after.version) == (
        before.status,
        before.notes,
        before.outcome,
        before.version,
    )
    late_text = queries.late_writes(first.id)
    assert [(w.worker, w.op, w.text) for w in late_text] == [("doomed", "complete", "fixed the stale cache")]
    assert_valid(session)


def test_a_diamond_is_never_handed_out_before_its_dependencies_complete(start_workers):
    session = services.session_create(task_description="diamonds")
    diamonds = []
    for k in range(6):
        created = services.plan_enqueue_many(
            session_name=session.name,
            plans=[
                plan_fields(goal=f"A{k}"),
                plan_fields(goal=f"B{k}", depends_on=[0]),
                plan_fields(goal=f"C{k}", depends_on=[0]),
                plan_fields(goal=f"D{k}", depends_on=[1, 2]),
            ],
        )
        diamonds.append([w.plan.id for w in created])
    pool = start_workers(3)

    # Each worker holds its plan a moment, so the others try to pull while it is unfinished.
    results = pool.race([[op("drain", session_name=session.name, worker=f"w{i}", hold=0.01)] for i in range(3)])

    done = [plan_id for r in results for plan_id in r[0]["done"]]
    assert sorted(done) == sorted(p for d in diamonds for p in d)
    pulled = dict(Event.objects.filter(session=session, kind="plan_pulled").values_list("plan_id", "id"))
    completed = dict(Event.objects.filter(session=session, kind="plan_completed").values_list("plan_id", "id"))
    for a, b, c, d in diamonds:
        for after, before in ((b, a), (c, a), (d, b), (d, c)):
            assert pulled[after] > completed[before], (after, before)
    # The parallel middle of a diamond was worked by more than one worker at least once.
    workers_of = dict(Plan.objects.filter(session=session).values_list("id", "worker"))
    assert any(workers_of[b] != workers_of[c] for _, b, c, _ in diamonds)
    assert_valid(session)


def _run(worker, ops: list[dict]) -> list[dict]:
    import json

    worker.send(json.dumps({"ops": ops}))
    assert worker.reply() == {"armed": True}
    worker.send("go")
    return worker.reply()["results"]
