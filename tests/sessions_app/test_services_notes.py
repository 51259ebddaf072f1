"""Writing the active plan's Notes (docs/design.md, "Plan files"): append composition,
replace, and limits."""

from __future__ import annotations

import pytest

from sessions_app import planfiles, services
from sessions_app.models import Event, Plan
from sessions_app.services import compose_append
from tests.sessions_app.conftest import events, plan_file

# --- compose_append ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "stored, fragment, expected",
    [
        # S'.rstrip() + "\n\n" + F'
        ("previous", "next", "previous\n\nnext"),
        # trailing whitespace of S goes, Unicode whitespace included
        ("previous \t\n\n\u00a0\u3000", "next", "previous\n\nnext"),
        # leading whitespace-only lines of F go; the first real line keeps its indent
        ("previous", " \n\t\n\r\n    indented code\nnext", "previous\n\n    indented code\nnext"),
        ("previous", "\u00a0\u3000\n## Heading", "previous\n\n## Heading"),
        ("previous", "\u00a0 - item", "previous\n\n\u00a0 - item"),
        # trailing characters of F are kept exactly
        ("previous", "ends without newline", "previous\n\nends without newline"),
        ("previous", "ends with blank lines\n\n\n", "previous\n\nends with blank lines\n\n\n"),
        ("previous", "trailing spaces   ", "previous\n\ntrailing spaces   "),
        # interior of both bodies untouched
        ("a  \n\n\n  b", "c\n\n\n   d\r\ne", "a  \n\n\n  b\n\nc\n\n\n   d\r\ne"),
        ("crlf\r\n", "\r\nx", "crlf\n\nx"),
        # a line ends at "\n" only: NEL and U+2028 are text on the first real line
        ("previous", "\u2028x", "previous\n\n\u2028x"),
        ("previous", "\x85x\u2028y", "previous\n\n\x85x\u2028y"),
        # an empty S' gives F'
        ("", "first", "first"),
        (" \n\t\u00a0", "\n  first", "  first"),
    ],
)
def test_compose_append(stored, fragment, expected):
    assert compose_append(stored, fragment) == expected


# --- plan_note --------------------------------------------------------------------------


@pytest.mark.django_db
def test_append_is_the_default_and_writes_database_file_and_event(session, active, sessions_dir):
    first = services.plan_note(session_name=session.name, text="  \nFound the schema", actor="tester").plan
    second = services.plan_note(session_name=session.name, text="Invoices use cents\n").plan

    stored = Plan.objects.get(id=active.id)
    assert stored.notes == second.notes == "Found the schema\n\nInvoices use cents\n"
    assert first.notes == "Found the schema"
    assert stored.version == 3
    assert plan_file(sessions_dir, active).read_text() == planfiles.render(stored.sections())
    assert events(active)[-2:] == [("plan_note", "tester"), ("plan_note", "agent")]
    assert Event.objects.filter(plan=active, kind="plan_note").first().detail == {"mode": "append", "chars": 19}


@pytest.mark.django_db
def test_appending_twice_appends_twice(session, active):
    services.plan_note(session_name=session.name, text="same", mode="append")
    services.plan_note(session_name=session.name, text="same", mode="append")
    assert Plan.objects.get(id=active.id).notes == "same\n\nsame"


@pytest.mark.django_db
def test_replace_sets_the_notes_exactly(session, active, sessions_dir):
    services.plan_note(session_name=session.name, text="old")

    services.plan_note(session_name=session.name, text="\n  new\ttext  \n", mode="replace")

    assert Plan.objects.get(id=active.id).notes == "\n  new\ttext  \n"
    assert "  new\ttext" in plan_file(sessions_dir, active).read_text()
    assert Event.objects.filter(plan=active, kind="plan_note").last().detail == {"mode": "replace", "chars": 14}


@pytest.mark.django_db
def test_append_builds_on_notes_the_agent_wrote_in_the_file(session, active, sessions_dir):
    path = plan_file(sessions_dir, active)
    path.write_text(path.read_text().replace("# Notes\n", "# Notes\nwritten in the file  \n"))

    services.plan_note(session_name=session.name, text="written by the tool")

    assert Plan.objects.get(id=active.id).notes == "written in the file\n\nwritten by the tool"


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["Append", "REPLACE", "add", "", " append", 1, True])
def test_mode_is_exact_and_names_both_values(session, active, rejects, mode):
    with rejects("VALIDATION_ERROR", field="mode") as info:
        services.plan_note(session_name=session.name, text="fragment", mode=mode)
    assert "'append'" in info.value.message and "'replace'" in info.value.message


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["append", "replace"])
@pytest.mark.parametrize("blank", ["", " ", "\n\n", "\u00a0\u0085\u3000", "\u2028\u2029\u1680\u202f\u205f"])
def test_an_empty_or_whitespace_fragment_is_rejected(session, active, rejects, mode, blank):
    services.plan_note(session_name=session.name, text="kept")
    with rejects("VALIDATION_ERROR", field="text", match="empty or only whitespace"):
        services.plan_note(session_name=session.name, text=blank, mode=mode)


@pytest.mark.django_db
def test_the_field_limit_is_checked_on_the_composed_notes(session, active, settings, rejects):
    settings.NINEPLAN_MAX_FIELD_CHARS = 50
    services.plan_note(session_name=session.name, text="x" * 30)

    # 30 + 2 + 30 = 62: each part fits, the composed result does not.
    with rejects("VALIDATION_ERROR", field="notes", match="notes is 62 characters; at most 50"):
        services.plan_note(session_name=session.name, text="y" * 30)

    services.plan_note(session_name=session.name, text="y" * 18)
    assert len(Plan.objects.get(id=active.id).notes) == 50


@pytest.mark.django_db
def test_the_plan_limit_is_checked_on_the_composed_plan(session, active, settings, rejects):
    others = sum(len(v) for v in Plan.objects.get(id=active.id).sections().values())
    settings.NINEPLAN_MAX_PLAN_CHARS = others + 40
    services.plan_note(session_name=session.name, text="a" * 20)

    with rejects("VALIDATION_ERROR", field="notes", match=f"would be {others + 42} characters; at most {others + 40}"):
        services.plan_note(session_name=session.name, text="b" * 20)


@pytest.mark.django_db
def test_a_replace_over_the_limit_is_rejected(session, active, settings, rejects):
    settings.NINEPLAN_MAX_FIELD_CHARS = 50
    with rejects("VALIDATION_ERROR", field="notes", match="notes is 51 characters"):
        services.plan_note(session_name=session.name, text="z" * 51, mode="replace")


@pytest.mark.django_db
@pytest.mark.parametrize("bad", [None, 42, ["text"], "nul\x00byte", "lone \udc00 surrogate"])
def test_a_bad_fragment_is_rejected(session, active, rejects, bad):
    with rejects("VALIDATION_ERROR", field="text"):
        services.plan_note(session_name=session.name, text=bad)
