"""The suite's own shutdown: a SIGTERM to the pytest that runs it (a CI's cancel, ``kill``)
stops the processes its tests started, as Ctrl-C does (tests/signals.py ``interrupted``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import wait_for

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = """
import os, signal, subprocess
from pathlib import Path
import pytest
from tests.signals import interrupted

def pytest_configure(config):
    signal.signal(signal.SIGTERM, interrupted)

@pytest.fixture(scope="module")
def started():
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)  # as a daemon is
    mark = Path(f"pid-{child.pid}")
    mark.touch()
    yield mark
    child.kill()
    child.wait()
    mark.unlink()
"""
TEST = """
import threading
from pathlib import Path

def test_waits(started):
    Path(f"ready-{started.name}").touch()  # set up: a signal now tears the fixture down
    threading.Event().wait(100)  # until the SIGTERM
"""


def test_a_sigterm_to_the_controller_tears_down_every_workers_fixtures(tmp_path: Path) -> None:
    """Trial 83: ``timeout 300 pytest -n auto`` left five Firebase processes running; a SIGTERM
    to the controller alone (``kill PID``) left the workers' too."""
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in ("test_one.py", "test_two.py"):
        (tmp_path / name).write_text(TEST)
    # only xdist among the plugins: the run is about its workers, not the package's plugin
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist"]
    run = subprocess.Popen(
        [*command, "-n", "2", "--dist", "loadfile", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # (a SIGTERM between a fixture's start and its yield would skip its teardown: the
        # tests say when they run, both fixtures set up)
        marks = wait_for(lambda: len(list(tmp_path.glob("ready-*"))) == 2, 60, "both tests")
        assert marks
        pids = [int(mark.name[4:]) for mark in tmp_path.glob("pid-*")]
        run.send_signal(signal.SIGTERM)
        run.wait(60)
        wait_for(lambda: not list(tmp_path.glob("pid-*")), 30, "both teardowns")
    finally:
        run.kill()
        for mark in tmp_path.glob("pid-*"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(mark.name[4:]), signal.SIGKILL)
    for pid in pids:  # the sleeps the fixtures started are gone
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()
