"""Named actors and factories shared by the whole suite."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from sessions_app import services
from sessions_app.models import Plan, Session

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(autouse=True)
def sessions_dir(tmp_path, settings) -> Path:
    """Each test gets its own, empty sessions directory."""
    path = tmp_path / "sessions"
    path.mkdir()
    settings.NINEPLAN_SESSIONS_PATH = path
    return path


def plan_fields(**overrides) -> dict:
    fields = {
        "context": "Porting the billing service",
        "goal": "Model invoices",
        "approach": "1. Read the schema\n2. Write the models",
        "success_criteria": "Migrations apply; tests pass",
    }
    fields.update(overrides)
    return fields


@pytest.fixture
def session(db) -> Session:
    """A session owned by 'the agent', with nothing queued."""
    return services.session_create(task_description="Port billing to Django")


@pytest.fixture
def make_plan(db):
    def make(session: Session, position: str | None = None, **overrides) -> Plan:
        return services.plan_enqueue(session_name=session.name, position=position, **plan_fields(**overrides))

    return make


@pytest.fixture
def subprocess_env(tmp_path, settings) -> dict[str, str]:
    """Environment for a `manage.py` subprocess sharing this test's database and sessions dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["NINEPLAN_SESSIONS_PATH"] = str(settings.NINEPLAN_SESSIONS_PATH)
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        env["DATABASE_URL"] = f"sqlite:///{db['NAME']}"
    env["PYTHONUNBUFFERED"] = "1"
    return env


PYTHON = sys.executable
MANAGE = str(REPO / "manage.py")
