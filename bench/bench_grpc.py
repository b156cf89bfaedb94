"""gRPC GetJob and REST ListJobs on the daemon's one port, next to bare servers' floors.

Starts, in this process: the daemon's server (``serve()``: REST and gRPC on one port, each
connection routed by its first bytes, gRPC spliced to the grpcio server on a Unix socket), a
bare grpcio server answering a constant Job to GetJob, and a bare werkzeug server answering a
constant ListJobs-sized JSON body. Times sequential calls from one channel / one keep-alive
session: p50 and p99. Targets (issue #16): gRPC GetJob p50 within 2x the bare grpcio server;
REST ListJobs p50 within 1.5x bare werkzeug. Also shows the emulator's gRPC server reached
directly on its Unix socket, so the splice's own cost is visible.
Run: ``python bench/bench_grpc.py``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import requests
from google.cloud.scheduler_v1.types import cloudscheduler, job

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_api import ROUNDS, constant_app, interleaved  # noqa: E402
from bench_api import serve as serve_wsgi  # noqa: E402

from scheduler_emulator import Emulator, ManualClock  # noqa: E402
from scheduler_emulator.server.server import serve  # noqa: E402

N = 2000
PARENT = "projects/my-project/locations/us-central1"
GET_JOB = "/google.cloud.scheduler.v1.CloudScheduler/GetJob"
JobPb = job.Job.pb()
GetJobRequest = cloudscheduler.GetJobRequest.pb()


def get_job_call(target: str) -> tuple[Callable[[], Any], grpc.Channel]:
    channel = grpc.insecure_channel(target)
    method = channel.unary_unary(
        GET_JOB,
        request_serializer=GetJobRequest.SerializeToString,
        response_deserializer=JobPb.FromString,
    )
    request = GetJobRequest(name=f"{PARENT}/jobs/job-0")
    return (lambda: method(request)), channel


def bare_grpc_server(answer: Any) -> tuple[str, grpc.Server]:
    """A grpcio server answering ``answer`` to GetJob, on a free loopback port."""
    handler = grpc.method_handlers_generic_handler(
        "google.cloud.scheduler.v1.CloudScheduler",
        {
            "GetJob": grpc.unary_unary_rpc_method_handler(
                lambda request, context: answer,
                request_deserializer=GetJobRequest.FromString,
                response_serializer=JobPb.SerializeToString,
            )
        },
    )
    server = grpc.server(ThreadPoolExecutor(max_workers=8), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return f"127.0.0.1:{port}", server


def main() -> None:
    emulator = Emulator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)))
    for i in range(20):
        emulator.create_job(
            name=f"job-{i}",
            schedule="0 2 * * *",
            http_target={"uri": f"http://127.0.0.1:9/_triggers/timer/job-{i}"},
            retry_config={"retry_count": 3},
        )
    daemon = serve(emulator, "127.0.0.1", 0)
    threading.Thread(target=daemon.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{daemon.server_port}"
    router: Any = daemon.connection_router  # type: ignore[attr-defined]

    emulator_get, channel_a = get_job_call(address)
    constant = emulator_get()
    bare_address, bare = bare_grpc_server(constant)
    bare_get, channel_b = get_job_call(bare_address)
    direct_get, channel_c = get_job_call(f"unix:{router.grpc_backend().path}")

    list_url = f"http://{address}/v1/{PARENT}/jobs"
    list_body = requests.get(list_url, timeout=10).content
    floor_url, floor = serve_wsgi(constant_app(list_body))
    session = requests.Session()

    def rest(url: str) -> Callable[[], Any]:
        return lambda: session.get(url).raise_for_status()

    rows = [
        ("bare grpcio, constant Job", bare_get),
        ("emulator gRPC GetJob, daemon port", emulator_get),
        ("emulator gRPC GetJob, its Unix socket", direct_get),
        ("bare werkzeug, ListJobs-sized body", rest(floor_url)),
        ("emulator REST ListJobs (20 jobs)", rest(list_url)),
    ]
    print(f"calls per measurement: {N} (sequential, one channel / one keep-alive session,")
    print(f"{ROUNDS} interleaved rounds)")
    print(f"{'':38} {'p50':>9} {'p99':>9}")
    measured = interleaved(dict(rows))
    results = {}
    for label, (p50, p99) in measured.items():
        results[label] = p50
        print(f"{label:38} {p50:7.0f}us {p99:7.0f}us")
    grpc_ratio = results["emulator gRPC GetJob, daemon port"] / results["bare grpcio, constant Job"]
    rest_ratio = (
        results["emulator REST ListJobs (20 jobs)"] / results["bare werkzeug, ListJobs-sized body"]
    )
    print(
        f"p50 ratio gRPC GetJob {grpc_ratio:.2f}x (target <= 2x), "
        f"REST ListJobs {rest_ratio:.2f}x (target <= 1.5x)"
    )
    for channel in (channel_a, channel_b, channel_c):
        channel.close()
    bare.stop(None)
    floor.shutdown()
    daemon.shutdown()
    daemon.server_close()
    emulator.close()


if __name__ == "__main__":
    main()
