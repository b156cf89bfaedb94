"""A write the store refuses (a full disk) changes nothing: the API answers 503 and every read —
the job, the list, the next due instant, the clock — is as before, and nothing refused is
stored by a later write or found after a restart.

The disk here is filled by a stand-in for the store's connection that refuses every write with
SQLite's own error while ``full`` (fast, no root); test_data_dir_hostile.py fills a real 4 MB
tmpfs under the daemon."""

from __future__ import annotations

import gc
import io
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.domain.errors import StorageUnavailable
from scheduler_emulator.domain.resources import State
from scheduler_emulator.runtime import EmulatorOptions, WsgiTransport
from scheduler_emulator.runtime.storage.data_file import storage_error
from scheduler_emulator.runtime.storage.store import Store
from scheduler_emulator.server.daemon import Daemon
from tests.support import RecordingTarget, ShiftedClock, nightly_job, wait_for

START = datetime(2026, 9, 24, 1, 59, tzinfo=UTC)
_WRITES = {"INSERT", "UPDATE", "DELETE", "REPLACE"}


class FullDisk:
    """The store's connection, refusing every write as SQLite does on a full disk while
    ``full`` (reads go on)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.full = False

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self._refuse(sql)
        return self.db.execute(sql, *args)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        self._refuse(sql)
        return self.db.executemany(sql, rows)

    def _refuse(self, sql: str) -> None:
        if self.full and sql.split(None, 1)[0].upper() in _WRITES:
            raise sqlite3.OperationalError("database or disk is full")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


class Setup:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.target = RecordingTarget()
        self.emulator = self.open(START)
        self.disk = FullDisk(self.emulator.store._writer.db)
        self.emulator.store._writer.db = self.disk  # type: ignore[assignment]

    def open(self, at: datetime) -> Emulator:
        return Emulator(
            ManualClock(at), store=Store(self.path), transport=WsgiTransport(self.target)
        )

    def reads(self) -> tuple[Any, ...]:
        """Everything a client can read of the jobs and the clock."""
        e = self.emulator
        return (e.list_jobs(), e.get_job("nightly"), e.next_due(), e.now(), e.attempts())

    def restarted(self) -> Emulator:
        self.emulator.close()
        self.emulator = self.open(self.emulator.now())
        return self.emulator


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    made = Setup(tmp_path / "emulator.db")
    made.emulator.create_job(nightly_job(description="acknowledged"))
    yield made
    made.emulator.close()


def refused(call: Any, *args: Any, **kwargs: Any) -> StorageUnavailable:
    with pytest.raises(StorageUnavailable) as raised:
        call(*args, **kwargs)
    assert "the change was not stored" in str(raised.value)
    return raised.value


def test_a_refused_update_is_not_read_nor_stored_by_a_later_write(setup: Setup) -> None:
    emulator, before = setup.emulator, setup.reads()
    setup.disk.full = True
    body = {"description": "refused", "schedule": "*/5 * * * *"}
    refused(emulator.update_job, "nightly", body, "description,schedule")
    assert setup.reads() == before
    setup.disk.full = False  # space is back: a pause and a resume store the job again
    emulator.pause_job("nightly")
    emulator.resume_job("nightly")
    assert emulator.get_job("nightly").description == "acknowledged"
    again = setup.restarted()
    job = again.get_job("nightly")
    assert (job.description, job.schedule, job.state) == (
        "acknowledged",
        "0 2 * * *",
        State.ENABLED,
    )


def test_a_refused_pause_leaves_the_job_enabled(setup: Setup) -> None:
    before = setup.reads()
    setup.disk.full = True
    refused(setup.emulator.pause_job, "nightly")
    assert setup.reads() == before
    setup.disk.full = False
    assert setup.restarted().get_job("nightly").state == State.ENABLED


def test_a_refused_clock_advance_leaves_the_clock_and_its_runs_as_before(setup: Setup) -> None:
    emulator, before = setup.emulator, setup.reads()
    setup.disk.full = True
    refused(emulator.advance, timedelta(minutes=5))
    assert setup.reads() == before and setup.target.requests == []
    setup.disk.full = False
    emulator.advance(timedelta(minutes=5))  # the run is due again, at its own time
    [attempt] = emulator.attempts()
    assert (attempt.schedule_time, attempt.code) == ("2026-09-24T02:00:00Z", "OK")
    assert attempt.start_time == START + timedelta(minutes=1)


def test_a_refused_run_create_and_reset_change_nothing(setup: Setup) -> None:
    emulator, before = setup.emulator, setup.reads()
    setup.disk.full = True
    refused(emulator.run_job, "nightly")
    refused(emulator.create_job, nightly_job(name="other"))
    refused(emulator.reset)
    refused(emulator.delete_job, "nightly")
    assert setup.reads() == before and setup.target.requests == []
    setup.disk.full = False
    assert [j.job_id for j in setup.restarted().list_jobs()] == ["nightly"]


def test_a_system_clocks_engine_stops_firing_and_says_why(tmp_path: Path) -> None:
    """Trial 74: a daemon on a database it could not write answered its health checks for ever
    and fired nothing, after an engine thread's traceback."""
    target = RecordingTarget()
    job = nightly_job(schedule="* * * * *")
    with Emulator(
        ShiftedClock(lead=0.5), store=Store(tmp_path / "e.db"), transport=WsgiTransport(target)
    ) as emulator:
        emulator.create_job(job)
        disk = FullDisk(emulator.store._writer.db)
        emulator.store._writer.db = disk  # type: ignore[assignment]
        disk.full = True
        emulator.start()
        failure = wait_for(lambda: emulator.engine_failure, 10, "the engine's failure")
        assert "cannot be written (database or disk is full)" in failure
        assert "free space on its disk" in failure and target.requests == []
    # The daemon stops on it, saying so, and keeps why (start then exits 1).
    said, ran = io.StringIO(), {}

    def serve() -> None:
        daemon = Daemon(EmulatorOptions(), port=0, err=said)
        ran["daemon"] = daemon
        daemon.emulator.driver.failure = "the data directory cannot be written (x)"
        daemon.run()

    thread = threading.Thread(target=serve)
    thresholds = gc.get_threshold()
    try:
        thread.start()
        thread.join(10)
    finally:  # run() froze the objects collected so far and raised the thresholds
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert not thread.is_alive() and ran["daemon"].failure is not None
    assert "the engine stopped firing (the data directory cannot be written (x)); stopping." in (
        said.getvalue()
    )


@pytest.mark.parametrize(
    ("error", "remedy"),
    [
        ("database or disk is full", "free space on its disk and try again."),
        ("disk I/O error", "check that its disk works and has space, and that it is writable ("),
        ("attempt to write a readonly database", "make it and its directory writable by this user"),
    ],
)
def test_a_refused_write_says_what_to_do_for_its_cause(error: str, remedy: str) -> None:
    """Trial 117: a disk I/O error (an immutable database file) was told to free space."""
    message = storage_error("/data/emulator.db", sqlite3.OperationalError(error)).message
    assert f"/data cannot be written ({error}): the change was not stored; {remedy}" in message
