"""The import under bad input: bounds a hostile document cannot pass (nesting, numbers,
text), the limits every other path holds plan text to, and a document read as a stream
(in any key order, across chunk boundaries, a huge plan key by key) all or nothing."""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from nineplan.progress import Progress
from sessions_app import export_import, invariants, planfiles
from sessions_app.export_import import reader, restore
from sessions_app.models import Event, Plan, Session
from tests.conftest import MANAGE, PYTHON, REPO
from tests.sessions_app.api_fixtures import full_session  # noqa: F401  (fixture)
from tests.sessions_app.export_import.test_export import snapshot as session_snapshot
from tests.sessions_app.export_import.test_export import wipe

pytestmark = pytest.mark.django_db


class Exported(dict):
    """An export document, and (``before``) the session it was exported from."""

    before: dict


@pytest.fixture
def document(full_session, sessions_dir) -> Exported:  # noqa: F811
    """The full session's export; the session itself is gone, so the document imports."""
    exported = Exported(export_import.export_session(full_session.name))
    exported.before = session_snapshot(full_session.name)
    wipe(full_session.name, sessions_dir)
    return exported


def written(document: dict, path, **dump) -> str:
    path.write_text(json.dumps(document, **dump), encoding="utf-8")
    return str(path)


def open_plan(document: dict) -> dict:
    return next(p for p in document["plans"] if p["status"] == "queued")


def assert_nothing_imported(sessions_dir) -> None:
    assert not Session.objects.exists() and not Plan.objects.exists() and not Event.objects.exists()
    assert sorted(p.name for p in sessions_dir.iterdir()) == []


# --- bounds: a clear refusal, never a traceback --------------------------------------------

DEEP = 200_000


def deep_detail(document: dict) -> None:
    document["events"][0]["detail"] = {"x": "PLACEHOLDER"}


def long_number(document: dict) -> None:
    document["plans"][0]["version"] = "PLACEHOLDER"


HOSTILE = {
    # (how the document is made hostile, the text put in place of the placeholder, field, message)
    "nested 200,000 deep": (deep_detail, "[" * DEEP + "]" * DEEP, "events[0]", "nests arrays or objects more than 32 deep"),
    "a number of 100,001 digits": (long_number, "1" * 100_001, "plans[0]", "holds a number of more than 20 digits"),
    "an infinite number": (long_number, "1e999999", "plans[0]", "holds the number 1e999999, too large to hold"),
    "NaN": (long_number, "NaN", "plans[0]", "holds NaN, which is not a JSON number"),
}


def hostile_file(document: dict, tmp_path, case: str) -> str:
    make, replacement, _, _ = HOSTILE[case]
    make(document)
    path = tmp_path / "hostile.json"
    text = json.dumps(document)
    path.write_text(text.replace('"PLACEHOLDER"', replacement, 1), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_document_is_refused_naming_the_piece_and_writes_nothing(document, tmp_path, sessions_dir, case):
    _, _, field, message = HOSTILE[case]
    with pytest.raises(CommandError) as refused:
        call_command("nineplan_import", hostile_file(document, tmp_path, case), stdout=io.StringIO())
    assert str(refused.value).startswith(f"VALIDATION_ERROR: {field}: cannot be read: the file ")
    assert message in str(refused.value) and "nothing was imported" in str(refused.value)
    assert_nothing_imported(sessions_dir)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", ["nested 200,000 deep", "a number of 100,001 digits"])
def test_the_import_command_refuses_a_hostile_document_like_any_other(document, tmp_path, subprocess_env, sessions_dir, case):
    done = subprocess.run(
        [PYTHON, MANAGE, "nineplan_import", hostile_file(document, tmp_path, case)],
        cwd=REPO,
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Exit status 1 and one line, as for every other refusal (an unknown key, say).
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr and "ValueError" not in done.stderr
    assert done.stderr.startswith("CommandError: VALIDATION_ERROR: ") and HOSTILE[case][3] in done.stderr
    assert_nothing_imported(sessions_dir)


@pytest.mark.slow
def test_on_a_fresh_data_directory_the_refusal_is_still_the_one_line_on_stderr(document, tmp_path):
    from tests.nineplan.test_commands import run

    # At the default log level, where making the tables logs a line at info.
    done = run(tmp_path / "data", "nineplan_import", hostile_file(document, tmp_path, "nested 200,000 deep"),
               log_level="info")  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("CommandError: VALIDATION_ERROR: events[0]: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON: expected a key in double quotes (line 1, column 2)"),
        ('{"format": 1, "format": 2}', "gives the key 'format' twice in one object"),
        ("\ufeff{}", "starts with a byte order mark (U+FEFF); save it as UTF-8 without one"),
        ("", "is empty: an export is one JSON object"),
        ("  \n", "is empty: an export is one JSON object"),
        ("[1, 2]", "must be a JSON object"),
        (b"{\xff}", "is not UTF-8 text (at byte 1)"),
    ],
)
def test_a_file_that_is_not_one_json_document_is_refused(tmp_path, sessions_dir, text, message):
    path = tmp_path / "bad.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(CommandError, match="VALIDATION_ERROR: document: ") as refused:
        call_command("nineplan_import", str(path), stdout=io.StringIO())
    assert message in str(refused.value)
    assert_nothing_imported(sessions_dir)


def test_text_after_the_document_is_refused(document, tmp_path, sessions_dir):
    path = tmp_path / "d.json"
    written(document, path)
    path.write_text(path.read_text(encoding="utf-8") + '\n{"format": "again"}\n', encoding="utf-8")
    with pytest.raises(CommandError, match="document: cannot be read: the file is not JSON: more text follows"):
        call_command("nineplan_import", str(path), stdout=io.StringIO())
    assert_nothing_imported(sessions_dir)


# --- plan text from the file: the same limits as every other path ---------------------------


@pytest.mark.parametrize(
    ("size", "said"),
    [
        # Longer than any plan's text could be, escaped: the reader stops at its bound.
        (15 * 1024 * 1024, "holds a value of more than 1,638,400 characters"),
        # Within that, but more bytes than 9plan reads of a plan file.
        (1_100_000, "'s file is 1,100,"),
    ],
    ids=["15 MB", "1.1 MB"],
)
def test_a_file_text_over_what_a_plan_file_may_hold_is_refused_naming_the_plan(document, rejects, size, said):
    plan = open_plan(document)
    plan["file_text"] = planfiles.render({"goal": "Kept", "notes": "x" * size})
    at = f"plans[{document['plans'].index(plan)}].file_text"
    with rejects("VALIDATION_ERROR", field=at, match=said) as refused:
        export_import.session_import(document)
    assert f"plan {plan['id']}" in refused.value.message


def test_a_file_text_section_over_the_field_limit_is_refused(document, rejects, settings):
    plan = open_plan(document)
    settings.NINEPLAN_MAX_FIELD_CHARS = 1000
    plan["file_text"] = planfiles.render({**{k: plan[k] for k in ("goal", "context")}, "approach": "a" * 1001})
    at = f"plans[{document['plans'].index(plan)}].file_text"
    with rejects("VALIDATION_ERROR", field=at, match=f"plan {plan['id']}'s file has a Approach of 1,001 characters"):
        export_import.session_import(document)


def test_a_file_text_whose_plan_would_be_over_the_plan_limit_is_refused(document, rejects, settings):
    plan = open_plan(document)
    settings.NINEPLAN_MAX_PLAN_CHARS = 2000
    # Every section within its limit, but text above the first heading joins the Notes.
    plan["file_text"] = "p" * 1700 + "\n" + planfiles.render({"goal": plan["goal"], "notes": "n" * 400})
    at = f"plans[{document['plans'].index(plan)}].file_text"
    with rejects("VALIDATION_ERROR", field=at, match="holds a plan of"):
        export_import.session_import(document)


def test_a_file_text_within_the_limits_is_restored_and_taken_in_by_the_next_note(document, sessions_dir):
    active = next(p for p in document["plans"] if p["status"] == "active")
    active["file_text"] = planfiles.render({**{k: active[k] for k in ("context", "goal")}, "notes": "edited in the file"})
    export_import.session_import(document)
    from sessions_app import services

    noted = services.plan_note(session_name=document["session"]["name"], text="and noted").plan
    assert noted.notes == "edited in the file\n\nand noted"


def test_a_revision_whose_earlier_text_is_over_the_field_limit_is_refused(document, rejects, settings):
    settings.NINEPLAN_MAX_FIELD_CHARS = 1000
    plan = next(p for p in document["plans"] if len(p["revisions"]) > 1)
    plan["revisions"][1]["undo"] = {"notes": [600, "n" * 401]}
    at = f"plans[{document['plans'].index(plan)}].revisions[1].undo"
    with rejects("VALIDATION_ERROR", field=at, match="gives notes an earlier text of 1,001 characters; a section holds"):
        export_import.session_import(document)


# --- a stream, all or nothing ----------------------------------------------------------------


def test_chunk_boundaries_anywhere_read_the_same_document(document, tmp_path, monkeypatch):
    # Seven bytes at a time: every string, number, key and escape is cut somewhere.
    monkeypatch.setattr(reader, "CHUNK", 7)
    call_command("nineplan_import", written(document, tmp_path / "d.json", indent=1), stdout=io.StringIO())
    assert session_snapshot(document["session"]["name"]) == document.before


def test_the_keys_may_come_in_any_order(document, tmp_path):
    # Sorted, the header comes after the plans, and the events before them.
    call_command("nineplan_import", written(document, tmp_path / "d.json", sort_keys=True), stdout=io.StringIO())
    assert session_snapshot(document["session"]["name"]) == document.before
    assert invariants.check_invariants(document["session"]["name"]).valid


def test_a_plan_too_long_to_decode_whole_is_read_key_by_key(document, tmp_path, monkeypatch):
    monkeypatch.setattr(restore, "WHOLE_PLAN_CHARS", 200)
    call_command("nineplan_import", written(document, tmp_path / "d.json"), stdout=io.StringIO())
    assert session_snapshot(document["session"]["name"]) == document.before


def test_an_error_in_a_plan_read_key_by_key_names_its_revision(document, rejects, monkeypatch):
    monkeypatch.setattr(restore, "WHOLE_PLAN_CHARS", 200)
    plan = next(p for p in document["plans"] if len(p["revisions"]) > 1)
    plan["revisions"][1]["kind"] = "hacked"
    with rejects("VALIDATION_ERROR", field=f"plans[{document['plans'].index(plan)}].revisions[1].kind"):
        export_import.session_import(document)


def test_a_file_changed_between_the_two_reads_imports_nothing(document, tmp_path, sessions_dir):
    path = tmp_path / "d.json"
    written(document, path)

    class ChangesTheFile(Progress):
        def stage(self, label, total=None):
            if label == "Writing plans":
                # Past the first chunk the writing read has taken in: still the same
                # document, but not the same file.
                with open(path, "r+b") as fh:
                    fh.seek(-2, 2)
                    fh.write(b"\t\n")
            super().stage(label, total)

    path.write_text(path.read_text() + " " * (2 * reader.CHUNK) + "\n", encoding="utf-8")
    with open(path, "rb") as fh, pytest.raises(Exception, match="the file changed while it was imported"):
        export_import.import_file(fh, progress=ChangesTheFile())
    assert_nothing_imported(sessions_dir)


def test_stdin_is_read_as_a_stream_too(document, tmp_path, monkeypatch):
    path = written(document, tmp_path / "d.json")
    with open(path, "rb") as fh:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(fh))
        out = io.StringIO()
        call_command("nineplan_import", "-", stdout=out)
    assert out.getvalue().strip() == document["session"]["name"]
    assert session_snapshot(document["session"]["name"]) == document.before
    shutil.rmtree(tmp_path / "sessions" / document["session"]["name"])


@pytest.mark.parametrize("extra", [0, 1], ids=["at the cap", "one over"])
def test_an_import_holds_a_plan_to_the_same_number_of_dependents(document, rejects, sessions_dir, extra):
    from sessions_app.models import MAX_DEPENDENTS, PlanDependency

    base = open_plan(document)
    dropped = next(p for p in document["plans"] if p["status"] == "discarded")
    already = sum(base["id"] in p.get("depends_on", []) for p in document["plans"])
    for i in range(MAX_DEPENDENTS - already + extra):
        document["plans"].append({**dropped, "id": f"d{i:04d}", "depends_on": [base["id"]], "file_text": None})
    if extra:
        with rejects("VALIDATION_ERROR", field="plans", match=f"plan {base['id']} has more than {MAX_DEPENDENTS}"):
            export_import.session_import(document)
        return
    export_import.session_import(document)
    assert PlanDependency.objects.filter(depends_on_id=base["id"]).count() == MAX_DEPENDENTS


def test_the_rows_held_for_one_write_are_bounded_by_their_text_as_well_as_their_count(document, monkeypatch):
    # A thousand plans near the plan limit would be a quarter of a gigabyte in one batch.
    monkeypatch.setattr(restore, "BATCH_CHARS", 50_000)
    template = open_plan(document)
    for i in range(30):
        document["plans"].append(
            {**template, "id": f"b{i:04d}", "sort_key": 10_000 + i, "context": f"{i} " + "c" * 20_000,
             "file_text": None, "revisions": []}
        )  # fmt: skip
    held, create = [], Plan.objects.bulk_create

    def counted(plans, *args, **kwargs):
        held.append(sum(len(plan.context) for plan in plans))
        return create(plans, *args, **kwargs)

    monkeypatch.setattr(Plan.objects, "bulk_create", counted)
    name = export_import.session_import(document).name
    assert len(held) > 1 and max(held) <= 50_000 + 20_010
    assert Plan.objects.filter(session_id=name, id__in=[f"b{i:04d}" for i in range(30)]).count() == 30
    assert Plan.objects.get(id="b0029").context == "29 " + "c" * 20_000
    open_plans = sum(1 for plan in document["plans"] if plan["status"] in ("queued", "active"))
    assert len(planfiles.list_plan_files(name)) == open_plans
    assert invariants.check_invariants(name).valid
