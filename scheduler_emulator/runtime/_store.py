"""Persistence of jobs, runs, attempts and skipped runs in SQLite (stdlib ``sqlite3``).

A file database (WAL journal) survives a crash of the process: every change is committed when
it happens, so a SIGKILL loses no job and no recorded attempt — except the updates a thread
asks to defer (:meth:`Store.deferred`: the engine's records of attempt ends on the system
clock), which a writer thread commits within a few milliseconds, many in one transaction; a
crash before that leaves the attempt in flight, and the restart records it as interrupted.
``Store(":memory:")`` keeps the same code path in memory for tests and ``--in-memory``.

Jobs are kept as their REST JSON (``codec.job_to_json``, the schema of the v1 API, so a data
directory of any release loads) plus the output-only columns the engine maintains; every row
read back is checked as the API checks a request (``_data_file.stored_job``,
``stored_attempt``), so a damaged row is named, not a traceback. An attempt row is written
when the attempt starts and completed when it ends, so an attempt in flight at a crash is
found again on restart (``attempts(unfinished=True)``).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..domain.attempts import Attempt, Run, SkippedRun
from ..domain.codec import job_to_json
from ..domain.resources import Job, State, Status
from ._data_file import (
    Row,
    attempts_from_rows,
    check_database,
    check_free_space,
    existing_size,
    is_unwritable,
    startup_error,
    storage_error,
    stored_job,
)
from ._options import ATTEMPTS_PAGE_SIZE, ATTEMPTS_PAGE_SIZE_MAX, DEFAULT_RETAIN_ATTEMPTS

__all__ = [
    "AttemptFilter",
    "add_condition",
    "ATTEMPT_COLUMNS",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "SCHEMA_VERSION",
    "Store",
    "window_conditions",
]

#: ``PRAGMA user_version`` of this release's schema (1: the first release; 2: ``jobs.next_fire``
#: and ``skipped.reason``; 3: the attempts' run schedule time and response excerpt).
SCHEMA_VERSION = 3
#: Columns added since the first release: ``(table, column, type and default)``.
_ADDED_COLUMNS = (
    ("jobs", "next_fire", "TEXT"),
    ("skipped", "reason", "TEXT NOT NULL DEFAULT 'RUN_STILL_GOING'"),
    ("attempts", "nominal", "TEXT"),
    ("attempts", "response_excerpt", "TEXT"),
    ("attempts", "response_content_type", "TEXT"),
)
#: Indexes of the read model (:mod:`~scheduler_emulator.runtime._read_model`): time-window
#: queries over attempts, runs and skipped times read only the window.
_READ_INDEXES = """
CREATE INDEX IF NOT EXISTS attempts_start ON attempts (start_time);
CREATE INDEX IF NOT EXISTS attempts_job_start ON attempts (job, start_time);
CREATE INDEX IF NOT EXISTS runs_job_nominal ON runs (job, nominal);
CREATE INDEX IF NOT EXISTS skipped_job_nominal ON skipped (job, nominal);
"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    name TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    config TEXT NOT NULL,
    state INTEGER NOT NULL,
    status_code INTEGER,
    status_message TEXT,
    last_attempt_time TEXT,
    user_update_time TEXT,
    next_fire TEXT
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    job TEXT NOT NULL,
    schedule_time TEXT,
    nominal TEXT NOT NULL,
    forced INTEGER NOT NULL,
    first_attempt_start TEXT,
    attempts INTEGER NOT NULL,
    next_attempt_at TEXT,
    finished INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_open ON runs (finished);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY,
    job TEXT NOT NULL,
    run_id INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    schedule_time TEXT,
    start_time TEXT NOT NULL,
    end_time TEXT,
    request TEXT NOT NULL,
    response_status INTEGER,
    code TEXT,
    debug_info TEXT NOT NULL,
    forced INTEGER NOT NULL,
    injected INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS attempts_job ON attempts (job, id);
CREATE TABLE IF NOT EXISTS skipped (
    id INTEGER PRIMARY KEY,
    job TEXT NOT NULL,
    schedule_time TEXT,
    nominal TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT 'RUN_STILL_GOING'
);
"""


#: The last instant :func:`_ts` rendered and its text, as one tuple (replaced whole, so threads
#: never see a mismatched pair): an attempt's start, its run's first start and the job's last
#: attempt time are one object, rendered once.
_LAST_TS: tuple[datetime | None, str | None] = (None, None)


def _ts(value: datetime | None) -> str | None:
    global _LAST_TS
    if value is None:
        return None
    last = _LAST_TS
    if value is last[0]:
        return last[1]
    text = value.isoformat()
    _LAST_TS = (value, text)
    return text


def _dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


#: How long deferred updates wait for others to share their transaction (see
#: :meth:`Store.deferred`).
_DEFER_SECONDS = 0.005
logger = logging.getLogger("scheduler_emulator")


#: What :meth:`Store.mark_sent` writes: an attempt's start, the instant it was sent.
_SENT_START = "UPDATE attempts SET start_time = ? WHERE id = ?"


class _Locked:
    """``with store._locked:`` takes the store's lock and first carries out deferred updates."""

    __slots__ = ("_store",)

    def __init__(self, store: Store) -> None:
        self._store = store

    def __enter__(self) -> None:
        store = self._store
        store._lock.acquire()
        if store._batch_owner is not None and store._batch_owner != threading.get_ident():
            # Another thread's batch is open: write after its commit, so that nothing written
            # here (a run about to be sent, say) is left uncommitted in that transaction.
            while store._batch_owner is not None:
                store._batch_free.wait()
        if store._pending or store._sent:
            try:
                store._carry_out_pending()
            except BaseException:
                store._lock.release()
                raise

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> None:
        self._store._lock.release()
        if exc is not None and is_unwritable(exc):  # a full disk: say so, as a 503
            self._store.write_failure = str(exc)
            raise storage_error(self._store.path, exc) from exc


# Page sizes and retention: their one home is runtime/_options.py.
DEFAULT_PAGE_SIZE = ATTEMPTS_PAGE_SIZE
MAX_PAGE_SIZE = ATTEMPTS_PAGE_SIZE_MAX
#: Retention is applied once per this many new attempts (amortised: one DELETE per batch).
_RETENTION_EVERY = 1000


def add_condition(clauses: list[str], args: list[Any], sql: str, value: Any) -> None:
    """Add the SQL condition ``sql`` (one ``?``) and its argument, unless ``value`` is ``None``.

    :param clauses: the conditions to be joined with ``AND``; appended to.
    :param args: their arguments, in order; appended to.
    """
    if value is not None:
        clauses.append(sql)
        args.append(value)


@dataclass(frozen=True)
class AttemptFilter:
    """Which attempts :meth:`Store.attempts_page` reads; ``None`` leaves a field open.

    :param job: one job's (full name).
    :param run_id: one run's.
    :param start_after: those that started at or after this instant (aware).
    :param start_before: those that started before this instant (aware).
    """

    job: str | None = None
    run_id: int | None = None
    start_after: datetime | None = None
    start_before: datetime | None = None


def window_conditions(
    column: str, start: datetime | None, end: datetime | None
) -> tuple[list[str], list[Any]]:
    """The SQL conditions ``start <= column < end`` on a time column (UTC text), each bound
    left out when ``None``.

    :param column: ``start_time``, ``nominal``…
    :param start: the first instant in the window (aware), or ``None``.
    :param end: the first instant after it (aware), or ``None``.
    :return: the conditions and their arguments, for :func:`add_condition` to extend.
    """
    clauses: list[str] = []
    args: list[Any] = []
    add_condition(clauses, args, f"{column} >= ?", None if start is None else _utc_text(start))
    add_condition(clauses, args, f"{column} < ?", None if end is None else _utc_text(end))
    return clauses, args


def _utc_text(instant: datetime) -> str:
    return instant.astimezone(UTC).isoformat()


def _attempt_filter(
    *, job: str | None = None, run_id: int | None = None, unfinished: bool = False
) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    add_condition(clauses, args, "job = ?", job)
    add_condition(clauses, args, "run_id = ?", run_id)
    if unfinished:
        clauses.append("end_time IS NULL")
    return clauses, args


#: The columns :func:`~scheduler_emulator.runtime._data_file.stored_attempt` reads, in its order.
ATTEMPT_COLUMNS = (
    "id, job, run_id, attempt, schedule_time, start_time, end_time, request, response_status, "
    "code, debug_info, forced, injected, nominal, response_excerpt, response_content_type"
)


class Store:
    """SQLite store for jobs, runs, attempts and skipped runs; safe to share between threads.

    :param path: a database file path (its directory is created), or ``":memory:"``.
    :param retain_attempts: keep at most this many finished attempts (and skipped-run records
        and finished runs), dropping the oldest; ``None`` keeps everything.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        retain_attempts: int | None = DEFAULT_RETAIN_ATTEMPTS,
    ) -> None:
        self.path = str(path)
        self.retain_attempts = retain_attempts
        #: Why the last write that failed failed (a full disk), or ``None``: what the daemon's
        #: stop message reports.
        self.write_failure: str | None = None
        self._added = 0
        size = None
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            check_free_space(Path(self.path).parent)
            size = existing_size(Path(self.path))
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._batch_owner: int | None = None  # the thread whose batch() is open
        self._batch_free = threading.Condition(self._lock)
        self._pending: list[tuple[str, tuple[Any, ...]]] = []
        #: (start, id) of attempts sent since the last commit (:meth:`mark_sent`), appended
        #: without the lock and carried out with the deferred updates.
        self._sent: collections.deque[tuple[str | None, int | None]] = collections.deque()
        self._local = threading.local()
        self._writer: threading.Thread | None = None
        self._closed = False
        self._locked = _Locked(self)
        try:
            # Read the file before writing anything to it: never write into a damaged
            # database, or one of a schema this release does not know.
            check_database(self._db, Path(self.path), size, SCHEMA_VERSION)
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._migrate()
        except sqlite3.Error as exc:
            self._db.close()
            raise startup_error(self.path, exc) from exc
        except BaseException:
            self._db.close()
            raise
        row = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM jobs").fetchone()
        self._seq = int(row[0])
        self._last_run_id = 0

    def _migrate(self) -> None:
        """Bring a data directory of an earlier release to this schema (columns are only ever
        added, so every earlier directory loads)."""
        for table, column, ddl in _ADDED_COLUMNS:
            columns = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in columns:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}")
        self._db.executescript(_READ_INDEXES)  # IF NOT EXISTS: no write once they exist
        if int(self._db.execute("PRAGMA user_version").fetchone()[0]) != SCHEMA_VERSION:
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # (no write otherwise)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Commit every write this thread makes inside the block as one transaction; other
        threads' reads and writes wait for the commit (so none of theirs joins it uncommitted).

        The engine writes a due batch (thousands of runs and attempts at one minute) this way:
        one commit instead of one per statement. Not reentrant.
        """
        with self._locked:
            self._db.execute("BEGIN")
            self._batch_owner = threading.get_ident()
        try:
            yield
        finally:
            with self._locked:
                self._db.execute("COMMIT")
                self._batch_owner = None
                self._batch_free.notify_all()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Let this thread's updates of attempt ends, runs and job state inside the block be
        committed a few milliseconds later, with other threads' (one transaction for many).

        For the end of an attempt, which may be committed late: a crash before the commit
        leaves the attempt in flight, which a restart records as interrupted. Inserts (runs,
        attempts, skipped times) are never deferred; any other statement, read or commit
        first carries out the deferred ones, in order, so every reader sees them.
        """
        local = self._local
        before = getattr(local, "defer", False)
        local.defer = True
        try:
            yield
        finally:
            local.defer = before

    def flush(self) -> None:
        """Commit the deferred updates now."""
        with self._locked:
            pass

    def _update(self, sql: str, args: tuple[Any, ...]) -> None:
        """Carry out one ``UPDATE``: now, or later with other threads' when this thread defers
        its updates (:meth:`deferred`)."""
        if not self._later(sql, args):
            with self._locked:
                self._db.execute(sql, args)

    def _later(self, sql: str, args: tuple[Any, ...]) -> bool:
        """Queue ``sql`` if this thread defers its updates (see :meth:`deferred`)."""
        if not getattr(self._local, "defer", False):
            return False
        with self._lock:
            if self._closed:
                return False
            self._pending.append((sql, args))
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._write_pending, name="store-writer", daemon=True
                )
                self._writer.start()
            if len(self._pending) == 1:
                self._wake.notify()
        return True

    def _carry_out_pending(self) -> None:
        """Execute the deferred statements and the sent attempts' starts (store lock held),
        committed at once unless a :meth:`batch` is open (then they commit with it)."""
        pending, self._pending = self._pending, []
        sent = self._sent  # popleft, not a swap: a sender may be appending (it takes no lock)
        starts = [sent.popleft() for _ in range(len(sent))]
        opened = not self._db.in_transaction
        if opened:
            self._db.execute("BEGIN")
        try:
            if starts:  # before the ends: an attempt's end row carries the same start
                self._db.executemany(_SENT_START, starts)
            for sql, args in pending:
                self._db.execute(sql, args)
        except BaseException:
            if opened:
                self._db.execute("ROLLBACK")
            raise
        if opened:
            self._db.execute("COMMIT")

    def _write_pending(self) -> None:
        """The writer thread: commit what is deferred every :data:`_DEFER_SECONDS`."""
        while True:
            with self._lock:
                while not self._pending and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                self._wake.wait(_DEFER_SECONDS)  # let more ends join this transaction
                if self._closed:
                    return
                try:
                    if self._pending or self._sent:
                        self._carry_out_pending()
                except Exception as exc:  # e.g. the disk is full: say so, keep going
                    self.write_failure = str(exc)
                    logger.error("store: deferred updates not committed: %s", exc)

    def close(self) -> None:
        """Commit what is deferred and close the database."""
        with self._lock:
            if (self._pending or self._sent) and not self._closed:
                self._carry_out_pending()
            self._closed = True
            self._wake.notify_all()
            writer = self._writer
        if writer is not None and writer is not threading.current_thread():
            writer.join()
        with self._lock:
            self._db.close()

    # jobs -----------------------------------------------------------------------------------

    def save_job(self, job: Job, next_fire: datetime | None = None) -> None:
        """Insert or replace ``job`` (config and output-only fields) and its next scheduled time
        (UTC); keeps its creation order."""
        status = job.status
        with self._locked:
            seq_row = self._db.execute(
                "SELECT seq FROM jobs WHERE name = ?", (job.name,)
            ).fetchone()
            if seq_row is None:
                self._seq += 1
                seq = self._seq
            else:
                seq = seq_row[0]
            self._db.execute(
                "INSERT OR REPLACE INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job.name,
                    seq,
                    json.dumps(job_to_json(job)),
                    int(job.state),
                    None if status is None else status.code,
                    None if status is None else status.message,
                    _ts(job.last_attempt_time),
                    _ts(job.user_update_time),
                    _ts(next_fire),
                ),
            )

    def save_next_fire(self, name: str, next_fire: datetime | None) -> None:
        """Write the next scheduled time of job ``name`` (UTC), so that a restart knows which
        scheduled times passed while the emulator was not running. An in-memory store has no
        restart to tell: it skips the write (one statement less per run)."""
        if self.path == ":memory:":
            return
        sql, args = "UPDATE jobs SET next_fire = ? WHERE name = ?", (_ts(next_fire), name)
        self._update(sql, args)

    def next_fires(self) -> dict[str, datetime]:
        """The stored next scheduled time of every job that has one, by full name."""
        rows = self.query("SELECT name, next_fire FROM jobs WHERE next_fire IS NOT NULL")
        return {
            name: Row(self.path, "jobs", name).instant("next_fire", value) for name, value in rows
        }

    def last_skipped(self) -> dict[str, datetime]:
        """The latest scheduled time recorded as skipped, by job full name."""
        rows = self.query("SELECT job, MAX(nominal) FROM skipped GROUP BY job")
        return {
            name: Row(self.path, "skipped", name).instant("nominal", value) for name, value in rows
        }

    def save_job_state(
        self, name: str, state: State, status: Status | None, last_attempt_time: datetime | None
    ) -> None:
        """Write only the fields the engine changes of the stored job ``name``."""
        sql = (
            "UPDATE jobs SET state = ?, status_code = ?, status_message = ?, "
            "last_attempt_time = ? WHERE name = ?"
        )
        args = (
            int(state),
            None if status is None else status.code,
            None if status is None else status.message,
            _ts(last_attempt_time),
            name,
        )
        self._update(sql, args)

    def delete_job(self, name: str) -> None:
        """Delete the job ``name`` (its attempt history stays)."""
        with self._locked:
            self._db.execute("DELETE FROM jobs WHERE name = ?", (name,))

    def load_jobs(self) -> list[Job]:
        """Return every stored job in creation order, output-only fields included, each row
        checked as the API checks a job (:func:`~scheduler_emulator.runtime._data_file.stored_job`).

        :raises DamagedRow: naming the file, the table, the job and the field of a damaged row.
        """
        rows = self.query(
            "SELECT name, config, state, status_code, status_message, last_attempt_time, "
            "user_update_time FROM jobs ORDER BY seq"
        )
        return [stored_job(self.path, row) for row in rows]

    def _insert(self, table: str, **columns: Any) -> None:
        """``INSERT INTO table (column, …) VALUES (?, …)`` with ``columns``' values, under the
        store lock."""
        names = ", ".join(columns)
        marks = ", ".join("?" * len(columns))
        with self._locked:
            self._db.execute(
                f"INSERT INTO {table} ({names}) VALUES ({marks})", tuple(columns.values())
            )

    # runs -----------------------------------------------------------------------------------

    def add_run(self, run: Run) -> Run:
        """Insert ``run`` under its ``id`` (the scheduler core numbers runs) and return it."""
        self._insert(
            "runs",
            id=run.id,
            job=run.job,
            schedule_time=run.schedule_time,
            nominal=_ts(run.nominal),
            forced=int(run.forced),
            first_attempt_start=_ts(run.first_attempt_start),
            attempts=run.attempts,
            next_attempt_at=_ts(run.next_attempt_at),
            finished=int(run.finished),
        )
        return run

    def last_run_id(self) -> int:
        """The largest run id ever stored (0 for none); new runs are numbered after it."""
        with self._locked:
            row = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()
            return max(int(row[0]), self._last_run_id)

    def save_run(self, run: Run) -> None:
        """Write the progress of ``run`` (attempt count, pending retry, finished)."""
        sql = (
            "UPDATE runs SET first_attempt_start = ?, attempts = ?, next_attempt_at = ?, "
            "finished = ? WHERE id = ?"
        )
        args = (
            _ts(run.first_attempt_start),
            run.attempts,
            _ts(run.next_attempt_at),
            int(run.finished),
            run.id,
        )
        self._update(sql, args)

    def open_runs(self) -> list[Run]:
        """Return the runs not finished yet (after a restart: to resume their retries)."""
        rows = self.query(
            "SELECT id, job, schedule_time, nominal, forced, first_attempt_start, attempts, "
            "next_attempt_at FROM runs WHERE finished = 0 ORDER BY id"
        )
        runs = []
        for r in rows:
            check = Row(self.path, "runs", r[1])
            runs.append(
                Run(
                    id=check.whole("id", r[0], 1),
                    job=check.text("job", r[1]),
                    schedule_time=check.text("schedule_time", r[2], required=False),
                    nominal=check.instant("nominal", r[3]),
                    forced=bool(check.whole("forced", r[4], 0, 1)),
                    first_attempt_start=check.optional_instant("first_attempt_start", r[5]),
                    attempts=check.whole("attempts", r[6], 0),
                    next_attempt_at=check.optional_instant("next_attempt_at", r[7]),
                )
            )
        return runs

    # attempts -------------------------------------------------------------------------------

    def add_attempt(self, attempt: Attempt) -> Attempt:
        """Insert a started attempt and return it with its new ``id``."""
        with self._locked:
            cursor = self._db.execute(
                "INSERT INTO attempts (job, run_id, attempt, schedule_time, start_time, "
                "end_time, request, response_status, code, debug_info, forced, injected, "
                "nominal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "COALESCE(?, (SELECT nominal FROM runs WHERE id = ?)))",
                (
                    attempt.job,
                    attempt.run_id,
                    attempt.attempt,
                    attempt.schedule_time,
                    _ts(attempt.start_time),
                    _ts(attempt.end_time),
                    json.dumps(attempt.request),
                    attempt.response_status,
                    attempt.code,
                    attempt.debug_info,
                    int(attempt.forced),
                    int(attempt.injected),
                    _ts(attempt.nominal),
                    attempt.run_id,
                ),
            )
            attempt.id = int(cursor.lastrowid or 0)
            self._added += 1
            if self._added % _RETENTION_EVERY == 0:
                self._apply_retention()
        return attempt

    def mark_sent(self, attempt: Attempt) -> None:
        """Record the start of ``attempt`` (added earlier, when it was queued) as the instant
        it was sent, so that the attempt read in flight starts when its finished record will.

        Takes no lock (the engine's threads call it as attempts leave): the start is written
        with the next deferred updates, and before any read.
        """
        self._sent.append((_ts(attempt.start_time), attempt.id))

    def finish_attempt(self, attempt: Attempt) -> None:
        """Record the start (the instant it was sent), end, status, code, debug text and
        response excerpt of ``attempt``."""
        sql = (
            "UPDATE attempts SET start_time = ?, end_time = ?, response_status = ?, "
            "code = ?, debug_info = ?, injected = ?, response_excerpt = ?, "
            "response_content_type = ? WHERE id = ?"
        )
        args = (
            _ts(attempt.start_time),
            _ts(attempt.end_time),
            attempt.response_status,
            attempt.code,
            attempt.debug_info,
            int(attempt.injected),
            attempt.response_excerpt or None,
            attempt.response_content_type,
            attempt.id,
        )
        self._update(sql, args)

    def attempts(self, job: str | None = None, *, unfinished: bool = False) -> list[Attempt]:
        """Return attempts in start order, optionally of one job (full name) or only in flight.

        The whole history: for a large one use :meth:`attempts_page`.
        """
        clauses, args = _attempt_filter(job=job, unfinished=unfinished)
        return attempts_from_rows(self.path, self._select_attempts(clauses, args, ""))

    def attempts_page(
        self,
        where: AttemptFilter = AttemptFilter(),
        *,
        after_id: int = 0,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> tuple[list[Attempt], int | None]:
        """Return one page of attempts in start order, and the id to pass as ``after_id`` for
        the next page (``None`` on the last page). Reads only the page from the database.

        :param where: which attempts.
        :param after_id: only attempts with a larger id (where the previous page ended).
        :param page_size: 1 to :data:`MAX_PAGE_SIZE` attempts.
        :raises ValueError: for a page size out of range.
        """
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"page_size must be 1 to {MAX_PAGE_SIZE}; got {page_size}.")
        clauses, args = window_conditions("start_time", where.start_after, where.start_before)
        add_condition(clauses, args, "job = ?", where.job)
        add_condition(clauses, args, "run_id = ?", where.run_id)
        add_condition(clauses, args, "id > ?", after_id)
        rows = self._select_attempts(clauses, args, f" LIMIT {page_size + 1}")
        attempts = attempts_from_rows(self.path, rows[:page_size])  # damaged rows left out
        return attempts, (rows[page_size - 1][0] if len(rows) > page_size else None)

    def _select_attempts(self, clauses: list[str], args: list[Any], limit: str) -> list[Any]:
        query = f"SELECT {ATTEMPT_COLUMNS} FROM attempts"
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        return self.query(query + " ORDER BY id" + limit, args)

    def query(self, sql: str, args: Any = ()) -> list[Any]:
        """Run one read-only ``SELECT`` (deferred updates carried out first) and return its
        rows: the read model (:mod:`~scheduler_emulator.runtime._read_model`) reads this way.

        :param sql: the statement, with ``?`` placeholders.
        :param args: the placeholders' values.
        """
        with self._locked:
            return self._db.execute(sql, args).fetchall()

    def _apply_retention(self) -> None:
        """Keep at most :attr:`retain_attempts` finished attempts (and as many skipped-run
        records and finished runs): the oldest go first; attempts in flight are kept."""
        keep = self.retain_attempts
        if keep is None:
            return
        row = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM attempts").fetchone()
        cutoff = int(row[0]) - keep
        if cutoff > 0:
            self._db.execute(
                "DELETE FROM attempts WHERE id <= ? AND end_time IS NOT NULL", (cutoff,)
            )
        for table, extra in (("skipped", ""), ("runs", " AND finished = 1")):
            row = self._db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()
            cutoff = int(row[0]) - keep
            if cutoff > 0:
                self._db.execute(f"DELETE FROM {table} WHERE id <= ?{extra}", (cutoff,))

    # skipped runs ---------------------------------------------------------------------------

    def add_skipped(self, skipped: SkippedRun) -> None:
        """Record a scheduled time that got no run (an earlier run was still going, or the
        emulator was down)."""
        self._insert(
            "skipped",
            job=skipped.job,
            schedule_time=skipped.schedule_time,
            nominal=_ts(skipped.nominal.astimezone(UTC)),  # UTC: MAX() orders the text
            recorded_at=_ts(skipped.recorded_at),
            reason=skipped.reason,
        )

    def skipped(self, job: str | None = None) -> list[SkippedRun]:
        """Return skipped scheduled times in the order they were recorded (every one kept:
        at most ``retain_attempts``)."""
        return self._select_skipped(job, 0, "")[0]

    def skipped_page(
        self, *, job: str | None = None, after_id: int = 0, page_size: int = DEFAULT_PAGE_SIZE
    ) -> tuple[list[SkippedRun], int | None]:
        """Return one page of skipped scheduled times in the order they were recorded, and the
        id to pass as ``after_id`` for the next page (``None`` on the last page).

        :param job: only this job's (full name).
        :param after_id: only records after this one (where the previous page ended).
        :param page_size: 1 to :data:`MAX_PAGE_SIZE` records.
        :raises ValueError: for a page size out of range.
        """
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise ValueError(f"page_size must be 1 to {MAX_PAGE_SIZE}; got {page_size}.")
        rows, ids = self._select_skipped(job, after_id, f" LIMIT {page_size + 1}")
        if len(rows) > page_size:
            return rows[:page_size], ids[page_size - 1]
        return rows, None

    def _select_skipped(
        self, job: str | None, after_id: int, limit: str
    ) -> tuple[list[SkippedRun], list[int]]:
        query = "SELECT id, job, schedule_time, nominal, recorded_at, reason FROM skipped"
        query += " WHERE id > ?" + ("" if job is None else " AND job = ?")
        args: tuple[Any, ...] = (after_id,) if job is None else (after_id, job)
        rows = self.query(query + " ORDER BY id" + limit, args)
        records = [SkippedRun(r[1], r[2], _dt(r[3]), _dt(r[4]), r[5]) for r in rows]  # type: ignore[arg-type]
        return records, [r[0] for r in rows]

    def reset(self) -> None:
        """Delete every job, run, attempt and skipped-run record."""
        with self._locked:
            row = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()
            self._last_run_id = max(int(row[0]), self._last_run_id)
            self._db.executescript(
                "DELETE FROM jobs; DELETE FROM runs; DELETE FROM attempts; DELETE FROM skipped;"
            )
