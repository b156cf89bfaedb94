"""No overlap follows the attempt's recorded end, also when a fault stretches it.

A run due while the one before is still going starts when that one ends (Google's rule); of
several times missed meanwhile only the earliest runs (our pinned rule).

Issue: on a manual clock a 360 s ``delay`` on run 1 at 12:00 of a ``*/5`` job recorded attempt 1
in flight until 12:06, yet run 2 started at 12:05:00.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_emulator import Emulator, ManualClock, WsgiTransport
from tests.support import RecordingTarget, nightly_job

NOON = datetime(2026, 9, 24, 12, 0, tzinfo=UTC)


@pytest.fixture
def noon_emulator(target: RecordingTarget) -> Emulator:
    emulator = Emulator(ManualClock(NOON - timedelta(seconds=30)), transport=WsgiTransport(target))
    yield emulator
    emulator.close()


def five_minutely(**overrides: Any) -> dict[str, Any]:
    return nightly_job(**{"name": "tick", "schedule": "*/5 * * * *", "retryConfig": {}} | overrides)


def starts(emulator: Emulator) -> list[tuple[str, str | None, str | None]]:
    return [
        (a.start_time.strftime("%H:%M:%S"), a.schedule_time, a.code)
        for a in emulator.attempts("tick")
    ]


@pytest.mark.parametrize("step", [timedelta(minutes=20), timedelta(seconds=30)])
def test_a_360_s_delay_holds_the_next_run_until_the_attempt_ends(
    noon_emulator: Emulator, step: timedelta
) -> None:
    noon_emulator.create_job(five_minutely(attemptDeadline="900s"))
    noon_emulator.faults.add(action="delay", job="tick", run=1, seconds=360)
    end = NOON + timedelta(minutes=12)
    while noon_emulator.now() < end:
        noon_emulator.advance(min(step, end - noon_emulator.now()))
    assert starts(noon_emulator) == [
        ("12:00:00", "2026-09-24T12:00:00Z", "OK"),
        ("12:06:00", "2026-09-24T12:05:00Z", "OK"),  # waited for run 1's end
        ("12:10:00", "2026-09-24T12:10:00Z", "OK"),
    ]
    first = noon_emulator.attempts("tick")[0]
    assert first.end_time == NOON + timedelta(seconds=360)


def test_a_deadline_fault_with_a_360_s_attempt_deadline_holds_the_next_run(
    noon_emulator: Emulator,
) -> None:
    noon_emulator.create_job(five_minutely(attemptDeadline="360s"))
    noon_emulator.faults.add(action="deadline", job="tick", run=1, seconds=0.05)
    noon_emulator.advance(timedelta(minutes=12))
    assert starts(noon_emulator) == [
        ("12:00:00", "2026-09-24T12:00:00Z", "DEADLINE_EXCEEDED"),
        ("12:06:00", "2026-09-24T12:05:00Z", "OK"),
        ("12:10:00", "2026-09-24T12:10:00Z", "OK"),
    ]


def test_while_the_stretched_attempt_runs_the_job_is_outstanding(noon_emulator: Emulator) -> None:
    noon_emulator.create_job(five_minutely(attemptDeadline="900s"))
    noon_emulator.faults.add(action="delay", job="tick", run=1, seconds=360)
    noon_emulator.advance(timedelta(minutes=5, seconds=30))  # 12:05:30: run 1 still going
    assert len(noon_emulator.attempts("tick")) == 1
    assert noon_emulator.skipped_runs() == []


def test_more_missed_slots_are_skipped_while_a_long_attempt_runs(noon_emulator: Emulator) -> None:
    noon_emulator.create_job(five_minutely(attemptDeadline="1800s"))
    noon_emulator.faults.add(action="delay", job="tick", run=1, seconds=760)  # ends 12:12:40
    noon_emulator.advance(timedelta(minutes=14))
    assert starts(noon_emulator)[:2] == [
        ("12:00:00", "2026-09-24T12:00:00Z", "OK"),
        ("12:12:40", "2026-09-24T12:05:00Z", "OK"),  # the earliest missed time
    ]
    assert [s.schedule_time for s in noon_emulator.skipped_runs()] == ["2026-09-24T12:10:00Z"]


def test_a_retry_spanning_a_slot_still_delays_the_next_run(
    noon_emulator: Emulator, target: RecordingTarget
) -> None:
    target.status = lambda received: 500 if len(target.requests) <= 3 else 200
    noon_emulator.create_job(
        five_minutely(retryConfig={"retryCount": 3, "minBackoffDuration": "120s"})
    )
    noon_emulator.advance(timedelta(minutes=16))
    assert starts(noon_emulator) == [
        ("12:00:00", "2026-09-24T12:00:00Z", "INTERNAL"),
        ("12:02:00", "2026-09-24T12:00:00Z", "INTERNAL"),
        ("12:06:00", "2026-09-24T12:00:00Z", "INTERNAL"),
        ("12:14:00", "2026-09-24T12:00:00Z", "OK"),
        ("12:14:00", "2026-09-24T12:05:00Z", "OK"),  # one delayed run for the earliest miss
        ("12:15:00", "2026-09-24T12:15:00Z", "OK"),
    ]
    assert [s.schedule_time for s in noon_emulator.skipped_runs()] == ["2026-09-24T12:10:00Z"]
