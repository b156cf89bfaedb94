"""The database file of a data directory: is it fit to open, and what a failed write means.

A data directory holds jobs and attempts that exist nowhere else, so the emulator never starts
over a database it cannot read, and never writes into one it does not understand. Before the
store writes anything, :func:`check_database` reads the existing file and refuses (exit 2 from
``scheduler-emulator start``) a file that is empty, is not SQLite, is damaged (truncated,
garbage pages: ``PRAGMA quick_check``), lacks one of the emulator's tables, or carries a
``user_version`` from a later release; the message names the file, what is wrong and what to
do, and the file is left as it was.

While running, a write that fails because the disk is full (or the file cannot be written)
becomes :class:`~scheduler_emulator.domain.errors.StorageUnavailable` (503 ``UNAVAILABLE``)
naming the data directory (:func:`storage_error`); the change it belonged to is not kept.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..domain.errors import ConfigurationError, StorageUnavailable

#: The first 16 bytes of every SQLite 3 database file.
SQLITE_HEADER = b"SQLite format 3\x00"
#: The emulator's tables; a database that has some but not all of them lost one.
TABLES = ("jobs", "runs", "attempts", "skipped")
#: Free space a data directory's disk must have for the daemon to start (1 MiB): a few
#: thousand attempts' worth, so a full disk is found at start-up, not at the first run.
MIN_FREE_BYTES = 1024 * 1024
#: SQLite's primary result codes that mean "this cannot be written now" (the disk is full,
#: an I/O error, a read-only file), not a mistake of ours.
_UNWRITABLE = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY})


class DataFileUnusable(ConfigurationError):
    """The data directory's database cannot be used; the message names the file, the problem
    and what to do. Nothing was written to it."""


def advice(path: Path) -> str:
    """What to do about an unusable database file ``path`` (one sentence)."""
    return (
        f"It was left untouched. Move it aside (mv {path} {path}.unreadable) to start with no "
        "jobs, or pass --data-dir DIR to use another directory."
    )


def existing_size(path: Path) -> int | None:
    """The size of the database file before it is opened, or ``None`` when there is none (a
    new data directory). Call before connecting: SQLite creates a missing file."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def check_free_space(directory: Path, *, minimum: int = MIN_FREE_BYTES) -> None:
    """Refuse to start on a disk that is (nearly) full.

    :raises DataFileUnusable: naming the directory and the free bytes.
    """
    try:
        stats = os.statvfs(directory)
    except OSError:
        return  # nothing to tell; the writes themselves will say
    free = stats.f_bavail * stats.f_frsize
    if free < minimum:
        raise DataFileUnusable(
            f"the disk holding the data directory {directory} is full ({free} bytes free; at "
            f"least {minimum} needed to record jobs and attempts). Free space on it, or pass "
            "--data-dir DIR on another disk."
        )


def check_database(db: sqlite3.Connection, path: Path, size: int | None, version: int) -> bool:
    """Check an existing database file before anything is written to it.

    :param db: a connection to ``path`` that has written nothing yet.
    :param path: the file, for messages.
    :param size: its size before it was opened (:func:`existing_size`); ``None`` for a new one.
    :param version: the ``user_version`` this release writes; a larger one is refused.
    :raises DataFileUnusable: for an empty file, a file that is not SQLite or is damaged, a
        missing table, or a later schema version — naming the file, the problem and
        :func:`advice`.
    :return: whether the file holds the emulator's tables (``False``: new or empty of tables).
    """
    if size is None:
        return False
    if size == 0:
        _refuse(path, "is empty (0 bytes), so it holds none of the jobs it should")
    with path.open("rb") as handle:
        if handle.read(16) != SQLITE_HEADER:
            _refuse(path, "is not an SQLite database (its first bytes are not SQLite's header)")
    try:
        found = int(db.execute("PRAGMA user_version").fetchone()[0])
        if found > version:
            _refuse(
                path,
                f"was written by a later release of scheduler-emulator (schema version "
                f"{found}; this release knows up to {version}); upgrade scheduler-emulator to "
                "use it",
            )
        tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        damage = [row[0] for row in db.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as exc:
        _refuse(path, f"cannot be read ({exc}): it is damaged or not a database")
    if damage != ["ok"]:
        found_text = " ".join("; ".join(damage).split())  # one line
        _refuse(path, f"is damaged (SQLite's check found: {found_text[:300]})")
    missing = [name for name in TABLES if name not in tables]
    if not missing:
        return True
    if not tables and found == 0:
        return False  # an SQLite file with nothing in it yet: nothing to lose
    if len(missing) == len(TABLES):
        _refuse(path, "is an SQLite database but not scheduler-emulator's (none of its tables)")
    _refuse(path, f"has lost its {', '.join(missing)} table(s), so what they held is gone")
    raise AssertionError("unreachable")  # pragma: no cover


def _refuse(path: Path, problem: str) -> None:
    raise DataFileUnusable(f"the database {path} {problem}. {advice(path)}")


def is_unwritable(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying it cannot write now (full disk, I/O error, read-only)."""
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _UNWRITABLE
    text = str(exc)
    return "disk is full" in text or "disk I/O error" in text or "readonly" in text


def storage_error(path: str, exc: BaseException) -> StorageUnavailable:
    """The API error for a write to the database at ``path`` that failed with ``exc``."""
    return StorageUnavailable(
        f"The emulator's data directory {Path(path).parent} cannot be written ({exc}): the "
        "change was not stored. Free space on that disk and try again."
    )


def startup_error(path: str, exc: BaseException) -> DataFileUnusable:
    """The start-up error for a write to the database at ``path`` that failed with ``exc``."""
    return DataFileUnusable(
        f"cannot start: the database {path} cannot be opened or written ({exc}). Free space on "
        "its disk "
        "(or make it writable), or pass --data-dir DIR elsewhere."
    )
