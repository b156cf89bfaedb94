"""Attempts are paged and retained: the history is read a page at a time and cannot grow without
bound (issue: ``/_emulator/attempts`` built the whole history in memory)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from support import RecordingTarget, nightly_job

from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.runtime.clock import ManualClock
from scheduler_emulator.runtime.emulator import Emulator
from scheduler_emulator.runtime.store import Store
from scheduler_emulator.runtime.transports import WsgiTransport

START = datetime(2026, 9, 24, 0, 0, 30, tzinfo=UTC)


@pytest.fixture
def busy(target: RecordingTarget) -> Emulator:
    emulator = Emulator(ManualClock(START), transport=WsgiTransport(target))
    emulator.create_job(nightly_job(name="a", schedule="* * * * *", retryConfig={}))
    emulator.create_job(nightly_job(name="b", schedule="*/2 * * * *", retryConfig={}))
    emulator.advance(timedelta(minutes=10))  # a: 10 attempts, b: 5
    yield emulator
    emulator.close()


def test_pages_walk_the_whole_history_in_start_order(busy: Emulator) -> None:
    seen, token = [], ""
    while True:
        page, token = busy.attempts_page(page_size=4, page_token=token)
        assert len(page) <= 4
        seen.extend(page)
        if not token:
            break
    assert [a.id for a in seen] == [a.id for a in busy.attempts()]
    assert len(seen) == 15


def test_filters_by_job_run_and_time_window(busy: Emulator) -> None:
    page, token = busy.attempts_page("b")
    assert token == "" and {a.job_id for a in page} == {"b"} and len(page) == 5
    [one] = busy.attempts_page(run_id=page[0].run_id)[0]
    assert one.id == page[0].id
    window, _ = busy.attempts_page(
        "a", start_after=START + timedelta(minutes=3), start_before=START + timedelta(minutes=5)
    )
    assert [a.schedule_time for a in window] == ["2026-09-24T00:04:00Z", "2026-09-24T00:05:00Z"]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"page_size": 0}, "pageSize"),
        ({"page_size": 1001}, "pageSize"),
        ({"page_token": "²"}, "pageToken"),
        ({"page_token": "9" * 5000}, "pageToken"),
        ({"page_token": "-1"}, "pageToken"),
    ],
)
def test_bad_paging_input_names_the_field(busy: Emulator, fields: dict, field: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        busy.attempts_page(**fields)
    assert info.value.violations[0].field == field


def test_retention_keeps_the_newest_attempts_and_those_in_flight(target: RecordingTarget) -> None:
    store = Store(":memory:", retain_attempts=50)
    emulator = Emulator(ManualClock(START), store=store, transport=WsgiTransport(target))
    emulator.create_job(nightly_job(name="a", schedule="* * * * *", retryConfig={}))
    emulator.advance(timedelta(minutes=2500))  # 2,500 attempts, retention every 1,000
    kept = emulator.attempts()
    assert len(kept) <= 50 + 1000
    assert kept[-1].schedule_time == "2026-09-25T17:40:00Z"  # the newest is always there
    assert len(target.requests) == 2500
    emulator.close()
