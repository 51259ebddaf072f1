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
@pytest.mark.serial
@pytest.mark.django_db(transaction=True)
def test_an_event_that_commits_after_a_higher_id_is_not_skipped(session, subprocess_env):
    """On PostgreSQL ids are drawn before commit: event N can commit after N+1. The feed
    waits for N's transaction instead of handing out N+1 and moving past N for good."""
    import threading

    from django.db import connection, connections

    holder = subprocess.Popen(
        [PYTHON, "-m", "tests.sessions_app.api_feed_holder", session.name],
        cwd=REPO,
        env={**subprocess_env, "DJANGO_SETTINGS_MODULE": "nineplan.settings"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        late_id = int(holder.stdout.readline())
        services.plan_enqueue(session_name=session.name, context="c", goal="g", approach="a", success_criteria="s")
        early = Event.objects.filter(session=session).order_by("-id").first()
        assert early.id > late_id  # committed first, with the higher id

        found: list[list[int]] = []

        def read() -> None:
            try:
                page = event_feed.events_after(after=0, limit=100, session=session)
                found.append([e.id for e in page.events])
            finally:
                connections.close_all()

        reader = threading.Thread(target=read)
        reader.start()
        # The reader is parked on the feed's lock while the holder's transaction is open.
        with connection.cursor() as cur:
            for _ in range(2000):
                cur.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
                if cur.fetchone()[0]:
                    break
                threading.Event().wait(0.01)
            else:
                pytest.fail("the reader never waited for the open transaction")
        assert reader.is_alive() and not found
        holder.stdin.write("commit\n")
        holder.stdin.flush()
        reader.join(timeout=60)
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    ids = found[0]
    assert late_id in ids and early.id in ids
    assert ids == sorted(ids)
