"""The write kit the services share (services/write_kit.py): how an appended fragment joins
the Notes already stored; the session row a write reads, the queue's ends, an event."""

from __future__ import annotations

import pytest
from django.db import transaction

from sessions_app import services
from sessions_app.models import Event, Plan
from sessions_app.services import compose_append
from tests.conftest import plan_fields


@pytest.mark.parametrize(
    "stored, fragment, expected",
    [
        # S'.rstrip() + "\n\n" + F'
        ("previous", "next", "previous\n\nnext"),
        # trailing whitespace of S goes, Unicode whitespace included
        ("previous \t\n\n\u00a0\u3000", "next", "previous\n\nnext"),
        # leading whitespace-only lines of F go; the first real line keeps its indent
        ("previous", " \n\t\n\r\n    indented code\nnext", "previous\n\n    indented code\nnext"),
        ("previous", "\u00a0\u3000\n## Heading", "previous\n\n## Heading"),
        ("previous", "\u00a0 - item", "previous\n\n\u00a0 - item"),
        # trailing characters of F are kept exactly
        ("previous", "ends without newline", "previous\n\nends without newline"),
        ("previous", "ends with blank lines\n\n\n", "previous\n\nends with blank lines\n\n\n"),
        ("previous", "trailing spaces   ", "previous\n\ntrailing spaces   "),
        # interior of both bodies untouched
        ("a  \n\n\n  b", "c\n\n\n   d\r\ne", "a  \n\n\n  b\n\nc\n\n\n   d\r\ne"),
        ("crlf\r\n", "\r\nx", "crlf\n\nx"),
        # a line ends at "\n" only: NEL and U+2028 are text on the first real line
        ("previous", "\u2028x", "previous\n\n\u2028x"),
        ("previous", "\x85x\u2028y", "previous\n\n\x85x\u2028y"),
        # an empty S' gives F'
        ("", "first", "first"),
        (" \n\t\u00a0", "\n  first", "  first"),
    ],
)
def test_compose_append(stored, fragment, expected):
    assert compose_append(stored, fragment) == expected


# --- the session row, the queue's ends, the events -------------------------------------------


@pytest.mark.django_db
def test_the_session_row_comes_back_with_its_counts_and_a_missing_one_as_none(session):
    from sessions_app.services import write_kit

    queued(session, "A", "B")
    with transaction.atomic():
        row = write_kit.session_row(session.name).first()
        assert (row.name, row.count_queued, row.lease_seconds) == (session.name, 2, session.lease_seconds)
        assert write_kit.session_row("no-such-session").first() is None


@pytest.mark.django_db
def test_a_plan_goes_at_either_end_of_the_queue_and_the_first_of_an_empty_queue_at_zero(session):
    from sessions_app.services import write_kit

    assert write_kit.next_sort_key(session, "front") == write_kit.next_sort_key(session, "back") == 0
    a, b, c = queued(session, "A", "B", "C")
    keys = dict(Plan.objects.filter(session=session).values_list("id", "sort_key"))
    assert write_kit.next_sort_key(session, "front") == keys[a.id] - 1
    assert write_kit.next_sort_key(session, "back") == keys[c.id] + 1


@pytest.mark.django_db
def test_an_event_is_written_as_given(session):
    from sessions_app.services import write_kit

    plan = queued(session, "A")[0]
    with transaction.atomic():
        write_kit.record_event(session.name, Event.Kind.REPAIRED, "test", plan.id, why="checked")
    event = Event.objects.filter(session=session, kind=Event.Kind.REPAIRED).get()
    assert (event.plan_id, event.actor, event.detail) == (plan.id, "test", {"why": "checked"})


def queued(session, *goals: str) -> list[Plan]:
    return [services.plan_enqueue(session_name=session.name, **plan_fields(goal=goal)).plan for goal in goals]
