"""check_invariants (sessions_app/maintenance/invariants.py): a clean or empty session is valid, and
each problem with the plan files (missing, orphaned, never a plan, a leftover temporary
file) is reported, all at once, while a write in progress and unrelated files are not."""

from __future__ import annotations

import os
import time

import pytest

from sessions_app import planfiles, services
from sessions_app.maintenance import invariants
from sessions_app.maintenance.invariants import INVARIANTS
from tests.sessions_app.conftest import plan_file


def age(path) -> None:
    """Make a temporary file look abandoned rather than a write in progress."""
    old = time.time() - 3600
    os.utime(path, (old, old))


@pytest.mark.django_db
def test_a_clean_session_is_valid(session, make_plan, complete_plan):
    complete_plan(session)
    make_plan(session)
    make_plan(session, position="front")
    services.plan_pull(session_name=session.name)

    result = invariants.check_invariants(session.name)

    assert result.valid is True
    assert result.invariants == dict.fromkeys(INVARIANTS, True)
    assert result.issues == []


@pytest.mark.django_db
def test_an_empty_session_is_valid(session):
    assert invariants.check_invariants(session.name).valid is True


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["queued", "active"])
def test_it_reports_a_missing_plan_file(session, make_plan, sessions_dir, status):
    plan = make_plan(session)
    other = make_plan(session)
    if status == "active":
        services.plan_pull(session_name=session.name)
    plan_file(sessions_dir, plan).unlink()

    result = invariants.check_invariants(session.name)

    assert result.valid is False
    assert result.invariants == {**dict.fromkeys(INVARIANTS, True), "files_match_database": False}
    assert len(result.issues) == 1
    assert plan.id in result.issues[0] and status in result.issues[0]
    assert other.id not in result.issues[0]
    assert not plan_file(sessions_dir, plan).exists()  # a check never repairs


@pytest.mark.django_db
def test_it_reports_an_orphan_file(session, make_plan, complete_plan, sessions_dir):
    make_plan(session)
    done = complete_plan(session)
    orphan = plan_file(sessions_dir, done)
    orphan.write_text("# Context\nleft behind\n")

    result = invariants.check_invariants(session.name)

    assert result.invariants == {**dict.fromkeys(INVARIANTS, True), "no_orphaned_files": False}
    assert len(result.issues) == 1
    assert f"{done.id}.txt" in result.issues[0]
    assert orphan.read_text() == "# Context\nleft behind\n"


@pytest.mark.django_db
def test_it_reports_a_file_for_a_plan_that_never_existed(session, sessions_dir):
    (sessions_dir / session.name / "plans" / "zzzzz.txt").write_text("stray")

    result = invariants.check_invariants(session.name)

    assert result.invariants["no_orphaned_files"] is False
    assert result.issues == [result.issues[0]] and "zzzzz.txt" in result.issues[0]


@pytest.mark.django_db
def test_it_reports_a_leftover_temp_file(session, make_plan, sessions_dir):
    plan = make_plan(session)
    leftover = sessions_dir / session.name / "plans" / f"{planfiles.TEMP_PREFIX}{plan.id}.txt"
    leftover.write_text("torn")
    age(leftover)

    result = invariants.check_invariants(session.name)

    assert result.invariants == {**dict.fromkeys(INVARIANTS, True), "no_orphaned_files": False}
    assert len(result.issues) == 1
    assert f"{planfiles.TEMP_PREFIX}{plan.id}.txt" in result.issues[0]


@pytest.mark.django_db
def test_a_fresh_temp_file_may_be_a_write_in_progress_and_is_not_reported(session, make_plan, sessions_dir):
    plan = make_plan(session)
    (sessions_dir / session.name / "plans" / f"{planfiles.TEMP_PREFIX}{plan.id}.txt").write_text("being written")
    assert invariants.check_invariants(session.name).valid is True


@pytest.mark.django_db
def test_unrelated_files_are_not_reported(session, make_plan, sessions_dir):
    make_plan(session)
    (sessions_dir / session.name / "plans" / "README.md").write_text("notes for humans")
    assert invariants.check_invariants(session.name).valid is True


@pytest.mark.django_db
def test_it_reports_every_problem_at_once(session, make_plan, sessions_dir):
    missing = make_plan(session)
    make_plan(session)
    plan_file(sessions_dir, missing).unlink()
    (sessions_dir / session.name / "plans" / "zzzzz.txt").write_text("stray")
    (sessions_dir / session.name / "plans" / ".tmp-x.txt").write_text("torn")
    age(sessions_dir / session.name / "plans" / ".tmp-x.txt")

    result = invariants.check_invariants(session.name)

    assert result.invariants == {
        **dict.fromkeys(INVARIANTS, True),
        "files_match_database": False,
        "no_orphaned_files": False,
    }
    assert len(result.issues) == 3


@pytest.mark.django_db
def test_validating_an_unknown_session_gives_session_not_found(rejects):
    with rejects("SESSION_NOT_FOUND"):
        invariants.check_invariants("calm-blue-heron")
