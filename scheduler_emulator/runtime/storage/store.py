"""Persistence of jobs, runs, attempts and skipped runs in SQLite (stdlib ``sqlite3``).

A file database (WAL journal) survives a crash of the process. One writer thread carries out
every statement in order (a batch's handed over a few at a time) and commits what queued up
meanwhile in one transaction, so a SIGKILL loses at most the last writes and never one without
those before it: a run's end without its start, a job's next fire time without the run or
skipped record of the time before. What the emulator acts on waits for its commit: a started
attempt is on disk before it is sent, a job's change before the API answers. An attempt whose
end was lost is found in flight on restart (``attempts(unfinished=True)``) and recorded as
interrupted. ``Store(":memory:")`` keeps the same code path in memory for tests and
``--in-memory``.

Jobs are kept as their REST JSON (``codec.job_to_json``: any release's data directory loads)
plus the output-only columns the engine maintains; every row read back is checked as the API
checks a request (``data_file``), so a damaged row is named, not a traceback.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ...core.scheduler import (
    Decision,
    RecordSkipped,
    SaveJobState,
    SaveNextFire,
    SaveRun,
    StartAttempt,
)
from ...domain.attempts import Attempt, Run, SkippedRun
from ...domain.codec import job_to_json
from ...domain.resources import Job, State, Status
from .._options import (
    ATTEMPTS_PAGE_SIZE,
    ATTEMPTS_PAGE_SIZE_MAX,
    DEFAULT_RETAIN_ATTEMPTS,
    DEFAULT_RETAIN_MEGABYTES,
)
from .data_file import (
    TABLES,
    DamagedRow,
    Row,
    attempts_from_rows,
    check_database,
    check_free_space,
    is_unwritable,
    startup_error,
    storage_error,
    stored_job,
)

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
    ("runs", "limits", "TEXT"),  # "maxAttempts|gave-up limit" once ended (Run.limits)
    ("runs", "extra_retry", "INTEGER NOT NULL DEFAULT 0"),  # Run.extra_retry, kept by a restart
    ("runs", "uncounted", "INTEGER NOT NULL DEFAULT 0"),  # Run.uncounted
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    name TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    config TEXT NOT NULL,
    state INTEGER NOT NULL,
    status_code INTEGER,
    status_message TEXT,
    last_attempt_time TEXT,
    user_update_time TEXT
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
CREATE INDEX IF NOT EXISTS attempts_run ON attempts (run_id);
CREATE TABLE IF NOT EXISTS skipped (
    id INTEGER PRIMARY KEY,
    job TEXT NOT NULL,
    schedule_time TEXT,
    nominal TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS alive (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    instant TEXT NOT NULL
);
-- The read model's (read_model.py): a time window of attempts, runs or skipped times reads
-- only the window.
CREATE INDEX IF NOT EXISTS attempts_start ON attempts (start_time);
CREATE INDEX IF NOT EXISTS attempts_job_start ON attempts (job, start_time);
CREATE INDEX IF NOT EXISTS runs_job_nominal ON runs (job, nominal);
CREATE INDEX IF NOT EXISTS skipped_job_nominal ON skipped (job, nominal);
"""


def _ts(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


logger = logging.getLogger("scheduler_emulator")
#: Statements a :meth:`Store.batch` gathers before it hands them to the writer (which then
#: works while the batch goes on).
_GATHERED = 150
#: How long the writer lets writes gather into one transaction when nobody waits for them.
_GATHER_SECONDS = 0.005
#: At most this many refused writes are held for a retry (the oldest go first).
_HELD_WRITES = 100_000
#: The ``args`` of a read's item: carried out even behind a held write.
_READ = ("read",)


class _Ticket(threading.Event):
    """Set once everything queued before it is committed; ``error``: the first error of the
    writes that carried it."""

    error: Exception | None = None


#: One statement ``(sql, args, ticket or None)``, or ``(work, (), ticket or None)`` to call
#: ``work(connection)`` (the ticket collects its error); or a ticket.
_Item = tuple[str | Callable[[sqlite3.Connection], Any], Any, "_Ticket | None"] | _Ticket


class _Writer:
    """The one thread that owns the store's connection: it carries out the items queued, in
    order, all those queued while it worked in one transaction, then sets their tickets. It
    refers to no :class:`Store`, so a store nobody closes is still collected (its finaliser
    stops this thread)."""

    def __init__(self, db: sqlite3.Connection, path: str) -> None:
        self.db = db
        self.path = path  # for messages
        self.failure: str | None = None  # why the last write that failed failed (a full disk)
        #: Writes a full disk refused that wait for nobody (an attempt's end), carried out first,
        #: in order, once they can be (trial 142: a dropped end was in flight for good).
        self.held: deque[_Item] = deque(maxlen=_HELD_WRITES)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: deque[_Item] = deque()
        self._waiting = 0  # threads waiting for their tickets: the writer gathers no more
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self._thread.start()

    def submit(self, *items: _Item, waiter: bool = False) -> None:
        """Queue ``items`` (carried out at once for a ``waiter``); ``sqlite3.ProgrammingError``
        once closed."""
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            self._queue.extend(items)
            self._waiting += waiter
            self._wake.notify()

    def wait(self, ticket: _Ticket, *items: _Item) -> None:
        """Queue ``items`` and ``ticket`` and return once everything before it is committed (no
        gathering); raise the first error of the writes that carried it (a full disk:
        :func:`storage_error`)."""
        self.submit(*items, ticket, waiter=True)
        try:
            ticket.wait()
        finally:
            with self._lock:
                self._waiting -= 1
        if ticket.error is not None and is_unwritable(ticket.error):  # a full disk: a 503
            raise storage_error(self.path, ticket.error) from ticket.error
        if ticket.error is not None:
            raise ticket.error

    def close(self) -> None:
        """Carry out what is queued, close the connection and end the thread."""
        with self._lock:
            self._closed = True
            self._wake.notify()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        queue = self._queue
        while True:
            with self._lock:
                while not queue and not self._closed:
                    self._wake.wait()
                if not self._waiting and not self._closed:
                    self._wake.wait(_GATHER_SECONDS)  # let more join this transaction
                items = [queue.popleft() for _ in range(len(queue))]
                closed = self._closed
            self._carry_out(items)
            for item in items:
                if isinstance(item, _Ticket):
                    item.set()
            if closed:
                self.db.close()
                return

    def _carry_out(self, items: list[_Item]) -> None:
        db, held, refused = self.db, self.held, None
        if held:  # first, in order, what a full disk refused before
            items = [*held, *items]
            held.clear()
        try:
            db.execute("BEGIN")
            for item in items:
                _carry(db, item)
            db.execute("COMMIT")
            if self.failure is not None:  # (trial 187: the stop line blamed a disk with room)
                logger.warning("store %s: writes succeed again; those held were written", self.path)
                self.failure = None
            return
        except Exception:
            if db.in_transaction:
                db.execute("ROLLBACK")
        for item in items:  # one at a time, so that one failing statement loses no other
            ticket = item if isinstance(item, _Ticket) else item[2]
            if refused is not None and type(item) is tuple and item[1] is not _READ:
                if ticket is None:  # nothing is written ahead of a held write
                    held.append(item)
                elif ticket.error is None:  # (a write that waits: refused)
                    ticket.error = refused
                continue
            try:
                _carry(db, item)
            except Exception as exc:
                if ticket is not None and ticket.error is None:
                    ticket.error = exc
                if ticket is None and is_unwritable(exc):
                    held.append(item)
                    refused = exc
                if is_unwritable(exc) and self.failure == str(exc):
                    continue  # said once (a full disk fails every write: a trial's 1,226 lines)
                if is_unwritable(exc):
                    self.failure = str(exc)
                said = "is kept to be written first once it can be" if refused else "is not stored"
                logger.error("store %s: a write failed and %s: %s", self.path, said, exc)


_ALIVE = "SELECT instant FROM alive"


def _alive(path: str, rows: list[Any]) -> datetime | None:
    return Row(path, "alive", "-").instant("instant", rows[0][0]) if rows else None


def stopped_at(path: Path) -> datetime | None:
    """Where a manual clock resumes on the data dir of the store file ``path`` (a system clock
    ran it, or a kill left its clock file behind), read without opening a :class:`Store`: the
    later of :meth:`Store.last_alive` and the latest attempt's start (a forced run's after the
    last due instant), so that no attempt starts after it. ``None`` when there is no such file
    or instant, or the file is not a store (opening the :class:`Store` says why).

    :raises DamagedRow: when an instant stored is not one.
    """
    if not path.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(path)) as db:
            alive = _alive(str(path), db.execute(_ALIVE).fetchall())
            # (a damaged start is left out here, as every read of the history leaves it out)
            sql = "SELECT MAX(start_time) FROM attempts WHERE start_time GLOB '[0-9]*'"
            [(started,)] = db.execute(sql).fetchall()
    except sqlite3.Error:
        return None
    last = None
    with contextlib.suppress(DamagedRow):
        last = started and Row(str(path), "attempts", "-").instant("start_time", started)
    return max(filter(None, (alive, last)), default=None)


def _carry(db: sqlite3.Connection, item: _Item) -> None:
    if type(item) is tuple:  # (a bare ticket needs nothing)
        work = item[0]
        if isinstance(work, str):
            db.execute(work, item[1])
        else:
            work(db)


#: Retention is applied once per this many new attempts (amortised: one DELETE per batch).
_RETENTION_EVERY = 1000
#: The attempts of the runs up to a run id but those still going, then the finished runs (a
#: run goes whole, trial 117).
_DROPPED = (
    "FROM attempts WHERE run_id <= ? AND end_time IS NOT NULL "
    "AND run_id NOT IN (SELECT id FROM runs WHERE finished = 0)"
)
_DROP_RUNS = ("DELETE " + _DROPPED, "DELETE FROM runs WHERE finished = 1 AND id <= ?")
#: The newest attempt retention dropped: the last one before the history's whole tail.
_DROPPED_THROUGH = (
    "SELECT COALESCE(MAX(id), 1) - 1 FROM attempts a WHERE id > 1 "
    "AND NOT EXISTS (SELECT 1 FROM attempts b WHERE b.id = a.id - 1)"
)
#: The write-ahead log is cut back to this size once checkpointed (SQLite's
#: ``journal_size_limit``): a large transaction leaves no large file behind.
WAL_LIMIT_BYTES = 8_000_000


def add_condition(clauses: list[str], args: list[Any], sql: str, value: Any) -> None:
    """Append the SQL condition ``sql`` (one ``?``) to ``clauses`` (to be joined with ``AND``)
    and ``value`` to ``args``, unless ``value`` is ``None``."""
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
    :param failed: only those that ended with a code other than ``OK``.
    """

    job: str | None = None
    run_id: int | None = None
    start_after: datetime | None = None
    start_before: datetime | None = None
    failed: bool = False


def window_conditions(
    column: str, start: datetime | None, end: datetime | None
) -> tuple[list[str], list[Any]]:
    """The SQL conditions ``start <= column < end`` on a time column (UTC text), each bound
    (aware) left out when ``None``, and their arguments, for :func:`add_condition` to extend."""
    clauses: list[str] = []
    args: list[Any] = []
    add_condition(clauses, args, f"{column} >= ?", None if start is None else utc_text(start))
    add_condition(clauses, args, f"{column} < ?", None if end is None else utc_text(end))
    return clauses, args


def utc_text(instant: datetime) -> str:
    """``instant`` (aware) as the store writes instants: ISO 8601 in UTC, ``+00:00``."""
    return instant.astimezone(UTC).isoformat()


#: The columns :func:`~scheduler_emulator.runtime.storage.data_file.stored_attempt` reads.
ATTEMPT_COLUMNS = (
    "id, job, run_id, attempt, schedule_time, start_time, end_time, request, response_status, "
    "code, debug_info, forced, injected, nominal, response_excerpt, response_content_type"
)
#: (The response excerpt and content type, the last two columns, are written when it ends.)
_INSERT_ATTEMPT = f"INSERT INTO attempts ({ATTEMPT_COLUMNS}) VALUES ({'?, ' * 14}NULL, NULL)"
_RUN_COLUMNS = (
    "id, job, schedule_time, nominal, forced, first_attempt_start, attempts, next_attempt_at"
)
_SKIPPED_COLUMNS = "id, job, schedule_time, nominal, recorded_at, reason"
_INSERT_RUN = f"INSERT INTO runs ({_RUN_COLUMNS}, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_SKIPPED = f"INSERT INTO skipped ({_SKIPPED_COLUMNS}) VALUES (NULL, ?, ?, ?, ?, ?)"


class Store:
    """SQLite store for jobs, runs, attempts and skipped runs; safe to share between threads.
    Reads go through the writer thread too, so a read sees everything written before it. A
    write returns at once, except a started attempt and a job's change: once committed (inside
    :meth:`batch`, when the batch ends; in memory, at once).

    :param path: a database file path (its directory is created), or ``":memory:"``.
    :param retain_attempts: keep about this many finished attempts (finished runs go whole,
        oldest first) and skipped-run records; ``None`` keeps everything.
    :param retain_megabytes: drop the oldest finished runs while the database holds more
        than this many megabytes (10**6 bytes); ``None`` bounds only the number of rows.
    :ivar dropped_at_open: the finished attempts and the skipped-run records the bounds dropped
        as it opened, ``(attempts, records)``.
    :ivar dropped_through: the id of the newest attempt the bounds dropped (``0`` for none)
        and, when this store dropped it, its start (as stored; ``None`` when an earlier
        process did): every attempt after it is kept (before it some are: runs still going,
        and runs after those dropped).
    :raises DataFileUnusable: (a ``ConfigurationError``) for a database that is damaged, of a
        later release, or on a full disk, naming the file and what to do.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        retain_attempts: int | None = DEFAULT_RETAIN_ATTEMPTS,
        retain_megabytes: int | None = DEFAULT_RETAIN_MEGABYTES,
    ) -> None:
        self.path = str(path)
        self.retain_attempts = retain_attempts
        self.retain_megabytes = retain_megabytes
        self._durable = self.path != ":memory:"
        file, size = Path(self.path), None
        if self._durable:
            file.parent.mkdir(parents=True, exist_ok=True)
            check_free_space(file.parent)
            with contextlib.suppress(FileNotFoundError):  # none: a new data directory
                size = file.stat().st_size  # before connecting: SQLite creates a missing file
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            check_database(db, file, size, SCHEMA_VERSION)  # before any write
            if self._durable:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            db.executescript(_SCHEMA)
            for table, column, ddl in _ADDED_COLUMNS:  # migrate: columns are only added
                if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}")
            if int(db.execute("PRAGMA user_version").fetchone()[0]) != SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # (no write otherwise)
            [(newest,)] = db.execute(_DROPPED_THROUGH)
            self.dropped_through: tuple[int, str | None] = (newest, None)  # (its start: gone)
            self.dropped_at_open = self._trim(db)
            db.execute("DELETE FROM skipped WHERE 0")  # a write changing nothing: read-only?
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.Error):
                raise startup_error(self.path, exc) from exc
            raise
        self._seq = int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM jobs").fetchone()[0])
        [(self._attempt_id,)] = db.execute("SELECT COALESCE(MAX(id), 0) FROM attempts")
        self._last_run_id = 0
        self._local = threading.local()
        self._writer = _Writer(db, self.path)
        weakref.finalize(self, self._writer.close)

    @property
    def write_failure(self) -> str | None:
        """Why the last write that failed failed (a full disk), or ``None`` — also once writes
        succeed again, every held one written: what the daemon's stop message reports."""
        return self._writer.failure

    @contextlib.contextmanager
    def batch(self, alive: datetime | None = None, *, whole: bool = False) -> Iterator[None]:
        """Let every write this thread makes inside the block return at once and reach the
        writer gathered, not each with a lock and a wake-up of its own: whole decisions of the
        scheduler core (:meth:`save`) once :data:`_GATHERED` statements have gathered, the rest
        at the end or before a read. What one hand-over carries is committed together. The
        block ends once they are all committed (the first that failed raised then). An inner
        block is part of the outer. The engine writes a due batch this way.

        :param alive: first write :meth:`save_alive` of this instant (aware), committed with
            the block's writes.
        :param whole: hand everything over at the end, in one piece, and wait only if one of
            the writes waits for its commit (a started attempt): how an attempt's end is
            written with the decisions it brings, so that a kill leaves both or neither.
        """
        if getattr(self._local, "gathered", None) is not None:
            yield
            return
        if alive is not None:
            self.save_alive(alive, wait=False)
        self._local.ticket = None if whole else _Ticket()
        self._local.gathered, self._local.whole = [], whole
        try:
            yield
        finally:
            ticket = self._local.ticket
            try:
                self._flush()
            finally:
                self._local.ticket = self._local.gathered = None
            if self._durable and ticket is not None:
                self._writer.wait(ticket)

    def _flush(self) -> None:
        """Give the writer the statements this thread gathered in its :meth:`batch` so far."""
        gathered = getattr(self._local, "gathered", None)
        if gathered:
            self._local.gathered = []
            self._writer.submit(*gathered)

    def _execute(
        self, sql: str | Callable[[sqlite3.Connection], Any], args: Any = (), *, wait: bool = False
    ) -> None:
        """Give the writer one statement (or work of several: ``sql(connection)``); with
        ``wait``, return once it is committed (inside a :meth:`batch`: when the batch ends; in
        memory: at once)."""
        if (gathered := getattr(self._local, "gathered", None)) is not None:  # in a batch
            ticket = self._local.ticket
            if wait and ticket is None:  # (a whole batch waits only for what asks to)
                ticket = self._local.ticket = _Ticket()
            gathered.append((sql, args, ticket))
        elif wait and self._durable:
            ticket = _Ticket()
            self._writer.wait(ticket, (sql, args, ticket))
        else:
            self._writer.submit((sql, args, None))

    def query(self, sql: str, args: Any = ()) -> list[Any]:
        """The rows of one read-only ``SELECT`` (``?`` bound to ``args``), run after everything
        written before it."""
        rows: list[Any] = []
        ticket = _Ticket()

        def read(db: sqlite3.Connection) -> None:  # (read again after a rollback: replaced)
            rows[:] = db.execute(sql, args).fetchall()

        self._flush()
        self._writer.wait(ticket, (read, _READ, ticket))
        return rows

    def close(self) -> None:
        """Commit what is written and close the database (closing twice is harmless)."""
        self._writer.close()

    def save_job(self, job: Job, next_fire: datetime | None = None) -> None:
        """Insert or replace ``job`` (config and output-only fields) and its next scheduled time
        (UTC); keeps its creation order."""
        status = job.status
        row = (
            json.dumps(job_to_json(job)),
            int(job.state),
            None if status is None else status.code,
            None if status is None else status.message,
            _ts(job.last_attempt_time),
            _ts(job.user_update_time),
            _ts(next_fire),
        )

        def save(db: sqlite3.Connection) -> None:  # on the writer thread: it owns _seq
            seq_row = db.execute("SELECT seq FROM jobs WHERE name = ?", (job.name,)).fetchone()
            if seq_row is None:
                self._seq += 1
            seq = self._seq if seq_row is None else seq_row[0]
            sql = "INSERT OR REPLACE INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            db.execute(sql, (job.name, seq, *row))

        self._execute(save, wait=True)

    def save(self, decision: Decision, attempt: Attempt | None = None) -> None:
        """Persist what one of the scheduler core's decisions changes: a :class:`StartAttempt`'s
        run and its ``attempt`` as started, a run's progress, a job's state or next fire time,
        a skipped time; ``TypeError`` for anything else."""
        if isinstance(decision, StartAttempt):  # the commonest first
            (self.add_run if decision.new_run else self.save_run)(decision.run)
            if attempt is not None:
                self.add_attempt(attempt)
        elif isinstance(decision, SaveRun):
            self.save_run(decision.run)
        elif isinstance(decision, SaveJobState):
            self.save_job_state(
                decision.job, decision.state, decision.status, decision.last_attempt_time
            )
        elif isinstance(decision, SaveNextFire):
            # What a restart reads to know which scheduled times passed while the emulator was
            # down; an in-memory store has no restart: it skips it, one statement less a run.
            if self._durable:
                sql = "UPDATE jobs SET next_fire = ? WHERE name = ?"
                self._execute(sql, (_ts(decision.next_fire), decision.job))
        elif isinstance(decision, RecordSkipped):
            self.add_skipped(decision.skipped)
        else:
            raise TypeError(f"not a decision: {decision!r}")
        gathered = getattr(self._local, "gathered", None)  # in a batch: hand whole decisions over
        if gathered is not None and len(gathered) >= _GATHERED and not self._local.whole:
            self._flush()

    def next_fires(self) -> dict[str, datetime]:
        """The stored next scheduled time of every job that has one, by full name."""
        rows = self.query("SELECT name, next_fire FROM jobs WHERE next_fire IS NOT NULL")
        return {name: Row(self.path, "jobs", name).instant("next_fire", at) for name, at in rows}

    def ran_at_next_fire(self, until: datetime | None) -> set[str]:
        """The jobs whose stored next scheduled time, at or before ``until`` (aware; ``None``:
        none), already has an attempt of its scheduled run: the process died after the attempt
        was written and before the next fire time was (a run without attempts was never sent)."""
        if until is None:
            return set()
        rows = self.query(
            "SELECT name FROM jobs WHERE next_fire <= ? AND EXISTS (SELECT 1 FROM attempts "
            "WHERE attempts.job = jobs.name AND attempts.nominal = jobs.next_fire "
            "AND attempts.forced = 0)",
            (utc_text(until),),
        )
        return {name for (name,) in rows}

    def save_alive(self, instant: datetime, *, wait: bool = True) -> None:
        """Write that the emulator is running at ``instant`` (aware), committed on return with
        ``wait``: the engine writes it at each due instant before sending anything, so that a
        restart runs late what that instant owed rather than call it skipped, and at a stop
        once every end is recorded (where a manual clock resumes: nothing reads in flight). A
        failure is logged (and kept in :attr:`write_failure`), not raised: the instant's own
        writes report it. An in-memory store skips it."""
        if self._durable:
            sql = "INSERT OR REPLACE INTO alive VALUES (1, ?)"
            self._writer.submit((sql, (utc_text(instant),), None))
            if wait:
                self._writer.wait(_Ticket())

    def last_alive(self) -> datetime | None:
        """The last instant :meth:`save_alive` stored (UTC), ``None`` before the first."""
        return _alive(self.path, self.query(_ALIVE))

    def slow_jobs(self, at_least: timedelta) -> set[str]:
        """The jobs whose latest attempt ended and lasted ``at_least`` or more, start to end (a
        damaged history row counts as not: the history's readers leave it out). Reads one row
        a job (the index finds it): 0.2 s for a 200 MB history on a cold cache."""
        rows = self.query(
            "SELECT a.job, a.start_time, a.end_time FROM attempts a JOIN (SELECT MAX(id) AS id "
            "FROM attempts GROUP BY job) latest ON a.id = latest.id WHERE a.end_time IS NOT NULL"
        )
        slow = set()
        for job, start, end in rows:
            check = Row(self.path, "attempts", job)
            with contextlib.suppress(DamagedRow):
                if check.instant("end_time", end) - check.instant("start_time", start) >= at_least:
                    slow.add(job)
        return slow

    def last_skipped(self) -> dict[str, datetime]:
        """The latest scheduled time recorded as skipped, by job full name."""
        rows = self.query("SELECT job, MAX(nominal) FROM skipped GROUP BY job")
        return {name: Row(self.path, "skipped", name).instant("nominal", at) for name, at in rows}

    def save_job_state(
        self, name: str, state: State, status: Status | None, last_attempt_time: datetime | None
    ) -> None:
        """Write only the fields the engine changes of the stored job ``name``."""
        sql = (
            "UPDATE jobs SET state = ?, status_code = ?, status_message = ?, "
            "last_attempt_time = ? WHERE name = ?"
        )
        code, message = (None, None) if status is None else (status.code, status.message)
        self._execute(sql, (int(state), code, message, _ts(last_attempt_time), name))

    def delete_job(self, name: str) -> None:
        """Delete the job ``name`` (its attempt history stays)."""
        self._execute("DELETE FROM jobs WHERE name = ?", (name,), wait=True)

    def load_jobs(self) -> list[Job]:
        """Every stored job in creation order, output-only fields included, each row checked
        as the API checks a job (:func:`~scheduler_emulator.runtime.storage.data_file.stored_job`).

        :raises DamagedRow: naming the file, the table, the job and the field of a damaged row.
        """
        rows = self.query(
            "SELECT name, config, state, status_code, status_message, last_attempt_time, "
            "user_update_time FROM jobs ORDER BY seq"
        )
        return [stored_job(self.path, row) for row in rows]

    def add_run(self, run: Run) -> None:
        """Insert ``run`` under its ``id`` (the scheduler core numbers runs)."""
        row = (
            run.id,
            run.job,
            run.schedule_time,
            _ts(run.nominal),
            int(run.forced),
            _ts(run.first_attempt_start),
            run.attempts,
            _ts(run.next_attempt_at),
            int(run.finished),
        )
        self._execute(_INSERT_RUN, row)

    def last_run_id(self) -> int:
        """The largest run id ever stored (0 for none); new runs are numbered after it."""
        [(largest,)] = self.query("SELECT COALESCE(MAX(id), 0) FROM runs")
        return max(int(largest), self._last_run_id)

    def save_run(self, run: Run) -> None:
        """Write the progress of ``run`` (attempt count, pending retry, finished, limits, and
        the extra retry and uncounted attempts that decide its next retry after a restart)."""
        sql = (
            "UPDATE runs SET first_attempt_start = ?, attempts = ?, next_attempt_at = ?, "
            "finished = ?, limits = ?, extra_retry = ?, uncounted = ? WHERE id = ?"
        )
        first, retry = _ts(run.first_attempt_start), _ts(run.next_attempt_at)
        limits = None if run.limits is None else "|".join(str(v or "") for v in run.limits)
        extra = 2 if run.extra_spent else int(run.extra_retry)  # (2: spent)
        progress = (run.attempts, retry, int(run.finished), limits, extra)
        self._execute(sql, (first, *progress, run.uncounted, run.id))

    def open_runs(self) -> list[Run]:
        """Return the runs not finished yet (after a restart: to resume their retries)."""

        def run(r: Any, check: Row) -> Run:
            return Run(
                id=check.whole("id", r[0], 1),
                job=check.text("job", r[1]),
                schedule_time=check.text("schedule_time", r[2], required=False),
                nominal=check.instant("nominal", r[3]),
                forced=bool(check.whole("forced", r[4], 0, 1)),
                first_attempt_start=check.optional_instant("first_attempt_start", r[5]),
                attempts=check.whole("attempts", r[6], 0),
                next_attempt_at=check.optional_instant("next_attempt_at", r[7]),
                extra_retry=check.whole("extra_retry", r[8], 0, 2) == 1,
                extra_spent=r[8] == 2,
                uncounted=check.whole("uncounted", r[9], 0),
            )

        columns = f"{_RUN_COLUMNS}, extra_retry, uncounted"
        rows = self.query(f"SELECT {columns} FROM runs WHERE finished = 0 ORDER BY id")
        return [run(r, Row(self.path, "runs", r[1])) for r in rows]

    def add_attempt(self, attempt: Attempt) -> Attempt:
        """Insert a started attempt, numbered after every attempt ever stored, and return it
        with its new ``id``; it is committed when this returns (inside :meth:`batch`: when the
        batch ends), so an attempt is on disk before it is sent."""
        self._attempt_id += 1  # callers hold the engine lock
        attempt.id = self._attempt_id
        row = (
            attempt.id,
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
        )
        self._execute(_INSERT_ATTEMPT, row, wait=True)
        if attempt.id % _RETENTION_EVERY == 0:
            self._execute(self._trim)
        return attempt

    def mark_sent(self, attempt: Attempt) -> None:
        """Record the start of ``attempt`` (added earlier, when it was queued) as the instant
        it was sent, so that the attempt read in flight starts when its finished record will."""
        sql = "UPDATE attempts SET start_time = ? WHERE id = ?"
        self._execute(sql, (_ts(attempt.start_time), attempt.id))

    def finish_attempt(self, attempt: Attempt) -> None:
        """Record the end, status, code, debug text and response excerpt of ``attempt``: the
        one update of its row when it ends (its start was written by :meth:`add_attempt` or
        :meth:`mark_sent`)."""
        sql = (
            "UPDATE attempts SET end_time = ?, response_status = ?, code = ?, debug_info = ?, "
            "injected = ?, response_excerpt = ?, response_content_type = ? WHERE id = ?"
        )
        args = (
            _ts(attempt.end_time),
            attempt.response_status,
            attempt.code,
            attempt.debug_info,
            int(attempt.injected),
            attempt.response_excerpt or None,
            attempt.response_content_type,
            attempt.id,
        )
        self._execute(sql, args)

    def attempts(self, job: str | None = None, *, unfinished: bool = False) -> list[Attempt]:
        """Return attempts in start order, optionally of one job (full name) or only in flight:
        the whole history (for a large one use :meth:`attempts_page`)."""
        clauses: list[str] = ["end_time IS NULL"] if unfinished else []
        args: list[Any] = []
        add_condition(clauses, args, "job = ?", job)
        return attempts_from_rows(self.path, self.select("attempts", clauses, args)[0])

    def attempts_page(
        self,
        where: AttemptFilter = AttemptFilter(),
        *,
        after_id: int | None = None,
        page_size: int = ATTEMPTS_PAGE_SIZE,
        newest: bool = False,
    ) -> tuple[list[Attempt], int | None]:
        """One page of attempts in start order, or newest first with ``newest`` (only the page
        is read), and the id to pass as ``after_id`` for the next page (``None`` on the last).

        :param where: which attempts.
        :param after_id: where the previous page ended (only attempts past it, in that order).
        :param page_size: 1 to :data:`ATTEMPTS_PAGE_SIZE_MAX` attempts.
        :raises ValueError: for a page size out of range.
        """
        clauses, args = window_conditions("start_time", where.start_after, where.start_before)
        add_condition(clauses, args, "job = ?", where.job)
        add_condition(clauses, args, "run_id = ?", where.run_id)
        add_condition(clauses, args, "code != ?", "OK" if where.failed else None)  # NULL: in flight
        add_condition(clauses, args, "id < ?" if newest else "id > ?", after_id)
        order = "id DESC" if newest else "id"
        rows, last = self.select("attempts", clauses, args, page_size, order=order)
        return attempts_from_rows(self.path, rows), last  # damaged rows left out

    def select(
        self,
        table: str,
        clauses: list[str],
        args: list[Any],
        page_size: int | None = None,
        *,
        order: str = "id",
    ) -> tuple[list[Any], int | None]:
        """The rows of ``table`` (``attempts``: :data:`ATTEMPT_COLUMNS`; ``skipped``) meeting
        ``clauses`` (SQL joined with ``AND``, ``?`` bound to ``args``) by ``order`` (``id`` or
        ``id DESC``); with ``page_size`` (1 to :data:`ATTEMPTS_PAGE_SIZE_MAX`, else
        ``ValueError``), one page and the id the next page starts after (``None``: the last)."""
        columns = ATTEMPT_COLUMNS if table == "attempts" else _SKIPPED_COLUMNS
        query = f"SELECT {columns} FROM {table}"
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        if page_size is None:
            return self.query(f"{query} ORDER BY {order}", args), None
        if not 1 <= page_size <= ATTEMPTS_PAGE_SIZE_MAX:
            raise ValueError(f"page_size must be 1 to {ATTEMPTS_PAGE_SIZE_MAX}; got {page_size}.")
        rows = self.query(f"{query} ORDER BY {order} LIMIT {page_size + 1}", args)
        return rows[:page_size], (rows[page_size - 1][0] if len(rows) > page_size else None)

    def _trim(self, db: sqlite3.Connection) -> tuple[int, int]:
        """Apply :attr:`retain_attempts` and :attr:`retain_megabytes`, oldest first, and return
        how many finished attempts and skipped-run records that dropped (trial 187: the records
        went unsaid). Finished runs go whole, with all their attempts, so that no run is left
        reading "gave up" after no try or fewer tries than it made (trials 107, 117); a run
        still going keeps its attempts, and each job its latest skipped-run record
        (:meth:`last_skipped`)."""
        dropped = records = 0

        def drop_runs_of_attempts_before(attempt_id: int) -> int:
            sql = "SELECT run_id FROM attempts WHERE id < ? ORDER BY id DESC LIMIT 1"
            run = db.execute(sql, (attempt_id,)).fetchone() or (0,)  # (its run: run ids grow too)
            newest = db.execute(f"SELECT id, start_time {_DROPPED} ORDER BY id DESC LIMIT 1", run)
            for found in newest.fetchall():  # (none, or the newest this drops)
                self.dropped_through = max(self.dropped_through, found, key=lambda d: d[0])
            count = db.execute(_DROP_RUNS[0], run).rowcount
            db.execute(_DROP_RUNS[1], run)
            return count

        keep = self.retain_attempts
        if keep is not None:
            sql = (  # each job's latest stays: a restart lists no time up to it again (trial 211)
                "DELETE FROM skipped WHERE id <= (SELECT MAX(id) FROM skipped) - ? AND id NOT IN "
                "(SELECT id FROM (SELECT id, MAX(nominal) FROM skipped GROUP BY job))"
            )
            records = db.execute(sql, (keep,)).rowcount
            [(largest,)] = db.execute("SELECT COALESCE(MAX(id), 0) FROM attempts")
            dropped += drop_runs_of_attempts_before(largest - keep + 1)
        if self.retain_megabytes is None:
            return dropped, records
        [(first, last)] = db.execute("SELECT IFNULL(MIN(id), 0), IFNULL(MAX(id), 0) FROM attempts")
        step = max((last - first) // 10, 1)  # a tenth of the history at a time
        for cutoff in range(first + step, last + step + 1, step):
            [(page_bytes,)] = db.execute("PRAGMA page_size")
            [(pages,)] = db.execute("PRAGMA page_count")
            [(free,)] = db.execute("PRAGMA freelist_count")
            if (pages - free) * page_bytes <= self.retain_megabytes * 1_000_000:
                break
            dropped += drop_runs_of_attempts_before(cutoff)  # (its space is reused: the file stays)
        return dropped, records

    def add_skipped(self, skipped: SkippedRun) -> None:
        """Record a scheduled time that got no run (an earlier run was still going, or the
        emulator was down)."""
        nominal = utc_text(skipped.nominal)  # UTC: MAX() orders the text
        recorded = _ts(skipped.recorded_at)
        row = (skipped.job, skipped.schedule_time, nominal, recorded, skipped.reason)
        self._execute(_INSERT_SKIPPED, row)

    def skipped_page(
        self,
        *,
        job: str | None = None,
        after_id: int = 0,
        page_size: int | None = ATTEMPTS_PAGE_SIZE,
    ) -> tuple[list[SkippedRun], int | None]:
        """One page of skipped scheduled times in the order they were recorded, and the id to
        pass as ``after_id`` for the next page (``None`` on the last page).

        :param job: only this job's (full name).
        :param after_id: only records after this one (where the previous page ended).
        :param page_size: 1 to :data:`ATTEMPTS_PAGE_SIZE_MAX` records (``None``: all of them).
        :raises ValueError: for a page size out of range.
        """
        clauses: list[str] = ["id > ?"]
        args: list[Any] = [after_id]
        add_condition(clauses, args, "job = ?", job)
        rows, last = self.select("skipped", clauses, args, page_size)
        at = datetime.fromisoformat  # (both columns NOT NULL)
        return [SkippedRun(r[1], r[2], at(r[3]), at(r[4]), r[5]) for r in rows], last

    def reset(self) -> None:
        """Delete every job, run, attempt and skipped record (new ones are numbered after)."""
        self._last_run_id = self.last_run_id()

        def delete_all(db: sqlite3.Connection) -> None:
            for table in TABLES:
                db.execute(f"DELETE FROM {table}")

        self._execute(delete_all, wait=True)
