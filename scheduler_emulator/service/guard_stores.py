"""Where the run-once guard keeps its claims: run records and the stores that
hold them.

A *run record* says what became of one scheduled run (one job at one schedule time): it is being
worked on by one attempt (``in_progress``, held until ``lease_expires``) or it is done
(``completed``). ``expire_at`` is the record's time to live; after it a store may forget the run.

The decision a claim makes is a pure function of the record found and the current instant,
:func:`decide_claim`; a store only wraps it in a transaction::

    >>> from datetime import UTC, datetime, timedelta
    >>> now = datetime(2026, 9, 24, 2, 0, 5, tzinfo=UTC)
    >>> lease, retention = timedelta(minutes=5), timedelta(days=1)
    >>> held = RunRecord(RunStatus.IN_PROGRESS, "a1", now + lease, now + retention)
    >>> decide_claim(None, now).value, decide_claim(held, now).value
    ('claimed', 'in_progress')
    >>> decide_claim(held, now + timedelta(minutes=5)).value     # the lease has run out
    'claimed'

Two stores implement :class:`RunStore`:

- :class:`SqliteRunStore` — embedded, the default: ``":memory:"`` (one process) or a file shared
  by every process on one machine (WAL journal, ``BEGIN IMMEDIATE`` transactions, a busy timeout).
  It forgets records past ``expire_at`` at the next claim.
- :class:`FirestoreRunStore` — Firestore transactions, for services with several instances
  (``pip install 'cloud-scheduler-emulator[firestore]'``; the package is imported only when the
  store is made). Give the collection a TTL policy on ``expire_at``::

      gcloud firestore fields ttls update expire_at --collection-group=scheduler_runs --enable-ttl
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..wire import to_instant

if TYPE_CHECKING:  # pragma: no cover - typing only; sqlite3 is imported when a store is made
    import sqlite3

__all__ = [
    "Claim",
    "ClaimOutcome",
    "FirestoreRunStore",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "SqliteRunStore",
    "decide_claim",
]

#: The table (SQLite) and collection (Firestore) run records live in unless told otherwise.
DEFAULT_COLLECTION = "scheduler_runs"
_TABLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


class RunStatus(StrEnum):
    """The state a run record is in; the value is what the store holds."""

    #: One attempt claimed the run and holds it until ``lease_expires``.
    IN_PROGRESS = "in_progress"
    #: An attempt finished the run's work; later deliveries are answered 200 without running.
    COMPLETED = "completed"


class ClaimOutcome(Enum):
    """What one attempt's claim on a run found."""

    #: No record, or an expired lease: the run is now this attempt's to work on.
    CLAIMED = "claimed"
    #: The run is done: answer 200 without running the work.
    COMPLETED = "completed"
    #: Another attempt holds a live lease: answer 409 so Cloud Scheduler retries later.
    IN_PROGRESS = "in_progress"


@dataclass(frozen=True)
class RunRecord:
    """One run's record in a store.

    :param status: :class:`RunStatus`.
    :param attempt_id: the claiming attempt's id (``uuid4().hex``); only that attempt may complete
        or release the record.
    :param lease_expires: aware instant until which the claim holds; after it another attempt may
        take the run over (the first one is presumed dead).
    :param expire_at: aware instant after which the record may be deleted (the store's TTL field).
    :param run: ``[<scope>/]<job name>/<schedule time>``, the text the key hashes, for people
        reading the store (``""`` when unknown).
    """

    status: RunStatus
    attempt_id: str
    lease_expires: datetime
    expire_at: datetime
    run: str = ""

    def as_fields(self) -> dict[str, Any]:
        """Return the record as the store's field names and plain values.

        :return: ``{"status", "attempt_id", "lease_expires", "expire_at", "run"}``; the
            instants stay aware datetimes.
        """
        return {
            "status": self.status.value,
            "attempt_id": self.attempt_id,
            "lease_expires": self.lease_expires,
            "expire_at": self.expire_at,
            "run": self.run,
        }

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any], where: str = "run record") -> RunRecord:
        """Build a record from a store's fields (the inverse of :meth:`as_fields`).

        :param fields: the stored fields; instants as aware datetimes or RFC 3339 text.
        :param where: names the record in the error message.
        :raises ValueError: when a field is missing or malformed (something else wrote there).
        :return: the record.
        """
        try:
            return cls(
                status=RunStatus(fields["status"]),
                attempt_id=str(fields["attempt_id"]),
                lease_expires=to_instant(fields["lease_expires"], "lease_expires"),
                expire_at=to_instant(fields["expire_at"], "expire_at"),
                run=str(fields.get("run") or ""),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(
                f"{where} is not a run-once guard record (status, attempt_id, lease_expires, "
                f"expire_at): {exc!r} in {dict(fields)!r}."
            ) from None


@dataclass(frozen=True)
class Claim:
    """The result of one claim transaction.

    :param outcome: :class:`ClaimOutcome`.
    :param record: the record now in the store: this attempt's own when ``CLAIMED``, else the
        one that refused the claim.
    :param previous: when ``CLAIMED`` over an expired lease, the record that was replaced;
        ``None`` for a run seen for the first time (and for the other outcomes).
    """

    outcome: ClaimOutcome
    record: RunRecord
    previous: RunRecord | None = None


def decide_claim(existing: RunRecord | None, now: datetime) -> ClaimOutcome:
    """Decide what a claim on a run does, given the record found (pure).

    :param existing: the run's record, or ``None`` when the store has none.
    :param now: the claiming attempt's current instant (aware).
    :return: ``COMPLETED`` for a completed record; ``IN_PROGRESS`` for an ``in_progress`` record
        whose ``lease_expires`` is still after ``now``; otherwise ``CLAIMED`` (the caller writes
        its own record).
    """
    if existing is None:
        return ClaimOutcome.CLAIMED
    if existing.status is RunStatus.COMPLETED:
        return ClaimOutcome.COMPLETED
    if existing.lease_expires > now:
        return ClaimOutcome.IN_PROGRESS
    return ClaimOutcome.CLAIMED


@runtime_checkable
class RunStore(Protocol):
    """What the run-once guard needs of a store: two transactions and a read.

    Each method is one transaction on one key; a store must be safe to call from several threads
    (a WSGI server's) and, for stores shared between instances, from several processes.
    """

    def claim(self, key: str, record: RunRecord, now: datetime) -> Claim:
        """Claim a run, in one transaction.

        Read the key's record, apply :func:`decide_claim` to it and ``now``, and when that says
        ``CLAIMED`` write ``record`` (an ``in_progress`` record with a fresh ``attempt_id``) in
        its place.

        :param key: the run's key (64 hex digits).
        :param record: the record to write when the claim succeeds.
        :param now: the attempt's current instant (aware), against which leases are compared.
        :return: the :class:`Claim`.
        """
        ...

    def finish(self, key: str, attempt_id: str, *, succeeded: bool) -> bool:
        """End an attempt's claim, in one transaction, if the record is still that attempt's.

        :param key: the run's key.
        :param attempt_id: the attempt that claimed the run.
        :param succeeded: ``True`` marks the record ``completed``; ``False`` deletes it so that a
            retry can claim the run at once.
        :return: ``True`` when the record was the attempt's and was changed; ``False`` when it
            was gone or held another ``attempt_id`` (then it is left untouched).
        """
        ...

    def get(self, key: str) -> RunRecord | None:
        """Read a run's record (outside any transaction; for inspection and tests).

        :param key: the run's key.
        :return: the record, or ``None``.
        """
        ...


def _text(instant: datetime) -> str:
    """An aware instant as fixed-width UTC ISO 8601, so that text order is time order.

    :raises NaiveDatetimeError: for a naive datetime.
    """
    return to_instant(instant, "the instant").isoformat(timespec="microseconds")


def _why_unopenable(path: str, exc: Exception) -> str:
    """Say why SQLite could not open ``path``, as far as the file system tells.

    :param path: the database path given to the store.
    :param exc: SQLite's own error, quoted when nothing more precise is found.
    :return: a sentence for the error message.
    """
    absolute = os.path.abspath(path)
    directory = os.path.dirname(absolute)
    if os.path.isdir(absolute):
        return "it is a directory; give the path of a database file inside it."
    if not os.path.isdir(directory):
        return (
            f"the directory {directory} does not exist; create it (os.makedirs) before the "
            "store, or use SqliteRunStore(':memory:') for one process."
        )
    if not os.access(directory, os.W_OK | os.X_OK):
        return (
            f"the directory {directory} is not writable by this process (SQLite writes the "
            "database and its -wal and -shm files there)."
        )
    if os.path.exists(absolute) and not os.access(absolute, os.R_OK | os.W_OK):
        return "the file is not readable and writable by this process."
    return f"{exc}."


#: The in-memory stores alive in this process (:func:`forget_in_memory_runs`).
_IN_MEMORY: weakref.WeakSet[SqliteRunStore] = weakref.WeakSet()


def forget_in_memory_runs() -> None:
    """Empty every in-memory :class:`SqliteRunStore` of this process (a guard's default store).
    The pytest plugin does it before each test that uses its fixtures: each test's emulator
    starts at the same virtual instant, so a guard kept at module level must not remember the
    runs of the test before. Stores in a file (or in Firestore) are left as they are."""
    for store in list(_IN_MEMORY):
        store.clear()


class SqliteRunStore:
    """Run records in SQLite: embedded, the guard's default store.

    Every claim and finish is one ``BEGIN IMMEDIATE`` transaction, so two attempts never both
    claim a run. One connection per store and process, used under a lock, serves every thread.
    A file database is shared by every process that opens it (WAL journal, ``busy_timeout``):
    the right store for several worker processes on one machine. ``":memory:"`` lives in this
    store object only; it deduplicates within one process.

    Records past ``expire_at`` are deleted at the next claim (what a Firestore TTL policy does),
    so the table holds about one retention period of runs.

    :param path: a file path (created if missing) or ``":memory:"``.
    :param table: the table's name, ``[A-Za-z_][A-Za-z0-9_]*`` (``scheduler_runs``).
    :param busy_timeout: how long a transaction waits for another process's to end before it
        fails with :class:`sqlite3.OperationalError` (``database is locked``).
    :raises ValueError: for an invalid table name or a non-positive ``busy_timeout``.
    :raises sqlite3.Error: when the database cannot be opened or is not a SQLite file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        table: str = DEFAULT_COLLECTION,
        busy_timeout: timedelta = timedelta(seconds=30),
    ) -> None:
        if not _TABLE_RE.fullmatch(table):
            raise ValueError(f"Table name {table!r} is not [A-Za-z_][A-Za-z0-9_]* (63 at most).")
        if not isinstance(busy_timeout, timedelta) or busy_timeout <= timedelta(0):
            raise ValueError(f"busy_timeout {busy_timeout!r} is not a positive timedelta.")
        self.path: str = os.fspath(path)
        self.table = table
        self.busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._pid = os.getpid()
        with self._transaction(write=False):  # opened now: a file that cannot be is said here
            pass
        if self.in_memory:
            _IN_MEMORY.add(self)

    def __repr__(self) -> str:
        return f"SqliteRunStore({self.path!r}, table={self.table!r})"

    def clear(self) -> None:
        """Delete every run record of this store."""
        with self._transaction() as connection:
            connection.execute(f"DELETE FROM {self.table}")

    @property
    def in_memory(self) -> bool:
        """``True`` for a ``":memory:"`` database (one process, this store only)."""
        return self.path == ":memory:"

    def _connect(self) -> sqlite3.Connection:
        """Open this process's connection: autocommit mode, the busy timeout, WAL for a file,
        the table made if missing."""
        import sqlite3

        try:
            connection = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout.total_seconds(),
                isolation_level=None,  # autocommit: the explicit BEGIN/COMMIT below
                check_same_thread=False,  # every use is under self._lock
            )
            if not self.in_memory:
                connection.execute("PRAGMA journal_mode=WAL")
            # each connection: a forked child's ":memory:" starts empty (trial 168: every claim
            # under gunicorn's workers failed "no such table")
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} ("
                " key TEXT PRIMARY KEY,"
                " status TEXT NOT NULL CHECK (status IN ('in_progress', 'completed')),"
                " attempt_id TEXT NOT NULL,"
                " lease_expires TEXT NOT NULL,"
                " expire_at TEXT NOT NULL,"
                " run TEXT NOT NULL DEFAULT ''"
                ") WITHOUT ROWID"
            )
            connection.execute(
                f"CREATE INDEX IF NOT EXISTS {self.table}_expire_at ON {self.table} (expire_at)"
            )
        except sqlite3.OperationalError as exc:
            raise sqlite3.OperationalError(
                f"SqliteRunStore cannot open {self.path!r}: {_why_unopenable(self.path, exc)}"
            ) from exc
        return connection

    @contextmanager
    def _transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction under this store's lock, rolled back if the block raises.

        :param write: ``True`` (``BEGIN IMMEDIATE``) for claims and finishes, ``False``
            (``BEGIN DEFERRED``) for reads.
        :return: a context manager yielding the connection.
        """
        if self._pid != os.getpid():
            # A forked child: a connection must not cross fork(), and the lock may have been held
            # by a thread that does not exist here. Start afresh (":memory:" starts empty).
            self._lock, self._connection, self._pid = threading.RLock(), None, os.getpid()
        with self._lock:
            if self._connection is None:
                self._connection = self._connect()
            connection = self._connection
            # IMMEDIATE takes the write lock at once: a claim's read and write see no other
            # writer in between, and waiting for the lock happens here, under busy_timeout.
            connection.execute("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def _select(self, connection: sqlite3.Connection, key: str) -> RunRecord | None:
        """Read a key's record inside the current transaction.

        :raises ValueError: for a row that is not a guard record.
        """
        row = connection.execute(
            f"SELECT status, attempt_id, lease_expires, expire_at, run FROM {self.table} "
            "WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        names = ("status", "attempt_id", "lease_expires", "expire_at", "run")
        fields = dict(zip(names, row, strict=True))
        return RunRecord.from_fields(fields, f"{self!r} key {key}")

    def claim(self, key: str, record: RunRecord, now: datetime) -> Claim:
        """Claim a run in one ``BEGIN IMMEDIATE`` transaction (see :meth:`RunStore.claim`).

        The same transaction first deletes every record whose ``expire_at`` is not after ``now``.

        :param key: the run's key.
        :param record: the ``in_progress`` record to write when the claim succeeds.
        :param now: the attempt's current instant (aware).
        :raises sqlite3.OperationalError: when another process holds the database longer than
            ``busy_timeout``.
        :return: the :class:`Claim`.
        """
        with self._transaction() as connection:
            connection.execute(f"DELETE FROM {self.table} WHERE expire_at <= ?", (_text(now),))
            existing = self._select(connection, key)
            outcome = decide_claim(existing, now)
            if outcome is not ClaimOutcome.CLAIMED:
                assert existing is not None
                return Claim(outcome, existing)
            connection.execute(
                f"INSERT OR REPLACE INTO {self.table} "
                "(key, status, attempt_id, lease_expires, expire_at, run) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    record.status.value,
                    record.attempt_id,
                    _text(record.lease_expires),
                    _text(record.expire_at),
                    record.run,
                ),
            )
            return Claim(outcome, record, existing)

    def finish(self, key: str, attempt_id: str, *, succeeded: bool) -> bool:
        """Complete or release an attempt's claim in one transaction (see :meth:`RunStore.finish`).

        :param key: the run's key.
        :param attempt_id: the attempt that claimed the run.
        :param succeeded: ``True`` → ``completed``; ``False`` → the record is deleted.
        :raises sqlite3.OperationalError: when another process holds the database longer than
            ``busy_timeout``.
        :return: whether the record was the attempt's (and so was changed).
        """
        with self._transaction() as connection:
            if succeeded:
                cursor = connection.execute(
                    f"UPDATE {self.table} SET status = 'completed' "
                    "WHERE key = ? AND attempt_id = ?",
                    (key, attempt_id),
                )
            else:
                cursor = connection.execute(
                    f"DELETE FROM {self.table} WHERE key = ? AND attempt_id = ?",
                    (key, attempt_id),
                )
            return cursor.rowcount == 1

    def get(self, key: str) -> RunRecord | None:
        """Read a run's record.

        :param key: the run's key.
        :return: the record, or ``None``.
        """
        with self._transaction(write=False) as connection:
            return self._select(connection, key)

    def close(self) -> None:
        """Close this process's connection; the next use opens a new one (``":memory:"`` empty)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __enter__(self) -> SqliteRunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


#: The bounds, in seconds, of the random waits between a contended claim's rounds of tries.
_FIRST_BACKOFF, _LAST_BACKOFF = 0.05, 2.0


def _firestore() -> Any:
    """Import ``google.cloud.firestore`` (lazily: the extra is optional).

    :raises ImportError: naming the extra to install, when the package is missing.
    """
    try:
        from google.cloud import firestore
    except ImportError as exc:
        raise ImportError(
            "FirestoreRunStore needs google-cloud-firestore: "
            "pip install 'cloud-scheduler-emulator[firestore]'."
        ) from exc
    return firestore


class FirestoreRunStore:
    """Run records in Firestore, one document per run, claimed in transactions.

    The store for a service with several instances. Each claim and finish runs in a
    ``@firestore.transactional`` function: Firestore retries it when another transaction touched
    the document first, so two attempts never both claim a run. Documents are named by the run
    key; their fields are those of :class:`RunRecord` (timestamps for the instants). Firestore
    does not delete anything by itself: give the collection a TTL policy on ``expire_at`` (it
    deletes expired documents within about a day or three).

    :param client: a :class:`google.cloud.firestore.Client`; ``None`` makes one with the
        environment's project and credentials (``FIRESTORE_EMULATOR_HOST`` points it at the
        emulator).
    :param collection: the collection holding the records.
    :param max_attempts: how many times one transaction is tried at once under contention
        (Firestore's client retries an aborted transaction without waiting).
    :param contention_timeout: seconds a claim keeps trying, after a round of ``max_attempts``
        tries ended with no record written by anyone (several claims of one document at the
        same moment can abort each other, every try, on the Firestore emulator): between rounds
        it waits a random time, up to twice as long each round (from 50 ms, at most 2 s:
        "exponential backoff with jitter"), then tries again.
    :raises ImportError: when google-cloud-firestore is not installed (install the
        ``firestore`` extra).
    """

    def __init__(
        self,
        client: Any = None,
        collection: str = DEFAULT_COLLECTION,
        *,
        max_attempts: int = 5,
        contention_timeout: float = 30.0,
    ) -> None:
        self._firestore = _firestore()
        self.client: Any = client if client is not None else self._firestore.Client()
        self.collection = collection
        self.max_attempts = max_attempts
        self.contention_timeout = contention_timeout

    def __repr__(self) -> str:
        project = getattr(self.client, "project", None)
        return f"FirestoreRunStore(project={project!r}, collection={self.collection!r})"

    def _ref(self, key: str) -> Any:
        """The document of a run key."""
        return self.client.collection(self.collection).document(key)

    def _read(self, ref: Any, transaction: Any = None) -> RunRecord | None:
        """Read a document as a record, in ``transaction`` when given.

        :raises ValueError: for a document that is not a guard record.
        """
        snapshot = ref.get(transaction=transaction)
        if not snapshot.exists:
            return None
        return RunRecord.from_fields(snapshot.to_dict() or {}, f"Firestore document {ref.path}")

    def _in_transaction(self, function: Any, *args: Any) -> Any:
        """Run ``function(transaction, *args)`` under ``@firestore.transactional``.

        A fresh ``_Transactional`` per call: the object keeps one call's retry state, so sharing
        it between threads would mix their transactions.
        """
        transactional = self._firestore.transactional(function)
        try:
            return transactional(self.client.transaction(max_attempts=self.max_attempts), *args)
        except ValueError as exc:  # a transaction that could not begin (Firestore unreachable)
            cause = exc.__context__  # reads "no transaction ID, so it cannot be rolled back"
            if cause is None or "no transaction ID" not in str(exc):
                raise
            raise cause from None  # the begin's own failure: what did not answer, and why

    def claim(self, key: str, record: RunRecord, now: datetime) -> Claim:
        """Claim a run in one Firestore transaction (see :meth:`RunStore.claim`).

        :param key: the run's key (the document id).
        :param record: the ``in_progress`` record to write when the claim succeeds.
        :param now: the attempt's current instant (aware).
        :raises google.api_core.exceptions.GoogleAPICallError: when Firestore fails
            (``RetryError`` when it did not answer within the client's 60 s, naming the host).
        :raises ValueError: when the transaction still conflicts after ``contention_timeout``
            seconds of rounds and no other attempt's record explains the conflict.
        :return: the :class:`Claim`. When the transaction keeps conflicting because other
            attempts claim the same run at the same moment, the record one of them wrote
            decides (``in_progress`` → 409), as if this attempt had come a moment later; when
            none has written one (they aborted each other), the claim backs off and tries again
            (see ``contention_timeout``), the lease still judged at ``now``.
        """

        def claim_in(transaction: Any, ref: Any) -> Claim:
            existing = self._read(ref, transaction)
            outcome = decide_claim(existing, now)
            if outcome is not ClaimOutcome.CLAIMED:
                assert existing is not None
                return Claim(outcome, existing)
            transaction.set(ref, record.as_fields())
            return Claim(outcome, record, existing)

        ref = self._ref(key)
        deadline = time.monotonic() + self.contention_timeout
        longest = _FIRST_BACKOFF
        while True:
            try:
                result: Claim = self._in_transaction(claim_in, ref)
                return result
            except ValueError as exc:  # google-cloud-firestore: "Failed to commit transaction…"
                if not str(exc).startswith("Failed to commit transaction"):
                    raise
                existing = self._read(ref)
                if existing is not None:
                    outcome = decide_claim(existing, now)
                    if outcome is not ClaimOutcome.CLAIMED:
                        return Claim(outcome, existing)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
            # Nobody's record was written: the claims aborted one another. Each waits a random
            # part of a doubling bound, so that one of them next tries alone.
            time.sleep(min(left, random.uniform(0, longest)))  # noqa: S311 - not a secret
            longest = min(2 * longest, _LAST_BACKOFF)

    def finish(self, key: str, attempt_id: str, *, succeeded: bool) -> bool:
        """Complete or release a claim in one Firestore transaction (see :meth:`RunStore.finish`).

        :param key: the run's key.
        :param attempt_id: the attempt that claimed the run.
        :param succeeded: ``True`` → ``completed``; ``False`` → the document is deleted.
        :raises google.api_core.exceptions.GoogleAPICallError: when Firestore fails.
        :return: whether the document was the attempt's (and so was changed).
        """

        def finish_in(transaction: Any, ref: Any) -> bool:
            existing = self._read(ref, transaction)
            if existing is None or existing.attempt_id != attempt_id:
                return False
            if succeeded:
                transaction.update(ref, {"status": RunStatus.COMPLETED.value})
            else:
                transaction.delete(ref)
            return True

        result: bool = self._in_transaction(finish_in, self._ref(key))
        return result

    def get(self, key: str) -> RunRecord | None:
        """Read a run's document.

        :param key: the run's key.
        :raises google.api_core.exceptions.GoogleAPICallError: when Firestore fails.
        :return: the record, or ``None``.
        """
        return self._read(self._ref(key))
