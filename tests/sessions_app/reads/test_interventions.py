"""What others did to an agent's plans (sessions_app/reads/interventions.py): the read every
write of a worker's plan makes, of what people did since that worker last wrote."""

from __future__ import annotations

import pytest

from sessions_app import services
from sessions_app.models import Event
from sessions_app.reads import interventions


def restore(session, plan_id: str, *, actor: str = "user:sam") -> None:
    services.plan_restore(session_name=session.name, plan_id=plan_id, number=1, actor=actor)


def person_event(session, plan_id: str, actor: str) -> None:
    """A restore as the event log holds it, by ``actor`` (no service writes one by an agent)."""
    Event.objects.create(session_id=session.name, plan_id=plan_id, kind="plan_restored", actor=actor,
                         detail={"revision": 1})  # fmt: skip


@pytest.mark.django_db
def test_a_restore_after_the_workers_last_write_is_told_and_one_before_it_is_not(session, active):
    services.plan_note(session_name=session.name, text="First findings")
    restore(session, active.id)
    services.plan_note(session_name=session.name, text="Second findings")  # told of the first restore
    assert interventions.since_worker_wrote(active.id, "agent") == []

    restore(session, active.id)

    told = interventions.since_worker_wrote(active.id, "agent")
    assert [(t.kind, t.actor, t.plan_id, t.reason) for t in told] == [
        ("plan_restored", "user:sam", active.id, "revision 1")
    ]


@pytest.mark.django_db
def test_only_what_people_did_counts_never_an_agents_own_events(session, active):
    for actor in ("agent", "agent:sam/ci", "agent/w2"):
        person_event(session, active.id, actor)
    person_event(session, active.id, "Agent:not-an-agent")  # the match is on the exact prefix, in any case

    told = interventions.since_worker_wrote(active.id, "agent/w1")

    assert [t.actor for t in told] == ["Agent:not-an-agent"]


@pytest.mark.django_db
def test_the_oldest_first_and_at_most_a_few(session, active):
    for n in range(interventions.INTERVENTIONS_SHOWN + 2):
        person_event(session, active.id, f"user:r{n}")

    told = interventions.since_worker_wrote(active.id, "agent")

    assert [t.actor for t in told] == [f"user:r{n}" for n in range(interventions.INTERVENTIONS_SHOWN)]


@pytest.mark.django_db
def test_another_plans_restores_are_not_this_ones(session, make_plan, active):
    other = make_plan(session)
    person_event(session, other.id, "user:sam")

    assert interventions.since_worker_wrote(active.id, "agent") == []
