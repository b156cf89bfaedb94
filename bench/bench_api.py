"""GetJob and ListJobs latency over loopback, next to a bare werkzeug server's floor; and
GetJob from Google's client over REST and over gRPC on the daemon's one port.

Starts the emulator's WSGI app and a constant-JSON werkzeug app on free ports (threaded
werkzeug servers in this process), then times sequential requests from one keep-alive
``requests.Session``: p50 and p99 per endpoint. Target (issue #3): p50 within 2x the floor.
Then starts the daemon's server (``serve()``: connections held by its event loop, REST and
gRPC on one port) and times GetJob from ``google-cloud-scheduler``'s client, REST transport
and gRPC transport (one client each, sequential calls): the REST/gRPC p50 ratio shows what a
REST call costs over a gRPC one (it was 2.8x while every REST answer closed its connection).
Run: ``python bench/bench_api.py``.
"""

from __future__ import annotations

import functools
import json
import logging
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import requests
from werkzeug.serving import make_server

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.server.server import create_app

N = 2000
JOBS = "/v1/projects/my-project/locations/us-central1/jobs"


def constant_app(body: bytes) -> Callable[..., Iterable[bytes]]:
    """A WSGI app answering ``body`` as JSON to every request."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        start_response(
            "200 OK",
            [
                ("Content-Type", "application/json; charset=UTF-8"),
                ("Content-Length", str(len(body))),
            ],
        )
        return [body]

    return app


def serve(app: Any) -> tuple[str, Any]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def timings(url: str) -> tuple[float, float]:
    session = requests.Session()
    for _ in range(50):
        session.get(url).raise_for_status()
    samples = []
    for _ in range(N):
        started = time.perf_counter()
        session.get(url).raise_for_status()
        samples.append(time.perf_counter() - started)
    samples.sort()
    return statistics.median(samples) * 1e6, samples[int(N * 0.99) - 1] * 1e6


#: Interleaved rounds per measurement (:func:`interleaved`).
ROUNDS = 10


def interleaved(calls: dict[str, Callable[[], Any]]) -> dict[str, tuple[float, float]]:
    """p50 and p99 in µs of each call over :data:`N` sequential calls, taken in
    :data:`ROUNDS` interleaved rounds (each call's N/ROUNDS in turn), so a change of load on a
    shared machine hits every row alike; 100 warm-up calls each first."""
    for call in calls.values():
        for _ in range(100):
            call()
    samples: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(ROUNDS):
        for label, call in calls.items():
            for _ in range(N // ROUNDS):
                started = time.perf_counter()
                call()
                samples[label].append(time.perf_counter() - started)
    result = {}
    for label, values in samples.items():
        values.sort()
        result[label] = (statistics.median(values) * 1e6, values[int(len(values) * 0.99) - 1] * 1e6)
    return result


def main() -> None:
    emulator = Emulator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)))
    for i in range(20):
        emulator.create_job(
            name=f"job-{i}",
            schedule="0 2 * * *",
            http_target={"uri": f"http://127.0.0.1:9/_triggers/timer/job-{i}"},
            retry_config={"retry_count": 3},
        )
    api_url, api_server = serve(create_app(emulator))
    get_body = requests.get(api_url + JOBS + "/job-0").content
    list_body = requests.get(api_url + JOBS).content
    get_floor_url, floor_a = serve(constant_app(get_body))
    list_floor_url, floor_b = serve(constant_app(list_body))
    print(f"requests per measurement: {N} (sequential, one keep-alive session)")
    print(f"{'':34} {'p50':>9} {'p99':>9}")
    rows = [
        ("bare werkzeug, GetJob-sized body", get_floor_url),
        ("emulator GetJob", api_url + JOBS + "/job-0"),
        ("bare werkzeug, ListJobs-sized body", list_floor_url),
        ("emulator ListJobs (20 jobs)", api_url + JOBS),
    ]
    results = {}
    for label, url in rows:
        p50, p99 = timings(url)
        results[label] = p50
        print(f"{label:34} {p50:7.0f}us {p99:7.0f}us")
    get_ratio = results["emulator GetJob"] / results["bare werkzeug, GetJob-sized body"]
    list_ratio = (
        results["emulator ListJobs (20 jobs)"] / results["bare werkzeug, ListJobs-sized body"]
    )
    print(f"p50 ratio GetJob {get_ratio:.2f}x, ListJobs {list_ratio:.2f}x (target <= 2x)")
    print(f"(ListJobs body {len(list_body)} bytes, {len(json.loads(list_body)['jobs'])} jobs)")
    for server in (api_server, floor_a, floor_b):
        server.shutdown()
    clients_on_one_port(emulator)
    emulator.close()


def clients_on_one_port(emulator: Emulator) -> None:
    """GetJob p50/p99 from Google's client, REST and gRPC transports, on the daemon's port."""
    from scheduler_emulator import client
    from scheduler_emulator.server.server import serve as serve_daemon

    daemon = serve_daemon(emulator, "127.0.0.1", 0)
    threading.Thread(target=daemon.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{daemon.server_port}"
    name = "projects/my-project/locations/us-central1/jobs/job-0"
    clients = {transport: client(transport, host=host) for transport in ("rest", "grpc")}
    rows = interleaved(
        {transport: functools.partial(c.get_job, name=name) for transport, c in clients.items()}
    )
    print(f"\nGoogle's client, GetJob on the daemon's port ({N} sequential calls each,")
    print(f"{ROUNDS} interleaved rounds)")
    for transport, (p50, p99) in rows.items():
        print(f"{transport + ' transport':34} {p50:7.0f}us {p99:7.0f}us")
    print(f"p50 ratio REST / gRPC {rows['rest'][0] / rows['grpc'][0]:.2f}x")
    for c in clients.values():
        c.transport.close()
    daemon.shutdown()
    daemon.server_close()


if __name__ == "__main__":
    main()
