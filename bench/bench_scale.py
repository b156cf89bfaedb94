"""Scale: 10,000 jobs in one emulator on this machine (2 cores).

1. Creating 10,000 ``* * * * *`` jobs.
2. Manual clock: one virtual minute in which all 10,000 jobs fire (in-process no-op target):
   deliveries per second of the whole engine path (timer heap, request, store, log-free).
3. System clock: the same 10,000 jobs all due at the same real minute boundary, delivered by
   the engine thread and its pool to a no-op transport; how late each attempt started after
   its nominal instant (p50 / p99 / max). Every job firing in the same second is the worst
   case; real fleets spread their minutes.

Run: ``python bench/bench_scale.py [JOBS]``.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
import tracemalloc
from datetime import UTC, datetime, timedelta

from scheduler_emulator import Emulator, ManualClock, SystemClock
from scheduler_emulator.runtime.delivery.transports import DeliveryRequest, TransportResult

JOBS = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000


class NoOpTransport:
    """Answers 200 at once: measures the emulator, not a target."""

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        return TransportResult(status=200)

    def close(self) -> None:
        """Nothing to release."""


class ShiftedClock(SystemClock):
    """Real time shifted so that the next whole minute is ``lead`` seconds away."""

    def __init__(self, lead: float) -> None:
        real = super().now()
        boundary = real.replace(second=0, microsecond=0) + timedelta(minutes=1)
        self.shift = boundary - real - timedelta(seconds=lead)

    def now(self) -> datetime:
        return super().now() + self.shift


def create_jobs(emulator: Emulator) -> float:
    started = time.perf_counter()
    for i in range(JOBS):
        emulator.create_job(
            name=f"job-{i}",
            schedule="* * * * *",
            http_target={"uri": f"http://target.test/_triggers/timer/job-{i}"},
        )
    return time.perf_counter() - started


def traced_memory() -> int:
    """Peak bytes allocated while creating the jobs (tracemalloc slows creation: timed apart)."""
    tracemalloc.start()
    emulator = Emulator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), transport=NoOpTransport())
    create_jobs(emulator)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    emulator.close()
    return peak


def manual_minute() -> None:
    peak = traced_memory()
    emulator = Emulator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), transport=NoOpTransport())
    created = create_jobs(emulator)
    started = time.perf_counter()
    emulator.advance(timedelta(minutes=1))
    elapsed = time.perf_counter() - started
    assert len(emulator.attempts()) == JOBS
    print(
        f"create {JOBS} jobs                 : {created:6.2f} s ({created / JOBS * 1e6:.0f} us/job)"
    )
    print(f"traced memory after create       : {peak / 2**20:6.1f} MiB")
    print(
        f"manual clock, one minute         : {elapsed:6.2f} s ({JOBS / elapsed:,.0f} deliveries/s)"
    )
    emulator.close()


def system_minute() -> None:
    clock = ShiftedClock(lead=3.0)
    emulator = Emulator(clock, transport=NoOpTransport())
    create_jobs(emulator)
    boundary = emulator.list_jobs()[0].schedule_time
    assert boundary is not None
    emulator.start()
    done = threading.Event()
    deadline = time.monotonic() + 120
    while len(emulator.attempts()) < JOBS and time.monotonic() < deadline:
        done.wait(0.25)
    emulator.wait_idle(60)
    attempts = [a for a in emulator.attempts() if a.schedule_time is not None]
    emulator.close()
    late = sorted((a.start_time - boundary).total_seconds() for a in attempts)
    late = [x for x in late if x < 59]  # only the boundary's runs
    print(f"system clock, {len(late)} runs due at once:")
    p99 = late[int(len(late) * 0.99) - 1]
    print(f"  lateness p50 {statistics.median(late):.3f} s, p99 {p99:.3f} s, max {late[-1]:.3f} s")


if __name__ == "__main__":
    manual_minute()
    system_minute()
