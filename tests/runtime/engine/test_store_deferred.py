"""Deferred updates (``Store.deferred``): the ends of attempts committed a few ms later, in one
transaction with others; inserts never deferred; every read sees what is deferred."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler_emulator.domain.attempts import Attempt, Run
from scheduler_emulator.runtime._store import Store

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


def test_inserts_are_committed_at_once_inside_a_deferred_block(store: Store, db: Path) -> None:
    with store.deferred():
        started(store)
        assert committed(db, "SELECT id, end_time FROM attempts") == [(1, None)]
        assert committed(db, "SELECT id FROM runs") == [(1,)]


def test_a_deferred_end_is_read_back_at_once_and_committed_by_flush(store: Store, db: Path) -> None:
    attempt = started(store)
    with store.deferred():
        store.finish_attempt(ended(attempt))
        store.save_run(Run(1, JOB, None, T0, attempts=1, finished=True))
    [read] = store.attempts()
    assert read.code == "OK"  # this connection's reads carry out what is deferred first
    assert store.open_runs() == []
    assert committed(db, "SELECT code FROM attempts") == [("OK",)]


def test_close_commits_what_is_deferred(store: Store, db: Path) -> None:
    attempt = started(store)
    with store.deferred():
        store.finish_attempt(ended(attempt))
    store.close()
    assert committed(db, "SELECT code FROM attempts") == [("OK",)]


def test_deferred_and_immediate_updates_keep_their_order() -> None:
    store = Store(":memory:")
    started(store)
    with store.deferred():
        store.save_run(Run(1, JOB, None, T0, attempts=1, next_attempt_at=T0))
    store.save_run(Run(1, JOB, None, T0, attempts=2))  # later, not deferred: it wins
    [run] = store.open_runs()
    assert (run.attempts, run.next_attempt_at) == (2, None)
    store.close()


def test_deferred_updates_inside_a_batch_commit_with_it(store: Store, db: Path) -> None:
    attempt = started(store)
    with store.batch():
        started(store, run_id=2)
        with store.deferred():
            store.finish_attempt(ended(attempt))
        store.flush()  # carried out inside the open transaction
        assert committed(db, "SELECT COUNT(*) FROM runs") == [(1,)]
    assert committed(db, "SELECT id, code FROM attempts ORDER BY id") == [(1, "OK"), (2, None)]


def test_only_the_deferring_thread_defers() -> None:
    store = Store(":memory:")
    attempt = started(store)
    with store.deferred():
        pass
    store.finish_attempt(ended(attempt))
    assert store._pending == []
    store.close()


def test_another_threads_write_waits_for_an_open_batch(store: Store, db: Path) -> None:
    """A run written by another thread (say, a retry started on the end path) while the engine's
    batch is open must not join that uncommitted transaction: it is written after the commit."""
    import threading

    from scheduler_emulator.domain.attempts import SkippedRun
    from tests.support import wait_for

    when = datetime(2026, 9, 24, 2, tzinfo=UTC)
    done = threading.Event()

    def other() -> None:
        store.add_skipped(SkippedRun("projects/my-project/locations/l/jobs/b", None, when, when))
        done.set()

    with store.batch():
        store.add_skipped(SkippedRun("projects/my-project/locations/l/jobs/a", None, when, when))
        thread = threading.Thread(target=other)
        thread.start()
        assert wait_for(lambda: len(store._batch_free._waiters) == 1, bound_seconds=10)  # type: ignore[attr-defined]
        assert not done.is_set()
    thread.join(10)
    assert done.is_set()
    rows = committed(db, "SELECT job FROM skipped ORDER BY id")
    assert [str(r[0]).rsplit("/", 1)[1] for r in rows] == ["a", "b"]


def test_a_sent_start_is_read_at_once_and_kept_by_close(store: Store, db: Path) -> None:
    attempt = started(store)
    attempt.start_time = T0 + timedelta(milliseconds=3)  # the instant it left the queue
    store.mark_sent(attempt)
    assert committed(db, "SELECT start_time FROM attempts") == [(T0.isoformat(),)]
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
