"""The engine contract: what every driver must do alike. Each test runs on the manual driver
(a manual clock, deliveries in the caller's thread) and on the threaded driver (the system
clock, an engine thread that also records the ends, and a delivery pool)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler_emulator import ClockError, Emulator, ManualClock, SystemClock
from scheduler_emulator.domain.attempts import Attempt
from scheduler_emulator.runtime import DeliveryRequest, TransportResult, WsgiTransport
from scheduler_emulator.runtime.pipeline.drivers import ManualDriver, ThreadedDriver
from tests.support import RecordingTarget, nightly_job, wait_for


class Engines:
    """Builds emulators on one driver and waits for them to settle."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.made: list[Emulator] = []

    def __call__(self, target: Any, **settings: Any) -> Emulator:
        transport = target if hasattr(target, "send") else WsgiTransport(target)
        clock = ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))
        emulator = Emulator(
            clock if self.kind == "manual" else SystemClock(), transport=transport, **settings
        )
        self.made.append(emulator.start())
        return emulator

    def settled(self, emulator: Emulator, attempts: int) -> list[Attempt]:
        """The attempts once ``attempts`` of them have ended and nothing is in flight."""
        assert wait_for(
            lambda: sum(a.end_time is not None for a in emulator.attempts()) >= attempts, 10
        )
        assert emulator.wait_idle(10)
        return emulator.attempts()


@pytest.fixture(params=["manual", "threaded"])
def engines(request: pytest.FixtureRequest) -> Iterator[Engines]:
    made = Engines(request.param)
    yield made
    for emulator in made.made:
        emulator.close()


def test_the_driver_is_chosen_once_from_the_clock(engines: Engines) -> None:
    emulator = engines(RecordingTarget())
    expected = ManualDriver if engines.kind == "manual" else ThreadedDriver
    assert type(emulator.driver) is expected


def test_a_forced_run_is_delivered_once_and_recorded(engines: Engines) -> None:
    target = RecordingTarget()
    emulator = engines(target)
    emulator.create_job(nightly_job())
    emulator.run_job("nightly")
    [attempt] = engines.settled(emulator, 1)
    assert (attempt.code, attempt.response_status, attempt.forced) == ("OK", 200, True)
    [request] = target.requests
    assert request.headers["X-Cloudscheduler-Jobname"] == "nightly"
    assert emulator.get_job("nightly").status.code == 0
    assert emulator.in_flight == 0


def test_a_failed_attempt_sets_the_job_status(engines: Engines) -> None:
    emulator = engines(RecordingTarget(status=500))
    emulator.create_job(nightly_job(retryConfig={}))
    emulator.run_job("nightly")
    [attempt] = engines.settled(emulator, 1)
    assert (attempt.code, attempt.response_status) == ("INTERNAL", 500)
    assert emulator.get_job("nightly").status.code == 13


def test_an_injected_status_does_not_call_the_target(engines: Engines) -> None:
    target = RecordingTarget()
    emulator = engines(target)
    emulator.faults.add(action="status", status=404)
    emulator.create_job(nightly_job(retryConfig={}))
    emulator.run_job("nightly")
    [attempt] = engines.settled(emulator, 1)
    assert (attempt.code, attempt.injected, target.requests) == ("NOT_FOUND", True, [])


def test_a_kind_without_a_dispatcher_is_recorded_not_sent(engines: Engines) -> None:
    target = RecordingTarget()
    emulator = engines(target)
    del emulator.dispatchers["HTTP"]
    emulator.create_job(nightly_job(retryConfig={}))
    emulator.run_job("nightly")
    [attempt] = engines.settled(emulator, 1)
    assert attempt.code == "FAILED_PRECONDITION" and "does not deliver HTTP" in attempt.debug_info
    assert target.requests == []


def test_a_transport_bug_is_recorded_and_counted(engines: Engines) -> None:
    class Broken:
        def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
            raise RuntimeError("boom")

        def close(self) -> None:
            pass

    emulator = engines(Broken())
    emulator.create_job(nightly_job(retryConfig={}))
    emulator.run_job("nightly")
    [attempt] = engines.settled(emulator, 1)
    assert attempt.code == "UNKNOWN" and "RuntimeError('boom')" in attempt.debug_info
    assert emulator.recorder.error_count == 1
    assert isinstance(emulator.recorder.last_error, RuntimeError)


def test_a_fault_plan_bug_is_recorded_on_its_attempt_not_left_in_flight(
    engines: Engines, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial's rule with ``job: null`` made deciding the faults raise: the clock move
    answered 500 and the attempt read in flight for good, its job's runs skipped behind it."""
    emulator = engines(RecordingTarget())
    emulator.faults.add(action="duplicate")

    def broken(*args: object) -> list[object]:
        raise TypeError("object of type 'NoneType' has no len()")

    monkeypatch.setattr(emulator.faults, "decide", broken)
    emulator.create_job(nightly_job(retryConfig={}))
    emulator.run_job("nightly")
    [attempt] = engines.settled(emulator, 1)
    assert attempt.code == "UNKNOWN" and "has no len()" in attempt.debug_info


def test_the_log_has_a_start_and_an_end_per_attempt(engines: Engines) -> None:
    from io import StringIO

    from scheduler_emulator.runtime.storage.attempt_log import AttemptLog

    stream = StringIO()
    emulator = engines(RecordingTarget(), attempt_log=AttemptLog(stream, format="json"))
    emulator.create_job(nightly_job())
    emulator.run_job("nightly")
    engines.settled(emulator, 1)
    emulator.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert "AttemptStarted" in lines[0] and "AttemptFinished" in lines[1]


def test_a_log_that_cannot_be_written_stops_no_attempt(engines: Engines) -> None:
    """The execution log's file gone or its disk full: the attempt is sent and recorded as
    usual; each line not written is counted as an emulator error."""
    from io import StringIO

    from scheduler_emulator.runtime.storage.attempt_log import AttemptLog

    class Full(StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    target = RecordingTarget()
    emulator = engines(target, attempt_log=AttemptLog(Full(), format="json"))
    emulator.create_job(nightly_job(retryConfig={}))
    emulator.run_job("nightly")
    [attempt] = engines.settled(emulator, 1)
    assert (attempt.code, len(target.requests)) == ("OK", 1)
    assert emulator.get_job("nightly").status.code == 0
    assert emulator.recorder.error_count == 2  # AttemptStarted and AttemptFinished
    assert "No space left" in str(emulator.recorder.last_error)


def test_stop_with_nothing_in_flight_interrupts_nothing(engines: Engines) -> None:
    emulator = engines(RecordingTarget())
    emulator.create_job(nightly_job())
    emulator.run_job("nightly")
    engines.settled(emulator, 1)
    assert emulator.stop(5) == 0
    assert emulator.stop(5) == 0  # idempotent
    assert [a.code for a in emulator.attempts()] == ["OK"]


def test_only_the_manual_driver_moves_time_by_hand(engines: Engines) -> None:
    emulator = engines(RecordingTarget())
    emulator.create_job(nightly_job())
    if engines.kind == "manual":
        assert emulator.clock_mode == "manual"
        emulator.advance(timedelta(minutes=2))  # 02:00 falls due on the way
        assert [a.code for a in emulator.attempts()] == ["OK"]
    else:
        assert emulator.clock_mode == "system"
        with pytest.raises(ClockError, match="runs on the system clock") as refused:
            emulator.advance(timedelta(minutes=2))
        # the daemon's flag and the library's class, not the class for both (a trial's CLI)
        assert "(scheduler-emulator start --clock manual; Emulator(ManualClock(" in str(
            refused.value
        )
        with pytest.raises(ClockError, match="runs on the system clock"):
            emulator.reset_clock(datetime(2026, 1, 1, tzinfo=UTC))
