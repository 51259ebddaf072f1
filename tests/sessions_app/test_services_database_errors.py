"""A write the database refuses becomes a clear DATABASE_ERROR, with everything the
transaction had written rolled back (sessions_app.transactions.write)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from sessions_app import access, errors, services, transactions
from sessions_app.services import writing
from sessions_app.errors import DatabaseFailed
from sessions_app.models import Event, Session


@pytest.mark.django_db(transaction=True)
def test_a_broken_database_rule_is_reported_and_rolled_back(session):
    events = Event.objects.count()
    with pytest.raises(DatabaseFailed) as info:
        with transactions.write():
            writing.record_event(session.name, Event.Kind.REPAIRED, "test")
            Session.objects.create(name=session.name)  # the primary key exists
    error = info.value
    assert error.category == "DATABASE_ERROR"
    assert error.message.startswith("The change would break a rule of the database and was rolled back (")
    assert "\n" not in error.message
    assert "nothing of it was saved" in error.message and error.reason == errors.BROKE_A_RULE
    assert Event.objects.count() == events


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_deadlock_is_reported_as_a_collision_that_is_safe_to_retry():
    first, second = services.session_create(), services.session_create()
    both_locked_one = threading.Barrier(2, timeout=60)
    outcomes: dict[str, object] = {}

    def writer(label: str, one: str, other: str) -> None:
        try:
            # A thread of its own starts with no caller: it is the local user.
            with access.acting_as(access.LOCAL), transactions.write():
                writing.lock_session(one, access.MANAGE)
                both_locked_one.wait()
                # Each now waits for the row the other holds: PostgreSQL breaks the cycle
                # by failing one of the two transactions.
                writing.lock_session(other, access.MANAGE)
            outcomes[label] = "ok"
        except DatabaseFailed as exc:
            outcomes[label] = exc
        finally:
            connection.close()

    threads = [
        threading.Thread(target=writer, args=("a", first.name, second.name)),
        threading.Thread(target=writer, args=("b", second.name, first.name)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(map(str, outcomes)) == ["a", "b"]
    failed = [v for v in outcomes.values() if isinstance(v, DatabaseFailed)]
    assert len(failed) == 1, outcomes
    assert failed[0].message.startswith("The change collided with a concurrent change to the same session")
    assert failed[0].reason == errors.COLLIDED and "nothing of it was saved" in failed[0].message
