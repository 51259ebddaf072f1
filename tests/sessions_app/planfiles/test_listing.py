"""What a session's plans folder holds (sessions_app/planfiles/listing.py): plan files and
temporary files told apart by their names, anything that is not a plain file named for
what it is, and a folder that is not a real one reported instead of read."""

from __future__ import annotations

import os
import time

import pytest

from sessions_app import planfiles
from sessions_app.models import Plan
from tests.conftest import break_plans_folder
from tests.sessions_app.conftest import plan_file, tree

pytestmark = pytest.mark.django_db


def test_listing_ignores_temporary_and_foreign_files(session, make_plan, sessions_dir):
    plan = make_plan(session)
    plans = sessions_dir / session.name / "plans"
    (plans / ".tmp-abc.txt").write_text("half written")
    (plans / "README.md").write_text("not a plan")

    assert planfiles.list_plan_files(session.name) == [plan.id]
    assert [p.name for p in planfiles.list_temp_files(session.name)] == [".tmp-abc.txt"]


def test_a_scan_names_each_plan_file_and_finds_them_regular(session, make_plan, sessions_dir):
    first, second = make_plan(session, goal="A"), make_plan(session, goal="B")
    before = tree(sessions_dir)

    found = planfiles.scan(session.name)

    assert found.problem == "" and found.temp == []
    assert found.files == {first.id: "", second.id: ""}
    assert found.regular() == {first.id, second.id}
    assert planfiles.list_plan_files(session.name) == sorted([first.id, second.id])
    # Nothing was opened, moved or written.
    assert tree(sessions_dir) == before


def test_each_listed_name_gives_its_plan_id_and_nothing_else_does(session, make_plan, sessions_dir):
    plan = make_plan(session)
    reclaimed = Plan(id=plan.id, reclaims=2)

    assert planfiles.stem_plan_id(plan.file_stem) == plan.id
    assert planfiles.stem_plan_id(reclaimed.file_stem) == plan.id
    assert [planfiles.stem_plan_id(stem) for stem in planfiles.scan(session.name).files] == [plan.id]
    with pytest.raises(ValueError, match="not a plan file's name"):
        planfiles.stem_plan_id("README")


def test_a_link_in_a_plan_files_place_is_listed_but_not_regular(session, make_plan, sessions_dir, tmp_path):
    linked, hard, kept = make_plan(session, goal="A"), make_plan(session, goal="B"), make_plan(session, goal="C")
    outside = tmp_path / "outside.txt"
    outside.write_text("not 9plan's")
    plan_file(sessions_dir, linked).unlink()
    plan_file(sessions_dir, linked).symlink_to(outside)
    os.link(plan_file(sessions_dir, hard), tmp_path / "second-name.txt")

    found = planfiles.scan(session.name)

    assert found.regular() == {kept.id}
    assert found.files[linked.id] and found.files[hard.id]
    assert found.files[linked.id] != found.files[hard.id]
    # Both still count as the plans' entries; the target is untouched.
    assert planfiles.list_plan_files(session.name) == sorted([linked.id, hard.id, kept.id])
    assert outside.read_text() == "not 9plan's"


def test_temporary_files_are_listed_by_age(session, make_plan, sessions_dir):
    make_plan(session)
    plans = sessions_dir / session.name / "plans"
    (plans / ".tmp-new.txt").write_text("being written")
    (plans / ".tmp-old.txt").write_text("left behind")
    an_hour_ago = time.time() - 3600
    os.utime(plans / ".tmp-old.txt", (an_hour_ago, an_hour_ago))

    found = planfiles.scan(session.name)
    assert [name for name, _, _ in found.temp] == [".tmp-new.txt", ".tmp-old.txt"]
    ages = {name: age for name, age, _ in found.temp}
    assert ages[".tmp-new.txt"] < 60 and ages[".tmp-old.txt"] > 3500
    assert planfiles.list_temp_files(session.name, min_age=60) == [plans / ".tmp-old.txt"]
    assert len(planfiles.list_temp_files(session.name)) == 2


def test_a_plans_folder_that_is_not_a_folder_is_reported_not_read(session, make_plan, sessions_dir):
    make_plan(session)
    broken = break_plans_folder(sessions_dir, session.name)

    found = planfiles.scan(session.name)

    assert found.files == {} and found.temp == []
    assert str(broken) in found.problem and found.problem.endswith("not a real folder")
    assert broken.read_text() == "a file where the folder should be"


def test_a_session_without_a_folder_holds_nothing(db):
    found = planfiles.scan("brave-amber-otter")
    assert (found.problem, found.files, found.temp) == ("", {}, [])
    assert planfiles.list_plan_files("brave-amber-otter") == []


def test_without_plan_files_nothing_is_scanned(session, make_plan, sessions_dir, settings):
    plan = make_plan(session)
    assert plan_file(sessions_dir, plan).exists()
    settings.NINEPLAN_PLAN_FILES = "off"
    assert planfiles.list_plan_files(session.name) == []
    assert planfiles.list_temp_files(session.name) == []
