"""The engine on real time: fires within a second of the nominal instant, via its own thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from support import RecordingTarget, nightly_job

from scheduler_emulator.runtime.clock import SystemClock, real_monotonic
from scheduler_emulator.runtime.emulator import Emulator
from scheduler_emulator.runtime.transports import WsgiTransport


class ShiftedClock(SystemClock):
    """Real time shifted so that the next whole minute is ``lead`` seconds away."""

    def __init__(self, lead: float) -> None:
        real = super().now()
        boundary = real.replace(second=0, microsecond=0) + timedelta(minutes=1)
        self.shift = boundary - real - timedelta(seconds=lead)

    def now(self) -> datetime:
        return super().now() + self.shift


def wait_for(condition: Callable[[], bool], bound_seconds: float) -> bool:
    """Poll ``condition`` every 20 ms for at most ``bound_seconds``."""
    deadline = real_monotonic() + bound_seconds
    tick = threading.Event()  # never set: wait() is a bounded pause between polls
    while not condition():
        if real_monotonic() > deadline:
            return False
        tick.wait(0.02)
    return True


def test_every_minute_job_fires_within_a_second_of_the_minute() -> None:
    clock = ShiftedClock(lead=0.5)
    target = RecordingTarget()
    with Emulator(clock, transport=WsgiTransport(target)) as emulator:
        job = emulator.create_job(nightly_job(schedule="* * * * *"))
        nominal = job.schedule_time
        assert nominal is not None
        assert wait_for(lambda: len(emulator.attempts()) >= 1, bound_seconds=10)
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
        assert emulator.engine.wait_idle(10)
        assert [a.forced for a in emulator.attempts()] == [True]
