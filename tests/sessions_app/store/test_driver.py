"""9plan's statements on the driver's cursor (sessions_app/store/driver.py), on the real database:
the same rows as through Django's cursor, Django's errors, and Django's own cursor whenever
queries are recorded or wrapped, a transaction is broken, or the connection is due a check."""

from __future__ import annotations

import pytest
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from sessions_app.store import driver

pytestmark = pytest.mark.django_db

PROBE = "nineplan_driver_probe"


@pytest.fixture
def probe():
    with connection.cursor() as cur:
        cur.execute(f"CREATE TEMPORARY TABLE {PROBE} (id integer PRIMARY KEY, word varchar(20) NOT NULL)")
    yield
    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE {PROBE}")


def words() -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(f"SELECT id, word FROM {PROBE} ORDER BY id")
        return [tuple(row) for row in cur.fetchall()]


def test_rows_come_back_as_through_django_s_cursor(probe):
    assert driver.run_many(f"INSERT INTO {PROBE} (id, word) VALUES (%s, %s)", [(1, "one"), (2, "two"), (3, "three")]) == 3
    assert words() == [(1, "one"), (2, "two"), (3, "three")]
    assert [tuple(r) for r in driver.rows(f"SELECT id, word FROM {PROBE} WHERE id > %s ORDER BY id", [1])] == [
        (2, "two"),
        (3, "three"),
    ]
    assert tuple(driver.first(f"SELECT word FROM {PROBE} WHERE id = %s", [3])) == ("three",)
    assert driver.first(f"SELECT word FROM {PROBE} WHERE id = %s", [9]) is None
    assert driver.run(f"UPDATE {PROBE} SET word = %s WHERE id >= %s", ["many", 2]) == 2
    assert words() == [(1, "one"), (2, "many"), (3, "many")]


def test_placeholders_and_a_literal_percent_sign_are_written_as_django_writes_them(probe):
    # %% is a percent sign wherever a statement has parameters; a %s inside text is a placeholder.
    found = driver.first("SELECT %s, '100%%', %s", ["a", "b"])
    with connection.cursor() as cur:
        cur.execute("SELECT %s, '100%%', %s", ["a", "b"])
        expected = cur.fetchone()
    assert tuple(found) == tuple(expected) == ("a", "100%", "b")


def test_a_refused_statement_raises_django_s_error_and_changes_nothing(probe):
    driver.run(f"INSERT INTO {PROBE} (id, word) VALUES (%s, %s)", [1, "one"])
    with pytest.raises(IntegrityError) as raised, transaction.atomic():
        driver.run(f"INSERT INTO {PROBE} (id, word) VALUES (%s, %s)", [1, "again"])
    # The driver's own error is kept as the cause, as Django keeps it.
    assert type(raised.value.__cause__).__module__.split(".")[0] in ("sqlite3", "psycopg")
    assert words() == [(1, "one")]


def test_statements_go_to_the_driver_not_through_django_s_cursor(probe, monkeypatch):
    wrapper = connections[DEFAULT_DB_ALIAS]  # the connection itself, not the module's proxy for it
    wrapper.ensure_connection()

    def refused(*args, **kwargs):
        raise AssertionError("Django's cursor was used")

    with monkeypatch.context() as patched:
        patched.setattr(wrapper, "cursor", refused)
        assert driver.run(f"INSERT INTO {PROBE} (id, word) VALUES (%s, %s)", [1, "one"]) == 1
        assert tuple(driver.first(f"SELECT word FROM {PROBE} WHERE id = %s", [1])) == ("one",)
    assert words() == [(1, "one")]


def test_while_queries_are_recorded_every_statement_is_recorded(probe):
    with CaptureQueriesContext(connection) as captured:
        driver.run(f"INSERT INTO {PROBE} (id, word) VALUES (%s, %s)", [1, "one"])
        driver.first(f"SELECT word FROM {PROBE} WHERE id = %s", [1])
    assert [q["sql"].split()[0] for q in captured.captured_queries] == ["INSERT", "SELECT"]


def test_an_execute_wrapper_sees_every_statement(probe):
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append((sql.split()[0], many))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        driver.run_many(f"INSERT INTO {PROBE} (id, word) VALUES (%s, %s)", [(1, "one"), (2, "two")])
        driver.rows(f"SELECT word FROM {PROBE}")
    assert seen == [("INSERT", True), ("SELECT", False)]


def test_a_broken_transaction_refuses_further_statements_as_django_does(probe):
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            driver.run(f"INSERT INTO {PROBE} (id, word) VALUES (%s, %s)", [1, "one"])
        with pytest.raises(TransactionManagementError):
            driver.first("SELECT 1")
    assert words() == []


@pytest.mark.django_db(transaction=True)
def test_a_connection_that_fails_its_health_check_is_replaced_first(monkeypatch):
    wrapper = connections[DEFAULT_DB_ALIAS]
    wrapper.ensure_connection()
    before = wrapper.connection
    monkeypatch.setattr(wrapper, "health_check_enabled", True)
    monkeypatch.setattr(wrapper, "health_check_done", False)
    monkeypatch.setattr(wrapper, "is_usable", lambda: False)
    assert tuple(driver.first("SELECT %s", [7])) == (7,)
    if getattr(wrapper, "pool", None):
        assert wrapper.connection is before  # a pool hands out only connections it checked itself
    else:
        assert wrapper.connection is not before
        assert wrapper.health_check_done is True


@pytest.mark.django_db(transaction=True)
def test_a_closed_connection_is_opened_for_the_statement():
    connection.close()
    assert connection.connection is None
    assert tuple(driver.first("SELECT %s", ["open"])) == ("open",)
    assert connection.connection is not None


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's lastrowid")
def test_last_id_is_the_inserted_row_s(probe):
    driver.run(f"INSERT INTO {PROBE} (id, word) VALUES (%s, %s)", [41, "one"])
    assert driver.last_id(f"INSERT INTO {PROBE} (word) VALUES (%s)", ["two"]) == 42
    assert words() == [(41, "one"), (42, "two")]
