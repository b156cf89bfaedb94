"""The engine on real time: fires within a second of the nominal instant, via its own thread."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scheduler_emulator import Emulator, SystemClock, WsgiTransport
from scheduler_emulator.runtime.pipeline import drivers
from tests.support import RecordingTarget, ShiftedClock, nightly_job, wait_for


def holding(arrived: Callable[[], object], release: threading.Event) -> WsgiTransport:
    """A transport to an app that calls ``arrived`` at each request, then answers 200 once
    ``release`` is set (10 s at most)."""

    def held(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        arrived()
        release.wait(10)
        start_response("200 OK", [])
        return [b""]

    return WsgiTransport(held)


def test_every_minute_job_fires_within_a_second_of_the_minute() -> None:
    clock = ShiftedClock(lead=0.5)
    target = RecordingTarget()
    with Emulator(clock, transport=WsgiTransport(target)) as emulator:
        job = emulator.create_job(nightly_job(schedule="* * * * *"))
        nominal = job.schedule_time
        assert nominal is not None
        # The attempt row appears when the attempt is queued; wait for its end.
        assert wait_for(
            lambda: any(a.end_time is not None for a in emulator.attempts()), bound_seconds=10
        )
        [attempt, *_] = emulator.attempts()
    assert attempt.schedule_time == nominal.strftime("%Y-%m-%dT%H:%M:00Z")
    lateness = (attempt.start_time - nominal).total_seconds()
    assert 0 <= lateness < 1.0
    assert attempt.code == "OK"


def test_run_job_on_the_system_clock_is_delivered_by_the_engine_thread() -> None:
    target = RecordingTarget()
    with Emulator(SystemClock(), transport=WsgiTransport(target)) as emulator:
        emulator.create_job(nightly_job())
        emulator.run_job("nightly")
        assert wait_for(lambda: len(target.requests) == 1, bound_seconds=10)
        assert emulator.wait_idle(10)
        assert [a.forced for a in emulator.attempts()] == [True]


def test_an_attempt_in_flight_has_the_start_its_finished_record_keeps() -> None:
    """The threaded driver queues an attempt, then stamps its start when it leaves: the
    attempt read while the target holds it starts when the finished record says it did."""
    arrived, release = threading.Event(), threading.Event()
    with Emulator(SystemClock(), transport=holding(arrived.set, release)) as emulator:
        emulator.create_job(nightly_job())
        emulator.run_job("nightly")
        assert arrived.wait(10)
        [in_flight] = emulator.attempts("nightly")
        release.set()
        assert emulator.wait_idle(10)
        [finished] = emulator.attempts("nightly")
    assert (in_flight.end_time, finished.code) == (None, "OK")
    assert in_flight.start_time == finished.start_time


def test_the_jobs_last_attempt_time_is_its_latest_attempts_start() -> None:
    """The job's ``lastAttemptTime`` and its attempt's ``startTime`` name the same instant,
    though the threaded driver stamps the start again when the attempt leaves the queue."""
    target = RecordingTarget()
    with Emulator(SystemClock(), transport=WsgiTransport(target)) as emulator:
        emulator.create_job(nightly_job())
        for _ in range(3):
            emulator.run_job("nightly")
            assert emulator.wait_idle(10)
            assert (
                emulator.get_job("nightly").last_attempt_time == emulator.attempts()[-1].start_time
            )


def test_a_stop_during_a_large_due_batch_ends_it_at_a_slice_and_closes_cleanly(
    tmp_path: Path,
) -> None:
    """A stop while the engine thread records a batch of thousands due at one instant waits
    for the slice under way and records no more (the daemon stopped mid-burst printed
    'Cannot operate on a closed database' from the engine thread, which went on recording
    after the store closed)."""
    slice_size = drivers._SLICE
    errors: list[BaseException | None] = []
    in_second_slice, release = threading.Event(), threading.Event()
    emulator = Emulator(ShiftedClock(lead=3.0), data_dir=tmp_path, transport=WsgiTransport(
        RecordingTarget()))  # fmt: skip
    for index in range(3 * slice_size):
        emulator.create_job(nightly_job(name=f"job-{index}", schedule="* * * * *"))
    add_attempt, added = emulator.store.add_attempt, itertools.count(1)

    def held_add_attempt(attempt: Any) -> Any:
        if next(added) == slice_size + 1:
            in_second_slice.set()
            release.wait(20)
        return add_attempt(attempt)

    emulator.store.add_attempt = held_add_attempt  # type: ignore[method-assign]
    emulator.start()
    previous_hook = threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)
    try:
        assert in_second_slice.wait(20)
        engine = emulator.driver._thread
        assert engine is not None
        stopper = threading.Thread(target=emulator.stop, kwargs={"timeout": 0.1})
        stopper.start()
        wait_for(lambda: emulator.driver._stopping.is_set(), 10, "the stop to begin")
        release.set()
        stopper.join(30)
        engine.join(30)
        [(recorded,)] = emulator.store.query("SELECT COUNT(*) FROM attempts")
        emulator.close()
    finally:
        release.set()
        threading.excepthook = previous_hook
    assert not stopper.is_alive() and not engine.is_alive()
    assert errors == []
    # The slice under way (a job's attempt and its next fire time: two decisions) was finished
    # and none after it was recorded.
    assert recorded == slice_size + slice_size // 2


def test_an_end_is_recorded_at_the_instant_its_answer_came(monkeypatch: Any) -> None:
    """The engine thread records ends after the due batch it is sending, each at the instant
    the answer came: ``now`` less the real seconds since. The threads that send here read a
    monotonic clock 30 s behind the engine thread's, so the answer came 30 s before it is
    recorded."""
    real = drivers.real_monotonic

    def monotonic() -> float:
        return real() - (0.0 if threading.current_thread().name == "scheduler-engine" else 30.0)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        start_response("200 OK", [])
        return [b""]

    monkeypatch.setattr(drivers, "real_monotonic", monotonic)
    clock = SystemClock()
    with Emulator(clock, transport=WsgiTransport(app)) as emulator:
        emulator.create_job(nightly_job())
        emulator.run_job("nightly")
        assert emulator.wait_idle(10)
        recorded_by = clock.now()
        [attempt] = emulator.attempts("nightly")
    assert attempt.end_time is not None and attempt.code == "OK"
    assert 29.0 < (recorded_by - attempt.end_time).total_seconds() < 31.0


def test_a_deadline_faults_late_answer_is_noted_on_the_system_clock_too() -> None:
    """A trial's service answered a ``deadline`` fault's request 2 s late; on the system clock
    the answer never reached the record (on a manual clock it did), so its retry read as no
    duplicate."""
    release = threading.Event()

    def late(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        release.wait(30)
        start_response("200 OK", [])
        return [b"done"]

    with Emulator(SystemClock(), transport=WsgiTransport(late)) as emulator:
        emulator.create_job(nightly_job())
        emulator.faults.add(action="deadline", seconds=0.1, job="nightly", run=1)
        emulator.run_job("nightly", wait=False)
        assert emulator.wait_idle(10)
        [cut] = emulator.store.attempts()  # as recorded (it reads in flight to its deadline)
        assert cut.code == "DEADLINE_EXCEEDED" and "late answer" not in cut.debug_info
        release.set()
        [noted] = wait_for(
            lambda: [a for a in emulator.store.attempts() if "late" in a.debug_info], 10
        )
    assert noted.debug_info.endswith(
        "The target's late answer: URL_CRAWLED. Original HTTP response code number = 200"
    )


def test_an_injected_delay_and_duplicates_are_timed_as_they_were_sent() -> None:
    """A trial read a duplicate with its original's start and TOOK; and a real-time ``delay``
    was counted twice (waited, then added to the end again: 1 s read 2 s, in flight the while).
    Each attempt now ends when it did; each copy starts once the one before was answered."""

    def slow(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        threading.Event().wait(0.2)  # the target's own work
        start_response("200 OK", [])
        return [b"ok"]

    with Emulator(SystemClock(), transport=WsgiTransport(slow)) as emulator:
        emulator.create_job(nightly_job())
        emulator.faults.add(action="delay", seconds=1.0, job="nightly", run=1)
        emulator.faults.add(action="duplicate", count=2, job="nightly", run=2)
        for _ in range(2):
            emulator.run_job("nightly", wait=False)
            assert emulator.wait_idle(10)
        attempts = emulator.attempts()
    took = [(a.end_time - a.start_time).total_seconds() for a in attempts if a.end_time]
    assert len(took) == 4 and 1.2 <= took[0] < 2.0, took  # 1 s delay + 0.2 s answer
    assert all(0.2 <= t < 0.55 for t in took[1:]), took  # each its own answer
    original, *copies = attempts[1:]
    assert original.end_time <= copies[0].start_time and copies[0].end_time <= copies[1].start_time


def test_attempts_waiting_behind_their_job_are_not_sent_after_it_is_deleted() -> None:
    """Trial 199: six RunJobs of a job whose target holds each request, then DeleteJob: the two
    waiting behind the four in flight (the per-job limit) were sent when places freed, 15 s
    after the delete. They are now recorded as not sent, at once (trial 203: they waited in
    flight until a place freed)."""
    arrived, release = threading.Semaphore(0), threading.Event()
    with Emulator(SystemClock(), transport=holding(arrived.release, release)) as emulator:
        emulator.create_job(nightly_job())
        for _ in range(6):
            emulator.run_job("nightly", wait=False)
        for _ in range(4):
            assert arrived.acquire(timeout=10)
        emulator.delete_job("nightly")
        ended = lambda: [a.code for a in emulator.attempts() if a.code]  # noqa: E731
        wait_for(lambda: ended() == ["CANCELLED"] * 2, 5, "the two not sent to end")
        assert len(emulator.attempts()) == 6  # (the four in flight are still held)
        release.set()
        assert emulator.wait_idle(10)
        attempts = emulator.attempts()
    assert not arrived.acquire(timeout=0)  # the target saw four requests, not six
    assert [a.code for a in attempts] == ["OK"] * 4 + ["CANCELLED"] * 2
    assert (
        attempts[-1].debug_info == "NOT_SENT-JOB_DELETED. The job was deleted before it was sent."
    )
