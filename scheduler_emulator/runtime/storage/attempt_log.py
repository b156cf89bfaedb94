"""The execution log: one Cloud Logging-shaped JSON line per AttemptStarted / AttemptFinished.

Entries have the shape of production's execution log entries (docs/behaviour.md; what differs:
docs/differences-from-production.md, "Execution log"), so a filter or script written for
``gcloud logging read 'logName:cloudscheduler.googleapis.com%2Fexecutions'`` works on them.

For a person watching a terminal, ``format="text"`` writes one line per finished attempt
instead: its start, job, attempt number, outcome, latency, the schedule time of its run, and
for a failure the reason (:func:`~scheduler_emulator.domain.attempts.failure_reason`)::

    >>> from datetime import UTC, datetime, timedelta
    >>> start = datetime(2026, 9, 24, 2, 0, 10, tzinfo=UTC)
    >>> print(text_line(Attempt(1, "projects/p/locations/l/jobs/nightly", 1, 2, None, start, {},
    ...     end_time=start + timedelta(milliseconds=12), response_status=503, code="UNAVAILABLE",
    ...     nominal=datetime(2026, 9, 24, 2, tzinfo=UTC), response_excerpt="db is down"))
    ... )  # doctest: +NORMALIZE_WHITESPACE
    2026-09-24T02:00:10Z  nightly  attempt 2  UNAVAILABLE (HTTP 503)  12 ms
    scheduled 2026-09-24T02:00:00Z  reason: db is down
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Mapping
from typing import IO, Any

from ...domain.attempts import Attempt, iso
from ...domain.cloud_run import execution_reason, execution_summary
from ...domain.codec import parse_timestamp
from .._options import CACHED_JOBS

_TYPE = "type.googleapis.com/google.cloud.scheduler.logging."
logger = logging.getLogger("scheduler_emulator")
#: What is logged (on stderr) for lines the stream could not take.
_LOST = "execution log lines not written: %s"


def log_target_type(target_type: str) -> str:
    """``targetType`` as production's log entries and attempt records spell it, for a
    ``Job.target_type`` (``"PUBSUB"`` → ``"PUB_SUB"``; the others as they are)."""
    return "PUB_SUB" if target_type == "PUBSUB" else target_type


def _target(attempt: Attempt, target_type: str) -> tuple[str, str, Any]:
    """``targetType`` as logged, the field naming where the attempt went (``pubsubTopic`` or
    ``url``), and where it went."""
    kind = log_target_type(target_type)
    key = "pubsubTopic" if kind == "PUB_SUB" else "url"
    return kind, key, attempt.request.get(key, "")


#: The daemon's ``flush_interval`` on a system clock (seconds): log lines reach the file at most
#: this late.
DAEMON_FLUSH_INTERVAL = 0.05

#: The formats of :class:`AttemptLog`: Cloud Logging JSON lines, or one readable line an attempt.
LOG_FORMATS = ("json", "text")


def text_line(attempt: Attempt, widths: list[int] | None = None) -> str:
    """One readable line (no newline) for a finished attempt (``end_time`` and ``code`` set):
    start, job ID, attempt, outcome, latency, the ScheduleTime header it sent
    (``scheduled …``, or ``forced, sent …`` for a forced run), ``(injected)`` (``(injected
    duplicate)`` for a copy), and a failure's ``reason: …``.

    :param widths: the widest start, job ID, attempt, outcome and latency written so far (five
        numbers, updated here): each is padded to its column's, so that lines align as they
        come (a longer one widens the column for the lines after it).
    """
    latency = "-"
    if attempt.end_time is not None:
        latency = f"{round((attempt.end_time - attempt.start_time).total_seconds() * 1000)} ms"
    # the ScheduleTime header sent, as the views show it (a forced run's only if it sent one)
    scheduled = attempt.sent_schedule_time or ("" if attempt.forced else iso(attempt.nominal))
    label = "forced, sent" if attempt.forced else "scheduled"
    sent = f"  {label} {scheduled}" if scheduled else ("  forced" if attempt.forced else "")
    notes = f"  (injected{' duplicate' if attempt.copy else ''})" if attempt.injected else ""
    reason = attempt.reason
    columns = [iso(attempt.start_time) or "", attempt.job_id, f"attempt {attempt.attempt}",
               attempt.outcome, latency]  # fmt: skip
    return _aligned(columns, widths) + sent + notes + (f"  reason: {reason}" if reason else "")


def execution_line(record: Mapping[str, Any], widths: list[int] | None = None) -> str:
    """One readable line (no newline) for an ended Cloud Run execution (``record``: ``GET
    /_emulator/executions``'s), in :func:`text_line`'s columns: its creation (the emulator's
    clock, as the attempt that started it), Cloud Run job ID, execution ID, state and the tasks
    that succeeded of all, how long from its first task's start to its end, the scheduler job
    that started it, and :func:`~scheduler_emulator.domain.cloud_run.execution_reason`."""
    tasks, end = record["taskAttempts"], record.get("completionTime")
    took = "-"
    if tasks and end:
        seconds = (parse_timestamp(end) - parse_timestamp(tasks[0]["startTime"])).total_seconds()
        took = f"{round(seconds * 1000)} ms"
    columns = [record["createTime"], record["job"].rsplit("/", 1)[-1],
               f"execution {record['name'].rsplit('/', 1)[-1]}",
               execution_summary(record, reason=False),
               took]  # fmt: skip
    by = record.get("schedulerJob", "").rsplit("/", 1)[-1]
    started = f"  scheduler job {by}" if by else ""
    reason = execution_reason(record)
    return _aligned(columns, widths) + started + (f"  reason: {reason}" if reason else "")


def _aligned(columns: list[str], widths: list[int] | None) -> str:
    """``columns`` joined by two spaces, each padded to the widest of its column so far (the
    last right-aligned), ``widths`` updated."""
    if widths is not None:
        for index, cell in enumerate(columns):
            widths[index] = width = max(widths[index], len(cell))
            columns[index] = cell.rjust(width) if index == 4 else cell.ljust(width)
    return "  ".join(columns)


class AttemptLog:
    """Write execution-log entries to a text stream.

    :param stream: a writable text stream (``sys.stdout`` or an open file).
    :param format: ``"json"`` (the default): the Cloud Logging entries, AttemptStarted and
        AttemptFinished; ``"text"``: one :func:`text_line` per finished attempt, and one
        :func:`execution_line` per ended Cloud Run execution (:meth:`execution_ended`).
    :param flush_interval: ``None`` (the default): each line is written and flushed before the
        call returns (what a manual clock needs). Seconds: one writer thread writes the queued
        lines in one write and flush at most this long after the first (the daemon on a system
        clock: one system call per batch, not two per attempt); :meth:`flush` and :meth:`close`
        write them at once. A kill loses at most the last ``flush_interval`` of log lines (the
        store, not this log, is the record a crash must not lose).
    :param held: keep every line until :meth:`release` (or :meth:`close`): the daemon's
        startup line comes first on stdout, before the lines of the attempts a restart found
        in flight.
    :raises ValueError: for another format, or a ``flush_interval`` that is not positive.
    """

    def __init__(
        self,
        stream: IO[str],
        format: str = "json",
        *,
        flush_interval: float | None = None,
        held: bool = False,
    ) -> None:
        if format not in LOG_FORMATS:
            raise ValueError(f"log format {format!r} is not one of {', '.join(LOG_FORMATS)}.")
        if flush_interval is not None and not flush_interval > 0:
            raise ValueError(f"flush_interval must be positive seconds, not {flush_interval!r}.")
        self._stream = stream
        self._text = format == "text"
        self._lock = threading.Lock()
        self._lines = _LineEncoder()
        self._interval = flush_interval
        self._queued: deque[str] = deque()
        self._wake = threading.Event()
        self._stop = threading.Event()  # closed, or the stream failed: lines written at once
        self._widths = [0] * 5  # of the text lines' columns (text_line)
        self._holding = held
        self._writer: threading.Thread | None = None
        if flush_interval is not None:
            self._writer = threading.Thread(target=self._write_queued, name="attempt-log")
            self._writer.daemon = True
            self._writer.start()

    def flush(self) -> None:
        """Write the queued lines now, in one write and flush."""
        if not self._queued:
            return
        with self._lock:
            lines = [self._queued.popleft() for _ in range(len(self._queued))]
            if lines:
                self._stream.write("\n".join(lines) + "\n")
                self._stream.flush()

    def release(self) -> None:
        """Write the lines held since construction (see ``held``), and later ones as usual."""
        self._holding = False
        self.flush()

    def close(self) -> None:
        """Write the queued lines and stop the writer thread; later lines are written at once.
        The stream itself stays open (its owner closes it). A stream that cannot take them is
        reported (logged), not raised: the emulator stops as usual."""
        self._stop.set()
        self._wake.set()
        writer, self._writer = self._writer, None
        if writer is not None and writer is not threading.current_thread():
            writer.join(5)
        try:
            self.flush()
        except (OSError, ValueError) as exc:
            logger.error(_LOST, exc)

    def _write(self, entry: dict[str, Any] | str) -> None:
        line = entry if isinstance(entry, str) else json.dumps(entry, sort_keys=True)
        self._queued.append(line)  # one queue, so lines keep their order in every mode
        if self._holding:
            return
        if self._interval is None or self._stop.is_set():
            self.flush()
        elif not self._wake.is_set():
            self._wake.set()

    def _write_queued(self) -> None:
        """The writer thread: wait for a line, let more gather for the interval, write them."""
        while True:
            self._wake.wait()
            self._stop.wait(self._interval)
            self._wake.clear()
            try:
                self.flush()
            except (OSError, ValueError) as exc:  # the stream is gone (full disk, closed file):
                logger.error(_LOST, exc)  # later lines are written by their callers, whose
                self._stop.set()  # errors the engine logs; nothing piles up in the queue
            if self._stop.is_set():
                return

    def _entry(
        self, attempt: Attempt, target_type: str, event: str, when: str | None, **fields: Any
    ) -> dict[str, Any]:
        """The entry of ``event`` (``AttemptStarted``, ``AttemptFinished``), ``fields`` added."""
        _, project, _, location, *_ = attempt.job.split("/")
        kind, key, where = _target(attempt, target_type)
        return {
            "insertId": f"{attempt.id:012x}{'s' if event == 'AttemptStarted' else 'f'}",
            "jsonPayload": {
                "@type": _TYPE + event,
                "jobName": attempt.job,
                "targetType": kind,
                key: where,
                **fields,
            },
            "logName": f"projects/{project}/logs/cloudscheduler.googleapis.com%2Fexecutions",
            "receiveTimestamp": when,
            "resource": {
                "type": "cloud_scheduler_job",
                "labels": {"job_id": attempt.job_id, "location": location, "project_id": project},
            },
            "severity": "INFO",
            "timestamp": when,
        }

    def started(self, attempt: Attempt, target_type: str = "HTTP") -> None:
        """Log AttemptStarted: jobName, scheduledTime (the attempt's start), url; nothing in the
        text format, whose line waits for the attempt's outcome."""
        if self._text:
            return
        line = self._lines.started(attempt, target_type)
        self._write(line if line is not None else self.started_entry(attempt, target_type))

    def started_entry(self, attempt: Attempt, target_type: str = "HTTP") -> dict[str, Any]:
        """The AttemptStarted entry of ``attempt`` as a dict (what :meth:`started` writes)."""
        when = iso(attempt.start_time)
        return self._entry(attempt, target_type, "AttemptStarted", when, scheduledTime=when)

    def finished(self, attempt: Attempt, target_type: str = "HTTP") -> None:
        """Log AttemptFinished: debugInfo, ``status`` only on failure, severity ERROR on
        failure, ``httpRequest.status`` when the target answered (Pub/Sub entries carry
        ``pubsubTopic`` and no ``debugInfo``, like production's); or the :func:`text_line`."""
        if self._text:
            self._write(text_line(attempt, self._widths))
            return
        line = self._lines.finished(attempt, target_type)
        self._write(line if line is not None else self.finished_entry(attempt, target_type))

    def execution_ended(self, record: Mapping[str, Any]) -> None:
        """Log a Cloud Run execution's end: its :func:`execution_line` in the text format;
        nothing in the JSON format, which holds Cloud Scheduler's entries (Cloud Run's own log
        has the execution's). A stream that cannot take it is reported (logged), not raised:
        the execution is recorded all the same."""
        if self._text:
            try:
                self._write(execution_line(record, self._widths))
            except (OSError, ValueError) as exc:  # a full disk, a closed stream
                logger.error(_LOST, exc)

    def finished_entry(self, attempt: Attempt, target_type: str = "HTTP") -> dict[str, Any]:
        """The AttemptFinished entry of ``attempt`` as a dict (what :meth:`finished` writes)."""
        when = iso(attempt.end_time)
        entry = self._entry(attempt, target_type, "AttemptFinished", when)
        payload = entry["jsonPayload"]
        if payload["targetType"] != "PUB_SUB":
            payload["debugInfo"] = attempt.debug_info
        if attempt.code != "OK":
            payload["status"] = attempt.code
            entry["severity"] = "ERROR"
        if attempt.response_status is not None:
            entry["httpRequest"] = {"status": attempt.response_status}
        return entry


_encode = json.encoder.encode_basestring_ascii  # what json.dumps does to a str


class _LineEncoder:
    """The text ``json.dumps(entry, sort_keys=True)`` gives, without building the entry: what a
    job's entries share is encoded once per job and target. ``None`` for an attempt it cannot
    encode (the caller then encodes the dict)."""

    def __init__(self) -> None:
        self._parts: dict[tuple[str, str, str], tuple[str, str, str]] = {}

    def _job(self, attempt: Attempt, target_type: str) -> tuple[str, str, str] | None:
        kind, where_key, where = _target(attempt, target_type)
        if not (isinstance(where, str) and isinstance(kind, str) and isinstance(attempt.id, int)):
            return None
        key = (attempt.job, kind, where)
        parts = self._parts.get(key)
        if parts is not None:
            return parts
        names = attempt.job.split("/")
        if len(names) < 4:
            return None
        project, location, job_id = names[1], names[3], attempt.job_id
        job = _encode(attempt.job)
        if where_key == "pubsubTopic":  # sorts before scheduledTime and status
            before, after = f', "pubsubTopic": {_encode(where)}', f', "targetType": {_encode(kind)}'
        else:
            before, after = "", f', "targetType": {_encode(kind)}, "url": {_encode(where)}'
        log_name = _encode(f"projects/{project}/logs/cloudscheduler.googleapis.com%2Fexecutions")
        labels = (
            f'{{"job_id": {_encode(job_id)}, "location": {_encode(location)}, '
            f'"project_id": {_encode(project)}}}'
        )
        tail = f'}}, "logName": {log_name}, "receiveTimestamp": '
        resource = f', "resource": {{"labels": {labels}, "type": "cloud_scheduler_job"}}'
        if len(self._parts) >= CACHED_JOBS:
            self._parts.clear()
        parts = self._parts[key] = (f'"jobName": {job}{before}', after + tail, resource)
        return parts

    def started(self, attempt: Attempt, target_type: str) -> str | None:
        parts = self._job(attempt, target_type)
        if parts is None:
            return None
        head, tail, resource = parts
        when = _encode(iso(attempt.start_time))  # type: ignore[arg-type]
        return (
            f'{{"insertId": "{attempt.id:012x}s", "jsonPayload": {{"@type": '
            f'"{_TYPE}AttemptStarted", {head}, "scheduledTime": {when}{tail}{when}'
            f'{resource}, "severity": "INFO", "timestamp": {when}}}'
        )

    def finished(self, attempt: Attempt, target_type: str) -> str | None:
        parts = self._job(attempt, target_type)
        if parts is None:
            return None
        status, code = attempt.response_status, attempt.code
        if (
            (status is not None and type(status) is not int)
            or (code is not None and not isinstance(code, str))
            or not isinstance(attempt.debug_info, str)
        ):
            return None
        head, tail, resource = parts
        end = iso(attempt.end_time)
        when = "null" if end is None else _encode(end)
        pubsub = log_target_type(target_type) == "PUB_SUB"
        debug = "" if pubsub else f'"debugInfo": {_encode(attempt.debug_info)}, '
        ok = code == "OK"
        failure = "" if ok else f', "status": {"null" if code is None else _encode(code)}'
        request = "" if status is None else f'"httpRequest": {{"status": {status}}}, '
        return (
            f'{{{request}"insertId": "{attempt.id:012x}f", "jsonPayload": {{"@type": '
            f'"{_TYPE}AttemptFinished", {debug}{head}{failure}{tail}{when}{resource}, '
            f'"severity": "{"INFO" if ok else "ERROR"}", "timestamp": {when}}}'
        )
