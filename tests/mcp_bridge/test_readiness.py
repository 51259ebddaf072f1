"""The MCP server's start-up (mcp_bridge/readiness.py): the apps load, then the database is
prepared, in one background thread started once; requests wait for what they need, and a
step that failed is reported to every request instead of hanging it. The preparation itself
runs the real repair on the test database."""

from __future__ import annotations

import threading

import pytest

from mcp_bridge import readiness
from sessions_app import planfiles, services
from sessions_app.errors import DatabaseFailed
from tests.conftest import plan_fields


def test_a_server_that_never_started_waits_for_nothing(fresh):
    assert fresh.apps_ready() and fresh.ready()
    fresh.settle(timeout=0)
    fresh.wait_apps(timeout=0)
    fresh.wait_ready(timeout=0)


def test_the_apps_load_then_the_database_is_prepared_once(fresh):
    steps: list[str] = []
    fresh.start(lambda: steps.append("prepare"), setup=lambda: steps.append("setup"))
    fresh.start(lambda: steps.append("prepare again"), setup=lambda: steps.append("setup again"))
    fresh.wait_apps(timeout=60)
    fresh.wait_ready(timeout=60)
    assert steps == ["setup", "prepare"]
    assert fresh.apps_ready()


def test_requests_wait_until_the_step_they_need_is_done(fresh):
    release = threading.Event()
    steps: list[str] = []
    fresh.start(lambda: steps.append("prepare"), setup=lambda: (release.wait(60), steps.append("setup")))
    assert not fresh.apps_ready()
    release.set()
    fresh.wait_apps(timeout=60)
    assert fresh.apps_ready() and "setup" in steps
    fresh.wait_ready(timeout=60)
    assert steps == ["setup", "prepare"]


def test_apps_that_fail_to_load_are_reported_and_nothing_is_prepared(fresh):
    prepared: list[str] = []

    def setup() -> None:
        raise RuntimeError("no tools")

    fresh.start(lambda: prepared.append("prepare"), setup=setup)
    with pytest.raises(DatabaseFailed, match="could not load its apps at start-up: no tools"):
        fresh.wait_apps(timeout=60)
    with pytest.raises(DatabaseFailed, match="no tools"):
        fresh.wait_ready(timeout=60)
    assert prepared == []


def test_a_database_that_cannot_be_prepared_is_reported_to_every_tool_call(fresh):
    def prepare() -> None:
        raise RuntimeError("disk full")

    fresh.start(prepare, setup=lambda: None)
    fresh.wait_apps(timeout=60)  # listing the tools still works
    for _ in range(2):
        with pytest.raises(DatabaseFailed, match="could not be prepared at start-up: disk full"):
            fresh.wait_ready(timeout=60)


def test_settling_waits_for_the_preparation_and_leaves_its_failure_to_wait_ready(fresh):
    release = threading.Event()

    def prepare() -> None:
        release.wait(60)
        raise RuntimeError("disk full")

    fresh.start(prepare, setup=lambda: None)
    assert not fresh.ready()
    fresh.settle(timeout=0.05)  # not over yet: returns when the time is up, without an error
    assert not fresh.ready()
    release.set()
    fresh.settle(timeout=60)
    assert fresh.ready()
    with pytest.raises(DatabaseFailed, match="disk full"):
        fresh.wait_ready(timeout=0)


@pytest.mark.django_db(transaction=True)
def test_preparing_the_database_puts_right_what_a_killed_process_left(session, sessions_dir):
    plan = services.plan_enqueue(session_name=session.name, **plan_fields()).plan
    path = sessions_dir / session.name / "plans" / f"{plan.file_stem}.txt"
    path.unlink()  # as a process killed between the commit and the file write leaves it
    readiness.prepare_database()
    assert path.exists()
    assert planfiles.read_plan(session.name, plan.file_stem) is not None
