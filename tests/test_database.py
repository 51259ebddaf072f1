"""The suite runs on the database DATABASE_URL names, configured as 9plan configures it.

CI runs the suite twice, on SQLite and with DATABASE_URL=postgres://...; the `postgres`
tests run only in the second pass. This check makes that pass fail loudly if it silently
ran on SQLite (a URL that was not picked up would otherwise skip every `postgres` test).
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.db import connection

POSTGRES_URL = os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))


@pytest.mark.django_db
def test_the_suite_runs_on_the_database_the_url_names():
    assert connection.vendor == ("postgresql" if POSTGRES_URL else "sqlite")


@pytest.mark.django_db
@pytest.mark.postgres
def test_postgres_is_set_up_for_9plan():
    db = settings.DATABASES["default"]
    # Worker threads share a bounded pool; a pooled connection must not also persist.
    assert db["OPTIONS"]["pool"]["max_size"] >= 1
    assert db["CONN_MAX_AGE"] == 0 and db["CONN_HEALTH_CHECKS"] is True
    assert db["NAME"].startswith("test_")
    with connection.cursor() as cur:
        # Plan text is any Unicode (emoji included), and search reads letters by the
        # database's character classes: both need a UTF-8 database.
        cur.execute("SHOW server_encoding")
        assert cur.fetchone() == ("UTF8",)
        cur.execute("SELECT %s::text", ["naïve 😀"])
        assert cur.fetchone() == ("naïve 😀",)
