"""Cost of the pytest plugin's façades and of a virtual-clock test.

1. A Cloud Run-style façade call (``timers.nightly()``) vs a bare ``werkzeug.test.Client.post``
   with the same headers, to the same ``TimerRouter`` app. Target: at most 1.3x.
2. A ``cloud_scheduler`` test body: create a ``*/5 * * * *`` job against a mounted app and
   advance one virtual day (288 in-process deliveries, freezegun included). Target: < 0.1 s.

Run: ``python bench/bench_plugin.py``.
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta

from werkzeug.test import Client

from pytest_plugin.facades import CloudRunTimers
from pytest_plugin.scheduler import CloudScheduler
from scheduler_emulator.service import TimerRouter

N = 3000
ROUNDS = 5


def make_app() -> TimerRouter:
    router = TimerRouter()

    @router.timer("nightly")
    def nightly() -> None:
        """A handler that does nothing."""

    return router


def bench_client(app: TimerRouter) -> float:
    client = Client(app)
    headers = CloudRunTimers(app).headers("nightly")
    started = time.perf_counter()
    for _ in range(N):
        client.post("/_triggers/timer/nightly", headers=headers)
    return (time.perf_counter() - started) / N


def bench_facade(app: TimerRouter) -> float:
    timers = CloudRunTimers(app)
    started = time.perf_counter()
    for _ in range(N):
        timers.nightly()
    return (time.perf_counter() - started) / N


def bench_virtual_day() -> float:
    app = make_app()
    started = time.perf_counter()
    scheduler = CloudScheduler(datetime(2026, 1, 1, tzinfo=UTC))
    scheduler.mount("http://orders.test", app)
    scheduler.create_job(
        name="nightly",
        schedule="*/5 * * * *",
        http_target={"uri": "http://orders.test/_triggers/timer/nightly"},
    )
    scheduler.advance(timedelta(days=1))
    elapsed = time.perf_counter() - started
    assert len(scheduler.attempts("nightly")) == 288
    scheduler.close()
    return elapsed


def main() -> None:
    app = make_app()
    client = statistics.median(bench_client(app) for _ in range(ROUNDS)) * 1e6
    facade = statistics.median(bench_facade(app) for _ in range(ROUNDS)) * 1e6
    print(f"werkzeug Client.post, same headers : {client:7.1f} us per call")
    print(f"Cloud Run-style façade call        : {facade:7.1f} us per call")
    print(f"ratio façade / client              : {facade / client:7.2f}x  (target <= 1.3x)")
    days = [bench_virtual_day() for _ in range(ROUNDS)]
    print(
        f"cloud_scheduler: create + one day of */5 (288 deliveries): "
        f"median {statistics.median(days) * 1e3:.1f} ms, max {max(days) * 1e3:.1f} ms "
        "(target < 100 ms)"
    )


if __name__ == "__main__":
    main()
