"""The one clock and the one way a time is written (sessions_app/clock.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from sessions_app import clock


def test_a_time_is_written_in_utc_to_the_second_whatever_its_zone():
    at = datetime(2026, 12, 1, 21, 13, 15, 999_999, tzinfo=timezone(timedelta(hours=1)))
    assert clock.utc_text(at) == "2026-12-01 20:13:15 UTC"


def test_no_time_is_a_question_mark():
    assert clock.utc_text(None) == "?"


def test_now_is_aware_and_in_utc():
    before = datetime.now(UTC)
    now = clock.now()
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)
    assert before <= now <= datetime.now(UTC)


def test_stopped_at_holds_the_time_inside_the_block_only():
    from datetime import UTC, datetime

    from sessions_app import clock

    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    with clock.stopped_at(at):
        assert clock.now() == at
    assert clock.now() > at
