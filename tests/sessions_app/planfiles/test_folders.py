"""Plan files are hostile input: whatever is put in the sessions folder (a link to a file
or folder anywhere, a FIFO, a device, a huge file, bytes that are not UTF-8) is never
followed, never blocks, is never taken into the database past its limits, and is
reported; nothing outside the sessions folder is ever read, written, moved or deleted.

Every case uses the real thing: real symbolic links, FIFOs (os.mkfifo), /dev/zero, big
files. A test that could hang on a FIFO if the code regressed runs under a watchdog
alarm: a safety net that fails the test instead of hanging the suite, never a timing.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import stat
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from sessions_app import errors, planfiles, services
from sessions_app.admin import reads as admin_reads
from sessions_app.errors import NineplanError
from sessions_app.maintenance import backup, export_import, invariants, repair
from sessions_app.models import Event, Plan
from sessions_app.reads import queries
from sessions_app.services import file_edits
from tests.conftest import plan_fields
from tests.sessions_app.api_fixtures import reader, token_client  # noqa: F401 (reader: a fixture)
from tests.sessions_app.conftest import db_rows, plan_file

pytestmark = pytest.mark.django_db

SECRET = "TOP-SECRET-hunter2 the password file"
WATCHDOG_SECONDS = 120  # a hang guard, not a speed limit: any answer comes far sooner


@pytest.fixture(autouse=True)
def watchdog():
    """Fails (instead of hanging) a test whose call blocks on a FIFO: the alarm interrupts
    the blocking system call in the main thread, and the handler raises."""

    def hung(signum, frame):
        pytest.fail(f"a call blocked for {WATCHDOG_SECONDS} s: something opened a FIFO or device and waited")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(WATCHDOG_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def secret(tmp_path) -> Path:
    """A file outside the sessions folder that must never be read, written or moved."""
    path = tmp_path / "outside" / "shadow"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


@pytest.fixture
def user_folder(tmp_path) -> Path:
    """A user's folder outside the sessions folder, holding files named like plan files."""
    folder = tmp_path / "users-documents"
    folder.mkdir()
    (folder / "thesis.txt").write_text("years of work")
    (folder / "abcde.txt").write_text("# Notes\nnamed like a plan file")
    (folder / f"{planfiles.TEMP_PREFIX}old.txt").write_text("named like a temporary file")
    old = 0  # 1970: as old as it gets, so a repair would take it for debris
    os.utime(folder / f"{planfiles.TEMP_PREFIX}old.txt", (old, old))
    return folder


def listing(root: Path) -> dict[str, object]:
    """Every entry under ``root`` without following a link or opening anything but regular
    files: links show their target, FIFOs and devices their kind, files their bytes."""
    found: dict[str, object] = {}
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            st = path.lstat()
            key = str(path.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                found[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                found[key] = path.read_bytes()
            elif stat.S_ISDIR(st.st_mode):
                found[key] = "folder"
            else:
                found[key] = planfiles.kind_of(st.st_mode)
    return found


def unchanged(tmp_path: Path):
    """A check that the database and everything under the test's folder are as they were."""
    before = (db_rows(), listing(tmp_path))
    return lambda: (db_rows(), listing(tmp_path)) == before


def refused(call, category: str, *needles: str, field: str | None = None) -> NineplanError:
    with pytest.raises(NineplanError) as info:
        call()
    assert info.value.category == category, info.value.message
    assert info.value.field == field, info.value.message
    for needle in needles:
        assert needle in info.value.message, info.value.message
    return info.value


def replace_with_link(path: Path, target: Path | str) -> None:
    path.unlink()
    os.symlink(target, path)


def replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def note(session):
    return lambda: services.plan_note(session_name=session.name, text="a finding")


def defer(session):
    return lambda: services.plan_defer(session_name=session.name, reason="later")


def complete(session):
    return lambda: services.plan_complete(session_name=session.name, outcome="done")


def issues(session) -> str:
    result = invariants.check_invariants(session.name)
    assert not result.valid
    return "\n".join(result.issues)


# --- a link in place of a plan file ----------------------------------------------------------


@pytest.fixture(params=["outside file", "another session's plan file", "/dev/zero"])
def link_target(request, secret, make_plan):
    if request.param == "outside file":
        return secret, SECRET
    if request.param == "/dev/zero":
        return Path("/dev/zero"), None
    other = services.session_create()
    theirs = make_plan(other, goal="Their private goal", context="Their private context")
    return planfiles.plan_path(other.name, theirs.id), "Their private goal"


def test_a_linked_plan_file_is_never_read_and_never_replaced(session, make_plan, sessions_dir, tmp_path, link_target):
    target, text = link_target
    target_before = target.read_bytes() if text else None
    make_plan(session, goal="My own goal")
    plan = Plan.objects.get(session=session)
    path = plan_file(sessions_dir, plan)
    replace_with_link(path, target)

    pulled = services.plan_pull(session_name=session.name)
    body, notice = queries.plan_file_text(pulled)
    assert body == planfiles.render(pulled.sections())
    assert "symbolic link" in notice and str(path) in notice
    assert "symbolic link" in issues(session)

    same = unchanged(tmp_path)
    for call in (note(session), defer(session), complete(session)):
        refused(call, "FILE_SYSTEM_ERROR", str(path), "symbolic link", "Nothing was changed")
        assert same()

    discarded = services.plan_discard(session_name=session.name, reason="dropped")

    assert "symbolic link" in discarded.file_notice and "left it alone" in discarded.file_notice
    stored = Plan.objects.get(id=plan.id)
    assert stored.status == "discarded"
    assert stored.sections() == pulled.sections()
    assert os.readlink(path) == str(target)  # the link itself is left alone too
    if text:
        assert text not in "".join(str(v) for v in Event.objects.values_list("detail", flat=True))
        assert target.read_bytes() == target_before
    assert queries.history_search("password", session_name=session.name) == []


def test_a_hard_link_is_refused_like_a_symbolic_link(session, make_plan, sessions_dir, secret, tmp_path, reader):
    """A plan file that is a second name of a file outside is a regular file; its text must
    reach neither the Notes, the admin, the export nor a pull."""
    make_plan(session, goal="My own goal")
    plan = Plan.objects.get(session=session)
    path = plan_file(sessions_dir, plan)
    path.unlink()
    os.link(secret, path)

    pulled = services.plan_pull(session_name=session.name)
    body, notice = queries.plan_file_text(pulled)
    assert SECRET not in body and body == planfiles.render(pulled.sections())
    assert "hard link" in notice and str(path) in notice
    assert "hard link" in issues(session)
    assert "hard link" in admin_reads.plan_file_check(pulled).problem
    exported = b"".join(token_client(reader).get(f"/api/sessions/{session.name}/export/").streaming_content)
    assert SECRET.encode() not in exported

    same = unchanged(tmp_path)
    for call in (note(session), defer(session), complete(session)):
        refused(call, "FILE_SYSTEM_ERROR", str(path), "hard link", "Nothing was changed")
        assert same()
    discarded = services.plan_discard(session_name=session.name, reason="dropped")
    assert "hard link" in discarded.file_notice
    assert SECRET not in "".join(Plan.objects.get(id=plan.id).sections().values())
    assert secret.read_text() == SECRET and os.stat(path).st_nlink == 2  # both names left alone


def test_a_linked_file_is_never_exported_shown_or_reported_valid(session, make_plan, sessions_dir, secret, reader):
    plan = make_plan(session)
    replace_with_link(plan_file(sessions_dir, plan), secret)

    response = token_client(reader).get(f"/api/sessions/{session.name}/export/")
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()  # the export is streamed
    assert SECRET not in body
    assert json.loads(body)["plans"][0]["file_text"] is None

    check = admin_reads.plan_file_check(plan)
    assert "symbolic link" in check.problem and not check.matches
    assert "symbolic link" in issues(session)
    assert SECRET not in str(export_import.export_session(session.name))


# --- a link in place of a folder -------------------------------------------------------------


@pytest.fixture(params=["plans folder", "session folder"])
def linked_folder(request, session, make_plan, sessions_dir, user_folder):
    """The session's plans folder (or whole folder) swapped for a link to a user's folder,
    with a queued plan in the database."""
    plan = make_plan(session)
    folder = sessions_dir / session.name
    if request.param == "plans folder":
        link = folder / "plans"
        (link / f"{plan.id}.txt").unlink()
        link.rmdir()
        os.symlink(user_folder, link)
    else:
        link = folder
        shutil.rmtree(folder)  # the plans folder and the files' bases
        os.symlink(user_folder, link)
        (user_folder / "plans").mkdir()
        (user_folder / "plans" / "thesis.txt").write_text("more work")
    return link


def test_nothing_is_written_through_a_linked_folder(session, linked_folder, user_folder, tmp_path, make_plan):
    same = unchanged(tmp_path)

    error = refused(lambda: make_plan(session, goal="Never written"), "FILE_SYSTEM_ERROR", "symbolic link")
    assert error.reason == errors.UNSAFE_FOLDER and "leaves it alone" in error.message
    assert same()
    refused(
        lambda: services.plan_enqueue_many(session_name=session.name, plans=[plan_fields(), plan_fields()]),
        "FILE_SYSTEM_ERROR",
        "symbolic link",
    )
    assert same()
    assert "symbolic link" in issues(session)


def test_the_repair_touches_nothing_through_a_linked_folder(session, linked_folder, user_folder, tmp_path):
    same = unchanged(tmp_path)

    actions = repair.repair_all(apply=True)

    assert [(a.kind, a.session) for a in actions] == [("left_alone", session.name)]
    assert "symbolic link" in actions[0].detail
    assert same()
    out = io.StringIO()
    with pytest.raises(CommandError, match="left alone"):
        call_command("repair", "--apply", stdout=out)
    assert "left alone:" in out.getvalue() and "symbolic link" in out.getvalue()
    assert same()
    assert not Event.objects.filter(kind="repaired").exists()


def test_a_pulled_plan_in_a_linked_folder_is_served_from_the_database(session, linked_folder, user_folder):
    before = listing(user_folder)
    pulled = services.plan_pull(session_name=session.name)

    body, notice = queries.plan_file_text(pulled)
    assert body == planfiles.render(pulled.sections())
    assert "symbolic link" in notice
    refused(note(session), "FILE_SYSTEM_ERROR", "symbolic link")
    discarded = services.plan_discard(session_name=session.name, reason="r")
    assert "symbolic link" in discarded.file_notice
    assert listing(user_folder) == before


# --- a FIFO or device in place of a plan file ------------------------------------------------


def test_a_fifo_never_blocks_and_is_left_alone(session, active, sessions_dir, tmp_path):
    path = plan_file(sessions_dir, active)
    replace_with_fifo(path)
    same = unchanged(tmp_path)

    for call in (note(session), defer(session), complete(session)):
        refused(call, "FILE_SYSTEM_ERROR", "FIFO", "Nothing was changed")
        assert same()
    assert "FIFO" in issues(session)
    assert export_import.export_session(session.name)["plans"][0]["file_text"] is None
    assert "FIFO" in admin_reads.plan_file_check(active).problem

    discarded = services.plan_discard(session_name=session.name, reason="stuck")

    assert "FIFO" in discarded.file_notice
    assert stat.S_ISFIFO(path.lstat().st_mode)
    assert Plan.objects.get(id=active.id).notes == ""
    # Now it is a stale entry: the repair reports it and leaves it.
    actions = repair.repair_all(apply=True)
    assert [(a.kind, a.target) for a in actions] == [("left_alone", path.name)]
    assert stat.S_ISFIFO(path.lstat().st_mode)


def test_a_fifo_in_place_of_a_queued_plans_file(session, make_plan, sessions_dir):
    plan = make_plan(session)
    replace_with_fifo(plan_file(sessions_dir, plan))

    pulled = services.plan_pull(session_name=session.name)

    body, notice = queries.plan_file_text(pulled)
    assert body == planfiles.render(pulled.sections()) and "FIFO" in notice
    assert stat.S_ISFIFO(plan_file(sessions_dir, plan).lstat().st_mode)


def test_a_backup_copies_neither_links_nor_fifos(session, make_plan, sessions_dir, secret, tmp_path, user_folder):
    kept = make_plan(session, goal="Backed up")
    linked = make_plan(session)
    replace_with_link(plan_file(sessions_dir, linked), secret)
    fifo = make_plan(session)
    replace_with_fifo(plan_file(sessions_dir, fifo))
    os.symlink(user_folder, sessions_dir / session.name / "elsewhere")

    target = backup.backup_create(destination=tmp_path / "backups")

    copied = listing(target / backup.SESSIONS_DIR)
    plans = f"{session.name}/plans"
    assert copied[f"{plans}/{kept.id}.txt"] == plan_file(sessions_dir, kept).read_bytes()
    assert f"{plans}/{linked.id}.txt" not in copied and f"{plans}/{fifo.id}.txt" not in copied
    assert not any("elsewhere" in key for key in copied)
    assert SECRET.encode() not in b"".join(v for v in copied.values() if isinstance(v, bytes))


# --- files too large -------------------------------------------------------------------------


def test_a_huge_plan_file_is_refused_by_name_and_the_database_kept(session, active, sessions_dir, tmp_path):
    path = plan_file(sessions_dir, active)
    services.plan_note(session_name=session.name, text="the last good notes")
    with path.open("ab") as fh:
        fh.write(b"x" * (50 * 1024 * 1024))
    same = unchanged(tmp_path)

    for call in (note(session), defer(session), complete(session)):
        error = refused(call, "VALIDATION_ERROR", str(path), "too large", "database kept", field="plan_file")
        assert "notes is" not in error.message and "nothing was changed" in error.message
        assert same()
    assert "active plan" in issues(session)

    size = path.stat().st_size
    discarded = services.plan_discard(session_name=session.name, reason="too big to keep")

    stored = Plan.objects.get(id=active.id)
    assert stored.status == "discarded" and stored.notes == "the last good notes"
    assert "too large" in discarded.file_notice and "preserved" in discarded.file_notice
    assert not path.exists()
    (kept,) = (sessions_dir / session.name / "preserved").iterdir()
    assert kept.stat().st_size == size  # moved, byte for byte, not read
    assert str(kept) in discarded.file_notice


def test_a_section_over_the_field_limit_in_the_file_is_refused(session, active, sessions_dir, settings, tmp_path):
    path = plan_file(sessions_dir, active)
    path.write_text(path.read_text().replace("# Goal\nModel invoices\n", "# Goal\n" + "g" * 100_000 + "\n"))
    same = unchanged(tmp_path)

    for call in (note(session), defer(session), complete(session)):
        refused(call, "VALIDATION_ERROR", "plan file", "Goal is 100000 characters", "at most 65536", field="plan_file")
        assert same()

    discarded = services.plan_discard(session_name=session.name, reason="r")
    assert Plan.objects.get(id=active.id).goal == "Model invoices"
    assert "Goal is 100000 characters" in discarded.file_notice
    assert len(list((sessions_dir / session.name / "preserved").iterdir())) == 1


def test_text_from_the_file_counts_towards_the_plan_limit(session, active, sessions_dir, settings, tmp_path):
    settings.NINEPLAN_MAX_PLAN_CHARS = 1000
    path = plan_file(sessions_dir, active)
    path.write_text(path.read_text() + "n" * 950 + "\n")
    same = unchanged(tmp_path)

    refused(
        note(session), "VALIDATION_ERROR", "plan file", "the plan's text would be", "at most 1000", field="plan_file"
    )
    assert same()


def test_a_file_within_the_limits_is_still_taken_in(session, active, sessions_dir, settings):
    settings.NINEPLAN_MAX_FIELD_CHARS = 500
    path = plan_file(sessions_dir, active)
    path.write_text(path.read_text() + "n" * 500 + "\n")

    services.plan_defer(session_name=session.name, reason="r")

    assert Plan.objects.get(id=active.id).notes.startswith("n" * 500 + "\n\nDeferred ")


def test_every_file_9plan_writes_is_under_the_read_cap(session, make_plan, sessions_dir, settings):
    settings.NINEPLAN_MAX_PLAN_CHARS = 700
    settings.NINEPLAN_MAX_FIELD_CHARS = 700
    # The widest text: four bytes a character, up to the whole plan limit.
    plan = make_plan(session, context="🎉" * 691, goal="g", approach="a", success_criteria="s")
    size = plan_file(sessions_dir, plan).stat().st_size
    assert size <= planfiles.read_cap()
    assert planfiles.read_plan_file(session.name, plan.id).usable


# --- bytes that are not UTF-8 ----------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", [b"caf\xe9 \xff\xfe agent line\n", b"agent\x00line with a NUL\n"], ids=["invalid", "nul"]
)
@pytest.mark.parametrize("step", ["note", "defer", "complete", "discard"])
def test_bytes_that_are_not_utf8_are_kept_as_written(session, active, sessions_dir, bad, step):
    path = plan_file(sessions_dir, active)
    services.plan_note(session_name=session.name, text="database notes")
    written = path.read_bytes() + bad
    path.write_bytes(written)

    calls = {
        "note": note(session),
        "defer": defer(session),
        "complete": complete(session),
        "discard": lambda: services.plan_discard(session_name=session.name, reason="r"),
    }
    plan = calls[step]()

    kept = list((sessions_dir / session.name / "preserved").iterdir())
    assert [p.read_bytes() for p in kept] == [written]
    assert str(kept[0]) in plan.file_notice
    assert ("NUL" if b"\x00" in bad else "not UTF-8") in plan.file_notice
    stored = Plan.objects.get(id=active.id)
    assert stored.notes.startswith("database notes")
    assert "\ufffd" not in stored.notes and "\x00" not in stored.notes
    assert Event.objects.get(plan=active, kind="file_edits_kept").detail["kept_as"] == f"preserved/{kept[0].name}"
    if step in ("note", "defer"):
        assert planfiles.read_plan_file(session.name, active.id).usable  # written again from the database


def test_a_stale_file_that_is_not_utf8_is_kept_aside_by_the_repair(session, complete_plan, sessions_dir):
    plan = complete_plan(session)
    written = b"# Notes\n\xff\xfe agent bytes\n"
    planfiles.write_file(session.name, plan.id, written)

    actions = repair.repair_all(apply=True)

    assert [a.kind for a in actions] == ["preserve"]
    (kept,) = (sessions_dir / session.name / "preserved").iterdir()
    assert kept.read_bytes() == written


# --- reading ahead of the write lock ---------------------------------------------------------


def test_an_edit_after_the_read_ahead_is_read_again(session, active, sessions_dir):
    path = plan_file(sessions_dir, active)
    ahead = file_edits.read_ahead(session.name)
    assert ahead.stem == active.id and ahead.read.usable
    path.write_text(path.read_text() + "written after the read ahead\n")

    fresh = file_edits.file_now(active, ahead)

    assert fresh.text.endswith("written after the read ahead\n")
    assert file_edits.file_now(active, file_edits.read_ahead(session.name)).text == fresh.text


# --- the queue length limit and defer --------------------------------------------------------


def test_a_defer_may_take_the_queue_one_past_its_limit(session, make_plan, settings):
    settings.NINEPLAN_MAX_QUEUE_LENGTH = 2
    make_plan(session)
    make_plan(session)
    services.plan_pull(session_name=session.name)
    make_plan(session)  # the queue is full again

    deferred = services.plan_defer(session_name=session.name, reason="set aside")

    assert deferred.place == 3
    assert queries.queue_length(session.name) == 3
    refused(lambda: make_plan(session), "VALIDATION_ERROR", field="queue")
