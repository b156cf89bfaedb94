"""Fixtures for the run-once guard's tests: both stores, the Firestore emulator, a guard.

The ``store`` fixture runs every test that takes it twice: on a SQLite file and on Firestore
(the emulator, started once per session by ``firestore_emulator``). The Firestore runs are
skipped, saying why, only when gcloud, Java or the emulator component is missing.
"""

from __future__ import annotations

import fcntl
import http.client
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scheduler_emulator import ManualClock
from scheduler_emulator.service import (
    FirestoreRunStore,
    RunOnceGuard,
    RunStore,
    SqliteRunStore,
)
from tests.support import FIRESTORE_SHARED_FILE as SHARED_FILE
from tests.support import free_port, stop_group

#: Seconds the Firestore emulator may take to answer before the session fails.
EMULATOR_START_TIMEOUT = 90.0
#: What gcloud prints when the emulator component is not installed.
MISSING_COMPONENT_HINTS = ("components install", "not installed", "apt-get install")


@dataclass(frozen=True)
class FirestoreEmulator:
    """A running Firestore emulator.

    :param host: ``127.0.0.1:<port>``, also in ``FIRESTORE_EMULATOR_HOST``.
    :param project: the project id every test of this session uses (unique per session).
    """

    host: str
    project: str


def _answers(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        connection.request("GET", "/")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _start(log: Path) -> tuple[int, str]:
    """Start the emulator on a free port, logging to ``log``, and wait until it answers HTTP;
    return gcloud's pid and the emulator's ``host:port``.
    Skips when gcloud, Java or the emulator component is missing; fails, with the emulator's
    output, otherwise."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        pytest.skip("gcloud (Google Cloud SDK) is not on PATH, so the Firestore emulator is absent")
    if shutil.which("java") is None:
        pytest.skip("java is not on PATH, and the Firestore emulator runs on Java")
    port = free_port()
    command = [gcloud, "emulators", "firestore", "start", f"--host-port=127.0.0.1:{port}"]
    started = time.monotonic()
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so that stop_group reaches Java
        )
    try:
        while not _answers(port):
            try:
                process.wait(timeout=0.2)  # the bounded pause between polls; returns if it died
            except subprocess.TimeoutExpired:
                pass
            else:
                said = log.read_text(errors="replace")
                if any(hint in said.lower() for hint in MISSING_COMPONENT_HINTS):
                    pytest.skip(f"the Firestore emulator component is not installed: {said[-500:]}")
                pytest.fail(f"the Firestore emulator exited with {process.returncode}:\n{said}")
            if time.monotonic() - started > EMULATOR_START_TIMEOUT:
                said = log.read_text(errors="replace")
                pytest.fail(f"the Firestore emulator did not answer within 90 s:\n{said}")
    except BaseException:
        stop_group(process.pid)
        raise
    _RUNNING.append(process)  # (collected while running, it would warn)
    return process.pid, f"127.0.0.1:{port}"


#: The emulators this process started and left running (xdist's controller stops them).
_RUNNING: list[subprocess.Popen[bytes]] = []


@pytest.fixture(scope="session")
def firestore_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirestoreEmulator]:
    """``gcloud emulators firestore start`` on a free port (:func:`_start`), for the session,
    with ``FIRESTORE_EMULATOR_HOST`` set (child processes inherit it) and a project of its own.

    Under xdist the run's workers share one: the first to need it starts it and writes where
    it listens into the run's temporary directory (under a lock), and the controller stops it
    once every worker is done (``pytest_unconfigure`` in tests/conftest.py). A Java emulator
    start is about 4 s of CPU.
    """
    shared = tmp_path_factory.getbasetemp().parent
    log = tmp_path_factory.mktemp("firestore-emulator") / "emulator.log"
    if "PYTEST_XDIST_WORKER" not in os.environ:
        pid, host = _start(log)
    else:
        with (shared / (SHARED_FILE + ".lock")).open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (shared / SHARED_FILE).exists():
                pid, host = _start(log)
                (shared / SHARED_FILE).write_text(f"{pid} {host}")
            pid_text, host = (shared / SHARED_FILE).read_text().split()
            pid = int(pid_text)
    emulator = FirestoreEmulator(host, f"guard-tests-{uuid.uuid4().hex[:12]}")
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("FIRESTORE_EMULATOR_HOST", emulator.host)
            yield emulator
    finally:
        if "PYTEST_XDIST_WORKER" not in os.environ:
            stop_group(pid)


@pytest.fixture
def firestore_client(firestore_emulator: FirestoreEmulator) -> Iterator[Any]:
    """A ``google.cloud.firestore.Client`` on the emulator, for this run's project."""
    from google.cloud import firestore

    client = firestore.Client(project=firestore_emulator.project)
    yield client
    client.close()


@pytest.fixture(params=["sqlite", "firestore"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    """Each store in turn: a SQLite file in ``tmp_path``; a fresh collection on the emulator."""
    if request.param == "sqlite":
        with SqliteRunStore(tmp_path / "runs.sqlite3") as sqlite_store:
            yield sqlite_store
    else:
        client = request.getfixturevalue("firestore_client")
        yield FirestoreRunStore(client, collection=f"runs_{uuid.uuid4().hex}")


@pytest.fixture
def guard(store: RunStore, clock: ManualClock) -> RunOnceGuard:
    """A guard on ``store`` and the manual ``clock``, with the default lease and retention."""
    return RunOnceGuard(store, clock=clock.now)
