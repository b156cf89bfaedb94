"""The real daemon (a subprocess) serves REST, gRPC and gcloud on its one port: a job made by
one is seen by the others, and a TLS client is told in the daemon's log what went wrong."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.daemon import running_daemon

grpc = pytest.importorskip("grpc")
from google.api_core import exceptions  # noqa: E402
from google.auth.credentials import AnonymousCredentials  # noqa: E402
from google.cloud import scheduler_v1  # noqa: E402

from scheduler_emulator import client  # noqa: E402

PARENT = "projects/my-project/locations/us-central1"
URI = "http://127.0.0.1:9/_triggers/timer/x"


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
        f"a TLS client connected to {host}:{port}: the emulator serves plaintext; "
        "see docs/api.md#grpc"
    )
    assert log.count(expected) >= 1, log
    assert "\\x16\\x03" not in log and "Bad request version" not in log, log
