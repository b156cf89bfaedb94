"""The real daemon with 200 idle gRPC channels open, each from its own CloudSchedulerClient
with a connection of its own (as 200 processes or containers would have): REST, health, the
dashboard, gcloud and a new gRPC client are all served, and after the gRPC idle timeout the
daemon has sent the idle connections GOAWAY and their clients reconnect for their next call."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.daemon import running_daemon
from tests.support import grpc_client_own_connection

grpc = pytest.importorskip("grpc")
from google.api_core import exceptions  # noqa: E402

PARENT = "projects/my-project/locations/us-central1"
NIGHTLY = f"{PARENT}/jobs/nightly"
CHANNELS = 200


class Watched:
    """A client and the connectivity states its channel went through."""

    def __init__(self, host: str) -> None:
        self.client = grpc_client_own_connection(host)
        self.channel: Any = self.client.transport.grpc_channel
        self.states: list[Any] = []
        self.idle_again = threading.Event()
        self.channel.subscribe(self._changed, try_to_connect=False)

    def _changed(self, state: Any) -> None:
        self.states.append(state)
        if state == grpc.ChannelConnectivity.IDLE and grpc.ChannelConnectivity.READY in self.states:
            self.idle_again.set()  # connected, then sent GOAWAY when idle

    def stop_watching(self) -> None:
        self.channel.unsubscribe(self._changed)

    def close(self) -> None:
        self.client.transport.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("gcloud") is None, reason="gcloud is not on PATH")
def test_200_idle_grpc_channels_lock_nobody_out(tmp_path: Path) -> None:
    with running_daemon("--in-memory", "--grpc-idle-timeout", "3") as daemon:
        host, port = daemon.host_port
        address = f"{host}:{port}"
        daemon.post(
            f"/v1/{PARENT}/jobs",
            {"name": NIGHTLY, "schedule": "0 2 * * *", "httpTarget": {"uri": "http://x/"}},
        ).raise_for_status()
        watched = [Watched(address) for _ in range(CHANNELS)]
        try:
            for one in watched:  # every channel connected by a call
                assert one.client.get_job(name=NIGHTLY, retry=None, timeout=30).name == NIGHTLY
            served_while_open(daemon, tmp_path)
            # past the idle timeout: every connection was sent GOAWAY and closed...
            for one in watched:
                assert one.idle_again.wait(60), one.states
            served_while_open(daemon, tmp_path)
            # ...and its client reconnects for its next call
            for one in watched[:20]:
                assert one.client.get_job(name=NIGHTLY, retry=None, timeout=30).name == NIGHTLY
        finally:
            # every channel's connectivity poller is told to stop before any channel closes:
            # closing a watched channel waits for its poller's round (up to 0.2 s), 20 s for
            # 200 channels one after another; this way the rounds end together
            for one in watched:
                one.stop_watching()
            for one in watched:
                one.close()


def served_while_open(daemon: Any, tmp_path: Path) -> None:
    """REST GetJob, health, the dashboard, gcloud and a new gRPC client are all served."""
    from tests.e2e.test_gcloud import Gcloud

    url = daemon.url
    assert requests.get(f"{url}/v1/{NIGHTLY}", timeout=10).json()["name"] == NIGHTLY
    assert requests.get(f"{url}/_emulator/health", timeout=10).status_code == 200
    page = requests.get(f"{url}/_emulator/ui/", timeout=10)
    assert page.status_code == 200 and "<html" in page.text.lower()
    gcloud = Gcloud.for_daemon(daemon, tmp_path / "cloudsdk")
    assert gcloud.ok("describe", "nightly", "--format=value(schedule)").stdout.strip() == (
        "0 2 * * *"
    )
    host, port = daemon.host_port
    fresh = grpc_client_own_connection(f"{host}:{port}")
    try:
        with pytest.raises(exceptions.NotFound):
            fresh.get_job(name=f"{PARENT}/jobs/none", retry=None, timeout=10)
    finally:
        fresh.transport.close()
