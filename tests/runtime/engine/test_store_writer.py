"""The store's one writer thread: every write is carried out in order; a started attempt is on
disk when it returns (in a batch: when the batch ends), other writes soon after, many in one
transaction; every read, from any thread, sees what was written before it."""

from __future__ import annotations

import gc
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler_emulator.domain.attempts import Attempt, Run, SkippedRun
from scheduler_emulator.domain.codec import job_from_json
from scheduler_emulator.runtime.storage.store import Store

JOB = "projects/my-project/locations/l/jobs/j"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def started(store: Store, run_id: int = 1) -> Attempt:
    store.add_run(Run(run_id, JOB, "2026-12-01T09:00:00Z", T0, attempts=1))
    return store.add_attempt(Attempt(0, JOB, run_id, 1, "2026-12-01T09:00:00Z", T0, {}))


def ended(attempt: Attempt) -> Attempt:
    attempt.end_time, attempt.code, attempt.response_status = T0 + timedelta(seconds=1), "OK", 200
    return attempt


def committed(path: Path, sql: str) -> list[tuple[object, ...]]:
    """What another connection (another process, after a crash) reads."""
    other = sqlite3.connect(path)
    try:
        return other.execute(sql).fetchall()
    finally:
        other.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The path of the store's database file."""
    return tmp_path / "db"


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    """A store on ``db``, closed after the test (closing twice is harmless)."""
    store = Store(db)
    yield store
    store.close()


def test_a_started_attempt_and_its_run_are_on_disk_when_it_returns(store: Store, db: Path) -> None:
    started(store)
    assert committed(db, "SELECT id, end_time FROM attempts") == [(1, None)]
    assert committed(db, "SELECT id FROM runs") == [(1,)]


def test_an_end_is_read_back_at_once_and_committed_by_then(store: Store, db: Path) -> None:
    attempt = started(store)
    store.finish_attempt(ended(attempt))
    store.save_run(Run(1, JOB, None, T0, attempts=1, finished=True))
    [read] = store.attempts()
    assert read.code == "OK"  # a read comes after every write before it
    assert store.open_runs() == []  # the writer committed both before it read
    assert committed(db, "SELECT code FROM attempts") == [("OK",)]


def test_close_commits_what_is_written(store: Store, db: Path) -> None:
    attempt = started(store)
    store.finish_attempt(ended(attempt))
    store.close()
    assert committed(db, "SELECT code FROM attempts") == [("OK",)]


def test_updates_keep_their_order() -> None:
    store = Store(":memory:")
    started(store)
    store.save_run(Run(1, JOB, None, T0, attempts=1, next_attempt_at=T0))
    store.save_run(Run(1, JOB, None, T0, attempts=2))  # later: it wins
    [run] = store.open_runs()
    assert (run.attempts, run.next_attempt_at) == (2, None)
    store.close()


@pytest.mark.parametrize(("held", "spent"), [(False, False), (True, False), (False, True)])
def test_a_runs_extra_retry_held_or_spent_is_kept(held: bool, spent: bool) -> None:
    """A restart resumes a run with its extra retry held, or spent (it earns no other)."""
    store = Store(":memory:")
    started(store)
    store.save_run(Run(1, JOB, None, T0, attempts=2, extra_retry=held, extra_spent=spent))
    [run] = store.open_runs()
    assert (run.extra_retry, run.extra_spent) == (held, spent)
    store.close()


def test_a_batch_is_on_disk_when_it_ends(store: Store, db: Path) -> None:
    attempt = started(store)
    with store.batch():
        started(store, run_id=2)
        store.finish_attempt(ended(attempt))
    assert committed(db, "SELECT id, code FROM attempts ORDER BY id") == [(1, "OK"), (2, None)]


def test_a_failed_write_in_a_batch_raises_when_the_batch_ends(store: Store, db: Path) -> None:
    started(store)
    with pytest.raises(sqlite3.IntegrityError), store.batch():
        store.add_run(Run(1, JOB, None, T0, attempts=1))  # run 1 exists: returns, fails later
        store.add_run(Run(2, JOB, None, T0, attempts=1))
    assert committed(db, "SELECT id FROM runs ORDER BY id") == [(1,), (2,)]  # the other is kept


def test_another_threads_attempt_during_a_batch_is_on_disk_after_what_came_before(
    store: Store, db: Path
) -> None:
    """An attempt started by another thread while a batch is open is on disk when that
    thread's call returns (the batch's own statements, gathered, when the batch ends)."""
    when = datetime(2026, 9, 24, 2, tzinfo=UTC)
    with store.batch():
        store.add_skipped(SkippedRun("projects/p/locations/l/jobs/a", None, when, when))
        thread = threading.Thread(target=started, args=(store, 2))
        thread.start()
        thread.join(10)
        assert committed(db, "SELECT run_id FROM attempts") == [(2,)]
    assert committed(db, "SELECT COUNT(*) FROM skipped") == [(1,)]


def test_a_batchs_statements_keep_their_order(store: Store, db: Path) -> None:
    """A batch hands its statements to the writer a few at a time: a run inserted, then
    updated, ends as updated, whatever statements came between."""
    with store.batch():
        store.save_run(Run(9, JOB, None, T0, attempts=1))  # no such run yet: changes nothing
        started(store, run_id=1)
        store.save_run(Run(1, JOB, None, T0, attempts=3, finished=True))
        started(store, run_id=2)
    runs = committed(db, "SELECT id, attempts, finished FROM runs ORDER BY id")
    assert runs == [(1, 3, 1), (2, 1, 0)]
    assert committed(db, "SELECT run_id FROM attempts ORDER BY id") == [(1,), (2,)]


def test_a_failing_statement_of_a_batch_loses_none_after_it(store: Store, db: Path) -> None:
    """The writer's retry runs a batch's statements one at a time and in order: those after a
    failing statement are stored, in their order, and the batch raises the error."""
    started(store)
    with pytest.raises(sqlite3.IntegrityError), store.batch():
        store.add_run(Run(2, JOB, None, T0, attempts=1))
        store.add_run(Run(1, JOB, None, T0, attempts=1))  # run 1 exists
        store.save_run(Run(2, JOB, None, T0, attempts=5, finished=True))
    runs = committed(db, "SELECT id, attempts, finished FROM runs ORDER BY id")
    assert runs == [(1, 1, 0), (2, 5, 1)]


def test_a_batch_on_a_store_closed_meanwhile_leaves_the_thread_outside_it(tmp_path: Path) -> None:
    """A batch whose store was closed under it (a stop) raises at its end, and the thread's
    next write is refused at once, not gathered into a batch that is over."""
    store = Store(tmp_path / "emulator.db")
    with pytest.raises(sqlite3.ProgrammingError), store.batch():
        started(store)
        store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        store.delete_job(JOB)


def test_a_read_from_any_thread_sees_every_write_before_it() -> None:
    store = Store(":memory:")
    attempt = started(store)
    store.finish_attempt(ended(attempt))
    seen: list[Attempt] = []
    thread = threading.Thread(target=lambda: seen.extend(store.attempts()))
    thread.start()
    thread.join(10)
    assert [a.code for a in seen] == ["OK"]
    store.close()


def test_a_store_nobody_closes_ends_its_writer_thread() -> None:
    store = Store(":memory:")
    writer = store._writer._thread
    del store
    gc.collect()
    writer.join(10)
    assert not writer.is_alive()


def test_a_sent_start_is_read_at_once_and_kept_by_close(store: Store, db: Path) -> None:
    attempt = started(store)
    attempt.start_time = T0 + timedelta(milliseconds=3)  # the instant it left the queue
    store.mark_sent(attempt)
    [read] = store.attempts()  # a read carries it out first
    assert read.start_time == T0 + timedelta(milliseconds=3)
    second = started(store, run_id=2)
    second.start_time = T0 + timedelta(milliseconds=5)
    store.mark_sent(second)
    store.close()  # nothing else deferred: the start is still written
    starts = committed(db, "SELECT start_time FROM attempts ORDER BY id")
    assert starts == [
        ((T0 + timedelta(milliseconds=3)).isoformat(),),
        ((T0 + timedelta(milliseconds=5)).isoformat(),),
    ]


def test_the_last_alive_instant_is_on_disk_when_it_returns(store: Store, db: Path) -> None:
    assert store.last_alive() is None
    store.save_alive(T0)
    store.save_alive(T0 + timedelta(minutes=1))
    assert committed(db, "SELECT instant FROM alive") == [("2026-12-01T09:01:00+00:00",)]
    assert store.last_alive() == T0 + timedelta(minutes=1)
    memory = Store(":memory:")
    memory.save_alive(T0)  # nothing outlives the process: nothing to tell a restart
    assert memory.last_alive() is None


def test_a_next_fire_time_counts_as_run_once_its_attempt_is_written(store: Store) -> None:
    store.save_job(
        job_from_json(
            {"name": JOB, "schedule": "0 9 * * *", "httpTarget": {"uri": "http://svc.test/"}}
        ),
        T0,
    )
    store.add_run(Run(1, JOB, "2026-12-01T09:00:00Z", T0, attempts=1))
    alive = T0 + timedelta(milliseconds=50)
    assert store.ran_at_next_fire(alive) == set()  # a run row alone was never sent
    store.add_attempt(Attempt(0, JOB, 1, 1, "2026-12-01T09:00:00Z", T0, {}, nominal=T0))
    assert store.ran_at_next_fire(alive) == {JOB}
    assert store.ran_at_next_fire(T0 - timedelta(seconds=1)) == set()  # not due by then


class _FullDisk:
    """The writer's connection, refusing every write as a full disk does while ``full``."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db, self.full = db, False

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        words = ("SELECT", "BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")
        if self.full and not sql.lstrip().upper().startswith(words):
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)


def test_an_attempts_end_a_full_disk_refused_is_written_once_space_is_back(
    tmp_path: Path,
) -> None:
    """Trial 142: on a manual clock the disk filled after an attempt was sent; the write of its
    end was dropped, so it stayed in flight after space came back, and a restart sent it again.
    A refused write that waits for nobody is kept, and written first, in order, once it can be;
    what waits (a started attempt) is refused meanwhile; reads go on."""
    store = Store(tmp_path / "db", retain_megabytes=None)
    attempt = started(store)
    disk = store._writer.db = _FullDisk(store._writer.db)  # type: ignore[assignment]
    disk.full = True
    store.finish_attempt(ended(attempt))
    assert store.query("SELECT COUNT(*) FROM attempts") == [(1,)]  # reads go on
    ends = "SELECT end_time FROM attempts"
    assert committed(tmp_path / "db", ends) == [(None,)]
    with pytest.raises(Exception, match="full"):
        started(store, 2)  # waits for its commit: refused, behind the end still to write
    disk.full = False
    store.query("SELECT 1")
    assert committed(tmp_path / "db", ends) == [("2026-12-01T09:00:01+00:00",)]
    store.close()
