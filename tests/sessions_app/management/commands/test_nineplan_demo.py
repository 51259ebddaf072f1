"""`nineplan_demo`: a realistic, valid demo session, what it says it made, and a home with
something in every panel."""

from __future__ import annotations

import io
import json
import subprocess
from datetime import timedelta

import pytest
from django.core.management import call_command

from sessions_app.maintenance import invariants
from sessions_app.management.commands.nineplan_demo import PARALLEL_TASK, TASK
from sessions_app.models import Event, Plan, Session
from sessions_app.reads import needs_you, queries
from tests.conftest import MANAGE, PYTHON

pytestmark = pytest.mark.django_db


def test_demo_builds_a_realistic_valid_session(sessions_dir):
    out = io.StringIO()
    call_command("nineplan_demo", verbosity=2, stdout=out)
    session = Session.objects.get(task_description=TASK)
    text = out.getvalue()
    assert f"Created demo session {session.name}" in text
    counts = dict.fromkeys(("queued", "active", "completed", "discarded"), 0)
    for status in Plan.objects.filter(session=session).values_list("status", flat=True):
        counts[status] += 1
    assert counts == {"queued": 3, "active": 1, "completed": 5, "discarded": 2}
    assert all(Plan.objects.filter(status="completed").values_list("outcome", flat=True))
    for plan in Plan.objects.filter(session=session):
        assert plan.id in text
        assert (sessions_dir / session.name / "plans" / f"{plan.id}.txt").exists() == plan.is_open
    assert invariants.check_invariants(session.name).valid
    assert invariants.check_invariants(Session.objects.exclude(name=session.name).get().name).valid
    actors = set(Event.objects.filter(session=session).values_list("actor", flat=True))
    assert actors == {"agent", "user:demo-staff"}
    times = list(Event.objects.filter(session=session).order_by("id").values_list("created_at", flat=True))
    # One moment a service call: a batch's plans are added at the same moment.
    assert times == sorted(times) and len(set(times)) > 20
    assert (times[-1] - times[0]).total_seconds() > 3 * 3600
    assert session.created_at == times[0]
    assert queries.history_search("webhook", session_name=session.name)[0].plan.goal.startswith(
        "Port the payment webhook"
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_demo_says_what_it_made_in_two_lines_and_logs_only_when_asked(subprocess_env):
    def demo(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [PYTHON, MANAGE, "nineplan_demo", *args], env=subprocess_env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done

    plain = demo()
    first = Session.objects.get(task_description=TASK)
    parallel = Session.objects.get(task_description=PARALLEL_TASK)
    assert plain.stdout.splitlines() == [
        (
            f"Created demo session {first.name}: 3 queued, 1 active, 5 completed, 2 discarded; "
            f"{Event.objects.filter(session=first).count()} events over 6 hours."
        ),
        f"Admin page: /admin/sessions_app/session/{first.name}/change/",
        f"Board: /admin/sessions_app/session/{first.name}/board/",
        (
            f"Created demo session {parallel.name}: 3 queued, 2 active, 1 completed, 0 discarded, 1 in review, 1 held; "
            f"{Event.objects.filter(session=parallel).count()} events over 6 hours."
        ),
        f"Admin page: /admin/sessions_app/session/{parallel.name}/change/",
        f"Board: /admin/sessions_app/session/{parallel.name}/board/",
    ]
    assert plain.stderr == ""

    verbose = demo("-v", "2")
    second = Session.objects.exclude(name__in=[first.name, parallel.name]).get(task_description=TASK)
    assert f"Created demo session {second.name}" in verbose.stdout
    assert all(plan.id in verbose.stdout for plan in Plan.objects.filter(session=second))
    logged = [json.loads(line) for line in verbose.stderr.splitlines()]
    assert {"level": "info", "msg": "session created", "session": second.name}.items() <= logged[0].items()
    assert all(entry["level"] == "info" for entry in logged) and len(logged) > 10


def test_after_the_demo_every_panel_of_the_home_has_something(sessions_dir):
    call_command("nineplan_demo", stdout=io.StringIO())
    home = needs_you.home()
    panels = {
        "in review": home.in_review,
        "held": home.held,
        "waiting": home.waiting,
        "late writes and lost leases": home.trouble,
        "blocked behind a person": home.blocked,
        "sessions with workers": home.busy,
    }
    assert {name: len(rows) >= 1 for name, rows in panels.items()} == dict.fromkeys(panels, True)
    assert {t.event.kind for t in home.trouble} == {"late_write_kept", "plan_reclaimed"}
    assert max(len(b.plans) for b in home.busy) == 2  # several workers in one session
    assert home.blocked[0].blocker_id == home.held[0].id
    assert home.counts == needs_you.Counts(in_review=1, held=1, waiting=1)


def test_the_demo_story_holds_together_in_time(sessions_dir, monkeypatch):
    # Every time the demo writes comes from one clock moving through its story: claims come
    # after their plans were added, rejections each at their own moment with their revision,
    # the plans still held have live leases, and nothing is stamped in the future.
    from django.utils import timezone

    from sessions_app.management.commands import nineplan_demo as demo

    stories = []
    real = demo.Story.__init__

    def kept(self, *args, **kwargs):
        real(self, *args, **kwargs)
        stories.append(self)

    monkeypatch.setattr(demo.Story, "__init__", kept)
    call_command("nineplan_demo", stdout=io.StringIO())
    now = timezone.now()
    # Each story used exactly the steps its span was shared out between.
    assert [s.steps for s in stories] == [demo.FIRST_STEPS, demo.PARALLEL_STEPS]
    for session in Session.objects.all():
        events = list(Event.objects.filter(session=session).order_by("id"))
        assert [e.created_at for e in events] == sorted(e.created_at for e in events)
        assert events[-1].created_at <= now and now - events[-1].created_at < timedelta(minutes=10)
        for plan in Plan.objects.filter(session=session):
            assert plan.created_at <= plan.updated_at <= now, plan.id
            if plan.claimed_at:
                assert plan.created_at <= plan.claimed_at <= now, plan.id
            if plan.status == Plan.Status.ACTIVE:
                assert plan.lease_expires_at > now, plan.id
    rejections = Event.objects.filter(kind=Event.Kind.PLAN_REJECTED).order_by("id")
    stamps = [e.created_at for e in rejections]
    assert len(stamps) >= 2 and len(set(stamps)) == len(stamps)
    for rejection in rejections:
        # The reviewer's notes are appended to Notes stamped with the same moment.
        assert rejection.created_at.strftime("%Y-%m-%d %H:%M:%S") in Plan.objects.get(id=rejection.plan_id).notes
