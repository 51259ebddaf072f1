"""Plan files (docs/design.md, "Plan files"): the format, atomic writes, and an agent's
edits to the file, which survive every step of a plan's life whatever shape the file is
left in."""

from __future__ import annotations

import pytest

from sessions_app import planfiles, services
from sessions_app.models import Event, Plan
from sessions_app.reads import queries
from tests.conftest import plan_fields
from tests.sessions_app.conftest import events, plan_file

EXPECTED_FILE = """\
# Context
Porting the billing service

# Goal
Model invoices

# Inputs

# Outputs
billing/models.py

# Approach
1. Read the schema
2. Write the models

# Success Criteria
Migrations apply; tests pass

# Notes
"""

# Characters that str.splitlines() and universal newlines treat as line breaks, though
# they are ordinary text inside a line of a plan file.
ODD_TEXT = "form\x0cfeed, tab\x0bvert, nel\x85, ls\u2028ps\u2029, fs\x1cgs\x1drs\x1e, cr\rcrlf\r\nend"


def edit(path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# --- format and writing ------------------------------------------------------------------


@pytest.mark.django_db
def test_the_file_has_the_seven_sections_in_order(session, make_plan, sessions_dir):
    plan = make_plan(session, outputs="billing/models.py")

    assert plan_file(sessions_dir, plan).read_text(encoding="utf-8") == EXPECTED_FILE
    assert plan_file(sessions_dir, plan) == sessions_dir / session.name / "plans" / f"{plan.id}.txt"


def test_render_and_parse_round_trip_any_text():
    sections = {
        "context": "  indented first line\n\ninterior blank line",
        "goal": "Model invoices",
        "inputs": "",
        "outputs": "# Step 1 is a Markdown heading, not a section",
        "approach": ODD_TEXT,
        "success_criteria": "trailing spaces   ",
        "notes": "emoji 🎉 and\ttabs\n# Goal\n# Notes  \n\\# Context\n\\\\# Inputs\n  # Outputs",
    }

    parsed = planfiles.parse(planfiles.render(sections))

    assert parsed.sections == sections
    assert parsed.preamble == ""


def test_write_is_atomic_and_leaves_no_temporary_file(sessions_dir):
    target = sessions_dir / "brave-amber-otter" / "plans" / "abcde.txt"
    planfiles.write_file("brave-amber-otter", "abcde", "first")
    planfiles.write_file("brave-amber-otter", "abcde", "second")

    assert target.read_text() == "second"
    assert [p.name for p in target.parent.iterdir()] == ["abcde.txt"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(sessions_dir):
    planfiles.write_file("brave-amber-otter", "abcde", "old")
    target = sessions_dir / "brave-amber-otter" / "plans" / "abcde.txt"

    with pytest.raises(UnicodeEncodeError):
        planfiles.write_file("brave-amber-otter", "abcde", "lone \ud800 surrogate")

    assert target.read_text() == "old"
    assert [p.name for p in target.parent.iterdir()] == ["abcde.txt"]


@pytest.mark.parametrize(
    "session_name, plan_id",
    [("../../etc", "abcde"), ("brave-amber-otter/../x", "abcde"), ("brave-amber-otter", "../ab"), ("/tmp", "abcde")],
)
def test_paths_are_never_built_from_unchecked_names(session_name, plan_id):
    with pytest.raises(ValueError):
        planfiles.plan_path(session_name, plan_id)


@pytest.mark.django_db
def test_no_temporary_file_is_left_after_a_whole_plan_life(session, make_plan, sessions_dir):
    make_plan(session)
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="progress")
    services.plan_defer(session_name=session.name, reason="blocked")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="done")

    assert list((sessions_dir / session.name / "plans").iterdir()) == []


# --- agent edits survive -----------------------------------------------------------------


@pytest.mark.django_db
def test_notes_edited_in_the_file_survive_defer_repull_and_complete(session, make_plan, sessions_dir):
    plan = make_plan(session)
    services.plan_pull(session_name=session.name)
    path = plan_file(sessions_dir, plan)
    edit(path, "# Notes\n", "# Notes\nFound the schema in db/schema.sql\n")

    services.plan_defer(session_name=session.name, reason="needs review")

    stored = Plan.objects.get(id=plan.id)
    assert stored.notes.startswith("Found the schema in db/schema.sql\n\nDeferred ")
    assert stored.notes.endswith(": needs review")
    assert "Found the schema in db/schema.sql" in path.read_text()

    services.plan_pull(session_name=session.name)
    edit(path, ": needs review\n", ": needs review\n\nReviewed; invoices use cents.\n")
    services.plan_complete(session_name=session.name, outcome="Invoice model added")

    assert not path.exists()
    done = queries.history_get(session_name=session.name, plan_id=plan.id)
    assert done.notes.startswith("Found the schema in db/schema.sql\n\nDeferred ")
    assert done.notes.endswith(": needs review\n\nReviewed; invoices use cents.")
    assert done.outcome == "Invoice model added"
    assert [k for k, _ in events(plan)] == [
        "plan_created",
        "plan_pulled",
        "file_edits_kept",
        "plan_deferred",
        "plan_pulled",
        "file_edits_kept",
        "plan_completed",
    ]


@pytest.mark.django_db
def test_edits_to_other_sections_are_kept(session, active, sessions_dir):
    path = plan_file(sessions_dir, active)
    edit(path, "2. Write the models\n", "2. Write the models\n3. Add the admin\n")
    edit(path, "# Outputs\n", "# Outputs\nbilling/admin.py\n")

    services.plan_complete(session_name=session.name, outcome="done")

    done = queries.history_get(session_name=session.name, plan_id=active.id)
    assert done.approach == "1. Read the schema\n2. Write the models\n3. Add the admin"
    assert done.outputs == "billing/admin.py"
    assert done.goal == "Model invoices"
    kept = Event.objects.get(plan=active, kind="file_edits_kept")
    assert kept.detail == {"sections": ["outputs", "approach"]}


@pytest.mark.django_db
def test_an_unedited_file_records_no_edits_and_changes_no_text(session, make_plan, sessions_dir):
    plan = make_plan(session, approach=ODD_TEXT, context="  indented\n\ncontext")
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="odd " + ODD_TEXT)
    services.plan_defer(session_name=session.name, reason="later")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="done")

    done = Plan.objects.get(id=plan.id)
    assert done.approach == ODD_TEXT
    assert done.context == "  indented\n\ncontext"
    assert done.notes.startswith("odd " + ODD_TEXT + "\n\nDeferred ")
    assert not Event.objects.filter(plan=plan, kind="file_edits_kept").exists()


@pytest.mark.django_db
def test_notes_that_contain_section_headings_stay_in_the_notes(session, active, sessions_dir):
    notes = "# Notes\nMy own outline\n# Goal\nnot the plan's goal\n\\# Context"
    services.plan_note(session_name=session.name, text=notes)
    services.plan_defer(session_name=session.name, reason="r")
    services.plan_pull(session_name=session.name)
    services.plan_complete(session_name=session.name, outcome="done")

    done = Plan.objects.get(id=active.id)
    assert done.notes.startswith(notes + "\n\nDeferred ")
    assert done.goal == "Model invoices"
    assert not Event.objects.filter(plan=active, kind="file_edits_kept").exists()


@pytest.mark.django_db
def test_discard_keeps_the_files_edits_and_deletes_the_file(session, active, sessions_dir):
    path = plan_file(sessions_dir, active)
    edit(path, "# Notes\n", "# Notes\nWhy it was dropped: superseded\n")

    services.plan_discard(session_name=session.name, reason="superseded")

    assert Plan.objects.get(id=active.id).notes == "Why it was dropped: superseded"
    assert not path.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("step", ["defer", "complete", "discard", "note"])
def test_a_missing_file_keeps_the_database_copy(session, make_plan, sessions_dir, step):
    plan = make_plan(session)
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="stored in the database")
    plan_file(sessions_dir, plan).unlink()

    if step == "defer":
        services.plan_defer(session_name=session.name, reason="r")
    elif step == "complete":
        services.plan_complete(session_name=session.name, outcome="o")
    elif step == "discard":
        services.plan_discard(session_name=session.name, reason="r")
    else:
        services.plan_note(session_name=session.name, text="more")

    stored = Plan.objects.get(id=plan.id)
    assert stored.notes.startswith("stored in the database")
    assert stored.sections() | {"notes": ""} == plan_fields() | {"inputs": "", "outputs": "", "notes": ""}
    # Defer and note write the file again from the database; complete and discard delete it.
    assert plan_file(sessions_dir, plan).exists() == (step in ("defer", "note"))
    if step in ("defer", "note"):
        assert "stored in the database" in plan_file(sessions_dir, plan).read_text()


def mangle(path, how: str) -> str:
    """Leave the file as a careless edit might; returns a line of the agent's that must survive."""
    text = path.read_text(encoding="utf-8")
    if how == "headings removed":
        path.write_text(text.replace("# Notes\n", "").replace("# Approach\n", "") + "agent line\n", encoding="utf-8")
    elif how == "garbage":
        path.write_bytes(b"\x01\x02 agent line }{][ \x7f")
    elif how == "preamble":
        path.write_text("agent line\n\n" + text, encoding="utf-8")
    elif how == "duplicate headings":
        path.write_text(text + "first half\n# Notes\nagent line\n# Context\nmore context\n", encoding="utf-8")
    elif how == "non-utf8":
        path.write_bytes(text.encode() + b"caf\xe9 \xff\xfe agent line\n")
    elif how == "empty":
        path.write_text("", encoding="utf-8")
        return ""
    return "agent line"


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["headings removed", "garbage", "preamble", "duplicate headings", "empty"])
@pytest.mark.parametrize("step", ["defer", "complete"])
def test_a_mangled_file_loses_neither_the_database_copy_nor_the_agents_text(
    session, make_plan, sessions_dir, how, step
):
    plan = make_plan(session, inputs="schema.sql")
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="database notes")
    before = Plan.objects.get(id=plan.id).sections()
    agent_line = mangle(plan_file(sessions_dir, plan), how)

    if step == "defer":
        services.plan_defer(session_name=session.name, reason="r")
    else:
        services.plan_complete(session_name=session.name, outcome="o")

    after = Plan.objects.get(id=plan.id).sections()
    everything = "\n".join(after.values())
    for name, text in before.items():
        for line in text.splitlines():
            assert line in everything, f"{name}: {line!r} lost"
    assert agent_line in everything
    assert after["goal"] == before["goal"]


@pytest.mark.django_db
def test_duplicate_headings_join_both_bodies(session, active, sessions_dir):
    path = plan_file(sessions_dir, active)
    path.write_text(path.read_text() + "first\n# Notes\nsecond\n")

    services.plan_defer(session_name=session.name, reason="r")

    assert Plan.objects.get(id=active.id).notes.startswith("first\n\nsecond\n\nDeferred ")


@pytest.mark.django_db
def test_a_cleared_goal_in_the_file_keeps_the_database_goal(session, active, sessions_dir):
    edit(plan_file(sessions_dir, active), "# Goal\nModel invoices\n", "# Goal\n \n")

    services.plan_complete(session_name=session.name, outcome="done")

    assert Plan.objects.get(id=active.id).goal == "Model invoices"


@pytest.mark.django_db
@pytest.mark.parametrize("step", ["defer", "complete"])
def test_a_file_that_is_not_utf8_is_kept_aside_byte_for_byte(session, make_plan, sessions_dir, step):
    # More cases (NUL bytes, every step, the answer's wording): test_folders.py.
    plan = make_plan(session, inputs="schema.sql")
    services.plan_pull(session_name=session.name)
    services.plan_note(session_name=session.name, text="database notes")
    before = Plan.objects.get(id=plan.id).sections()
    path = plan_file(sessions_dir, plan)
    written = path.read_bytes() + b"caf\xe9 \xff\xfe agent line\n"
    path.write_bytes(written)

    if step == "defer":
        services.plan_defer(session_name=session.name, reason="r")
    else:
        services.plan_complete(session_name=session.name, outcome="o")

    after = Plan.objects.get(id=plan.id).sections()
    assert {k: v for k, v in after.items() if k != "notes"} == {k: v for k, v in before.items() if k != "notes"}
    assert after["notes"].startswith("database notes")
    assert "\ufffd" not in after["notes"]
    kept = list((sessions_dir / session.name / "preserved").iterdir())
    assert [p.read_bytes() for p in kept] == [written]
