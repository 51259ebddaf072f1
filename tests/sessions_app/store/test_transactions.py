"""Write transactions (sessions_app/store/transactions.py): a write the database refuses becomes a
clear DATABASE_ERROR with everything the transaction had written rolled back, and writers of
one SQLite file take turns (``writer_turn``) that only an outermost write takes."""

from __future__ import annotations

import fcntl
import os
import threading

import pytest
from django.db import connection

from sessions_app import access, errors, services
from sessions_app.errors import DatabaseFailed, ValidationFailed
from sessions_app.models import Event, Session
from sessions_app.services import write_kit
from sessions_app.store import transactions


@pytest.mark.django_db(transaction=True)
def test_a_broken_database_rule_is_reported_and_rolled_back(session):
    events = Event.objects.count()
    with pytest.raises(DatabaseFailed) as info:
        with transactions.write():
            write_kit.record_event(session.name, Event.Kind.REPAIRED, "test")
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
                write_kit.lock_session(one, access.MANAGE)
                both_locked_one.wait()
                # Each now waits for the row the other holds: PostgreSQL breaks the cycle
                # by failing one of the two transactions.
                write_kit.lock_session(other, access.MANAGE)
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


# --- writer turns -------------------------------------------------------------------------

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="writer turns are SQLite's")


def turn_is_free() -> bool:
    """Whether another open file could take the turn now (an flock belongs to its open file)."""
    fd = os.open(f"{connection.settings_dict['NAME']}-writers.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing drops a lock this probe took
    return True


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_write_holds_the_turn_of_its_database_file_until_it_ends(session):
    with transactions.write():
        assert not turn_is_free()
        write_kit.record_event(session.name, Event.Kind.REPAIRED, "test")
    assert turn_is_free()
    assert Event.objects.filter(session=session, kind=Event.Kind.REPAIRED).count() == 1


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_write_inside_a_write_takes_no_turn_of_its_own(session):
    with transactions.write():
        with transactions.write():  # waiting for its own turn here would never end
            write_kit.record_event(session.name, Event.Kind.REPAIRED, "inner")
        assert not turn_is_free()  # still the outer write's
    assert turn_is_free()
    assert list(Event.objects.filter(kind=Event.Kind.REPAIRED).values_list("actor", flat=True)) == ["inner"]


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_refused_write_gives_the_turn_back_and_leaves_nothing(session):
    events = Event.objects.count()
    with pytest.raises(ValidationFailed):
        with transactions.write():
            write_kit.record_event(session.name, Event.Kind.REPAIRED, "test")
            raise ValidationFailed("refused", field="text")
    assert turn_is_free()
    assert Event.objects.count() == events


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_second_writer_waits_for_the_first_to_end(session):
    order: list[str] = []
    holding = threading.Event()

    def second() -> None:
        try:
            holding.wait(timeout=60)
            with access.acting_as(access.LOCAL), transactions.write():
                order.append("second in")
        finally:
            connection.close()

    thread = threading.Thread(target=second)
    thread.start()
    with transactions.write():
        holding.set()
        thread.join(timeout=0.2)  # gives the second writer time to queue behind this one
        order.append("first out")
    thread.join(timeout=60)
    assert order == ["first out", "second in"]


@pytest.mark.django_db
def test_inside_a_transaction_a_write_takes_no_turn(session):
    assert connection.in_atomic_block  # the test's own transaction is the outer one
    with transactions.write():
        if connection.vendor == "sqlite":
            assert turn_is_free()
        write_kit.record_event(session.name, Event.Kind.REPAIRED, "test")
    assert Event.objects.filter(session=session, kind=Event.Kind.REPAIRED).count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_on_postgresql_writers_take_no_turn_of_a_file(session, tmp_path, monkeypatch):
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)  # where a turn file named after the database would appear
    with transactions.write():
        write_kit.record_event(session.name, Event.Kind.REPAIRED, "test")
    assert list(here.iterdir()) == []
    assert Event.objects.filter(session=session, kind=Event.Kind.REPAIRED).count() == 1


# --- reads that belong together --------------------------------------------------------------
