"""Adding, ordering and pulling plans, and moving a queued plan (services/queue.py); the other
staff actions are in test_staff.py."""

from __future__ import annotations

import pytest
from django.db import connection

from sessions_app import errors, planfiles, services
from sessions_app.errors import ValidationFailed
from sessions_app.identifiers import PLAN_ID_RE
from sessions_app.maintenance import invariants
from sessions_app.models import Event, Plan
from tests.conftest import break_plans_folder, plan_fields
from tests.sessions_app.conftest import events, plan_file, queue_ids


def positions(session) -> list[int]:
    return list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("sort_key", flat=True)
    )


# --- enqueue --------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_adds_a_plan_with_its_row_event_and_file(session, sessions_dir):
    plan = services.plan_enqueue(
        session_name=session.name,
        actor="tester",
        **plan_fields(inputs="schema.sql", outputs="billing/models.py"),
    ).plan

    assert PLAN_ID_RE.fullmatch(plan.id)
    stored = Plan.objects.get(id=plan.id)
    assert (stored.session_id, stored.status, stored.sort_key) == (session.name, "queued", 0)
    assert stored.sections() == {
        "context": "Porting the billing service",
        "goal": "Model invoices",
        "inputs": "schema.sql",
        "outputs": "billing/models.py",
        "approach": "1. Read the schema\n2. Write the models",
        "success_criteria": "Migrations apply; tests pass",
        "notes": "",
    }
    assert (stored.outcome, stored.completed_at, stored.version) == ("", None, 1)
    assert events(plan) == [("plan_created", "tester")]
    assert Event.objects.get(plan=plan).detail == {"position": "back"}
    assert plan_file(sessions_dir, plan).read_text() == planfiles.render(stored.sections())


@pytest.mark.django_db
def test_back_appends_and_front_prepends(session, make_plan):
    a = make_plan(session, goal="A")
    b = make_plan(session, goal="B", position="back")
    c = make_plan(session, goal="C", position="front")
    d = make_plan(session, goal="D")

    assert queue_ids(session) == [c.id, a.id, b.id, d.id]
    assert positions(session) == [-1, 0, 1, 2]


@pytest.mark.django_db
def test_adding_a_b_c_at_the_front_one_by_one_gives_c_b_a(session, make_plan):
    a, b, c = (make_plan(session, goal=g, position="front") for g in "ABC")

    assert queue_ids(session) == [c.id, b.id, a.id]
    assert services.plan_pull(session_name=session.name).id == c.id


@pytest.mark.django_db
@pytest.mark.parametrize("position", ["front", "back"])
def test_enqueue_many_keeps_the_given_order(session, make_plan, sessions_dir, position):
    existing = make_plan(session, goal="Existing")

    placed = services.plan_enqueue_many(
        session_name=session.name,
        plans=[plan_fields(goal="A"), services.PlanInput(**plan_fields(goal="B")), plan_fields(goal="C")],
        position=position,
    )
    added = [q.plan for q in placed]
    assert [q.place for q in placed] == ([1, 2, 3] if position == "front" else [2, 3, 4])

    assert [p.goal for p in added] == ["A", "B", "C"]
    ids = [p.id for p in added]
    expected = ids + [existing.id] if position == "front" else [existing.id] + ids
    assert queue_ids(session) == expected
    assert len(set(positions(session))) == 4
    assert all(plan_file(sessions_dir, p).exists() for p in added)
    assert Event.objects.filter(session=session, kind="plan_created").count() == 4


@pytest.mark.django_db
def test_enqueue_many_with_one_bad_plan_writes_none(session, make_plan, rejects):
    make_plan(session)
    with rejects("VALIDATION_ERROR", field="plans[1].goal"):
        services.plan_enqueue_many(session_name=session.name, plans=[plan_fields(goal="A"), plan_fields(goal=" ")])


@pytest.mark.django_db
@pytest.mark.parametrize(
    "plans, field",
    [([], "plans"), ("not a list", "plans"), ({"goal": "x"}, "plans"), ([plan_fields(), "text"], "plans[1]")],
)
def test_enqueue_many_rejects_a_malformed_batch(session, rejects, plans, field):
    with rejects("VALIDATION_ERROR", field=field):
        services.plan_enqueue_many(session_name=session.name, plans=plans)


@pytest.mark.django_db
def test_enqueue_many_rejects_a_batch_over_the_limit(session, settings, rejects):
    settings.NINEPLAN_MAX_BATCH = 2
    with rejects("VALIDATION_ERROR", field="plans", match="at most 2"):
        services.plan_enqueue_many(session_name=session.name, plans=[plan_fields()] * 3)


@pytest.mark.django_db
def test_it_refuses_to_grow_the_queue_past_its_limit(session, make_plan, settings, rejects):
    settings.NINEPLAN_MAX_QUEUE_LENGTH = 2
    make_plan(session)
    with rejects("VALIDATION_ERROR", field="queue", match="3 long"):
        services.plan_enqueue_many(session_name=session.name, plans=[plan_fields(), plan_fields()])


@pytest.mark.django_db
def test_it_draws_another_plan_id_on_a_collision(session, make_plan, monkeypatch):
    first = make_plan(session)
    drawn = iter([first.id, "zz999"])
    monkeypatch.setattr(services.queue, "new_plan_id", lambda: next(drawn))

    second = make_plan(session)

    assert second.id == "zz999"
    assert Plan.objects.count() == 2


@pytest.mark.django_db
def test_it_gives_database_error_when_no_free_plan_id_is_found(session, make_plan, monkeypatch, rejects):
    taken = make_plan(session)
    monkeypatch.setattr(services.queue, "new_plan_id", lambda: taken.id)
    with rejects("DATABASE_ERROR", match="free plan id"):
        make_plan(session)


@pytest.mark.django_db
def test_enqueue_to_an_unknown_session_gives_session_not_found(rejects):
    with rejects("SESSION_NOT_FOUND", match="calm-blue-heron"):
        services.plan_enqueue(session_name="calm-blue-heron", **plan_fields())


FAIL_SECOND_PLAN = {
    "sqlite": [
        """CREATE TRIGGER test_fail_second_plan BEFORE INSERT ON sessions_app_event
        WHEN (SELECT count(*) FROM sessions_app_plan WHERE session_name = NEW.session_name) >= 2
        BEGIN SELECT RAISE(ABORT, 'injected failure'); END"""
    ],
    "postgresql": [
        """CREATE FUNCTION test_fail_second_plan() RETURNS trigger AS $$ BEGIN
        IF (SELECT count(*) FROM sessions_app_plan WHERE session_name = NEW.session_name) >= 2 THEN
        RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql""",
        """CREATE TRIGGER test_fail_second_plan BEFORE INSERT ON sessions_app_event
        FOR EACH ROW EXECUTE FUNCTION test_fail_second_plan()""",
    ],
}


@pytest.mark.django_db
def test_a_database_failure_mid_batch_rolls_back_rows_and_files(session, sessions_dir, rejects):
    # The second plan's event fails after the first plan's file was written: the whole
    # batch must vanish, files included. The trigger goes with the test's transaction.
    with connection.cursor() as cur:
        for statement in FAIL_SECOND_PLAN[connection.vendor]:
            cur.execute(statement)
    with rejects("DATABASE_ERROR", match="injected failure"):
        services.plan_enqueue_many(session_name=session.name, plans=[plan_fields(goal="A"), plan_fields(goal="B")])
    assert list((sessions_dir / session.name / "plans").iterdir()) == []


@pytest.mark.django_db
def test_enqueue_into_an_unwritable_plans_folder_gives_file_system_error(session, sessions_dir, make_plan, rejects):
    make_plan(session)
    break_plans_folder(sessions_dir, session.name)

    with rejects("FILE_SYSTEM_ERROR"):
        services.plan_enqueue(session_name=session.name, **plan_fields(goal="Never added"))


# --- pull -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_pull_takes_the_lowest_position(session, make_plan, sessions_dir):
    back = make_plan(session, goal="Back")
    front = make_plan(session, goal="Front", position="front")

    pulled = services.plan_pull(session_name=session.name, actor="tester")

    assert pulled.id == front.id
    stored = Plan.objects.get(id=front.id)
    assert (stored.status, stored.sort_key) == ("active", None)
    assert events(front) == [("plan_created", "agent"), ("plan_pulled", "tester")]
    assert plan_file(sessions_dir, front).exists()
    assert queue_ids(session) == [back.id]


@pytest.mark.django_db
def test_pull_while_a_plan_is_active_gives_plan_already_active(session, active, make_plan, rejects):
    make_plan(session)
    with rejects("PLAN_ALREADY_ACTIVE", match=active.id):
        services.plan_pull(session_name=session.name)


def _discard(session_name: str) -> None:
    services.plan_discard(session_name=session_name, reason="not needed")


def _complete(session_name: str) -> None:
    services.plan_complete(session_name=session_name, outcome="done")


# How the only plan ended (None: no plan was added), what the refusal says, its reason.
EMPTY_QUEUES = [
    pytest.param(None, "no plan was added", errors.NOTHING_ADDED, id="nothing-added-yet"),
    pytest.param(_discard, "no plan", errors.NOTHING_COMPLETED, id="only-discards"),
    pytest.param(_complete, "Task complete! 🎉", None, id="work-done"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("finish,match,reason", EMPTY_QUEUES)
def test_pull_from_an_empty_queue_says_why(session, make_plan, rejects, finish, match, reason):
    if finish is not None:
        make_plan(session)
        services.plan_pull(session_name=session.name)
        finish(session.name)
    with rejects("QUEUE_EMPTY", match=match) as info:
        services.plan_pull(session_name=session.name)
    assert info.value.reason == reason
    # Only a session whose work was done is told the task is complete.
    assert ("Task complete" in info.value.message) == (finish is _complete)


@pytest.mark.django_db
def test_pull_from_an_unknown_session_gives_session_not_found(rejects):
    with rejects("SESSION_NOT_FOUND"):
        services.plan_pull(session_name="calm-blue-heron")


@pytest.mark.django_db
def test_pull_restores_a_missing_plan_file_from_the_database(session, make_plan, sessions_dir):
    plan = make_plan(session)
    plan_file(sessions_dir, plan).unlink()

    services.plan_pull(session_name=session.name)

    assert plan_file(sessions_dir, plan).read_text() == planfiles.render(Plan.objects.get(id=plan.id).sections())


@pytest.mark.django_db
def test_pull_that_cannot_restore_the_file_changes_nothing(session, make_plan, sessions_dir, rejects):
    make_plan(session)
    break_plans_folder(sessions_dir, session.name)

    with rejects("FILE_SYSTEM_ERROR"):
        services.plan_pull(session_name=session.name)


# --- moving a queued plan (staff) -----------------------------------------------------


@pytest.mark.django_db
def test_move_puts_a_queued_plan_at_the_front_or_back(session, make_plan):
    a, b, c = (make_plan(session, goal=g) for g in "ABC")

    moved = services.plan_move(session_name=session.name, plan_id=c.id, position="front", actor="staff:ann").plan
    assert moved.sort_key == -1
    assert queue_ids(session) == [c.id, a.id, b.id]

    services.plan_move(session_name=session.name, plan_id=c.id, position="back", actor="staff:ann")
    assert queue_ids(session) == [a.id, b.id, c.id]
    assert events(c)[1:] == [("plan_moved", "staff:ann"), ("plan_moved", "staff:ann")]


@pytest.mark.django_db
def test_move_of_the_active_plan_is_rejected(session, active, rejects):
    with rejects("VALIDATION_ERROR", field="plan_id", match="only a queued plan"):
        services.plan_move(session_name=session.name, plan_id=active.id, position="front", actor="staff:ann")


@pytest.mark.django_db
def test_move_of_an_unknown_plan_gives_plan_not_found(session, make_plan, rejects):
    make_plan(session)
    with rejects("PLAN_NOT_FOUND", match="zz999"):
        services.plan_move(session_name=session.name, plan_id="zz999", position="front", actor="staff:ann")


@pytest.mark.django_db
def test_a_plan_of_another_session_is_not_found(session, make_plan, rejects):
    other = services.session_create()
    theirs = make_plan(other)
    with rejects("PLAN_NOT_FOUND"):
        services.plan_move(session_name=session.name, plan_id=theirs.id, position="front", actor="staff:ann")


# --- moving a plan before another (a board's drag) ---------------------------------------


def _order(session) -> list[str]:
    return list(
        Plan.objects.filter(session=session, status="queued").order_by("sort_key").values_list("goal", flat=True)
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("moved", "before", "expected", "place"),
    [
        ("E", "B", ["A", "E", "B", "C", "D"], 2),
        ("A", "D", ["B", "C", "A", "D", "E"], 3),
        ("C", "A", ["C", "A", "B", "D", "E"], 1),
        ("B", "C", ["A", "B", "C", "D", "E"], 2),
    ],
)
def test_a_plan_moves_just_before_another(session, make_plan, moved, before, expected, place):
    plans = {g: make_plan(session, goal=g) for g in "ABCDE"}
    written = services.plan_move(
        session_name=session.name, plan_id=plans[moved].id, before=plans[before].id, actor="user:sam"
    )
    assert _order(session) == expected
    assert written.place == place
    event = Event.objects.filter(plan=plans[moved]).last()
    assert (event.kind, event.actor, event.detail) == ("plan_moved", "user:sam", {"before": plans[before].id})
    assert invariants.check_invariants(session.name).valid


@pytest.mark.django_db
def test_a_move_before_a_plan_not_queued_or_itself_is_refused(session, make_plan):
    first, second = make_plan(session, goal="A"), make_plan(session, goal="B")
    services.plan_pull(session_name=session.name)
    for before, words in ((first.id, "no queued plan"), (second.id, "before itself"), ("zzzzz", "no queued plan")):
        with pytest.raises(ValidationFailed, match=words) as refused:
            services.plan_move(session_name=session.name, plan_id=second.id, before=before, actor="user:sam")
        assert refused.value.field == "before"
    with pytest.raises(ValidationFailed, match="not both"):
        services.plan_move(
            session_name=session.name, plan_id=second.id, before=first.id, position="front", actor="user:sam"
        )
    assert _order(session) == ["B"]


@pytest.mark.django_db
def test_a_move_before_a_plan_shifts_the_shorter_side_of_the_queue(session, make_plan):
    plans = {g: make_plan(session, goal=g) for g in "ABCDEFG"}
    keys = dict(Plan.objects.filter(session=session).values_list("goal", "sort_key"))
    services.plan_move(session_name=session.name, plan_id=plans["A"].id, before=plans["F"].id, actor="user:sam")
    after = dict(Plan.objects.filter(session=session).values_list("goal", "sort_key"))
    assert _order(session) == ["B", "C", "D", "E", "A", "F", "G"]
    # Two plans behind the target, four ahead of it: only the target and those behind it moved.
    assert [g for g in "BCDE" if after[g] != keys[g]] == []
    assert invariants.check_invariants(session.name).valid
