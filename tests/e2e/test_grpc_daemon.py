"""The real daemon (a subprocess) serves REST, gRPC and gcloud on its one port: a job made by
one is seen by the others, a TLS client is told in the daemon's log what went wrong, and gRPC
server reflection and health checks answer as tools without ``.proto`` files need. This module
runs the blocks of docs/api.md marked ``<!-- run by tests/e2e/test_grpc_daemon.py -->``: with
``grpcurl`` and ``grpc_health_probe`` when they are on PATH, else the same questions through
grpcio-reflection's client and the health stub."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon import Daemon, running_daemon
from tests.drip import DripTarget, drip_server
from tests.support import fenced_blocks, wait_for

grpc = pytest.importorskip("grpc")
from google.api_core import exceptions  # noqa: E402
from google.auth.credentials import AnonymousCredentials  # noqa: E402
from google.cloud import scheduler_v1  # noqa: E402
from google.protobuf import descriptor_pool, message_factory  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402
from grpc_reflection.v1alpha import reflection_pb2  # noqa: E402
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (  # noqa: E402
    ProtoReflectionDescriptorDatabase,
)

from scheduler_emulator import client  # noqa: E402

PARENT = "projects/my-project/locations/us-central1"
URI = "http://127.0.0.1:9/_triggers/timer/x"
API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
RUN_HERE = "<!-- run by tests/e2e/test_grpc_daemon.py -->"
SCHEDULER = "google.cloud.scheduler.v1.CloudScheduler"


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("gcloud") is None, reason="gcloud is not on PATH")
def test_grpc_rest_and_gcloud_see_the_same_jobs(tmp_path: Path) -> None:
    from tests.e2e.test_gcloud import Gcloud

    with running_daemon("--in-memory") as daemon:
        host, port = daemon.host_port
        scheduler = client(host=f"{host}:{port}")
        scheduler.create_job(
            parent=PARENT,
            job={
                "name": f"{PARENT}/jobs/from-grpc",
                "schedule": "0 2 * * *",
                "http_target": {"uri": URI},
            },
        )
        over_rest = daemon.get(f"/v1/{PARENT}/jobs/from-grpc")
        assert over_rest["schedule"] == "0 2 * * *"

        gcloud = Gcloud.for_daemon(daemon, tmp_path / "cloudsdk")
        described = gcloud.ok("describe", "from-grpc", "--format=value(schedule)")
        assert described.stdout.strip() == "0 2 * * *"
        gcloud.ok("create", "http", "from-gcloud", "--schedule=*/5 * * * *", f"--uri={URI}")
        assert scheduler.get_job(name=f"{PARENT}/jobs/from-gcloud").schedule == "*/5 * * * *"
        assert [j.name.rsplit("/", 1)[1] for j in scheduler.list_jobs(parent=PARENT)] == [
            "from-grpc",
            "from-gcloud",
        ]
        scheduler.transport.close()


@pytest.mark.timeout(120)
def test_a_tls_client_fails_fast_and_the_daemon_logs_one_line() -> None:
    with running_daemon("--in-memory") as daemon:
        host, port = daemon.host_port
        tls = scheduler_v1.CloudSchedulerClient(
            credentials=AnonymousCredentials(), client_options={"api_endpoint": f"{host}:{port}"}
        )
        started = time.monotonic()
        with pytest.raises(exceptions.ServiceUnavailable):
            tls.get_job(name=f"{PARENT}/jobs/x", retry=None)
        assert time.monotonic() - started < 5
        tls.transport.close()
        assert daemon.stop() == 0
        assert daemon.process.stderr is not None
        log = daemon.process.stderr.read()
    expected = (
        f"a TLS client connected to {host}:{port}: the emulator serves plaintext (give a REST "
        "client an http:// URL, a gRPC client an insecure channel); see docs/api.md#grpc"
    )
    assert log.count(expected) >= 1, log
    assert "\\x16\\x03" not in log and "Bad request version" not in log, log


def documented(command: str) -> tuple[str, list[str]]:
    """The block of docs/api.md run here whose command starts with ``command``: its command
    line and the output it promises (the comment lines)."""
    (block,) = [
        b for b in fenced_blocks(API_DOC) if b.previous == RUN_HERE and b.text.startswith(command)
    ]
    first, *rest = block.text.strip().splitlines()
    return first, [line.removeprefix("# ") for line in rest]


def test_every_block_marked_for_this_module_is_run_here() -> None:
    marked = [b.text.split()[0] for b in fenced_blocks(API_DOC) if b.previous == RUN_HERE]
    assert marked == ["grpcurl", "grpc_health_probe"]


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    """One daemon (a subprocess) for the reflection and health tests."""
    with running_daemon("--in-memory") as running:
        yield running


@pytest.fixture
def channel(daemon: Daemon) -> Iterator[Any]:
    """A plaintext channel to the daemon's port."""
    host, port = daemon.host_port
    with grpc.insecure_channel(f"{host}:{port}") as opened:
        yield opened


def run_documented(command: str, daemon: Daemon) -> str | None:
    """Run a documented command against ``daemon`` when its tool is on PATH; its output."""
    line, _ = documented(command)
    if shutil.which(command) is None:
        return None
    host, port = daemon.host_port
    argv = line.replace("127.0.0.1:8095", f"{host}:{port}").split()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


@pytest.mark.timeout(120)
def test_reflection_lists_the_services_as_the_docs_show(daemon: Daemon, channel: Any) -> None:
    line, promised = documented("grpcurl")
    assert line == "grpcurl -plaintext 127.0.0.1:8095 list"
    listed = sorted(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert listed == promised
    assert SCHEDULER in listed and "google.cloud.location.Locations" in listed
    output = run_documented("grpcurl", daemon)
    assert output is None or output.split() == promised


@pytest.mark.timeout(120)
def test_a_client_with_no_proto_calls_cloud_scheduler_through_reflection(
    daemon: Daemon, channel: Any
) -> None:
    daemon.post(f"/v1/{PARENT}/jobs", {"name": f"{PARENT}/jobs/seen", "schedule": "0 2 * * *",
                                       "httpTarget": {"uri": URI}})  # fmt: skip
    pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    service = pool.FindServiceByName(SCHEDULER)
    assert [m.name for m in service.methods] == [
        "ListJobs", "GetJob", "CreateJob", "UpdateJob", "DeleteJob", "PauseJob", "ResumeJob",
        "RunJob",
    ]  # fmt: skip
    get = service.methods_by_name["GetJob"]
    request_type = message_factory.GetMessageClass(get.input_type)
    response_type = message_factory.GetMessageClass(get.output_type)
    call = channel.unary_unary(
        f"/{SCHEDULER}/GetJob",
        request_serializer=request_type.SerializeToString,
        response_deserializer=response_type.FromString,
    )
    job = call(request_type(name=f"{PARENT}/jobs/seen"), timeout=10)
    assert (job.schedule, job.http_target.uri) == ("0 2 * * *", URI)
    # an error's details decode too (trial 217: grpcurl printed "BadRequest is not recognized")
    assert pool.FindMessageTypeByName("google.rpc.BadRequest").fields_by_name["field_violations"]


@pytest.mark.timeout(120)
def test_reflection_v1_answers_as_v1alpha(channel: Any) -> None:
    """grpcurl asks ``grpc.reflection.v1`` first; it has the same messages on the wire."""
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    answers = {}
    for version in ("v1", "v1alpha"):
        call = channel.stream_stream(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        (response,) = list(call(iter([request]), timeout=10))
        answers[version] = sorted(s.name for s in response.list_services_response.service)
    assert answers["v1"] == answers["v1alpha"]
    assert SCHEDULER in answers["v1"]


@pytest.mark.timeout(120)
def test_health_check_answers_serving_as_the_docs_show(daemon: Daemon, channel: Any) -> None:
    line, promised = documented("grpc_health_probe")
    assert line.endswith(f"-service={SCHEDULER}") and promised == ["status: SERVING"]
    health = health_pb2_grpc.HealthStub(channel)
    serving = health_pb2.HealthCheckResponse.SERVING
    for service in ("", SCHEDULER, "google.cloud.location.Locations"):
        answer = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
        assert answer.status == serving, service
    with pytest.raises(grpc.RpcError) as caught:
        health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    output = run_documented("grpc_health_probe", daemon)
    assert output is None or output.strip() == promised[0]


@pytest.mark.timeout(120)
def test_health_checks_answer_not_serving_once_the_daemon_is_stopping() -> None:
    """As docs/api.md says: from SIGTERM on (here while a hung attempt holds the stop up to
    2 s), a channel already open reads NOT_SERVING, then the daemon closes it."""
    hang = DripTarget(mode="hang", limit_seconds=60)
    with drip_server(hang) as base, running_daemon("--in-memory") as daemon:
        job = {"name": f"{PARENT}/jobs/hung", "schedule": "0 0 1 1 *",
               "httpTarget": {"uri": base + "/_triggers/timer/hung"}}  # fmt: skip
        daemon.post(f"/v1/{PARENT}/jobs", job).raise_for_status()
        daemon.post(f"/v1/{PARENT}/jobs/hung:run").raise_for_status()
        assert wait_for(lambda: hang.requests >= 1, bound_seconds=10)
        host, port = daemon.host_port
        with grpc.insecure_channel(f"{host}:{port}") as opened:
            health = health_pb2_grpc.HealthStub(opened)

            def status() -> Any:
                try:
                    return health.Check(health_pb2.HealthCheckRequest(), timeout=5).status
                except grpc.RpcError as exc:
                    return exc.code()

            assert status() == health_pb2.HealthCheckResponse.SERVING
            # a Watch stream hears the change as the daemon makes it; the connection stays
            # open while the hung attempt holds the stop (it closed 0.1 s after the signal,
            # before the stream's NOT_SERVING was written, on a busy CI machine)
            watch = health.Watch(health_pb2.HealthCheckRequest(), timeout=30)
            seen = [next(watch).status]
            daemon.process.send_signal(signal.SIGTERM)
            with contextlib.suppress(grpc.RpcError):  # the stream ends as the daemon closes
                for answer in watch:
                    seen += [answer.status, status()]
            daemon.process.wait(timeout=10)
    assert seen[:3] == [health_pb2.HealthCheckResponse.SERVING] + 2 * [
        health_pb2.HealthCheckResponse.NOT_SERVING
    ]  # fmt: skip
