"""Model-based test: random sequences of every queue operation by several workers, with
dependencies between plans and a clock the model moves (so leases run out and claims are
reclaimed), run against the real services (SQLite or PostgreSQL, plan files on disk) and
against a plain in-memory model of what 9plan promises. After every step the two must
agree on the queue order, each worker's plan and lease, lost claims, attempts, the
dependencies, the history, every plan's text and every plan file, and check_invariants
must be clean. The review gate is part of the model: plans in review, approved, rejected
back to the front of the queue (unclaimed), held after too many rejections and released;
and every plan's revisions must lead back from its text now to its text as added.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from sessions_app import clock, planfiles, services
from sessions_app.errors import NineplanError
from sessions_app.maintenance import invariants
from sessions_app.models import SECTIONS, Event, Plan, PlanDependency, Revision, Session
from sessions_app.reads import queries
from sessions_app.store import revisions
from tests.proofs.queue_model import (
    BLANK,
    LEASE,
    MAX_ATTEMPTS,
    MAX_REJECTIONS,
    PLAN,
    POSITION,
    REAL_NOW,
    REJECTED,
    SOME_TEXT,
    STAMP,
    WORKERS,
    Model,
    ModelPlan,
    compose,
    worker_name,
)


class NineplanMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.name = ""
        self.start = timezone.now()

    @initialize(review_required=st.booleans())
    def new_session(self, review_required) -> None:
        # A fresh session for every example: examples share the test's database. The clock
        # is the model's: leases run out when the model says time has passed.
        clock.now = lambda: self.start + timedelta(seconds=self.model.now)
        self.name = services.session_create(
            task_description="model-based",
            lease_seconds=LEASE,
            max_attempts=MAX_ATTEMPTS,
            review="required" if review_required else "none",
        ).name
        self.model.review_required = review_required

    def teardown(self) -> None:
        clock.now = REAL_NOW

    # --- the call, and the errors the model expects ----------------------------------------

    def expect_error(self, category: str, call) -> None:
        plans = list(Plan.objects.filter(session_id=self.name).order_by("id").values())
        event_count = Event.objects.filter(session_id=self.name).count()
        revision_count = Revision.objects.filter(plan__session_id=self.name).count()
        with pytest.raises(NineplanError) as info:
            call()
        assert info.value.category == category, info.value.message
        assert list(Plan.objects.filter(session_id=self.name).order_by("id").values()) == plans
        assert Event.objects.filter(session_id=self.name).count() == event_count
        assert Revision.objects.filter(plan__session_id=self.name).count() == revision_count

    def stored_notes(self, plan_id: str, before: str, marker: str) -> str:
        """The plan's stored notes, checked to be ``before`` plus one note starting with
        ``marker`` (whose timestamp is the server's); the model takes them over."""
        stored = Plan.objects.get(id=plan_id).notes
        pattern = re.escape(compose(before, "\x00")).replace("\x00", re.escape(marker) + ".*")
        assert re.fullmatch(pattern, stored, re.S), (stored, pattern)
        return stored

    # --- rules ----------------------------------------------------------------------------

    @rule(fields=PLAN, position=POSITION, needs_review=st.sampled_from([None, False, True]), data=st.data())
    def add(self, fields, position, needs_review, data):
        possible = sorted(pid for pid, mp in self.model.plans.items() if mp.status != "discarded")
        deps = data.draw(st.lists(st.sampled_from(possible), max_size=2, unique=True)) if possible else []
        placed = services.plan_enqueue_many(
            session_name=self.name,
            plans=[{**fields, "depends_on": deps or None}],
            position=position,
            review=needs_review,
        )
        self._added(placed, [fields], position, [set(deps)])
        self.model.plans[placed[0].plan.id].review = bool(needs_review)

    @rule(batch=st.lists(PLAN, min_size=1, max_size=4), position=POSITION, data=st.data())
    def add_batch(self, batch, position, data):
        wanted = []
        for i, _ in enumerate(batch):
            wanted.append(data.draw(st.lists(st.integers(0, i - 1), max_size=2, unique=True)) if i else [])
        plans = [{**fields, "depends_on": deps or None} for fields, deps in zip(batch, wanted)]
        created = services.plan_enqueue_many(session_name=self.name, plans=plans, position=position)
        ids = [q.plan.id for q in created]
        self._added(created, batch, position, [{ids[d] for d in deps} for deps in wanted])

    def _added(self, placed, batch, position, deps) -> None:
        ids = [q.plan.id for q in placed]
        assert len(set(ids)) == len(ids) and not set(ids) & set(self.model.plans)
        for plan_id, fields, needs in zip(ids, batch, deps, strict=True):
            sections = {name: fields.get(name) or "" for name in SECTIONS}
            self.model.plans[plan_id] = ModelPlan(sections, dict(sections), deps=needs)
        # A batch keeps its order at either end: [A, B] at the front is worked A, then B.
        if position == "front":
            self.model.queue[:0] = ids
        else:
            self.model.queue.extend(ids)
        # Each plan reports its place in the queue (1 = next) as the call left it.
        assert [q.place for q in placed] == [self.model.queue.index(i) + 1 for i in ids]

    @rule(seconds=st.sampled_from([1, LEASE, LEASE + 1, 3 * LEASE]))
    def time_passes(self, seconds):
        self.model.now += seconds

    def _reclaim(self, keep: str | None = None) -> None:
        """What the model expects of every reclaim due now (another worker's pull or
        ``nineplan_reclaim`` runs them; the sweep only reports them)."""
        expired = self.model.expired(keep)
        before = {pid: self.model.plans[pid].sections["notes"] for pid in expired}
        for plan_id in expired:
            # The worker's file edits are not taken in: fenced off, kept as its late write.
            self.model.file_notes.pop(plan_id, None)
            before[plan_id] = self.model.plans[plan_id].sections["notes"]
        self.model.queue[:0] = expired
        for plan_id in expired:
            mp = self.model.plans[plan_id]
            self.model.lost[mp.worker] = plan_id
            del self.model.claimed[mp.worker]
            mp.attempts += 1
            mp.reclaims += 1
            mp.waiting = mp.attempts >= MAX_ATTEMPTS
            mp.status, mp.worker, mp.lease_until = "queued", None, None
        return before

    def _check_reclaimed(self, before: dict[str, str]) -> None:
        for plan_id, notes in before.items():
            self.model.plans[plan_id].sections["notes"] = self.stored_notes(plan_id, notes, "Reclaimed ")

    @rule(worker=WORKERS)
    def pull(self, worker):
        name = worker_name(worker)
        reclaimed = self._reclaim(keep=name)
        ready = [pid for pid in self.model.queue if self.model.ready(pid)]
        if name in self.model.claimed or not ready:
            with pytest.raises(NineplanError) as info:
                services.plan_pull(session_name=self.name, worker=worker)
            if name in self.model.claimed:
                expected = "PLAN_ALREADY_ACTIVE"
            elif self.model.queue or self.model.claimed or self.model.in_review or self.model.held:
                # Plans in review or held are work not done: the task is not complete.
                expected = "QUEUE_BLOCKED"
            else:
                expected = "QUEUE_EMPTY"
            assert info.value.category == expected, info.value.message
            self._check_reclaimed(reclaimed)
            return
        plan = services.plan_pull(session_name=self.name, worker=worker)
        self._check_reclaimed(reclaimed)
        expected = ready[0]
        assert plan.id == expected and plan.worker == name
        self.model.queue.remove(expected)
        self.model.claimed[name] = expected
        self.model.lost.pop(name, None)
        mp = self.model.plans[expected]
        mp.status, mp.worker, mp.lease_until = "active", name, self.model.now + LEASE

    @rule()
    def reclaim_command(self):
        reclaimed = self._reclaim()
        done = services.reclaim_expired(session_name=self.name)
        assert sorted(p.id for p in done) == sorted(reclaimed)
        self._check_reclaimed(reclaimed)

    def _holder_call(self, worker, op: str, call) -> str | None:
        """The plan the worker's write acts on (its lease renewed), or None after checking
        the refusal the model predicts: LEASE_LOST (the text kept, the plan unchanged) or
        NO_ACTIVE_PLAN."""
        name = worker_name(worker)
        if name in self.model.claimed:
            plan_id = self.model.claimed[name]
            self.model.plans[plan_id].lease_until = self.model.now + LEASE
            return plan_id
        if name in self.model.lost:
            plan_id = self.model.lost[name]
            plans = list(Plan.objects.filter(session_id=self.name).order_by("id").values())
            late = Event.objects.filter(plan_id=plan_id, kind=Event.Kind.LATE_WRITE_KEPT).count()
            with pytest.raises(NineplanError) as info:
                call()
            assert info.value.category == "LEASE_LOST", info.value.message
            assert list(Plan.objects.filter(session_id=self.name).order_by("id").values()) == plans
            kept = Event.objects.filter(plan_id=plan_id, kind=Event.Kind.LATE_WRITE_KEPT).count()
            assert kept == late + (op != "renew")
            return None
        self.expect_error("NO_ACTIVE_PLAN", call)
        return None

    @rule(worker=WORKERS, reason=SOME_TEXT, position=POSITION)
    def defer(self, worker, reason, position):
        call = lambda: services.plan_defer(session_name=self.name, reason=reason, position=position, worker=worker)  # noqa: E731
        plan_id = self._holder_call(worker, "defer", call)
        if plan_id is None:
            return
        placed = call()
        assert placed.plan.id == plan_id
        self.model.take_in(plan_id)
        mp = self.model.plans[plan_id]
        # The timestamp is the server's: check its shape, then take the stored text.
        pattern = re.escape(compose(mp.sections["notes"], "\x00")).replace("\x00", STAMP) + re.escape(reason)
        stored = Plan.objects.get(id=plan_id).notes
        assert re.fullmatch(pattern, stored), (stored, pattern)
        mp.sections["notes"] = stored
        mp.status, mp.worker, mp.lease_until = "queued", None, None
        del self.model.claimed[worker_name(worker)]
        if position == "front":
            self.model.queue.insert(0, plan_id)
        else:
            self.model.queue.append(plan_id)
        assert placed.place == self.model.queue.index(plan_id) + 1

    @rule(worker=WORKERS, text=SOME_TEXT, mode=st.sampled_from([None, "append", "replace"]))
    def note(self, worker, text, mode):
        call = lambda: services.plan_note(session_name=self.name, text=text, mode=mode, worker=worker)  # noqa: E731
        plan_id = self._holder_call(worker, "note", call)
        if plan_id is None:
            return
        plan = call().plan
        self.model.take_in(plan_id)
        mp = self.model.plans[plan_id]
        mp.sections["notes"] = text if mode == "replace" else compose(mp.sections["notes"], text)
        assert plan.id == plan_id and plan.notes == mp.sections["notes"]

    @rule(worker=WORKERS)
    def renew(self, worker):
        call = lambda: services.plan_renew(session_name=self.name, worker=worker)  # noqa: E731
        plan_id = self._holder_call(worker, "renew", call)
        if plan_id is not None:
            assert call().id == plan_id

    @precondition(lambda self: self.model.claimed)
    @rule(data=st.data(), notes=st.one_of(st.just(""), SOME_TEXT))
    def agent_edits_the_file(self, data, notes):
        """An agent rewrites the Notes section of its plan file by hand."""
        plan_id = data.draw(st.sampled_from(sorted(self.model.claimed.values())))
        sections = {**self.model.plans[plan_id].sections, "notes": notes}
        text = planfiles.render(sections)
        planfiles.plan_path(self.name, self.model.stem(plan_id)).write_text(text, encoding="utf-8", newline="")
        self.model.file_notes[plan_id] = (text, notes)

    @rule(worker=WORKERS, outcome=SOME_TEXT)
    def complete(self, worker, outcome):
        call = lambda: services.plan_complete(session_name=self.name, outcome=outcome, worker=worker)  # noqa: E731
        if self._holder_call(worker, "complete", call) is not None:
            self._closed(worker, call().plan, outcome=outcome)

    @rule(worker=WORKERS, reason=SOME_TEXT)
    def discard(self, worker, reason):
        call = lambda: services.plan_discard(session_name=self.name, reason=reason, worker=worker)  # noqa: E731
        if self._holder_call(worker, "discard", call) is None:
            return
        plan_id = self.model.claimed[worker_name(worker)]
        dependents = {pid: mp.sections["notes"] for pid, mp in self.model.plans.items() if plan_id in mp.deps}
        self._closed(worker, call().plan, discard_reason=reason)
        # Plans that waited for it stop waiting, with a note saying why.
        for pid, notes in dependents.items():
            mp = self.model.plans[pid]
            mp.deps.discard(plan_id)
            if mp.status in ("queued", "active"):
                mp.sections["notes"] = self.stored_notes(pid, notes, "Dependency dropped ")

    def _closed(self, worker, plan, **text) -> None:
        """The worker's plan left the queue for good: completed with an outcome, or discarded."""
        name = worker_name(worker)
        plan_id = self.model.claimed.pop(name)
        assert plan.id == plan_id
        self.model.take_in(plan_id)
        mp = self.model.plans[plan_id]
        mp.lease_until = None
        if "outcome" in text and (mp.review or self.model.review_required):
            mp.status, mp.outcome = "in_review", text["outcome"]
            self.model.in_review.append(plan_id)
        elif "outcome" in text:
            mp.status, mp.outcome = "completed", text["outcome"]
            self.model.completed.append(plan_id)
        else:
            mp.status, mp.discard_reason = "discarded", text["discard_reason"]
            self.model.discarded.append(plan_id)

    @precondition(lambda self: self.model.in_review)
    @rule(data=st.data())
    def approve(self, data):
        plan_id = data.draw(st.sampled_from(self.model.in_review))
        services.plan_review(session_name=self.name, plan_id=plan_id, decision="approve", actor="user:rita")
        self.model.in_review.remove(plan_id)
        self.model.completed.append(plan_id)
        self.model.plans[plan_id].status = "completed"

    @precondition(lambda self: self.model.in_review)
    @rule(data=st.data(), notes=SOME_TEXT)
    def reject(self, data, notes):
        plan_id = data.draw(st.sampled_from(self.model.in_review))
        written = services.plan_review(
            session_name=self.name, plan_id=plan_id, decision="reject", notes=notes, actor="user:rita"
        )
        self.model.in_review.remove(plan_id)
        mp = self.model.plans[plan_id]
        pattern = re.escape(compose(mp.sections["notes"], "\x00")).replace("\x00", REJECTED) + re.escape(notes)
        stored = Plan.objects.get(id=plan_id).notes
        assert re.fullmatch(pattern, stored), (stored, pattern)
        mp.sections["notes"] = stored
        mp.rejections += 1
        # Unclaimed either way: no worker, no lease; its attempts stand.
        row = Plan.objects.get(id=plan_id)
        assert (row.worker, row.claimed_at, row.lease_expires_at) == (None, None, None)
        if mp.rejections >= MAX_REJECTIONS:
            mp.status = "held"
            self.model.held.append(plan_id)
            assert written.place is None
        else:
            mp.status = "queued"
            self.model.queue.insert(0, plan_id)
            assert written.place == 1

    @precondition(lambda self: self.model.held)
    @rule(data=st.data())
    def release(self, data):
        plan_id = data.draw(st.sampled_from(self.model.held))
        services.plan_release(session_name=self.name, plan_id=plan_id, actor="user:sam")
        self.model.held.remove(plan_id)
        self.model.plans[plan_id].status, self.model.plans[plan_id].rejections = "queued", 0
        self.model.queue.insert(0, plan_id)

    @rule(data=st.data(), decision=st.sampled_from(["approve", "reject"]))
    def review_refused_outside_review(self, data, decision):
        """Only a plan in review is decided; anything else is refused and changes nothing."""
        others = [i for i in self.model.plans if i not in self.model.in_review]
        if not others:
            return
        plan_id = data.draw(st.sampled_from(others))
        self.expect_error(
            "VALIDATION_ERROR",
            lambda: services.plan_review(
                session_name=self.name, plan_id=plan_id, decision=decision, notes="x", actor="user:rita"
            ),
        )

    @precondition(lambda self: any(self.model.plans[p].waiting for p in self.model.queue))
    @rule(data=st.data(), position=POSITION)
    def a_person_requeues_a_waiting_plan(self, data, position):
        plan_id = data.draw(st.sampled_from([p for p in self.model.queue if self.model.plans[p].waiting]))
        placed = services.plan_requeue(
            session_name=self.name, plan_id=plan_id, position=position or "front", actor="user:sam"
        )
        mp = self.model.plans[plan_id]
        mp.waiting, mp.attempts = False, 0
        self.model.queue.remove(plan_id)
        if position == "back":
            self.model.queue.append(plan_id)
        else:
            self.model.queue.insert(0, plan_id)
        assert placed.place == self.model.queue.index(plan_id) + 1

    @rule(
        case=st.sampled_from(
            [
                "blank section",
                "blank note",
                "unknown mode",
                "blank reason",
                "blank outcome",
                "bad position",
                "bad worker",
            ]
        ),
        fields=PLAN,
        blank=BLANK,
        which=st.sampled_from(["context", "goal", "approach", "success_criteria"]),
    )
    def rejected_input(self, case, fields, blank, which):
        """Bad input is refused before the session's state is looked at, whatever it is."""
        name = self.name
        calls = {
            "blank section": lambda: services.plan_enqueue(session_name=name, **{**fields, which: blank}),
            "blank note": lambda: services.plan_note(session_name=name, text=blank),
            "unknown mode": lambda: services.plan_note(session_name=name, text="x", mode="Append"),
            "blank reason": lambda: services.plan_defer(session_name=name, reason=blank),
            "blank outcome": lambda: services.plan_complete(session_name=name, outcome=blank),
            "bad position": lambda: services.plan_enqueue(session_name=name, position="FRONT", **fields),
            "bad worker": lambda: services.plan_pull(session_name=name, worker="no spaces"),
        }
        self.expect_error("VALIDATION_ERROR", calls[case])

    @rule()
    def resume(self):
        state = queries.session_state(self.name, limit=None)
        assert [p.id for p in state.queue] == self.model.queue
        assert state.queue_length == len(self.model.queue)
        assert {p.worker: p.id for p in state.claimed} == self.model.claimed
        assert state.completed_count == len(self.model.completed)
        assert state.discarded_count == len(self.model.discarded)
        not_ready = [pid for pid in self.model.queue[: queries.BLOCKED_SCAN] if not self.model.ready(pid)]
        assert [b.plan_id for b in state.blocked] == not_ready[: len(state.blocked)]

    @precondition(lambda self: self.model.completed)
    @rule(data=st.data())
    def read_history(self, data):
        plan_id = data.draw(st.sampled_from(self.model.completed))
        plan = queries.history_get(session_name=self.name, plan_id=plan_id)
        assert plan.outcome == self.model.plans[plan_id].outcome
        assert plan.sections() == self.model.plans[plan_id].sections

    # --- after every step -----------------------------------------------------------------

    @invariant()
    def database_matches_the_model(self):
        if not self.name:
            return
        rows = {p.id: p for p in Plan.objects.filter(session_id=self.name)}
        assert set(rows) == set(self.model.plans)
        for plan_id, mp in self.model.plans.items():
            row = rows[plan_id]
            assert row.status == mp.status, plan_id
            assert row.sections() == mp.sections, plan_id
            assert (row.outcome, row.discard_reason) == (mp.outcome, mp.discard_reason)
            assert (row.attempts, row.waiting_for_person) == (mp.attempts, mp.waiting), plan_id
            expected_lease = None if mp.lease_until is None else self.start + timedelta(seconds=mp.lease_until)
            assert row.lease_expires_at == expected_lease, plan_id
            deps = set(PlanDependency.objects.filter(plan_id=plan_id).values_list("depends_on_id", flat=True))
            assert deps == mp.deps, plan_id
        queued = sorted((p for p in rows.values() if p.status == "queued"), key=lambda p: p.sort_key)
        assert [p.id for p in queued] == self.model.queue
        assert {p.worker: p.id for p in rows.values() if p.status == "active"} == self.model.claimed
        completed = sorted((p for p in rows.values() if p.status == "completed"), key=lambda p: (p.completed_at, p.id))
        assert {p.id for p in completed} == set(self.model.completed)
        # The counts the triggers keep on the session row follow every step.
        kept = Session.objects.values_list("count_queued", "count_completed", "count_discarded").get(name=self.name)
        statuses = [mp.status for mp in self.model.plans.values()]
        assert kept == (statuses.count("queued"), statuses.count("completed"), statuses.count("discarded"))
        assert sorted(p.id for p in rows.values() if p.status == "in_review") == sorted(self.model.in_review)
        assert sorted(p.id for p in rows.values() if p.status == "held") == sorted(self.model.held)
        assert {i: rows[i].rejections for i in rows} == {i: mp.rejections for i, mp in self.model.plans.items()}

    @invariant()
    def revisions_lead_back_to_the_text_as_added(self):
        if not self.name:
            return
        for plan in Plan.objects.filter(session_id=self.name):
            assert revisions.text_at(plan, 1) == self.model.plans[plan.id].first, plan.id
            latest = Revision.objects.filter(plan=plan).order_by("-number").first()
            assert revisions.text_at(plan, latest.number) == plan.sections()

    @invariant()
    def files_match_the_model(self):
        if not self.name:
            return
        folder = planfiles.plans_dir(self.name)
        open_ids = self.model.queue + list(self.model.claimed.values())
        # One file per queued or active plan, under its current claim's name; beside them only
        # the files earlier claims of plans were given. No temp files, nothing kept aside.
        names = {p.name for p in folder.iterdir()}
        current = {f"{self.model.stem(i)}.txt" for i in open_ids}
        assert current <= names
        for name in names - current:
            plan_id, number = planfiles.split_stem(name.removesuffix(".txt"))
            assert number < self.model.plans[plan_id].reclaims, name
        assert not (planfiles.session_dir(self.name) / planfiles.PRESERVED_DIR).exists()
        for plan_id in open_ids:
            text = planfiles.read_plan(self.name, self.model.stem(plan_id))
            if plan_id in self.model.file_notes:
                assert text == self.model.file_notes[plan_id][0]
            else:
                assert text == planfiles.render(self.model.plans[plan_id].sections)

    @invariant()
    def admin_validate_is_clean(self):
        if not self.name:
            return
        result = invariants.check_invariants(self.name)
        assert result.valid, result.issues


@pytest.mark.slow
@pytest.mark.django_db
def test_services_behave_like_the_model(sessions_dir):
    run_state_machine_as_test(
        NineplanMachine,
        settings=hsettings(
            max_examples=30,
            stateful_step_count=50,
            deadline=None,
            database=None,  # no example database written into the working tree
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
