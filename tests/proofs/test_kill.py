"""Kill tests: real `manage.py mcp` processes doing random work on a session are killed
with SIGKILL at random moments: during start-up (migrate, repair), between calls, and
in the middle of a call. After every kill a fresh process starts (running the start-up
repair) and must then find the session valid, with nothing lost that an agent was told
had been done: every acknowledged plan, completed outcome and written note is still there.

Two lanes run side by side, each on its own session, so one lane's start-up repair also
runs while the other lane's server is busy. The choices are seeded: the seed is printed,
and NINEPLAN_KILL_SEED=<seed> replays the same choices (timing still varies, so where a
kill lands inside a call can differ).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.db import connection

from sessions_app import planfiles, services
from sessions_app.models import Event, Plan
from tests.sessions_app.stdio_server import StdioServer, result_text

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]

KILLS = 50
LANES = 2
# Answers the random work may get without anything being wrong.
EXPECTED_REFUSALS = {"NO_ACTIVE_PLAN", "PLAN_ALREADY_ACTIVE", "QUEUE_EMPTY"}
OPEN = (Plan.Status.QUEUED, Plan.Status.ACTIVE)


@dataclass
class Ledger:
    """What the driver was told succeeded, per session."""

    session: str
    plans: set[str] = field(default_factory=set)
    outcomes: dict[str, str] = field(default_factory=dict)
    # Outcomes sent without an answer: if the plan is completed, it must be with this one.
    sent_outcomes: dict[str, str] = field(default_factory=dict)
    # Text that must survive in the plan's Notes (database or, for an open plan, its file).
    notes: dict[str, list[str]] = field(default_factory=dict)
    # A replace sent without an answer: whether it happened is read back after the restart.
    unsure_replace: dict[str, str] = field(default_factory=dict)
    active: str | None = None
    counter: int = 0
    stats: dict[str, int] = field(
        default_factory=lambda: {"kills": 0, "at_start_up": 0, "before_the_answer": 0, "after_the_answer": 0}
    )

    def token(self, kind: str) -> str:
        self.counter += 1
        # Fixed width and closed, so one token is never a substring of another.
        return f"<{self.session[:6]}-{kind}-{self.counter:05d}>"


def effective_notes(plan: Plan) -> str:
    """The Notes the next read-back would keep: an open plan's file wins over the database."""
    if plan.status in OPEN:
        text = planfiles.read_plan(plan.session_id, plan.id)
        if text is not None:
            sections = planfiles.parse(text).sections
            if "notes" in sections:
                return sections["notes"]
    return plan.notes


def check_nothing_lost(ledger: Ledger) -> None:
    rows = {p.id: p for p in Plan.objects.filter(session_id=ledger.session)}
    missing = ledger.plans - set(rows)
    assert not missing, f"acknowledged plans lost: {sorted(missing)}"
    for plan_id, outcome in ledger.outcomes.items():
        assert (rows[plan_id].status, rows[plan_id].outcome) == ("completed", outcome), plan_id
    for plan_id, outcome in ledger.sent_outcomes.items():
        plan = rows.get(plan_id)
        if plan is not None and plan.status == Plan.Status.COMPLETED:
            assert plan.outcome == outcome, plan_id
    for plan_id, token in list(ledger.unsure_replace.items()):
        if token in effective_notes(rows[plan_id]):
            ledger.notes[plan_id] = [token]
        del ledger.unsure_replace[plan_id]
    for plan_id, tokens in ledger.notes.items():
        notes = effective_notes(rows[plan_id])
        lost = [t for t in tokens if t not in notes]
        assert not lost, f"plan {plan_id} ({rows[plan_id].status}) lost acknowledged notes {lost}: {notes!r}"


class Lane:
    def __init__(self, index: int, seed: int, session: str, env: dict[str, str], log: Path, kills: int):
        self.rng = random.Random(f"{seed}:{index}")
        self.ledger = Ledger(session)
        self.env = env
        self.log = log
        self.kills = kills
        self.error: BaseException | None = None

    # --- operations ---------------------------------------------------------------------

    def choose(self, *, last: bool = False) -> str:
        if self.ledger.active is None:
            kinds = {"add": 3, "add_batch": 2, "pull": 6, "note": 1, "complete": 1, "defer": 1}
        else:
            kinds = {
                "add": 1,
                "add_batch": 1,
                "pull": 1,
                "note": 4,
                "replace": 1,
                "edit": 2,
                "defer": 2,
                "complete": 3,
                "discard": 1,
            }
        if last:
            # The call the kill lands on: mostly ones that write files and rows, whose
            # windows between the two are what the repair is for.
            kinds.update(add_batch=4, pull=1 if self.ledger.active else 3)
            kinds.pop("edit", None)
        names = list(kinds)
        return self.rng.choices(names, weights=[kinds[n] for n in names])[0]

    def request(self, kind: str) -> tuple[str, dict, dict]:
        """The tool call for ``kind`` and what it is about (for the ledger)."""
        ledger = self.ledger
        plan = {"context": "kill test", "approach": "a", "success_criteria": "s"}
        about = {"kind": kind, "plan": ledger.active}
        if kind == "add":
            args = {**plan, "goal": ledger.token("goal"), "position": self.rng.choice(["front", "back"])}
            return "9plan_queue_add", args, about
        if kind == "add_batch":
            batch = [{**plan, "goal": ledger.token("goal")} for _ in range(self.rng.randint(2, 4))]
            return "9plan_queue_add_batch", {"plans": batch, "position": self.rng.choice(["front", "back"])}, about
        if kind == "pull":
            return "9plan_queue_pull", {}, about
        if kind in ("note", "replace"):
            about["token"] = ledger.token("note")
            return "9plan_plan_note", {"text": about["token"], "mode": "append" if kind == "note" else "replace"}, about
        if kind == "defer":
            about["token"] = ledger.token("reason")
            return "9plan_plan_defer", {"reason": about["token"], "position": self.rng.choice(["front", "back"])}, about
        if kind == "complete":
            about["token"] = ledger.token("outcome")
            if ledger.active is not None:
                ledger.sent_outcomes[ledger.active] = about["token"]
            return "9plan_plan_complete", {"outcome": about["token"]}, about
        assert kind == "discard"
        return "9plan_plan_discard", {"reason": ledger.token("discard")}, about

    def acknowledged(self, about: dict, result: dict) -> None:
        ledger = self.ledger
        if result["isError"]:
            category = result["structuredContent"]["error"]
            assert category in EXPECTED_REFUSALS, result_text(result)
            return
        data = result["structuredContent"]
        kind, plan_id = about["kind"], about["plan"]
        if kind == "add":
            ledger.plans.add(data["plan_id"])
        elif kind == "add_batch":
            ledger.plans.update(p["plan_id"] for p in data["plans"])
        elif kind == "pull":
            ledger.active = data["plan_id"]
        elif kind == "note":
            ledger.notes.setdefault(plan_id, []).append(about["token"])
        elif kind == "replace":
            ledger.notes[plan_id] = [about["token"]]
        elif kind == "defer":
            ledger.notes.setdefault(plan_id, []).append(about["token"])
            ledger.active = None
        elif kind == "complete":
            ledger.outcomes[plan_id] = about["token"]
            ledger.active = None
        elif kind == "discard":
            ledger.active = None

    def edit_file(self) -> None:
        """The agent writes into its plan file's Notes (the last section) with an editor."""
        ledger = self.ledger
        path = planfiles.plan_path(ledger.session, ledger.active)
        text = planfiles.read_plan(ledger.session, ledger.active)
        if text is None:
            return
        token = ledger.token("edit")
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text.rstrip("\n") + f"\n\n{token}\n")
        ledger.notes.setdefault(ledger.active, []).append(token)

    # --- one process's life ---------------------------------------------------------------

    def restart_and_check(self, server: StdioServer) -> None:
        server.initialize()
        result = server.call("9plan_admin_validate", {"session_name": self.ledger.session})
        data = result["structuredContent"]
        assert not result["isError"] and data["valid"], result_text(result)
        check_nothing_lost(self.ledger)
        resumed = server.call("9plan_session_resume", {"session_name": self.ledger.session})
        active = resumed["structuredContent"]["active_plan"]
        self.ledger.active = active["id"] if active else None

    def life(self) -> None:
        rng, ledger = self.rng, self.ledger
        server = StdioServer(self.env, self.log)
        try:
            if rng.random() < 0.12:
                # Killed while importing, migrating or running the start-up repair.
                time.sleep(rng.uniform(0.0, 1.5))
                ledger.stats["at_start_up"] += 1
                return
            self.restart_and_check(server)
            for _ in range(rng.randint(0, 6)):
                kind = self.choose()
                if kind == "edit":
                    self.edit_file()
                    continue
                tool, args, about = self.request(kind)
                self.acknowledged(about, server.call(tool, args))
            kind = self.choose(last=True)
            tool, args, about = self.request(kind)
            request_id = server.start_call(tool, args)
            # A call takes ~5 ms on an idle machine and tens of ms on a busy one: the spread
            # lands kills before, inside and after the call on either.
            time.sleep(rng.choice([0.0, rng.uniform(0, 0.01), rng.uniform(0, 0.04), rng.uniform(0, 0.08)]))
        finally:
            server.kill()
            ledger.stats["kills"] += 1
        answer = server.answers.get(request_id)
        if answer is not None:
            ledger.stats["after_the_answer"] += 1
            self.acknowledged(about, answer["result"])
            return
        ledger.stats["before_the_answer"] += 1
        # No answer: it may or may not have happened; the next check reads which.
        if kind == "replace" and about["plan"] is not None:
            ledger.unsure_replace[about["plan"]] = about["token"]
        if kind in ("pull", "defer", "complete", "discard"):
            ledger.active = None  # learnt again from session_resume after the restart

    def run(self) -> None:
        try:
            while self.ledger.stats["kills"] < self.kills:
                self.life()
            # The state the last kill left must be repaired by a fresh start, too.
            server = StdioServer(self.env, self.log)
            try:
                self.restart_and_check(server)
            finally:
                server.close()
        except BaseException as exc:  # reported by the test's thread
            self.error = exc
        finally:
            connection.close()


def test_sigkill_at_random_moments_loses_nothing_and_the_next_start_repairs(subprocess_env, sessions_dir, tmp_path):
    seed = int(os.environ.get("NINEPLAN_KILL_SEED") or random.SystemRandom().randrange(2**32))
    print(f"NINEPLAN_KILL_SEED={seed}")
    sessions = [services.session_create(task_description=f"kill lane {i}").name for i in range(LANES)]
    per_lane = -(-KILLS // LANES)
    lanes = [Lane(i, seed, sessions[i], subprocess_env, tmp_path / f"lane{i}.stderr", per_lane) for i in range(LANES)]
    threads = [threading.Thread(target=lane.run, name=f"kill-lane-{i}") for i, lane in enumerate(lanes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for lane in lanes:
        if lane.error is not None:
            raise AssertionError(f"lane on {lane.ledger.session} failed (NINEPLAN_KILL_SEED={seed})") from lane.error

    assert sum(lane.ledger.stats["kills"] for lane in lanes) >= KILLS
    for lane in lanes:
        ledger = lane.ledger
        # The work really happened: plans were added, completed and noted across the kills.
        assert ledger.plans and ledger.outcomes and ledger.notes, ledger
        details = Event.objects.filter(session_id=ledger.session, kind="repaired").values_list("detail", flat=True)
        repairs = Counter(detail["action"] for detail in details)
        print(
            f"{ledger.session}: {len(ledger.plans)} plans, {len(ledger.outcomes)} completed, "
            f"{sum(map(len, ledger.notes.values()))} notes kept, {ledger.stats}, repairs {dict(repairs)}"
        )
