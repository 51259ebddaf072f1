"""The event feed: an opaque cursor, every event exactly once and in order, also while
another process is writing."""

from __future__ import annotations

import base64
import subprocess

import pytest

from sessions_app import services
from sessions_app.models import Event
from sessions_app.store import event_feed
from tests.conftest import PYTHON, REPO
from tests.sessions_app.api_fixtures import (  # noqa: F401  (fixtures)
    PROBLEM,
    api,
    fill_session,
    full_session,
    reader,
    token_client,
)


def follow(client, query: str = "", page_size: int = 7) -> tuple[list[dict], str]:
    """Reads the feed from the start until it is drained; returns the events and the last cursor."""
    seen: list[dict] = []
    url = f"/api/events/?page_size={page_size}{query}"
    while True:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        seen += body["results"]
        url = body["next"]
        if not body["has_more"]:
            return seen, body["next_cursor"]


@pytest.mark.django_db
def test_the_feed_hands_out_every_event_once_in_order(api, full_session):
    events, cursor = follow(api)
    expected = list(Event.objects.order_by("id").values_list("id", "kind", "plan_id", "session_id"))
    assert [(e["id"], e["kind"], e["plan"], e["session"]) for e in events] == expected
    assert event_feed.decode_cursor(cursor) == expected[-1][0]
    # Nothing new: the same cursor comes back with no events.
    again = api.get(f"/api/events/?after={cursor}").json()
    assert again["results"] == [] and again["next_cursor"] == cursor and again["has_more"] is False
    services.plan_note(session_name=full_session.name, text="late")
    late = api.get(f"/api/events/?after={cursor}").json()
    assert [e["kind"] for e in late["results"]] == ["plan_note"]
    assert late["results"][0]["cursor"] == late["next_cursor"]


@pytest.mark.django_db
def test_the_feed_pages_by_page_size_and_its_next_link_keeps_it(api, full_session):
    assert Event.objects.count() > 5
    first = api.get("/api/events/?page_size=5").json()
    assert [e["id"] for e in first["results"]] == list(Event.objects.order_by("id").values_list("id", flat=True)[:5])
    assert first["has_more"] is True and "page_size=5" in first["next"]
    second = api.get(first["next"]).json()
    assert [e["id"] for e in second["results"]] == list(Event.objects.order_by("id").values_list("id", flat=True)[5:10])


@pytest.mark.django_db
def test_the_feed_answers_at_most_100_events_a_read(api, full_session):
    for i in range(100):
        services.plan_note(session_name=full_session.name, text=f"step {i}")
    assert Event.objects.count() > 100
    assert len(api.get("/api/events/").json()["results"]) == 100
    assert len(api.get("/api/events/?page_size=100").json()["results"]) == 100
    refused = api.get("/api/events/?page_size=101")
    assert refused.status_code == 400 and refused.json()["parameter"] == "page_size"


@pytest.mark.django_db
def test_the_feed_narrows_to_a_session_or_a_plan(api, full_session):
    other = fill_session(services.session_create(task_description="other"), queued=1, completed=1, discarded=0)
    mine, _ = follow(api, f"&session={full_session.name}")
    assert {e["session"] for e in mine} == {full_session.name}
    assert [e["id"] for e in mine] == list(Event.objects.filter(session=full_session).values_list("id", flat=True))
    plan = other.plans.filter(status="completed").first()
    theirs, _ = follow(api, f"&plan={plan.id}")
    assert [e["kind"] for e in theirs] == ["plan_created", "plan_pulled", "plan_completed"]
    both, _ = follow(api, f"&session={other.name}&plan={plan.id}")
    assert both == theirs


@pytest.mark.django_db
@pytest.mark.parametrize(
    "after",
    [
        "zzz",
        "",
        "1",
        "-1",
        base64.urlsafe_b64encode(b"\x02" + (5).to_bytes(8, "big")).decode(),  # a future version
        base64.urlsafe_b64encode(b"\x01" + (2**63).to_bytes(8, "big")).decode(),  # beyond any id
        base64.urlsafe_b64encode(b"\x01" + (5).to_bytes(8, "big")).decode() + "=",
        base64.urlsafe_b64encode(b"\x01" + (5).to_bytes(8, "big")).decode() + "%0A",
        base64.urlsafe_b64encode(b"\x01" + (5).to_bytes(8, "big")).decode()[:-1],
        "AQAAAAAAAA+A",
        "%00",
        "a" * 65,
    ],
)
def test_a_bad_cursor_is_a_400_naming_after(api, full_session, after):
    response = api.get(f"/api/events/?after={after}")
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["category"] == "VALIDATION_ERROR" and body["parameter"] == "after"
    assert "after" in body["detail"] and "next_cursor" in body["detail"]


def test_cursors_round_trip_and_match_the_published_pattern():
    import re

    for n in (0, 1, 42, 10**12, 2**63 - 1):
        token = event_feed.encode_cursor(n)
        assert event_feed.decode_cursor(token) == n
        assert re.fullmatch(event_feed.CURSOR_PATTERN[1:-1], token)
        assert str(n) not in token or n < 10


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.django_db(transaction=True)
def test_a_follower_sees_every_event_exactly_once_while_another_process_writes(
    reader, session, subprocess_env, tmp_path
):
    client = token_client(reader)
    rounds = 40
    stderr = open(tmp_path / "writer.stderr", "w+")
    writer = subprocess.Popen(
        [PYTHON, "-m", "tests.sessions_app.api_feed_writer", session.name, str(rounds)],
        cwd=REPO,
        env={**subprocess_env, "DJANGO_SETTINGS_MODULE": "nineplan.settings"},
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    try:
        assert writer.stdout.readline().strip() == "ready"
        seen: list[dict] = []
        cursor = None
        reads_while_writing = 0
        while True:
            finished = writer.poll() is not None
            url = f"/api/events/?session={session.name}&page_size=5" + (f"&after={cursor}" if cursor else "")
            body = client.get(url).json()
            seen += body["results"]
            cursor = body["next_cursor"]
            if not finished:
                reads_while_writing += 1
            elif not body["has_more"]:
                break
        assert writer.wait(timeout=60) == 0
        assert writer.stdout.read().strip() == f"done {rounds}"
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        stderr.seek(0)
        errors = stderr.read()
        stderr.close()
    assert "Traceback" not in errors, errors

    ids = [e["id"] for e in seen]
    assert ids == sorted(set(ids)), "events repeated or out of order"
    stored = list(Event.objects.filter(session=session).order_by("id").values_list("id", "kind"))
    assert [(e["id"], e["kind"]) for e in seen] == stored
    # session_created, then per round: 2 created, pulled, note, completed.
    assert len(stored) == 1 + rounds * 5
    assert reads_while_writing > 1


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_feed_read_during_a_long_write_blocks_no_writer_and_skips_nothing(session, subprocess_env):
    """On PostgreSQL ids are drawn before commit: event N can commit after N+1. While one
    process holds a long write (as an import does), a feed read answers at once without
    N+1, and a third process's writes in another project go through before the long write
    ends; once it commits, the feed hands out N and N+1 in order."""
    import threading

    from django.db import connection, connections

    services.project_create(name="elsewhere")
    other = services.session_create(task_description="Another team's work", project="elsewhere")
    env = {**subprocess_env, "DJANGO_SETTINGS_MODULE": "nineplan.settings"}
    holder = subprocess.Popen(
        [PYTHON, "-m", "tests.sessions_app.api_feed_holder", session.name],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    writer = None
    try:
        late_id = int(holder.stdout.readline())
        services.plan_enqueue(session_name=session.name, context="c", goal="g", approach="a", success_criteria="s")
        early = Event.objects.filter(session=session).order_by("-id").first()
        assert early.id > late_id  # committed first, with the higher id

        found: list[list[int]] = []

        def read() -> None:
            try:
                page = event_feed.events_after(after=0, limit=100)
                found.append([e.id for e in page.events])
            finally:
                connections.close_all()

        reader = threading.Thread(target=read)
        reader.start()
        # Until the reader has answered or queued for a lock, the writer must not start:
        # a reader that queued for an exclusive lock would hold up every writer behind it.
        with connection.cursor() as cur:
            for _ in range(2000):
                cur.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
                if cur.fetchone()[0] or not reader.is_alive():
                    break
                threading.Event().wait(0.01)
        writer = subprocess.Popen(
            [PYTHON, "-m", "tests.sessions_app.api_feed_writer", other.name, "1"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        # The writer finishes while the long write is still open (it has not been told to
        # commit); a reader parked on a lock would keep the writer waiting here for good.
        assert writer.wait(timeout=120) == 0
        assert writer.stdout.read().split() == ["ready", "done", "1"]
        assert holder.poll() is None
        assert not Event.objects.filter(id=late_id).exists()
        reader.join(timeout=60)
        assert not reader.is_alive()
        first = found[0]
        assert late_id not in first and early.id not in first
        assert all(i < late_id for i in first)
        holder.stdin.write("commit\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "committed"
        assert holder.wait(timeout=60) == 0
    finally:
        for proc in (holder, writer):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    after = first[-1] if first else 0
    rest = [e.id for e in event_feed.events_after(after=after, limit=1000).events]
    assert late_id in rest and early.id in rest
    assert first + rest == list(Event.objects.order_by("id").values_list("id", flat=True))
    # The other project's events, written during the long write, come out too.
    assert Event.objects.filter(session=other).count() == 6
    assert set(Event.objects.filter(session=other).values_list("id", flat=True)) <= set(first + rest)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_writer_keeps_one_feed_lock_per_transaction_and_a_rolled_back_savepoint_takes_it_back(session):
    """A transaction writing events in many batches holds one feed lock whose floor is
    below its first id; a savepoint rolled back drops the lock taken under it."""
    from django.db import connection, transaction

    def feed_locks() -> list[int]:
        with connection.cursor() as cur:
            cur.execute(
                "SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks "
                "WHERE locktype = 'advisory' AND objsubid = 1 AND pid = pg_backend_pid()"
            )
            return [k - event_feed.FLOOR_KEY_BASE for (k,) in cur.fetchall()]

    before = Event.objects.order_by("-id").values_list("id", flat=True).first()
    with transaction.atomic():
        with transaction.atomic():
            Event.objects.create(session=session, kind=Event.Kind.REPAIRED, actor="t", detail={})
            assert feed_locks() == [before]
            transaction.set_rollback(True)
        assert feed_locks() == []
        first = Event.objects.create(session=session, kind=Event.Kind.REPAIRED, actor="t", detail={})
        for _ in range(3):
            event_feed.before_event_write()
            Event.objects.bulk_create([Event(session=session, kind=Event.Kind.REPAIRED, actor="t", detail={})])
        [floor] = feed_locks()
        assert before <= floor < first.id
        # The writer's own transaction already sees its events: its own lock holds nothing back.
        assert event_feed.committed_up_to() == Event.objects.order_by("-id").values_list("id", flat=True).first()
    assert feed_locks() == []
    assert event_feed.committed_up_to() == Event.objects.order_by("-id").values_list("id", flat=True).first()
