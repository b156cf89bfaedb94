"""Cost of one in-process delivery vs a bare ``werkzeug.test.Client.post``.

One delivery = the schedule fires on a manual clock → the request is built → the WSGI app is
called in-process → the attempt is recorded (in-memory SQLite). The baseline posts the same
headers to the same app with werkzeug's test client. Run: ``python bench/bench_delivery.py``.
Target (issue #2): at most 1.5x the baseline.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from werkzeug.test import Client

from scheduler_emulator import Emulator, ManualClock, WsgiTransport

N = 3000
ROUNDS = 5
HEADERS = {
    "User-Agent": "Google-Cloud-Scheduler",
    "X-CloudScheduler": "true",
    "X-CloudScheduler-JobName": "tick",
    "X-CloudScheduler-ScheduleTime": "2026-01-01T00:01:00Z",
}


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """A minimal target that acknowledges every request."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return [b""]


def bench_client() -> float:
    client = Client(app)
    started = time.perf_counter()
    for _ in range(N):
        client.post("http://orders.test/_triggers/timer/tick", headers=HEADERS)
    return (time.perf_counter() - started) / N


def bench_emulator() -> float:
    emulator = Emulator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), transport=WsgiTransport(app))
    emulator.create_job(
        name="tick",
        schedule="* * * * *",
        http_target={"uri": "http://orders.test/_triggers/timer/tick"},
    )
    minute = timedelta(minutes=1)
    started = time.perf_counter()
    for _ in range(N):
        emulator.advance(minute)
    elapsed = (time.perf_counter() - started) / N
    attempts = emulator.attempts("tick")
    assert len(attempts) == N and all(a.code == "OK" for a in attempts), "deliveries went wrong"
    emulator.close()
    return elapsed


def main() -> None:
    client_times, emulator_times = [], []
    for _ in range(ROUNDS):
        client_times.append(bench_client())
        emulator_times.append(bench_emulator())
    client_us = statistics.median(client_times) * 1e6
    emulator_us = statistics.median(emulator_times) * 1e6
    print(f"deliveries per round: {N}, rounds: {ROUNDS} (medians)")
    print(f"werkzeug Client.post          : {client_us:8.1f} us per request")
    print(f"emulator in-process delivery  : {emulator_us:8.1f} us per delivery")
    print(f"ratio emulator / client       : {emulator_us / client_us:8.2f}x  (target <= 1.5x)")


if __name__ == "__main__":
    main()
