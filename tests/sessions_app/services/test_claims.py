"""Several workers in one session: each holds its own plan, an expired claim stays its
worker's until another worker's pull takes it, a late writer is fenced off, and plans wait for the plans they depend on
(docs/design.md, "Model and invariants", "Services and queries")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app import clock, errors, planfiles, services
from sessions_app.maintenance import invariants, repair
from sessions_app.models import Event, LostClaim, Plan, PlanDependency
from sessions_app.reads import queries
from tests.conftest import plan_fields
from tests.sessions_app.conftest import plan_file  # the now fixture is there too

pytestmark = pytest.mark.django_db


@pytest.fixture
def short(now):
    """A session whose claims last 60 seconds and may run out twice."""
    return services.session_create(task_description="parallel", lease_seconds=60, max_attempts=2)


def add(session, goal: str, **kwargs) -> Plan:
    return services.plan_enqueue_many(session_name=session.name, plans=[plan_fields(goal=goal, **kwargs)])[0].plan


def pull(session, worker=None) -> Plan:
    return services.plan_pull(session_name=session.name, worker=worker)


def row(plan: Plan) -> Plan:
    return Plan.objects.get(id=plan.id)


def assert_valid(session) -> None:
    report = invariants.check_invariants(session.name)
    assert report.valid, report.issues


# --- workers ------------------------------------------------------------------------------


def test_two_workers_hold_a_plan_each_and_write_only_their_own(session, sessions_dir):
    a, b = add(session, "A"), add(session, "B")
    assert pull(session, "w1").id == a.id
    assert pull(session, "w2").id == b.id

    services.plan_note(session_name=session.name, worker="w2", text="found by w2")
    services.plan_note(session_name=session.name, worker="w1", text="found by w1")
    assert row(a).notes == "found by w1" and row(b).notes == "found by w2"
    assert "found by w2" in plan_file(sessions_dir, b).read_text()

    done = services.plan_complete(session_name=session.name, worker="w2", outcome="B done").plan
    assert done.id == b.id and row(b).worker == "w2" and row(a).status == Plan.Status.ACTIVE
    # The events name the worker.
    actors = set(Event.objects.filter(plan_id=b.id).values_list("actor", flat=True))
    assert actors == {"agent", "agent/w2"}
    assert_valid(session)


def test_a_worker_holds_one_plan_at_a_time(session, rejects):
    add(session, "A"), add(session, "B")
    held = pull(session, "w1")
    with rejects("PLAN_ALREADY_ACTIVE", match=held.id):
        pull(session, "w1")
    assert pull(session, "w2").id != held.id


def test_the_default_worker_is_the_one_a_single_agent_always_was(session):
    a = add(session, "A")
    assert pull(session).worker == "default"
    services.plan_note(session_name=session.name, text="alone")
    # Naming the default worker is the same worker.
    services.plan_note(session_name=session.name, worker="default", text="still alone")
    assert row(a).notes == "alone\n\nstill alone"
    assert set(Event.objects.filter(plan_id=a.id).values_list("actor", flat=True)) == {"agent"}


@pytest.mark.parametrize("bad", ["", "has space", "x" * 65, "semi;colon", 7, "tab\t", "é"])
def test_a_bad_worker_name_is_refused_and_changes_nothing(session, make_plan, rejects, bad):
    make_plan(session)
    with rejects("VALIDATION_ERROR", field="worker"):
        services.plan_pull(session_name=session.name, worker=bad)


def test_a_worker_without_a_plan_gets_no_active_plan(session, rejects):
    add(session, "A")
    pull(session, "w1")
    with rejects("NO_ACTIVE_PLAN", match="worker 'w2'"):
        services.plan_note(session_name=session.name, worker="w2", text="x")


# --- leases -------------------------------------------------------------------------------


def test_every_write_renews_the_lease_and_renew_alone_does_too(short, now):
    add(short, "A")
    plan = pull(short, "w1")
    assert row(plan).lease_expires_at == now.at + timedelta(seconds=60)
    now.advance(50)
    services.plan_note(session_name=short.name, worker="w1", text="still here")
    assert row(plan).lease_expires_at == now.at + timedelta(seconds=60)
    now.advance(50)
    version = row(plan).version
    services.plan_renew(session_name=short.name, worker="w1")
    assert row(plan).lease_expires_at == now.at + timedelta(seconds=60)
    assert row(plan).version == version  # nothing else changed
    now.advance(50)
    # Expired by now only if nothing renewed it: another worker's pull finds nothing to reclaim.
    add(short, "B")
    assert pull(short, "w2").goal == "B"
    assert row(plan).status == Plan.Status.ACTIVE


def test_an_expired_claim_is_reclaimed_by_the_next_pull_with_its_notes(short, now, sessions_dir, rejects):
    a, b = add(short, "A"), add(short, "B")
    pull(short, "w1")
    services.plan_note(session_name=short.name, worker="w1", text="half done: step 1 works")
    now.advance(61)

    again = pull(short, "w2")
    assert again.id == a.id and again.attempts == 1 and again.worker == "w2"
    stored = row(a)
    assert stored.notes.startswith("half done: step 1 works\n\nReclaimed ")
    assert "worker 'w1'" in stored.notes and "attempt 1 of 2" in stored.notes
    assert planfiles.parse(plan_file(sessions_dir, a).read_text()).sections["notes"] == stored.notes
    reclaimed = Event.objects.get(plan_id=a.id, kind=Event.Kind.PLAN_RECLAIMED)
    assert reclaimed.detail["worker"] == "w1" and reclaimed.detail["attempts"] == 1
    assert row(b).status == Plan.Status.QUEUED  # the reclaimed plan went first

    # The late worker is fenced off: LEASE_LOST, the plan unchanged, its text kept.
    before = row(a)
    with pytest.raises(errors.LeaseLost) as info:
        services.plan_note(session_name=short.name, worker="w1", text="step 2 works too")
    assert a.id in info.value.message and "worker 'w2'" in info.value.message
    after = row(a)
    assert (after.notes, after.version, after.worker) == (before.notes, before.version, "w2")
    late = queries.late_writes(a.id)
    assert [(w.worker, w.op, w.text) for w in late] == [("w1", "note", "step 2 works too")]
    with pytest.raises(errors.LeaseLost):
        services.plan_complete(session_name=short.name, worker="w1", outcome="all done")
    assert row(a).status == Plan.Status.ACTIVE and row(a).outcome == ""
    assert [w.op for w in queries.late_writes(a.id)] == ["complete", "note"]
    assert_valid(short)

    # Once it pulls again it is an ordinary worker.
    assert pull(short, "w1").id == b.id
    assert not LostClaim.objects.filter(worker="w1").exists()


def test_a_pull_hands_out_the_queue_s_length_its_dependencies_and_its_file_s_text(short, now, sessions_dir):
    a = add(short, "A")
    b = add(short, "B", depends_on=[a.id])
    c = add(short, "C")
    first = pull(short, "w1")
    assert first.id == a.id
    assert first.pull_result == services.PullResult(
        queue_remaining=2, has_dependencies=False, file_text=plan_file(sessions_dir, a).read_text()
    )
    assert queries.queue_length(short.name) == 2

    # w1's claim runs out and w2's pull takes it back: A goes back to the queue and out again.
    now.advance(61)
    again = pull(short, "w2")
    assert again.id == a.id and again.reclaims == 1
    assert again.pull_result.queue_remaining == queries.queue_length(short.name) == 2
    assert again.pull_result.file_text == plan_file(sessions_dir, again).read_text()
    assert "Reclaimed " in again.pull_result.file_text

    services.plan_complete(session_name=short.name, worker="w2", outcome="A done")
    dependent = pull(short, "w2")
    assert dependent.id == b.id
    assert dependent.pull_result.has_dependencies and dependent.pull_result.queue_remaining == 1

    # A file edited while its plan was queued stays as it is, and is what the pull hands out.
    original = plan_file(sessions_dir, c).read_text()
    edited = original.replace("# Notes\n", "# Notes\nread the old service first\n")
    assert edited != original
    plan_file(sessions_dir, c).write_text(edited)
    last = pull(short, "w1")
    assert last.id == c.id and last.pull_result == services.PullResult(0, False, edited)
    assert plan_file(sessions_dir, c).read_text() == edited


def test_a_lone_worker_keeps_its_expired_claim_and_its_writes_renew_it(short, now):
    a = add(short, "A")
    pull(short)
    now.advance(31 * 60)  # far past the lease, but nobody else wanted the plan
    # The start-up repair leaves the claim alone: it is no crash's leftover.
    assert not [x for x in repair.repair_all(apply=True) if x.target == a.id]
    assert (row(a).status, row(a).worker) == (Plan.Status.ACTIVE, "default")
    written = services.plan_note(session_name=short.name, text="thought long, found it")
    assert written.plan.id == a.id
    assert row(a).lease_expires_at == now.at + timedelta(seconds=60) and row(a).attempts == 0
    now.advance(61)
    services.plan_renew(session_name=short.name)
    assert row(a).lease_expires_at == now.at + timedelta(seconds=60)
    now.advance(61)
    services.plan_complete(session_name=short.name, outcome="done at last")
    assert row(a).status == Plan.Status.COMPLETED and "thought long, found it" in row(a).notes
    assert not Event.objects.filter(kind=Event.Kind.PLAN_RECLAIMED, session=short).exists()
    assert_valid(short)


def test_a_workers_own_pull_leaves_its_expired_claim_and_a_reclaim_stands_when_the_pull_gives_nothing(short, now):
    a = add(short, "A")
    pull(short, "w1")
    now.advance(61)
    # w1 pulls again: its own expired claim stays its own.
    with pytest.raises(errors.PlanAlreadyActive):
        pull(short, "w1")
    assert (row(a).worker, row(a).attempts) == ("w1", 0)
    assert not Event.objects.filter(kind=Event.Kind.PLAN_RECLAIMED, session=short).exists()
    # Another worker's pull takes it: the reclaimed plan goes first.
    b = add(short, "B")
    assert pull(short, "w3").id == a.id
    assert pull(short, "w2").id == b.id
    now.advance(61)
    # w3 holds a plan: its pull reclaims w2's expired claim (not its own), then is refused,
    # and the reclaim stands.
    with pytest.raises(errors.PlanAlreadyActive):
        pull(short, "w3")
    assert (row(a).status, row(a).worker) == (Plan.Status.ACTIVE, "w3")
    assert row(b).status == Plan.Status.QUEUED
    assert Event.objects.filter(kind=Event.Kind.PLAN_RECLAIMED, session=short).count() == 2


def test_after_max_attempts_a_plan_waits_for_a_person(short, now, rejects):
    a = add(short, "A")
    for attempt in (1, 2):
        assert pull(short, f"w{attempt}").id == a.id
        now.advance(61)
    assert [p.id for p in services.reclaim_expired(session_name=short.name)] == [a.id]
    with rejects("QUEUE_BLOCKED") as info:
        pull(short, "w3")
    assert info.value.reason == errors.WAITING_FOR_PERSON and "person" in info.value.message
    stored = row(a)
    assert stored.waiting_for_person and stored.attempts == 2 and stored.status == Plan.Status.QUEUED
    assert "until a person requeues or discards it" in stored.notes

    # A person hands it back: the attempts count afresh.
    services.plan_requeue(session_name=short.name, plan_id=a.id, actor="user:sam")
    stored = row(a)
    assert not stored.waiting_for_person and stored.attempts == 0
    assert pull(short, "w3").id == a.id
    assert_valid(short)


def test_nineplan_reclaim_takes_back_every_sessions_expired_claims_and_leaves_live_ones(short, now):
    other = services.session_create(lease_seconds=3600)
    add(short, "A"), add(other, "B")
    held_short, held_other = pull(short, "w1"), pull(other, "w1")
    now.advance(61)
    reclaimed = services.reclaim_expired()
    assert [p.id for p in reclaimed] == [held_short.id]
    assert row(held_short).status == Plan.Status.QUEUED and row(held_other).status == Plan.Status.ACTIVE
    assert services.reclaim_expired() == []


def test_staff_reclaim_a_stuck_worker(short, now, rejects):
    a = add(short, "A")
    pull(short, "w1")
    written = services.plan_reclaim(session_name=short.name, plan_id=a.id, actor="user:sam")
    assert written.plan.status == Plan.Status.QUEUED and row(a).attempts == 1
    assert "taken back by user:sam" in row(a).notes
    with pytest.raises(errors.LeaseLost):
        services.plan_defer(session_name=short.name, worker="w1", reason="later")
    with rejects("VALIDATION_ERROR", field="plan_id"):
        services.plan_reclaim(session_name=short.name, plan_id=a.id, actor="user:sam")


def test_session_options_are_checked(rejects, db):
    for bad in (0, 604_801, "60", True):
        with rejects("VALIDATION_ERROR", field="lease_seconds"):
            services.session_create(lease_seconds=bad)
    with rejects("VALIDATION_ERROR", field="max_attempts"):
        services.session_create(max_attempts=0)


# --- dependencies -------------------------------------------------------------------------


def test_a_plan_waits_until_every_plan_it_depends_on_is_completed(session, rejects):
    a, b = add(session, "A"), add(session, "B")
    c = add(session, "C", depends_on=[a.id, b.id])
    d = add(session, "D")
    assert pull(session, "w1").id == a.id
    assert pull(session, "w2").id == b.id
    # C is next in the queue but not ready: D is handed out instead.
    assert pull(session, "w3").id == d.id
    with rejects("QUEUE_BLOCKED") as info:
        pull(session, "w4")
    message = info.value.message
    assert c.id in message and a.id in message and "worker 'w1'" in message and "worker 'w2'" in message

    services.plan_complete(session_name=session.name, worker="w1", outcome="A")
    with rejects("QUEUE_BLOCKED"):
        pull(session, "w4")
    services.plan_complete(session_name=session.name, worker="w2", outcome="B")
    assert pull(session, "w4").id == c.id
    assert_valid(session)


def test_a_batch_names_earlier_plans_of_itself_by_index(session):
    first = add(session, "already there")
    created = services.plan_enqueue_many(
        session_name=session.name,
        plans=[
            plan_fields(goal="A"),
            plan_fields(goal="B"),
            plan_fields(goal="C", depends_on=[0, 1, first.id]),
        ],
        position="front",
    )
    a, b, c = (w.plan for w in created)
    assert [w.place for w in created] == [1, 2, 3]
    deps = queries.dependencies(c.id)
    assert sorted(d for d, _ in deps.depends_on) == sorted([a.id, b.id, first.id]) and not deps.ready
    assert [p for p, _ in queries.dependencies(a.id).dependents] == [c.id]


@pytest.mark.parametrize(
    "deps, field",
    [
        (["zzzzz"], "plans[1].depends_on[0]"),
        ([1], "plans[1].depends_on[0]"),
        ([2], "plans[1].depends_on[0]"),
        ([-1], "plans[1].depends_on[0]"),
        (["../x"], "plans[1].depends_on[0]"),
        ("abcde", "plans[1].depends_on"),
        ([True], "plans[1].depends_on[0]"),
    ],
)
def test_a_dependency_must_exist_before_its_dependent(session, rejects, deps, field):
    with rejects("VALIDATION_ERROR", field=field):
        services.plan_enqueue_many(
            session_name=session.name, plans=[plan_fields(goal="A"), plan_fields(goal="B", depends_on=deps)]
        )


def test_no_plan_can_wait_for_a_discarded_plan_or_one_of_another_session(session, rejects):
    other = services.session_create()
    theirs = add(other, "theirs")
    gone = add(session, "gone")
    pull(session)
    services.plan_discard(session_name=session.name, reason="not needed")
    with rejects("VALIDATION_ERROR", match="discarded"):
        add(session, "B", depends_on=[gone.id])
    with rejects("VALIDATION_ERROR", match="no plan"):
        add(session, "B", depends_on=[theirs.id])


def test_a_discarded_dependency_is_removed_from_its_dependents_with_a_note(session, sessions_dir):
    a = add(session, "A")
    b = add(session, "B", depends_on=[a.id])
    pull(session, "w1")
    services.plan_discard(session_name=session.name, worker="w1", reason="the API was dropped")
    stored = row(b)
    assert not PlanDependency.objects.filter(plan_id=b.id).exists()
    assert f"plan {a.id}" in stored.notes and "the API was dropped" in stored.notes
    assert "no longer waits for it" in stored.notes
    assert planfiles.parse(plan_file(sessions_dir, b).read_text()).sections["notes"] == stored.notes
    assert Event.objects.filter(plan_id=b.id, kind=Event.Kind.DEPENDENCY_DROPPED).count() == 1
    assert pull(session, "w2").id == b.id
    assert_valid(session)


# --- what a pull says when it gives nothing -------------------------------------------------


def test_queue_empty_only_when_nothing_is_queued_or_active(session, rejects):
    add(session, "A")
    pull(session, "w1")
    with rejects("QUEUE_BLOCKED", match="still active") as info:
        pull(session, "w2")
    assert info.value.reason == errors.OTHERS_ACTIVE
    services.plan_complete(session_name=session.name, worker="w1", outcome="done")
    with rejects("QUEUE_EMPTY", match="Task complete"):
        pull(session, "w2")


def test_resume_state_shows_every_worker_and_what_blocked_plans_wait_for(short, now):
    a = add(short, "A")
    b = add(short, "B", depends_on=[a.id])
    pull(short, "w1")
    state = queries.session_state(short.name)
    assert [(p.worker, p.id) for p in state.claimed] == [("w1", a.id)]
    assert [(x.plan_id, [w.id for w in x.waits_for]) for x in state.blocked] == [(b.id, [a.id])]
    assert "worker 'w1'" in state.blocked[0].describe()


def test_an_export_carries_claims_and_dependencies_and_imports_them_back(short, now, sessions_dir):
    import shutil

    from sessions_app.maintenance import export_import
    from sessions_app.models import Session

    a = add(short, "A")
    b = add(short, "B", depends_on=[a.id])
    pull(short, "w1")
    document = export_import.export_session(short.name)
    rows = {p["id"]: p for p in document["plans"]}
    assert rows[b.id]["depends_on"] == [a.id] and rows[a.id]["worker"] == "w1"
    before = {p.id: (p.status, p.worker, p.lease_expires_at, p.attempts) for p in Plan.objects.filter(session=short)}
    Session.objects.filter(name=short.name).delete()
    shutil.rmtree(sessions_dir / short.name)

    export_import.session_import(document)
    after = {p.id: (p.status, p.worker, p.lease_expires_at, p.attempts) for p in Plan.objects.filter(session=short)}
    assert after == before
    assert [d for d, _ in queries.dependencies(b.id).depends_on] == [a.id]
    assert Session.objects.get(name=short.name).lease_seconds == 60
    assert_valid(short)


# --- how many plans may depend on one -------------------------------------------------------


def _dependents_in_bulk(session, on: Plan, n: int) -> list[Plan]:
    """``n`` queued plans that depend on ``on``, written as rows in bulk (no files: a
    discard renders the file of each it notes)."""
    at = timezone.now()
    start = Plan.objects.filter(session=session).exclude(sort_key=None).order_by("-sort_key").first().sort_key
    plans = [
        Plan(
            id=f"d{i:04d}",
            session=session,
            status=Plan.Status.QUEUED,
            sort_key=start + 1 + i,
            goal=f"Dependent {i}",
            context="c",
            approach="a",
            success_criteria="s",
            created_at=at,
            updated_at=at,
        )
        for i in range(n)
    ]
    Plan.objects.bulk_create(plans)
    PlanDependency.objects.bulk_create([PlanDependency(plan=p, depends_on=on) for p in plans])
    return plans


def test_a_plan_may_have_max_dependents_and_discarding_it_notes_each(session, rejects, sessions_dir, settings):
    from sessions_app.models import MAX_DEPENDENTS

    base = add(session, "Base")
    _dependents_in_bulk(session, base, MAX_DEPENDENTS - 2)
    # At the cap: one more alone, then a batch whose first plan is the last allowed.
    add(session, "The last but one", depends_on=[base.id])
    with rejects("VALIDATION_ERROR", field="plans[1].depends_on[0]", match=f"at most {MAX_DEPENDENTS}"):
        services.plan_enqueue_many(
            session_name=session.name,
            plans=[plan_fields(goal="Last", depends_on=[base.id]), plan_fields(goal="One over", depends_on=[base.id])],
        )
    last = add(session, "Last", depends_on=[base.id])
    assert PlanDependency.objects.filter(depends_on=base).count() == MAX_DEPENDENTS
    # Just above the cap: refused, nothing written.
    with rejects("VALIDATION_ERROR", field="depends_on[0]") as info:
        add(session, "One over", depends_on=[base.id])
    assert info.value.message == (
        f"depends_on[0]: plan {base.id} would have {MAX_DEPENDENTS + 1} dependents; a plan may have at most "
        f"{MAX_DEPENDENTS} (discarding it writes a note into each of them in one write)."
    )
    # Within a batch, dependents on an earlier plan of the batch count too.
    settings.NINEPLAN_MAX_BATCH = MAX_DEPENDENTS + 2
    fanned = [plan_fields(goal="Root")] + [plan_fields(goal=f"x{i}", depends_on=[0]) for i in range(MAX_DEPENDENTS + 1)]
    with rejects("VALIDATION_ERROR", field=f"plans[{MAX_DEPENDENTS + 1}].depends_on[0]", match="plans[0] would have"):
        services.plan_enqueue_many(session_name=session.name, plans=fanned)

    # Discarding the base notes each dependent (the cap bounds this one transaction).
    pull(session)
    services.plan_discard(session_name=session.name, reason="not needed")
    assert not PlanDependency.objects.filter(depends_on=base).exists()
    assert "Dependency dropped" in row(last).notes
    assert Event.objects.filter(kind=Event.Kind.DEPENDENCY_DROPPED, session=session).count() == MAX_DEPENDENTS
    assert_valid(session)


# --- what a pull reads under the session's lock ----------------------------------------------


def candidate(session, worker="other"):
    """What a pull by ``worker`` would read: (ready plan, plan it holds, depends on others)."""
    from django.db import transaction

    from sessions_app import access
    from sessions_app.services import claims

    with transaction.atomic():
        holding, _ = claims.worker_and_expired(session.name, access.current().claimant, worker, clock.now())
        plan, depends = (None, False) if holding else claims.first_ready(session.name)
        return plan, holding, depends


def test_a_pull_sees_other_workers_expired_claims_but_not_its_own(short, now):
    from django.db import transaction

    from sessions_app import access
    from sessions_app.services import claims

    add(short, "A")
    add(short, "B")
    mine, theirs = pull(short, "w1"), pull(short, "w2")
    now.advance(seconds=61)

    def seen(worker):
        with transaction.atomic():
            return claims.worker_and_expired(short.name, access.current().claimant, worker, clock.now())

    assert seen("w1") == (mine.id, True)
    assert seen("w2") == (theirs.id, True)
    assert seen("w3") == (None, True)
    services.plan_renew(session_name=short.name, worker="w2")
    assert seen("w1") == (mine.id, False)


def test_the_first_ready_plan_follows_the_queue_order_and_an_empty_queue_has_none(session):
    assert candidate(session) == (None, None, False)
    a, b = add(session, "A"), add(session, "B")
    assert candidate(session)[0].id == a.id
    services.plan_pull(session_name=session.name)
    assert candidate(session)[0].id == b.id


def test_a_plan_waiting_for_another_is_not_ready_until_it_is_completed(session):
    first, later = (
        written.plan
        for written in services.plan_enqueue_many(
            session_name=session.name, plans=[plan_fields(goal="First"), plan_fields(goal="Later", depends_on=[0])]
        )
    )
    assert (candidate(session)[0].id, candidate(session)[2]) == (first.id, False)
    services.plan_pull(session_name=session.name)
    assert candidate(session)[0] is None
    assert Plan.objects.get(id=later.id).status == Plan.Status.QUEUED
    services.plan_complete(session_name=session.name, outcome="done")
    # Ready now, and it says it depends on others (its answer shows what they produced).
    ready = candidate(session)
    assert (ready[0].id, ready[2]) == (later.id, True)


def test_a_worker_holding_a_plan_is_handed_none_and_its_lost_claim_is_forgotten_by_its_next_pull(session):
    a = add(session, "A")
    add(session, "B")
    found = candidate(session, "w1")
    assert (found[0].id, *found[1:]) == (a.id, None, False)
    services.plan_pull(session_name=session.name, worker="w1")
    # The worker holds a plan: nothing is handed to it, whatever is ready.
    assert candidate(session, "w1") == (None, a.id, False)
    services.plan_pull(session_name=session.name, worker="w2")
    # Nothing is ready: the worker's own plan is still read.
    assert candidate(session, "w1") == (None, a.id, False)
    assert candidate(session, "w3") == (None, None, False)
    services.plan_reclaim(session_name=session.name, plan_id=a.id, actor="alice")
    assert LostClaim.objects.filter(session=session, worker="w1").exists()
    assert services.plan_pull(session_name=session.name, worker="w1").id == a.id
    assert not LostClaim.objects.filter(session=session, worker="w1").exists()
