"""Kill tests of the import: a real `manage.py import`, killed with SIGKILL while it
writes, leaves nothing where a session's files go and nothing the next import trips on;
the repair finds what it left aside and clears it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from sessions_app import planfiles
from sessions_app.maintenance import invariants
from sessions_app.models import Event, Plan, Session
from tests.conftest import MANAGE, PYTHON, REPO, plan_fields
from tests.sessions_app.conftest import run_repair
from tests.sessions_app.maintenance.test_backup import kill_when

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.django_db(transaction=True)]

NAME = "brave-amber-otter"
PLANS = 6000


def big_document() -> dict:
    """A session of PLANS queued plans, each with its file: enough for the import to be
    caught writing them."""
    at = "2026-01-30T12:00:00+00:00"
    plans = []
    for i in range(PLANS):
        plan_id = f"k{i:04d}"
        plans.append(
            {
                "id": plan_id, "status": "queued", "sort_key": i, **plan_fields(goal=f"Goal {i}"), "inputs": "",
                "outputs": "", "notes": "", "outcome": "", "discard_reason": "", "version": 1, "created_at": at,
                "updated_at": at, "completed_at": None, "discarded_at": None, "review": False, "rejections": 0,
                "worker": None, "claimed_at": None, "lease_expires_at": None, "attempts": 0,
                "waiting_for_person": False, "depends_on": [], "file_text": None, "revisions": [],
            }
        )  # fmt: skip
    return {
        "format": "9plan-session-export",
        "version": 3,
        "exported_at": at,
        "session": {"name": NAME, "task_description": "t", "created_at": at, "review": "none", "lease_seconds": 1800,
                    "max_attempts": 3},
        "plans": plans,
        "events": [],
    }  # fmt: skip


def staged_files(sessions_dir: Path) -> int:
    return sum(len(os.listdir(folder)) for folder in sessions_dir.glob(f"{planfiles.IMPORT_FOLDER_PREFIX}*"))


def killed_import(tmp_path: Path, sessions_dir: Path, env: dict, files: int) -> Path:
    """The document, after a real import of it was killed with ``files`` plan files written
    (inside its write transaction: it writes them before its commit)."""
    document = tmp_path / "big.json"
    document.write_text(json.dumps(big_document()), encoding="utf-8")
    importing = subprocess.Popen(
        [PYTHON, MANAGE, "import", str(document)], cwd=REPO, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    kill_when(importing, lambda: staged_files(sessions_dir) >= files, "it wrote its plan files")
    return document


def test_an_import_killed_while_writing_leaves_nothing_a_rerun_trips_on(sessions_dir, subprocess_env, tmp_path):
    document = killed_import(tmp_path, sessions_dir, subprocess_env, 300)

    assert not Session.objects.exists() and not Plan.objects.exists() and not Event.objects.exists()
    # Nothing where the session's files go: only the folder aside, which no run looks at.
    assert not (sessions_dir / NAME).exists()
    [aside] = sessions_dir.glob(f"{planfiles.IMPORT_FOLDER_PREFIX}{NAME}-*")
    assert len(os.listdir(aside)) >= 300

    # The repair finds it, and clears it.
    listed = run_repair()
    assert f"would repair: {NAME}: clear_import {aside.name}" in listed and "Nothing to repair" not in listed
    assert aside.exists()
    run_repair("--apply")
    assert not aside.exists() and sorted(p.name for p in sessions_dir.iterdir()) == []
    assert "Nothing to repair." in run_repair()

    # A new import goes through, every plan with its file.
    call_command("import", str(document), stdout=open(os.devnull, "w"))
    assert Plan.objects.filter(session_id=NAME, status="queued").count() == PLANS
    assert len(planfiles.list_plan_files(NAME)) == PLANS
    assert invariants.check_invariants(NAME).valid


def test_a_rerun_after_a_killed_import_needs_no_repair_first(sessions_dir, subprocess_env, tmp_path):
    document = killed_import(tmp_path, sessions_dir, subprocess_env, 100)
    again = subprocess.run(
        [PYTHON, MANAGE, "import", str(document)], cwd=REPO, env=subprocess_env, capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == NAME and len(planfiles.list_plan_files(NAME)) == PLANS
    # The killed run's folder aside is still there for the repair; the session is whole.
    assert invariants.check_invariants(NAME).valid
    assert len(list(sessions_dir.glob(f"{planfiles.IMPORT_FOLDER_PREFIX}*"))) == 1
