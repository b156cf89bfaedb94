"""Stopping the Pub/Sub emulator ``start --with-pubsub`` started (tools/targets_setup.py)."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from scheduler_emulator.domain.codec import job_from_json
from scheduler_emulator.runtime import pubsub_library_missing
from scheduler_emulator.tools.cli import build_parser
from scheduler_emulator.tools.targets_setup import PubsubEmulatorProcess, configure, free_port
from tests.daemon import serving_in_thread
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


@pytest.mark.timeout(60)
def test_stop_does_not_wait_on_another_server_at_the_port_of_one_that_died() -> None:
    """Trial 153: the emulator --with-pubsub started had died and the user started one of
    their own on its port; the daemon's stop waited 15 s for that one to go away."""
    process = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    process.wait(30)
    other = socketserver.TCPServer(("127.0.0.1", 0), socketserver.BaseRequestHandler)
    threading.Thread(target=other.serve_forever, daemon=True).start()  # someone else's
    try:
        port = other.server_address[1]
        stopper = threading.Thread(
            target=PubsubEmulatorProcess(port=port, process=process).stop, kwargs={"timeout": 45}
        )
        stopper.start()
        stopper.join(30)
        assert not stopper.is_alive() and not refused(port)
    finally:
        other.shutdown()
        other.server_close()


def stub_tools(tmp_path: Path, gcloud: str) -> dict[str, str]:
    """An environment whose ``gcloud`` runs the Python ``gcloud`` text and whose ``java`` is a
    no-op, so that ``--with-pubsub`` starts the stand-in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("gcloud", gcloud), ("java", "")):
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable}\n{text}\n")
        tool.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.timeout(60)
def test_a_busy_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """Trial 102: the daemon polled the service on that port for 105 s, then blamed the
    component."""
    env = stub_tools(tmp_path, "raise SystemExit('gcloud must not be started')")
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "scheduler_emulator", "start", "--in-memory", "--port", "0",
             "--with-pubsub", str(port)],
            env=env, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: --with-pubsub {port}: something already listens on 127.0.0.1:{port}; give a "
        "free port, or --with-pubsub alone for one.\n"
    )


@pytest.mark.timeout(60)
def test_a_sigterm_while_the_pubsub_emulator_starts_stops_it(tmp_path: Path) -> None:
    """Trial 102: a SIGTERM during the start-up wait left gcloud and its JVM running."""
    started = tmp_path / "started"
    gcloud = (  # starts its "JVM", which never answers, in its process group, and waits
        "import pathlib, signal, subprocess, sys\n"
        "jvm = subprocess.Popen([sys.executable, '-c', 'import signal; signal.pause()'])\n"
        f"pathlib.Path({str(started)!r}).write_text(str(jvm.pid))\n"
        "signal.pause()\n"
    )
    daemon = subprocess.Popen(
        [sys.executable, "-m", "scheduler_emulator", "start", "--in-memory", "--port", "0",
         "--with-pubsub"],
        env=stub_tools(tmp_path, gcloud), stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(started.exists, 30, "the stand-in gcloud to start its JVM")
        wait_for(lambda: started.read_text().isdigit(), 30, "the JVM's pid")
        jvm = int(started.read_text())
        daemon.send_signal(signal.SIGTERM)
        _, err = daemon.communicate(timeout=30)
        assert (daemon.returncode, err) == (130, "scheduler-emulator: interrupted.\n")
        wait_for(lambda: not Path(f"/proc/{jvm}").exists() or _zombie(jvm), 30, "the JVM to end")
    finally:
        daemon.kill()
        daemon.communicate(timeout=30)


def _zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    return True


def test_an_external_pubsub_emulator_is_checked_for_the_loaded_jobs_topics() -> None:
    """Trial 102: a Pub/Sub emulator that was down, or lacked a job's topic, was found only at
    the job's first attempt."""
    if (missing := pubsub_library_missing()) is not None:
        pytest.skip(missing)  # (that is the one warning then)
    topics = [f"projects/my-project/topics/{name}" for name in ("there", "missing")]
    jobs = [
        job_from_json({"name": f"projects/my-project/locations/l/jobs/j{i}", "schedule": "0 6 * *"
                       " *", "pubsubTarget": {"topicName": topic, "data": "eA=="}})
        for i, topic in enumerate(topics)
    ]  # fmt: skip

    @Request.application
    def emulator(request: Request) -> Response:  # the Pub/Sub emulator's REST GET of a topic
        return Response(status=200 if request.path == f"/v1/{topics[0]}" else 404)

    def warnings(host: str) -> list[str]:
        out = io.StringIO()
        args = build_parser().parse_args(["start", "--pubsub-emulator-host", host])
        configure(args, jobs, out, environ={})
        return out.getvalue().splitlines()

    with serving_in_thread(make_server("127.0.0.1", 0, emulator)) as url:
        host = url.removeprefix("http://")
        assert warnings(host) == [
            f"warning: topic {topics[1]} does not exist in the Pub/Sub emulator at {host}: its "
            f"jobs' attempts fail NOT_FOUND until it is created (curl -X PUT "
            f"http://{host}/v1/{topics[1]})."
        ]
    assert warnings(host) == [
        f"warning: nothing answers at --pubsub-emulator-host {host}: Pub/Sub jobs' attempts fail "
        f"UNAVAILABLE until a Pub/Sub emulator does (gcloud beta emulators pubsub start "
        f"--host-port={host})."
    ]
