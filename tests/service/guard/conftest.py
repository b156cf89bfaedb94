"""Fixtures for the run-once guard's tests: both stores, the Firestore emulator, a guard.

The ``store`` fixture runs every test that takes it twice: on a SQLite file and on Firestore
(the emulator, started once per session by ``firestore_emulator``). The Firestore runs are
skipped, saying why, only when gcloud, Java or the emulator component is missing.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import subprocess
import threading
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
from tests.support import free_port

#: Seconds the Firestore emulator may take to answer before the session fails.
EMULATOR_START_TIMEOUT = 90.0
#: What gcloud prints when the emulator component is not installed.
MISSING_COMPONENT_HINTS = ("components install", "not installed", "apt-get install")


@dataclass(frozen=True)
class FirestoreEmulator:
    """A running Firestore emulator.

    :param host: ``127.0.0.1:<port>``, also in ``FIRESTORE_EMULATOR_HOST``.
    :param project: the project id every test of this run uses (unique per run).
    :param started_in: seconds from launch until the emulator answered HTTP.
    :param log: the file the emulator's output goes to.
    """

    host: str
    project: str
    started_in: float
    log: Path


def _answers(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        connection.request("GET", "/")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the emulator's process group: gcloud and the Java server it launched.

    SIGTERM first; whatever of the group is still there 20 s later gets SIGKILL.
    """
    if _group_alive(process.pid):
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    pause = threading.Event()
    while _group_alive(process.pid) and time.monotonic() < deadline:
        pause.wait(0.1)
        process.poll()  # reap gcloud itself, so that it does not linger as a zombie
    if _group_alive(process.pid):  # only what outlived the 20 s: a gone group's number is reused
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


@pytest.fixture(scope="session")
def firestore_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirestoreEmulator]:
    """Start ``gcloud emulators firestore start`` on a free port for the session; stop it after.

    Waits, by polling its HTTP endpoint with a bound, until it answers; sets
    ``FIRESTORE_EMULATOR_HOST`` for the session (child processes inherit it). Skips when gcloud,
    Java or the emulator component is missing; fails, with the emulator's output, otherwise.
    """
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        pytest.skip("gcloud (Google Cloud SDK) is not on PATH, so the Firestore emulator is absent")
    if shutil.which("java") is None:
        pytest.skip("java is not on PATH, and the Firestore emulator runs on Java")
    port = free_port()
    log = tmp_path_factory.mktemp("firestore-emulator") / "emulator.log"
    command = [gcloud, "emulators", "firestore", "start", f"--host-port=127.0.0.1:{port}"]
    started = time.monotonic()
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so that _stop reaches the Java child
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
        emulator = FirestoreEmulator(
            host=f"127.0.0.1:{port}",
            project=f"guard-tests-{uuid.uuid4().hex[:12]}",
            started_in=time.monotonic() - started,
            log=log,
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("FIRESTORE_EMULATOR_HOST", emulator.host)
            yield emulator
    finally:
        _stop(process)


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
