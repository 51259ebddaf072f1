"""Which events are of which webhook type (sessions_app/webhooks/event_types.py)."""

from __future__ import annotations

import pytest

from sessions_app.models import Event
from sessions_app.webhooks import event_types as types


@pytest.mark.parametrize(
    ("kind", "detail", "expected"),
    [
        (Event.Kind.PLAN_SUBMITTED, {}, (types.PLAN_IN_REVIEW,)),
        (Event.Kind.PLAN_HELD, {}, (types.PLAN_HELD, types.QUEUE_EMPTIED)),
        (Event.Kind.PLAN_APPROVED, {}, (types.QUEUE_EMPTIED,)),
        (Event.Kind.PLAN_REJECTED, {}, ()),
        (Event.Kind.PLAN_RECLAIMED, {}, (types.LEASE_LOST,)),
        (
            Event.Kind.PLAN_RECLAIMED,
            {"waiting_for_person": True},
            (types.LEASE_LOST, types.PLAN_WAITING_FOR_PERSON, types.QUEUE_EMPTIED),
        ),
        (Event.Kind.LATE_WRITE_KEPT, {}, (types.LATE_WRITE_KEPT,)),
        (Event.Kind.PLAN_COMPLETED, {}, (types.QUEUE_EMPTIED,)),
        (Event.Kind.PLAN_DISCARDED, {}, (types.QUEUE_EMPTIED,)),
        (Event.Kind.PLAN_NOTE, {}, ()),
        (Event.Kind.PLAN_PULLED, {"waiting_for_person": True}, ()),
    ],
)
def test_an_event_is_of_the_types_its_kind_and_detail_say(kind, detail, expected):
    assert types.types_of(kind, detail) == expected


def test_every_type_an_event_can_be_of_is_described_and_all_is_none_of_them():
    made = {
        t for kind in Event.Kind.values for d in ({}, {"waiting_for_person": True}) for t in types.types_of(kind, d)
    }
    assert made == set(types.TYPES)
    assert types.ALL not in types.TYPES
