"""Stopping the Pub/Sub emulator ``start --with-pubsub`` started (tools/targets_setup.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from scheduler_emulator.tools.targets_setup import PubsubEmulatorProcess, free_port
from tests.support import wait_for

#: Stands for the JVM gcloud starts: it listens on the port and, on SIGTERM, shuts down only once
#: the test lets it (the file ``argv[3]`` appears), closing the port then.
SLOW_JVM = """
import os, signal, socket, sys, threading
listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
def shut_down(*_):
    tick = threading.Event()
    for _ in range(1500):  # at most 30 s
        if os.path.exists(sys.argv[3]):
            break
        tick.wait(0.02)
    sys.exit(0)
signal.signal(signal.SIGTERM, shut_down)
open(sys.argv[2], "w").write("listening")
while True:
    signal.pause()
"""
#: Stands for gcloud: starts the "JVM" in its process group and ends at once on SIGTERM.
GCLOUD = """
import signal, subprocess, sys
subprocess.Popen([sys.executable, "-c", *sys.argv[1:]])
signal.pause()
"""


def refused(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.timeout(60)
def test_stop_returns_once_the_port_is_free_not_when_gcloud_exits(tmp_path: Path) -> None:
    """A CI run found the port still answering after the daemon had stopped: gcloud exits on
    SIGTERM before its JVM has shut down. ``stop`` waits for the port to be free."""
    port, ready, release = free_port(), tmp_path / "ready", tmp_path / "release"
    process = subprocess.Popen(
        [sys.executable, "-c", GCLOUD, SLOW_JVM, str(port), str(ready), str(release)],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    try:
        wait_for(ready.exists, 30, "the stand-in JVM to listen")
        stopper = threading.Thread(target=PubsubEmulatorProcess(port=port, process=process).stop)
        stopper.start()
        wait_for(lambda: process.returncode is not None, 30, "gcloud to exit")
        assert stopper.is_alive() and not refused(port)  # the JVM still answers: stop waits on
        release.touch()
        stopper.join(30)
        assert not stopper.is_alive() and refused(port)
    finally:
        release.touch()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
