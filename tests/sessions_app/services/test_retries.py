"""Retry-safe writes at the service layer (sessions_app/services/retries.py): a write named
with a request_id is applied once per caller, its answer kept for the retries."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sessions_app import access, services
from sessions_app.errors import NotPermitted, SessionNotFound, ValidationFailed
from sessions_app.models import Plan, WriteRequest
from sessions_app.services import retries
from tests.conftest import plan_fields


def add(session, goal: str):
    """A write as a tool hands it over: the write, its answer, and whether to keep it."""

    def write():
        plan = services.plan_enqueue(session_name=session.name, **plan_fields(goal=goal)).plan
        return {"plan_id": plan.id}, True

    return write


def call(goal: str) -> dict:
    return {"tool": "queue_add", "goal": goal}


@pytest.mark.django_db
def test_the_same_call_sent_again_gets_the_first_answer_and_changes_nothing(session):
    first = services.write_once(request_id="r-1", call=call("Model invoices"), write=add(session, "Model invoices"))
    again = services.write_once(request_id="r-1", call=call("Model invoices"), write=add(session, "Model invoices"))

    assert again == first
    assert list(Plan.objects.filter(session=session).values_list("goal", flat=True)) == ["Model invoices"]
    assert WriteRequest.objects.count() == 1


@pytest.mark.django_db
def test_the_same_id_with_another_call_is_refused_and_nothing_changes(session):
    services.write_once(request_id="r-1", call=call("Model invoices"), write=add(session, "Model invoices"))

    with pytest.raises(ValidationFailed) as refused:
        services.write_once(request_id="r-1", call=call("Model payments"), write=add(session, "Model payments"))

    assert refused.value.field == "request_id"
    assert Plan.objects.filter(session=session).count() == 1
    assert WriteRequest.objects.count() == 1


@pytest.mark.django_db
def test_a_refusal_is_not_kept_so_the_same_call_may_succeed_later(session):
    refused = services.write_once(request_id="r-1", call=call("x"), write=lambda: ({"error": "QUEUE_FULL"}, False))
    assert refused == {"error": "QUEUE_FULL"} and WriteRequest.objects.count() == 0

    answer = services.write_once(request_id="r-1", call=call("x"), write=add(session, "x"))

    assert answer == {"plan_id": Plan.objects.get(session=session).id}


@pytest.mark.django_db
def test_each_caller_has_ids_of_its_own(session):
    services.write_once(request_id="r-1", call=call("a"), write=add(session, "a"))
    with access.acting_as(access.Caller(label="agent:other/t", everything=True, claimant="t9")):
        services.write_once(request_id="r-1", call=call("b"), write=add(session, "b"))

    assert sorted(Plan.objects.filter(session=session).values_list("goal", flat=True)) == ["a", "b"]


@pytest.mark.django_db
def test_a_bad_request_id_is_refused_before_anything_is_written(session):
    with pytest.raises(ValidationFailed) as refused:
        services.write_once(request_id="no spaces", call=call("a"), write=add(session, "a"))
    assert refused.value.field == "request_id"
    assert Plan.objects.count() == 0 and WriteRequest.objects.count() == 0


@pytest.mark.django_db
def test_answers_older_than_they_are_kept_for_are_forgotten(session):
    services.write_once(request_id="old", call=call("a"), write=add(session, "a"))
    services.write_once(request_id="new", call=call("b"), write=add(session, "b"))
    old = WriteRequest.objects.get(request_id="old")
    WriteRequest.objects.filter(pk=old.pk).update(created_at=old.created_at - retries.KEPT_FOR - timedelta(seconds=1))

    assert services.forget_old_requests() == 1

    assert list(WriteRequest.objects.values_list("request_id", flat=True)) == ["new"]


def test_the_fingerprint_tells_calls_apart_and_holds_any_text():
    assert retries.fingerprint({"a": 1, "b": 2}) == retries.fingerprint({"b": 2, "a": 1})
    assert retries.fingerprint(call("x")) != retries.fingerprint(call("y"))
    assert len(retries.fingerprint(call("\ud800 lone surrogate"))) == 64


@pytest.mark.django_db
def test_a_replay_checks_the_callers_access_to_the_session_again(session):
    session.project_id = "acme"
    services.project_create(name="acme")
    session.save(update_fields=["project"])
    member = access.Caller(label="agent:ann/laptop", roles={"acme": "agent"}, claimant="token:7")
    reader = access.Caller(label="agent:ann/laptop", roles={"acme": "reader"}, claimant="token:7")
    removed = access.Caller(label="agent:ann/laptop", claimant="token:7")

    def named(answer: dict) -> str:
        return session.name

    with access.acting_as(member):
        first = services.write_once(request_id="r-1", call=call("a"), write=add(session, "a"), session_of=named)
        assert services.write_once(request_id="r-1", call=call("a"), write=add(session, "a"), session_of=named) == first
    with access.acting_as(reader), pytest.raises(NotPermitted):
        services.write_once(request_id="r-1", call=call("a"), write=add(session, "a"), session_of=named)
    with access.acting_as(removed), pytest.raises(SessionNotFound):
        services.write_once(request_id="r-1", call=call("a"), write=add(session, "a"), session_of=named)

    assert Plan.objects.filter(session=session).count() == 1 and WriteRequest.objects.count() == 1
