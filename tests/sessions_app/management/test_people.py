"""The commands a person looks at and puts in work with (`9plan ls`, `show`, `ready`, `add`,
`search`, `approve`, `reject`), run as `python -m nineplan.cli` processes on the test's
database: their tables and --json documents, a reader's writes refused with nothing
changed, and bad input refused in one line naming the field."""

from __future__ import annotations

import json
import subprocess

import pytest
from django.contrib.auth import get_user_model

from sessions_app import services
from sessions_app.models import Event, Plan, Revision, Role
from tests.conftest import PYTHON, REPO, plan_fields

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def nineplan(subprocess_env):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [PYTHON, "-m", "nineplan.cli", *args],
            env={**subprocess_env, "NINEPLAN_LOG_LEVEL": "warn"},
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


@pytest.fixture
def team(db):
    """The superuser of the README's first step, and a reader and an agent of the default project."""
    get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    services.project_grant(project="default", username="rita", role=Role.READER)
    services.project_grant(project="default", username="alex", role=Role.AGENT)
    services.project_grant(project="default", username="rev", role=Role.REVIEWER)


def as_json(done: subprocess.CompletedProcess):
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def one_line_refusal(done: subprocess.CompletedProcess, command: str, *words: str) -> str:
    assert done.returncode != 0 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"9plan {command}: "), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def test_ls_show_and_ready_tell_a_session_as_it_is(team, session, nineplan):
    first = services.plan_enqueue(session_name=session.name, **plan_fields(goal="Model invoices")).plan
    waiting = services.plan_enqueue_many(
        session_name=session.name, plans=[{**plan_fields(goal="Bill customers"), "depends_on": [first.id]}]
    )[0].plan
    third = services.plan_enqueue(session_name=session.name, **plan_fields(goal="Send reminders")).plan
    services.plan_pull(session_name=session.name, worker="w1")  # takes the first

    listed = as_json(nineplan("ls", "--json"))
    assert listed["count"] == 1
    assert listed["sessions"][0] | {"created_at": None} == {
        "name": session.name,
        "project": "default",
        "task_description": "Port billing to Django",
        "queued": 2,
        "has_active_plan": True,
        "completed": 0,
        "discarded": 0,
        "review": "none",
        "created_at": None,
    }
    table = nineplan("ls")
    assert table.returncode == 0 and table.stdout.splitlines()[0].split()[:3] == ["SESSION", "PROJECT", "QUEUED"]
    assert session.name in table.stdout

    shown = as_json(nineplan("show", session.name, "--json"))
    assert [(q["id"], q["state"], q["waits_for"]) for q in shown["queue"]] == [
        (waiting.id, "blocked", [f"{first.id} (active)"]),
        (third.id, "ready", []),
    ]
    assert [(a["id"], a["worker"]) for a in shown["active"]] == [(first.id, "w1")]
    assert shown["active"][0]["lease_expires_at"]
    text = nineplan("show", session.name).stdout
    assert "Queue (2):" in text and "blocked" in text and "Active (1):" in text and "w1" in text

    ready = as_json(nineplan("ready", "--json"))
    assert [p["id"] for p in ready["plans"]] == [third.id]
    assert as_json(nineplan("ready", session.name, "--json"))["count"] == 1


def test_show_plan_gives_its_text_outcome_and_events(team, session, make_plan, nineplan):
    plan = make_plan(session)
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="Invoices modelled in models.py")
    shown = as_json(nineplan("show", plan.id, "--json"))
    assert shown["plan"]["status"] == "completed" and shown["plan"]["goal"] == "Model invoices"
    assert shown["plan"]["outcome"] == "Invoices modelled in models.py"
    assert [e["kind"] for e in shown["events"]] == ["plan_created", "plan_pulled", "plan_completed"]
    text = nineplan("show", plan.id).stdout
    assert "# Outcome\nInvoices modelled in models.py" in text and "plan_completed" in text

    found = as_json(nineplan("search", "invoices", "--json"))
    assert [(h["session"], h["id"]) for h in found["results"]] == [(session.name, plan.id)]


def test_add_puts_plans_in_as_the_named_user(team, session, make_plan, nineplan, tmp_path):
    earlier = make_plan(session)
    added = as_json(
        nineplan(
            "add", session.name, "--goal", "Write the API", "--front", "--review", "--depends-on", earlier.id, "--json"
        )
    )
    new = Plan.objects.get(id=added["plans"][0]["id"])
    assert added["plans"][0]["queue_position"] == 1 and new.goal == "Write the API" and new.review
    assert list(new.dependency_links.values_list("depends_on_id", flat=True)) == [earlier.id]
    assert Event.objects.get(plan=new, kind=Event.Kind.PLAN_CREATED).actor == "user:root"

    plan_file = tmp_path / "plan.txt"
    plan_file.write_text(
        "# Context\nBilling\n\n# Goal\nSend invoices by mail\n\n# Approach\n1. SMTP\n\n# Success Criteria\nA mail arrives\n",
        encoding="utf-8",
    )
    from_file = as_json(nineplan("add", session.name, "--file", str(plan_file), "--as", "alex", "--json"))
    kept = Plan.objects.get(id=from_file["plans"][0]["id"])
    assert (kept.context, kept.goal, kept.success_criteria) == ("Billing", "Send invoices by mail", "A mail arrives")
    assert Event.objects.get(plan=kept, kind=Event.Kind.PLAN_CREATED).actor == "user:alex"
    assert Revision.objects.filter(plan=kept).count() == 1


def test_a_readers_add_and_approve_are_refused_and_change_nothing(team, session, make_plan, nineplan):
    plan = make_plan(session, review=True)
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="Done")
    before = (Plan.objects.count(), Event.objects.count(), Revision.objects.count())

    refused = nineplan("add", session.name, "--goal", "Sneak in", "--as", "rita")
    one_line_refusal(refused, "add", "'agent' or 'manager' role", "Nothing was changed")
    refused = nineplan("approve", plan.id, "--as", "rita")
    one_line_refusal(refused, "approve", "'reviewer' role")
    assert (Plan.objects.count(), Event.objects.count(), Revision.objects.count()) == before
    assert Plan.objects.get(id=plan.id).status == Plan.Status.IN_REVIEW
    # The reader sees the session all the same.
    assert as_json(nineplan("ls", "--as", "rita", "--json"))["count"] == 1


def test_approve_and_reject_decide_a_plan_in_review(team, session, make_plan, nineplan):
    first, second = make_plan(session, review=True), make_plan(session, review=True)
    for _ in (first, second):
        services.plan_pull(session_name=session.name)
        services.plan_complete(session_name=session.name, outcome="Done")
    approved = as_json(nineplan("approve", first.id, "--note", "Looks right", "--as", "rev", "--json"))
    assert approved["status"] == "completed" and Plan.objects.get(id=first.id).status == Plan.Status.COMPLETED
    rejected = nineplan("reject", second.id, "--note", "Tests missing")
    assert rejected.returncode == 0 and "rejected: queued at 1" in rejected.stdout
    back = Plan.objects.get(id=second.id)
    assert back.status == Plan.Status.QUEUED and "Tests missing" in back.notes


@pytest.mark.parametrize(
    ("args", "command", "words"),
    [
        (["add", "calm-blue-heron"], "add", ["--goal is required"]),
        (["add", "Not-A-Name", "--goal", "x"], "add", ["session", "not a session name"]),
        (["show", "what?"], "show", ["NAME|PLAN_ID", "is neither a session's name"]),
        (["reject", "k3x9q"], "reject", ["PLAN_ID", "No plan k3x9q"]),
        (["search", "x", "--limit", "0"], "search", ["--limit must be from 1 to 50"]),
        (["ls", "--as", "nobody"], "ls", ["--as: no active user named 'nobody'"]),
        (["ready", "calm-blue-heron"], "ready", ["No session named 'calm-blue-heron'"]),
    ],
)
def test_bad_input_gets_one_line_naming_the_field_and_a_non_zero_exit(team, nineplan, args, command, words):
    before = (Plan.objects.count(), Event.objects.count())
    one_line_refusal(nineplan(*args), command, *words)
    assert (Plan.objects.count(), Event.objects.count()) == before
