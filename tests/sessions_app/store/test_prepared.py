"""How PostgreSQL plans the services' statements (sessions_app/store/prepared.py): only a status of
the code's own is written into a statement's text; with it there, the statements a pull and a
completion run get one plan per connection, where given as a parameter they were planned at
every call; and a statement kept from being prepared is planned for its own parameters."""

from __future__ import annotations

import pytest
from django.db import connection

from sessions_app import clock, services

from sessions_app.store import prepared

from sessions_app.store import statements
from sessions_app.models import Plan
from tests.conftest import plan_fields
from tests.sessions_app.store.test_statements import queued

pytestmark = pytest.mark.django_db


def test_only_a_choice_of_the_code_is_written_into_a_statement():
    assert prepared.fixed(Plan.Status.IN_REVIEW) == "'in_review'"
    for value in ["queued", "x' OR '1'='1", Plan.Status.QUEUED.value, None]:
        with pytest.raises(TypeError):
            prepared.fixed(value)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_pull_and_its_answer_are_planned_once_per_connection(session):
    # Statistics that show few plans queued or active among many completed ones, as in any
    # database that has been used for a while.
    done = services.session_create(task_description="History")
    Plan.objects.bulk_create(
        Plan(id=f"h{i:04d}", session=done, status=Plan.Status.COMPLETED, completed_at=clock.now(), **plan_fields())
        for i in range(2000)
    )
    with connection.cursor() as cur:
        cur.execute(f"ANALYZE {statements.PLANS}")
    queued(session, *[f"Plan {i}" for i in range(14)])
    for _ in range(12):  # past the prepare threshold and PostgreSQL's five custom plans
        services.plan_pull(session_name=session.name)
        services.plan_complete(session_name=session.name, outcome="done")
    with connection.cursor() as cur:
        cur.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        prepared = cur.fetchall()
    # The statements whose plan depends on the status they filter on: given the status as a
    # parameter, each was planned anew at every call (custom plans only).
    for marker in ["AND t.status = 'queued' AND NOT t.waiting_for_person", "p.status = 'active' AND p.lease_expires_at"]:
        found = [(generic, custom) for sql, generic, custom in prepared if marker in sql]
        assert found, (marker, [sql[:120] for sql, _, _ in prepared])
        generic, custom = found[0]
        assert generic > 0 and custom <= 5, (marker, generic, custom)


@pytest.mark.postgres
def test_statements_kept_from_being_prepared_are_planned_for_their_own_parameters():
    def run(sql: str) -> None:
        for i in range(8):  # past the prepare threshold
            with connection.cursor() as cur:
                cur.execute(sql, [i])

    def prepared_now(sql: str) -> bool:
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement = %s", [sql.replace("%s", "$1")])
            return cur.fetchone()[0] == 1

    run("SELECT %s::int + 41")
    assert prepared_now("SELECT %s::int + 41")  # what the pooled connection does with any other
    threshold = connection.connection.prepare_threshold
    with prepared.planned_for_each_call():
        run("SELECT %s::int + 42")
    assert not prepared_now("SELECT %s::int + 42")
    assert connection.connection.prepare_threshold == threshold
