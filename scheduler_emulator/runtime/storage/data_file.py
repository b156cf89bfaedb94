"""The database file of a data directory (docs/behaviour.md: "A damaged database is never
replaced", "A damaged row", "A full disk"): is it fit to open (:func:`check_database`, before
the store writes anything; refused: exit 2 from ``scheduler-emulator start``, the file left as
it was), is each row read back sound (:class:`Row`: a damaged row read at start refuses the
start, one read while running is left out with a warning, :func:`read_rows`), and what a write
failing on a full disk means (:func:`storage_error`).
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from ...domain.attempts import Attempt
from ...domain.codec import parse_job, parse_timestamp, refuse_lone_surrogates, show_value
from ...domain.errors import (
    RPC_CODES,
    ApiError,
    ConfigurationError,
    InvalidArgument,
    StorageUnavailable,
)
from ...domain.numbers import parse_int, refuse_unbounded_numbers
from ...domain.resources import Job, State, Status
from ...domain.validation import validate_job
from .data_dir_lock import WRITABLE

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


def check_free_space(directory: Path, *, minimum: int = MIN_FREE_BYTES) -> None:
    """Refuse to start on a disk with less than ``minimum`` bytes free: raise
    :class:`DataFileUnusable`, naming the directory and the free bytes."""
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return  # nothing to tell; the writes themselves will say
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
    :param size: its size before it was opened; ``None`` for a new one.
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
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_CANTOPEN:
            raise startup_error(str(path), exc) from exc  # its directory is not writable
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


def _refuse(path: Path, problem: str) -> NoReturn:
    raise DataFileUnusable(f"the database {path} {problem}. {advice(path)}")


def is_unwritable(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying it cannot write now (full disk, I/O error, read-only)."""
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _UNWRITABLE
    return any(text in str(exc) for text in ("disk is full", "disk I/O error", "readonly"))


def _remedy(exc: BaseException) -> str:
    """What to do about a failed write: make the file writable (read-only), free space (full),
    else check both (an I/O error: an immutable file, a failing disk; trial 117)."""
    if "readonly" in str(exc) or "unable to open" in str(exc):  # (trials 74, 75: a read-only
        # file was told to free disk space; a read-only directory, that its database was damaged)
        return f"make it and its directory writable by this user ({WRITABLE})"
    if "I/O error" in str(exc):
        return f"check that its disk works and has space, and that it is writable ({WRITABLE})"
    return "free space on its disk"


def storage_error(path: str, exc: BaseException) -> StorageUnavailable:
    """The API error for a write to the database at ``path`` that failed with ``exc``."""
    return StorageUnavailable(
        f"The emulator's data directory {Path(path).parent} cannot be written ({exc}): the "
        f"change was not stored; {_remedy(exc)} and try again."
    )


def startup_error(path: str, exc: BaseException) -> DataFileUnusable:
    """The start-up error for a write to the database at ``path`` that failed with ``exc``."""
    return DataFileUnusable(
        f"cannot start: the database {path} cannot be opened or written ({exc}): "
        f"{_remedy(exc)}, or pass --data-dir DIR elsewhere."
    )


# ------------------------------------------------------------------------------ rows read back

logger = logging.getLogger("scheduler_emulator")
_T = TypeVar("_T")
#: The most damaged rows warned about once each (then each is warned about again).
_WARNED_MAX = 1000
_warned: set[tuple[str, str, Any]] = set()


class DamagedRow(DataFileUnusable):
    """A row of the database holds a value the emulator never writes (hand-edited, or written
    by a broken tool). The message names the file, the table, the job, the field and what to
    do."""

    def __init__(self, path: str | Path, table: str, job: Any, field: str, problem: str) -> None:
        #: What is damaged, without the advice (for a warning about a row that is left out).
        self.what = (
            f"the database {path} has a damaged row in its {table} table: job "
            f"{show_value(job, 120)}, {field} {problem}."
        )
        super().__init__(f"{self.what} {advice(Path(path))}")


@dataclass(frozen=True)
class Row:
    """Reads the values of one row of ``table`` for ``job``, checking each as the API would.

    :param path: the database file, for messages.
    :param job: the job the row belongs to (its full name as stored).
    :raises DamagedRow: from every method, naming the field and the value.
    """

    path: str | Path
    table: str
    job: Any

    def damaged(self, field: str, problem: str) -> DamagedRow:
        """The error for ``field`` of this row."""
        return DamagedRow(self.path, self.table, self.job, field, problem)

    def instant(self, field: str, value: Any) -> datetime:
        """An instant stored as RFC 3339 text with a UTC offset."""
        if not isinstance(value, str):
            raise self.damaged(field, f"is not an instant; got {show_value(value)}")
        try:
            return parse_timestamp(value)
        except InvalidArgument:
            raise self.damaged(
                field, f"is not an RFC 3339 instant with an offset; got {show_value(value)}"
            ) from None

    def optional_instant(self, field: str, value: Any) -> datetime | None:
        """:meth:`instant`, or ``None`` for SQL NULL."""
        return None if value is None else self.instant(field, value)

    def whole(self, field: str, value: Any, low: int, high: int | None = None) -> int:
        """A whole number from ``low`` to ``high``."""
        if type(value) is not int or value < low or (high is not None and value > high):
            to = "" if high is None else f" to {high}"
            raise self.damaged(
                field, f"must be a whole number from {low}{to}; got {show_value(value)}"
            )
        return value

    def text(self, field: str, value: Any, *, required: bool = True) -> Any:
        """A text value (``None`` for SQL NULL unless ``required``)."""
        if value is None and not required:
            return None
        if not isinstance(value, str):
            raise self.damaged(field, f"must be text; got {show_value(value)}")
        return value

    def json_object(self, field: str, value: Any) -> dict[str, Any]:
        """A JSON object stored as text, its numbers bounded as in a request body."""
        try:
            data = json.loads(self.text(field, value), parse_int=parse_int)
        except (ValueError, RecursionError) as exc:
            raise self.damaged(field, f"is not JSON ({str(exc)[:120]})") from None
        if not isinstance(data, dict):
            raise self.damaged(field, f"is not a JSON object; got {show_value(data)}")
        try:
            refuse_unbounded_numbers(data)
            refuse_lone_surrogates(data)
        except ApiError as exc:
            raise self.refused(field, exc) from None
        return data

    def refused(self, field: str, exc: ApiError) -> DamagedRow:
        """The error for a value of ``field`` that the API's checks refuse with ``exc``."""
        return self.damaged(field, f"is refused by the API's checks: {exc.describe().rstrip('.')}")


def stored_job(path: str | Path, row: tuple[Any, ...]) -> Job:
    """A job from a row of the ``jobs`` table, checked as CreateJob checks a job: its stored
    configuration (the v1 API's JSON) through the API's codec and validation, and the columns
    the engine keeps beside it.

    :param path: the database file, for messages.
    :param row: ``(name, config, state, status_code, status_message, last_attempt_time,
        user_update_time)``.
    :raises DamagedRow: naming the field of the first damaged value.
    :return: the job, output-only fields included.
    """
    name, config, state, code, message, last_attempt, user_update = row
    check = Row(path, "jobs", name)
    data = check.json_object("config", config)
    try:
        job = parse_job(data)
        validate_job(job)
    except ApiError as exc:
        raise check.refused("config", exc) from None
    if job.name != name:
        raise check.damaged("config.name", f"is {show_value(job.name)}, not the row's name")
    return replace(
        job,
        state=State(check.whole("state", state, min(State), max(State))),
        status=None
        if code is None
        else Status(
            check.whole("status_code", code, 0, max(RPC_CODES.values())),
            check.text("status_message", message, required=False) or "",
        ),
        last_attempt_time=check.optional_instant("last_attempt_time", last_attempt),
        user_update_time=check.optional_instant("user_update_time", user_update),
    )


def stored_attempt(path: str | Path, r: tuple[Any, ...]) -> Attempt:
    """An attempt from a row of the ``attempts`` table (the columns of the store's
    ``ATTEMPT_COLUMNS``, in order), each value checked.

    :raises DamagedRow: naming the column of the first damaged value.
    """
    check = Row(path, "attempts", r[1])
    return Attempt(
        id=check.whole("id", r[0], 1),
        job=check.text("job", r[1]),
        run_id=check.whole("run_id", r[2], 0),
        attempt=check.whole("attempt", r[3], 1),
        schedule_time=check.text("schedule_time", r[4], required=False),
        start_time=check.instant("start_time", r[5]),
        end_time=check.optional_instant("end_time", r[6]),
        request=check.json_object("request", r[7]),
        response_status=None if r[8] is None else check.whole("response_status", r[8], 0, 999),
        code=None if r[9] is None else _rpc_code(check, r[9]),
        debug_info=check.text("debug_info", r[10]),
        forced=bool(check.whole("forced", r[11], 0, 1)),
        injected=bool(check.whole("injected", r[12], 0, 1)),
        nominal=check.optional_instant("nominal", r[13]),
        response_excerpt=check.text("response_excerpt", r[14], required=False) or "",
        response_content_type=check.text("response_content_type", r[15], required=False),
    )


def _rpc_code(check: Row, value: Any) -> str:
    if value not in RPC_CODES:
        raise check.damaged("code", f"is not a google.rpc code name; got {show_value(value)}")
    return str(value)


#: What a row of each table is, for the warning that it is left out.
_ROW_NOUNS = {"attempts": "attempt", "runs": "run", "skipped": "skipped time"}


def read_rows(
    path: str | Path, table: str, rows: Iterable[tuple[Any, ...]], read: Callable[[Any], _T]
) -> list[_T]:
    """``read(row)`` for each of ``rows`` of ``table`` (each row's first column its id),
    leaving out each that raises :class:`DamagedRow`: one damaged row of the history must not
    hide the others, or fail a page. The emulator's log warns of each once (naming the file,
    the table, the job and the field), as a warning: the daemon goes on, the file is unchanged.
    """
    out = []
    for row in rows:
        try:
            out.append(read(row))
        except DamagedRow as exc:
            seen = (str(path), table, row[0])
            if seen in _warned:
                continue
            if len(_warned) >= _WARNED_MAX:
                _warned.clear()
            _warned.add(seen)
            logger.warning(
                "warning: %s That %s is left out of the emulator's pages and the timeline; the "
                "rest of the history is shown, and the database is left as it is.",
                exc.what,
                _ROW_NOUNS.get(table, "row"),
            )
    return out


def attempts_from_rows(path: str | Path, rows: Iterable[tuple[Any, ...]]) -> list[Attempt]:
    """The attempts of ``rows`` (:func:`stored_attempt`), leaving out each damaged one with a
    warning (:func:`read_rows`)."""
    return read_rows(path, "attempts", rows, lambda row: stored_attempt(path, row))
