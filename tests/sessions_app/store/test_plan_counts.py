"""The plan counts on each session row: kept by database triggers through every kind of
write, recounted by the repair when they drift, and filled in for existing plans by the
migration that adds them. (A stale session saved back keeps them: tests/sessions_app/test_models.py.)"""

from __future__ import annotations

import shutil

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessions_app import services
from sessions_app.maintenance import export_import, repair
from sessions_app.models import Event, Plan, Session
from sessions_app.reads import queries
from sessions_app.store import plan_counts
from tests.conftest import plan_fields


def kept(name: str) -> tuple[int, int, int]:
    return Session.objects.values_list("count_queued", "count_completed", "count_discarded").get(name=name)


def counted(name: str) -> tuple[int, int, int]:
    plans = Plan.objects.filter(session_id=name)
    return tuple(plans.filter(status=s).count() for s in ("queued", "completed", "discarded"))


def add(session: Session, n: int = 1, position: str | None = None) -> list[Plan]:
    added = services.plan_enqueue_many(
        session_name=session.name, plans=[plan_fields(goal=f"goal {i}") for i in range(n)], position=position
    )
    return [placed.plan for placed in added]


def test_every_service_moves_the_counts(session):
    add(session, 3)
    assert kept(session.name) == (3, 0, 0)
    services.plan_pull(session_name=session.name)
    assert kept(session.name) == (2, 0, 0)
    services.plan_complete(session_name=session.name, outcome="done")
    assert kept(session.name) == (2, 1, 0)
    services.plan_pull(session_name=session.name)
    services.plan_defer(session_name=session.name, reason="later", position="back")
    assert kept(session.name) == (2, 1, 0)
    services.plan_pull(session_name=session.name)
    services.plan_discard(session_name=session.name, reason="obsolete")
    assert kept(session.name) == (1, 1, 1)
    services.plan_pull(session_name=session.name)
    active = Plan.objects.get(session=session, status="active")
    services.plan_requeue(session_name=session.name, plan_id=active.id, actor="user:staff")
    assert kept(session.name) == (1, 1, 1)
    services.plan_discard_any(session_name=session.name, plan_id=active.id, reason="dup", actor="user:staff")
    assert kept(session.name) == (0, 1, 2)
    assert kept(session.name) == counted(session.name)


def test_notes_do_not_touch_the_session_row(session):
    add(session)
    services.plan_pull(session_name=session.name)
    Session.objects.filter(name=session.name).update(count_queued=7)  # a marker the triggers must leave alone
    services.plan_note(session_name=session.name, text="found the schema")
    assert kept(session.name) == (7, 0, 0)


def test_reads_take_the_counts_from_the_session_row(session):
    add(session, 4)
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="done")
    state = queries.session_state(session.name)
    assert (state.queue_length, state.completed_count, state.discarded_count) == (3, 1, 0)
    status = queries.queue_status(session.name)
    # The unfinished plans are counted only for an empty queue, the one case an answer tells them.
    assert (status.length, status.completed, status.unfinished) == (3, 1, None)
    assert status.next_id == state.queue[0].id
    assert queries.queue_length(session.name) == 3
    row = queries.sessions_with_counts().get(name=session.name)
    assert (row.queue_length, row.completed_count, row.discarded_count, row.has_active_plan) == (3, 1, 0, False)
    for worker in (None, "w2", "w3"):
        services.plan_pull(session_name=session.name, worker=worker)
    status = queries.queue_status(session.name)
    assert (status.length, status.next_id, status.unfinished) == (0, None, 3)


def test_queue_status_of_a_missing_session_is_session_not_found(db):
    from sessions_app.errors import SessionNotFound

    with pytest.raises(SessionNotFound):
        queries.queue_status("brave-amber-otter")
    with pytest.raises(SessionNotFound):
        queries.queue_length("brave-amber-otter")


@pytest.mark.django_db(transaction=True)
def test_writes_that_bypass_9plan_move_the_counts_too():
    session = services.session_create()
    add(session, 2)
    plan = Plan.objects.filter(session=session).first()
    # A hand-made fix in a database shell, then a bulk load and a delete.
    with connection.cursor() as cur:
        cur.execute("UPDATE sessions_app_plan SET status = 'discarded', sort_key = NULL WHERE id = %s", [plan.id])
    assert kept(session.name) == (1, 0, 1)
    Plan.objects.bulk_create([Plan(id=f"zz{i}aa", session=session, status="completed", goal="g") for i in range(3)])
    assert kept(session.name) == (1, 3, 1)
    Plan.objects.filter(session=session, status="completed").delete()
    assert kept(session.name) == (1, 0, 1) == counted(session.name)
    # Moving a plan to another session moves its count with it.
    other = services.session_create()
    Plan.objects.filter(id=plan.id).update(session=other)
    assert (kept(session.name), kept(other.name)) == ((1, 0, 0), (0, 0, 1))
    # Deleting a session deletes its plans first; nothing is left to count or to fail.
    Session.objects.filter(name=session.name).delete()
    assert not Plan.objects.filter(session_id=session.name).exists()


def test_an_import_is_counted(session, sessions_dir):
    add(session, 2)
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="done")
    data = export_import.export_session(session.name)
    Session.objects.filter(name=session.name).delete()
    shutil.rmtree(sessions_dir / session.name)
    restored = export_import.session_import(data)
    assert kept(restored.name) == (1, 1, 0) == counted(restored.name)


def test_the_repair_recounts_drifted_counts_and_says_so(session):
    add(session, 2)
    Session.objects.filter(name=session.name).update(count_queued=9, count_discarded=-1)
    assert plan_counts.drifted(session.name) == {session.name: {"queued": (9, 2), "discarded": (-1, 0)}}
    dry = repair.repair_all(apply=False)
    assert [(a.session, a.kind) for a in dry] == [(session.name, "recount")]
    assert "queued: 9 kept, 2 counted" in dry[0].detail
    assert kept(session.name) == (9, 0, -1)  # a dry run changes nothing

    repair.repair_all(apply=True)
    assert kept(session.name) == (2, 0, 0)
    event = Event.objects.get(session=session, kind=Event.Kind.REPAIRED)
    assert event.detail == {
        "action": "recount",
        "queued": {"kept": 9, "counted": 2},
        "discarded": {"kept": -1, "counted": 0},
    }
    assert repair.repair_all(apply=True) == []


def _drop_triggers() -> None:
    with connection.cursor() as cur:
        if connection.vendor == "sqlite":
            for name in plan_counts.SQLITE_TRIGGERS:
                cur.execute(f"DROP TRIGGER {name}")
        else:
            for name in plan_counts.POSTGRES_TRIGGERS:
                cur.execute(f"DROP TRIGGER {name} ON {plan_counts.PLAN_TABLE}")


@pytest.mark.django_db(transaction=True)
def test_missing_triggers_are_recreated_by_the_repair():
    session = services.session_create()
    _drop_triggers()
    assert not plan_counts.triggers_present()
    add(session, 3)
    assert kept(session.name) == (0, 0, 0)  # nothing kept the counts
    actions = repair.repair_all(apply=True)
    assert ("*", "recount", "triggers") in [(a.session, a.kind, a.target) for a in actions]
    assert plan_counts.triggers_present()
    assert kept(session.name) == (3, 0, 0)
    add(session)
    assert kept(session.name) == (4, 0, 0)


@pytest.mark.django_db(transaction=True)
def test_the_migration_counts_the_plans_already_there():
    session = services.session_create()
    add(session, 3)
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="done")
    executor = MigrationExecutor(connection)
    executor.migrate([("sessions_app", "0003_postgres_search")])
    try:
        with connection.cursor() as cur:
            columns = [c.name for c in connection.introspection.get_table_description(cur, "sessions_app_session")]
        assert "count_queued" not in columns
        assert not plan_counts.triggers_present()
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert plan_counts.triggers_present()
    assert kept(session.name) == (2, 1, 0) == counted(session.name)
