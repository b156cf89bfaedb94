"""Stopping the Pub/Sub emulator ``start --with-pubsub`` started (tools/targets_setup.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler_emulator.tools.targets_setup import PubsubEmulatorProcess, free_port
from tests.support import wait_for

#: Stands for the JVM gcloud starts: it listens on the port and, on SIGTERM, takes a while to
#: shut down (closing the port only then).
SLOW_JVM = """
import signal, socket, sys, time
listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
def shut_down(*_):
    time.sleep(0.8)
    sys.exit(0)
signal.signal(signal.SIGTERM, shut_down)
open(sys.argv[2], "w").write("listening")
while True:
    time.sleep(1)
"""
#: Stands for gcloud: starts the "JVM" in its process group and ends at once on SIGTERM.
GCLOUD = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]])
time.sleep(60)
"""


def refused(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.timeout(60)
def test_stop_returns_once_the_port_is_free_not_when_gcloud_exits(tmp_path: Path) -> None:
    """A trial's CI run found the port still answering after the daemon had stopped: gcloud
    exits on SIGTERM before its JVM has shut down."""
    port, ready = free_port(), tmp_path / "ready"
    process = subprocess.Popen(
        [sys.executable, "-c", GCLOUD, SLOW_JVM, str(port), str(ready)],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    wait_for(ready.exists, 30, "the stand-in JVM to listen")
    PubsubEmulatorProcess(port=port, process=process).stop()
    assert process.returncode is not None
    assert refused(port)
