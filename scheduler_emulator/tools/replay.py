"""``scheduler-emulator replay``: run a scenario, or re-send a recorded sequence of attempts.

Two modes:

- ``replay SCENARIO [--target URL] [--seed N]`` runs a scenario file
  (:mod:`~scheduler_emulator.tools.scenario`) on a manual clock, prints the attempt timeline
  (:mod:`~scheduler_emulator.tools.timeline`) and each expectation with ✓/✗; exit 0 when all hold
  (and the probe, if any, was read), 1 otherwise.
- ``replay --attempts FILE --target URL [--compress-gaps [SECONDS]]`` re-sends recorded
  attempts, in order, to ``URL``: same method, path and query, Cloud Scheduler headers and body
  (when the record has them), with the recorded real-time spacing between attempt starts (each
  gap capped at ``SECONDS`` with ``--compress-gaps``; 0.1 s when no value is given). An
  attempt the target never received (an injected status or connection error stood in for it)
  is not sent; a note counts them.

Recorded input formats (told apart by content):

(a) ``GET /_emulator/attempts``: ``{"attempts": [...]}``, or ``attempts --json``'s lines (one
    attempt a line). Method, URL, headers and body as sent (a record keeps a UTF-8 body of up
    to 64 KiB as ``request.body``; one without is sent without a body, and a one-line note on
    stderr says so). Pub/Sub attempts are left out, a note says how many.
(b) the emulator's execution log (``--log-file``): JSON lines of AttemptStarted /
    AttemptFinished entries, paired by their ``insertId`` (``<id>s`` / ``<id>f``).
(c) a Cloud Logging export, ``gcloud logging read … --format=json``: a JSON array of such
    entries, in any order. Attempts are ordered by AttemptStarted's ``scheduledTime`` (the
    dispatch time), then its ``timestamp``; a job's AttemptFinished entries are paired with its
    AttemptStarted entries in the same order (entry timestamps are unreliable).

Log entries hold no method, headers or body: the method is POST (Cloud Scheduler's default),
no body is sent, and the Cloud Scheduler headers are rebuilt from the job ID.
``X-CloudScheduler-ScheduleTime`` is an **approximation**: the whole-minute floor (UTC) of the
``scheduledTime`` of the run's first attempt, where an attempt in the same minute as that one,
or one that follows a failed attempt of the same job when no attempt of its run succeeded, is
an attempt of the same run (a duplicate delivery, a retry). That is the nominal time of a
unix-cron job (whose dispatch lags the minute by a stable offset); it is wrong for English-like
schedules, for jobs in another time zone (the real header carries the zone's offset) and for a
run after one whose retries were exhausted.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import socket
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

from ..core.faults import MAX_SEED, check_seed
from ..domain.attempts import target_called
from ..domain.codec import parse_timestamp
from ..domain.errors import ApiError, ConfigurationError
from ..runtime import (
    Clock,
    DeliveryRequest,
    HttpTransport,
    SystemClock,
    Transport,
    TransportResult,
    outcome_of,
)
from ..wire import JOB_NAME_HEADER, scheduler_headers
from ..wire import format_timestamp as iso
from .report import number_text, probe_line, write_report
from .scenario import CheckResult, ScenarioRun, load_scenario, run_scenario
from .scenario.model import parse_duration
from .timeline import marks, plural, render_table, render_timeline
from .views import (
    EXECUTION_HEADERS,
    RUN_HEADERS,
    execution_rows,
    is_terminal,
    rule_argument,
    run_rows,
)

#: The gap cap ``--compress-gaps`` uses when given without a value, in seconds.
DEFAULT_COMPRESSED_GAP_SECONDS = 0.1
#: How long a replayed request may take (Cloud Scheduler's default attempt deadline).
REPLAY_TIMEOUT_SECONDS = 180.0
#: Replayed requests under way at once at most (a later one waits for a place).
REPLAY_AT_ONCE = 64
_TYPE = "type.googleapis.com/google.cloud.scheduler.logging."
_SKIPPED_HEADERS = {"host", "content-length", "connection", "transfer-encoding"}

FORMAT_ATTEMPTS = "emulator attempts JSON"
FORMAT_LOG = "execution log, JSON lines"
FORMAT_EXPORT = "Cloud Logging export"


@dataclass(frozen=True)
class RecordedAttempt:
    """One attempt as a record shows it, ready to be sent again.

    :param started: when it started (aware UTC): the dispatch time.
    :param job_id: the short job ID.
    :param method: HTTP method (``POST`` when the record has none).
    :param url: the URL it was sent to.
    :param headers: the headers to send again (recorded, or rebuilt from the job ID).
    :param body: the body, or ``None`` when the record does not have it (nothing is sent).
    :param schedule_time: the ``X-CloudScheduler-ScheduleTime`` sent (``None``: none).
    :param schedule_time_approximate: ``schedule_time`` was reconstructed, not recorded.
    :param recorded_status: the HTTP status recorded, ``None`` when none.
    :param recorded_code: the google.rpc code recorded (``OK``…), ``None`` when unknown.
    :param source: where in the file it came from (``"attempts[3]"``, ``"insertId abc"``).
    :param target_called: the target received it; ``False`` when an injected status or
        connection error stood in for it (:func:`~scheduler_emulator.domain.attempts.
        target_called`): not sent again.
    """

    started: datetime
    job_id: str
    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None = None
    schedule_time: str | None = None
    schedule_time_approximate: bool = False
    recorded_status: int | None = None
    recorded_code: str | None = None
    source: str = ""
    target_called: bool = True

    @property
    def recorded(self) -> str:
        """The recorded answer as ``"500 INTERNAL"`` (``-`` for what is unknown)."""
        if self.recorded_status is None and self.recorded_code is None:
            return "(not recorded)"
        status = "-" if self.recorded_status is None else str(self.recorded_status)
        return f"{status} {self.recorded_code or ''}".rstrip()


@dataclass(frozen=True)
class Recording:
    """The attempts read from a file and what kind of file it was.

    :param attempts: in start order.
    :param format: one of ``FORMAT_ATTEMPTS``, ``FORMAT_LOG``, ``FORMAT_EXPORT``.
    :param notes: caveats to print (approximations, ignored entries).
    :param warnings: what the replay sends differently from the original (printed on stderr).
    """

    attempts: list[RecordedAttempt]
    format: str
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------- reading


def load_recording(path: str | Path) -> Recording:
    """Read recorded attempts from a file of any supported format (module docstring).

    :param path: the file.
    :raises ConfigurationError: naming the file and the problem when it cannot be read or
        holds no attempts.
    :return: the attempts in start order.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ConfigurationError(f"{source}: cannot read the recording: {reason}.") from None
    try:
        recording = parse_recording(text)
    except ValueError as exc:
        raise ConfigurationError(f"{source}: {exc}") from None
    if not recording.attempts:
        said = "".join(f" {note.removeprefix('note: ')}" for note in recording.warnings)
        raise ConfigurationError(f"{source}: no attempts found ({recording.format}).{said}")
    sent = [attempt for attempt in recording.attempts if attempt.target_called]
    if len(sent) < len(recording.attempts):
        note = (
            f"{len(recording.attempts) - len(sent)} recorded attempt(s) not sent: an injected "
            "status or connection error stood in for their delivery, so the target never "
            "received them."
        )
        if not sent:
            raise ConfigurationError(f"{source}: nothing to send. {note}")
        recording = replace(recording, attempts=sent, notes=[*recording.notes, note])
    return recording


#: A line of the text execution log (``--log-format text``): an instant, then the job.
_TEXT_LINE = re.compile(r"\d{4}-\d\d-\d\dT\S+Z  ")


def parse_recording(text: str) -> Recording:
    """Parse recorded attempts from the text of a file (module docstring, formats a–c).

    :param text: the file's content.
    :raises ValueError: saying what was expected.
    :return: the attempts in start order.
    """
    stripped = text.strip()
    document: Any
    try:
        document = json.loads(stripped) if stripped else None
    except json.JSONDecodeError:
        document = None
        lines = []
        for number, line in enumerate(stripped.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError as exc:
                text_log = " (the text execution log is not: start with --log-format json)"
                raise ValueError(
                    f'line {number}: not JSON ({exc.msg}); expected {{"attempts": [...]}}, '
                    "a JSON array of log entries, or JSON lines"
                    + (text_log if _TEXT_LINE.match(line) else "")  # (trial 173)
                    + "."
                ) from None
        if lines and all(isinstance(line, Mapping) and "request" in line for line in lines):
            return parse_attempts_json(lines)  # `attempts --json`: one attempt a line
        return parse_log_entries(lines, FORMAT_LOG)
    if isinstance(document, Mapping) and "attempts" in document:
        return parse_attempts_json(document["attempts"])
    if isinstance(document, Mapping) and "jsonPayload" in document:  # one JSON line
        return parse_log_entries([document], FORMAT_LOG)
    if isinstance(document, list):
        if document and isinstance(document[0], Mapping) and "request" in document[0]:
            return parse_attempts_json(document)
        return parse_log_entries(document, FORMAT_EXPORT)
    raise ValueError(
        'expected {"attempts": [...]} (GET /_emulator/attempts), a JSON array of Cloud Logging '
        "entries (gcloud logging read --format=json) or the execution log's JSON lines."
    )


def _instant(value: Any, where: str) -> datetime:
    try:
        return parse_timestamp(value)
    except ApiError as exc:
        raise ValueError(f"{where}: {exc.message}") from None


def parse_attempts_json(items: Any) -> Recording:
    """Read format (a), the attempts of ``GET /_emulator/attempts``.

    :param items: the ``attempts`` list.
    :raises ValueError: naming the attempt and field at fault.
    :return: the attempts in start order, with their recorded method, URL and headers.
    """
    if not isinstance(items, list):
        raise ValueError(f'"attempts" must be a list; got {type(items).__name__}.')
    attempts, published = [], 0
    for index, item in enumerate(items):
        where = f"attempts[{index}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{where}: expected an attempt object.")
        request = item.get("request")
        if isinstance(request, Mapping) and "pubsubTopic" in request:
            published += 1  # a Pub/Sub publish: no HTTP request to send again
            continue
        if not isinstance(request, Mapping) or not isinstance(request.get("url"), str):
            raise ValueError(f"{where}.request: expected {{method, url, headers}}.")
        headers = {
            str(k): str(v)
            for k, v in (request.get("headers") or {}).items()
            if str(k).lower() not in _SKIPPED_HEADERS
        }
        body = request.get("body")
        job = str(item.get("job", ""))
        status = item.get("responseStatus")
        attempts.append(
            RecordedAttempt(
                started=_instant(item.get("startTime"), f"{where}.startTime"),
                job_id=job.rsplit("/", 1)[-1] or headers.get(JOB_NAME_HEADER, ""),
                method=str(request.get("method") or "POST"),
                url=request["url"],
                headers=headers,
                body=body.encode() if isinstance(body, str) else None,
                schedule_time=item.get("scheduleTime"),
                recorded_status=status if isinstance(status, int) else None,
                recorded_code=item.get("code"),
                source=where,
                target_called=target_called(item.get("debugInfo")),
            )
        )
    attempts.sort(key=lambda a: a.started)  # stable: start order, then file order
    bodiless = sum(1 for a in attempts if a.body is None)
    warnings = _left_out(published)
    if bodiless:
        which = "every request is" if bodiless == len(attempts) else f"{bodiless} requests are"
        warnings.append(
            "note: request bodies are not recorded in the /_emulator/attempts format; "
            f"{which} sent without a body."
        )
    return Recording(attempts, FORMAT_ATTEMPTS, warnings=warnings)


def _kind(entry: Any) -> str | None:
    if not isinstance(entry, Mapping):
        return None
    payload = entry.get("jsonPayload")
    kind = payload.get("@type") if isinstance(payload, Mapping) else None
    if kind == _TYPE + "AttemptStarted":
        return "started"
    if kind == _TYPE + "AttemptFinished":
        return "finished"
    return None


def _left_out(published: int) -> list[str]:
    """The note on the Pub/Sub attempts a recording holds, which a replay does not send."""
    note = f"note: {published} Pub/Sub attempt(s) not sent: replay sends HTTP requests."
    return [note] if published else []


def _job_id(entry: Mapping[str, Any]) -> str:
    payload = entry["jsonPayload"]
    name = payload.get("jobName")
    if isinstance(name, str) and name:
        return name.rsplit("/", 1)[-1]
    labels = (entry.get("resource") or {}).get("labels") or {}
    return str(labels.get("job_id", ""))


def _floor_minute(instant: datetime) -> str:
    return iso(instant.replace(second=0, microsecond=0))


def parse_log_entries(entries: Sequence[Any], fmt: str = FORMAT_EXPORT) -> Recording:
    """Read formats (b) and (c): execution-log entries, in any order.

    :param entries: Cloud Logging entries; entries that are neither AttemptStarted nor
        AttemptFinished are ignored (and counted in the notes).
    :param fmt: the format name to report.
    :raises ValueError: for an AttemptStarted without a usable time or URL.
    :return: the attempts, with reconstructed headers (module docstring).
    """
    started: list[tuple[datetime, str, str, Mapping[str, Any]]] = []
    finished: list[Mapping[str, Any]] = []
    ignored = published = 0
    for index, entry in enumerate(entries):
        kind = _kind(entry)
        if kind is None:
            ignored += 1
            continue
        if kind == "finished":
            finished.append(entry)
            continue
        payload = entry["jsonPayload"]
        if "pubsubTopic" in payload:  # a Pub/Sub publish: no HTTP request to send again
            published += 1  # (trial 148: "has no url" refused the whole log)
            continue
        where = f"entry {index} (insertId {entry.get('insertId', '?')})"
        when = payload.get("scheduledTime") or entry.get("timestamp")
        if not isinstance(payload.get("url"), str):
            raise ValueError(f"{where}: AttemptStarted has no url.")
        instant = _instant(when, f"{where}.scheduledTime")
        stamp, insert_id = str(entry.get("timestamp", "")), str(entry.get("insertId", ""))
        started.append((instant, stamp, insert_id, entry))
    started.sort(key=lambda s: s[:3])
    answers = _pair(started, finished)

    attempts: list[RecordedAttempt] = []
    # Per job: the ScheduleTime of its current run, and "ok" once an attempt of that run
    # succeeded, else "failed" when its last attempt failed. A new minute starts a new run
    # unless the last attempt failed with no success in its run (trial 120: a duplicate's
    # failure after its run's 200 made the next run, 30 minutes on, its "retry").
    run_start: dict[str, str] = {}
    run_state: dict[str, str] = {}
    for (when, _, insert_id, entry), answer in zip(started, answers, strict=True):
        job_id = _job_id(entry)
        state, minute = run_state.get(job_id, ""), _floor_minute(when)
        if minute != run_start.get(job_id) and state != "failed":
            run_start[job_id], state = minute, ""
        schedule_time = run_start[job_id]
        status, code = _answer(answer)
        failed = "failed" if answer is not None and code != "OK" else ""
        run_state[job_id] = "ok" if state == "ok" or answer and code == "OK" else failed
        headers = scheduler_headers(job_id, schedule_time)
        attempts.append(
            RecordedAttempt(
                started=when,
                job_id=job_id,
                method="POST",
                url=entry["jsonPayload"]["url"],
                headers=headers,
                schedule_time=schedule_time,
                schedule_time_approximate=True,
                recorded_status=status,
                recorded_code=code,
                source=f"insertId {insert_id}" if insert_id else "",
                target_called=answer is None
                or target_called(answer["jsonPayload"].get("debugInfo")),
            )
        )
    notes = [
        "Method POST and no body (log entries do not record them); X-CloudScheduler-ScheduleTime "
        "(marked ~) is approximated as the whole-minute floor (UTC) of the run's first "
        "scheduledTime."
    ]
    if ignored:
        entries_text = "entry" if ignored == 1 else "entries"
        notes.append(f"{ignored} {entries_text} not AttemptStarted or AttemptFinished ignored.")
    unpaired = sum(1 for a in answers if a is None)
    if unpaired:
        notes.append(f"{unpaired} attempt(s) without an AttemptFinished entry.")
    return Recording(attempts, fmt, notes, _left_out(published))


def _pair(
    started: Sequence[tuple[datetime, str, str, Mapping[str, Any]]],
    finished: Sequence[Mapping[str, Any]],
) -> list[Mapping[str, Any] | None]:
    """Each AttemptStarted's AttemptFinished: by insertId (``<id>s``/``<id>f``, the emulator's
    log), else the job's next unpaired one in (timestamp, insertId) order."""
    by_insert = {str(f.get("insertId", "")): f for f in finished}
    used: set[int] = set()
    answers: list[Mapping[str, Any] | None] = [None] * len(started)
    for index, (_, _, insert_id, _) in enumerate(started):
        if insert_id.endswith("s"):
            match = by_insert.get(insert_id[:-1] + "f")
            if match is not None and id(match) not in used:
                answers[index] = match
                used.add(id(match))
    queues: dict[str, list[Mapping[str, Any]]] = {}
    ordered = sorted(finished, key=lambda f: (str(f.get("timestamp", "")), str(f.get("insertId"))))
    for entry in ordered:
        if id(entry) not in used:
            queues.setdefault(_job_id(entry), []).append(entry)
    for index, (_, _, _, entry) in enumerate(started):
        if answers[index] is None:
            queue = queues.get(_job_id(entry))
            if queue:
                answers[index] = queue.pop(0)
    return answers


def _answer(entry: Mapping[str, Any] | None) -> tuple[int | None, str | None]:
    if entry is None:
        return None, None
    http = entry.get("httpRequest") or {}
    status = http.get("status") if isinstance(http, Mapping) else None
    code = entry["jsonPayload"].get("status") or "OK"
    return (status if isinstance(status, int) else None), code


# ------------------------------------------------------------------------------- sending


def rebase(url: str, target: str) -> str:
    """Put ``url``'s path and query under ``target`` (its scheme, host and path prefix).

    :param url: the recorded URL.
    :param target: where to send instead.
    :return: the URL to send to.

    >>> rebase("https://svc.example/run?x=1", "http://127.0.0.1:8080")
    'http://127.0.0.1:8080/run?x=1'
    >>> rebase("https://svc.example/run", "http://127.0.0.1:8080/base/")
    'http://127.0.0.1:8080/base/run'
    """
    parts, base = urlsplit(url), urlsplit(target)
    path = base.path.rstrip("/") + (parts.path or "/")
    return urlunsplit((base.scheme, base.netloc, path, parts.query, ""))


@dataclass(frozen=True)
class PlannedSend:
    """One request of a replay and when to send it.

    :param recorded: the recorded attempt.
    :param request: the request to send.
    :param gap_seconds: recorded time since the previous attempt started (0 for the first).
    :param wait_seconds: the gap after compression: how long to wait after the previous send
        started.
    """

    recorded: RecordedAttempt
    request: DeliveryRequest
    gap_seconds: float
    wait_seconds: float


def plan_replay(
    attempts: Sequence[RecordedAttempt], target: str, compress_gaps: float | None = None
) -> list[PlannedSend]:
    """The requests to send and the waits between them (pure).

    :param attempts: in start order.
    :param target: base URL the recorded paths are re-based onto.
    :param compress_gaps: cap on each wait in seconds; ``None`` keeps the recorded gaps.
    :return: one :class:`PlannedSend` per attempt.
    """
    plan = []
    previous: datetime | None = None
    for attempt in attempts:
        gap = 0.0 if previous is None else max(0.0, (attempt.started - previous).total_seconds())
        previous = attempt.started
        wait = gap if compress_gaps is None else min(gap, compress_gaps)
        request = DeliveryRequest(
            attempt.method, rebase(attempt.url, target), dict(attempt.headers), attempt.body or b""
        )
        plan.append(PlannedSend(attempt, request, gap, wait))
    return plan


@dataclass(frozen=True)
class SentAttempt:
    """A replayed request and what the target answered.

    :param planned: what was sent and when.
    :param result: the transport's result.
    :param waited_seconds: how long the replay actually waited before sending.
    """

    planned: PlannedSend
    result: TransportResult
    waited_seconds: float

    @property
    def answer(self) -> str:
        """``"200 OK"``, ``"500 INTERNAL"`` or ``"- UNAVAILABLE (Connection refused.)"``."""
        outcome = outcome_of(self.result)
        if self.result.status is not None:
            return f"{self.result.status} {outcome.code}"
        detail = f" ({self.result.detail})" if self.result.detail else ""
        return f"- {outcome.code}{detail}"


def send_replay(
    plan: Sequence[PlannedSend],
    *,
    transport: Transport | None = None,
    clock: Clock | None = None,
    on_sent: Callable[[int, SentAttempt], None] | None = None,
    timeout_seconds: float = REPLAY_TIMEOUT_SECONDS,
) -> list[SentAttempt]:
    """Send the planned requests in order, keeping their spacing: each starts its wait after
    the previous one started, whether or not that one was answered (a slow answer holds back
    no later send; up to :data:`REPLAY_AT_ONCE` requests are under way at once, as a
    recording's overlapping attempts were).

    :param plan: from :func:`plan_replay`.
    :param transport: real HTTP by default.
    :param clock: what the replay waits on (a :class:`SystemClock` by default); tests pass a
        clock whose ``wait`` returns at once.
    :param on_sent: called with each send's index and result, in the plan's order, as soon as
        it and every send before it are answered.
    :param timeout_seconds: how long each request may take.
    :return: one :class:`SentAttempt` per planned send.
    """
    transport = transport if transport is not None else HttpTransport()
    clock = clock if clock is not None else SystemClock()
    sent: list[SentAttempt | None] = [None] * len(plan)
    reported = 0
    lock = threading.Lock()

    def send(index: int, planned: PlannedSend, waited: float) -> None:
        nonlocal reported
        item = SentAttempt(planned, transport.send(planned.request, timeout_seconds), waited)
        with lock:
            sent[index] = item
            while reported < len(sent) and (done := sent[reported]) is not None:
                if on_sent is not None:
                    on_sent(reported, done)
                reported += 1

    previous_start: float | None = None
    futures = []
    with ThreadPoolExecutor(REPLAY_AT_ONCE, thread_name_prefix="replay") as pool:
        for index, planned in enumerate(plan):
            waited = 0.0
            if previous_start is not None:
                remaining = previous_start + planned.wait_seconds - clock.monotonic()
                if remaining > 0:
                    before = clock.monotonic()
                    # (a wait is capped at a year: one to year 9999 overflowed; trial 127)
                    until = clock.now() + timedelta(seconds=min(remaining, 366 * 86400))
                    clock.wait(until, threading.Event())
                    waited = clock.monotonic() - before
            previous_start = clock.monotonic()
            futures.append(pool.submit(send, index, planned, waited))
    for future in futures:
        future.result()  # what a send raised (a transport raises for no target's failure)
    return [item for item in sent if item is not None]


def _seconds(value: float) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{text}s"


def replay_rows(plan: Sequence[PlannedSend]) -> list[list[str]]:
    """The table rows of a replay plan.

    :param plan: from :func:`plan_replay`.
    :return: one row of :data:`REPLAY_HEADERS` cells per send (all columns but ANSWER).
    """
    rows = []
    for index, planned in enumerate(plan, start=1):
        recorded = planned.recorded
        parts = urlsplit(planned.request.url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        schedule_time = recorded.schedule_time or "(none)"
        if recorded.schedule_time and recorded.schedule_time_approximate:
            schedule_time += "~"
        rows.append(
            [
                str(index),
                iso(recorded.started),
                "-" if index == 1 else _seconds(planned.gap_seconds),
                "-" if index == 1 else _seconds(planned.wait_seconds),
                recorded.job_id,
                planned.request.method,
                path,
                schedule_time,
                recorded.recorded,
            ]
        )
    return rows


REPLAY_HEADERS = (
    "#",
    "RECORDED START",
    "GAP",
    "WAIT",
    "JOB",
    "METHOD",
    "PATH",
    "SCHEDULETIME",
    "RECORDED",
)


def replay_recording(
    path: str | Path,
    target: str,
    out: IO[str],
    *,
    compress_gaps: float | None = None,
    transport: Transport | None = None,
    clock: Clock | None = None,
    err: IO[str] | None = None,
) -> int:
    """Re-send the attempts recorded in ``path`` to ``target`` and print the table.

    :param path: a recording in any supported format.
    :param target: the base URL to send to.
    :param out: where the table goes; rows are printed as they are sent.
    :param err: where the recording's warnings go (``sys.stderr`` by default), such as the
        note that an attempts file records no bodies.
    :param compress_gaps: cap on each wait in seconds (``None``: recorded spacing).
    :param transport: real HTTP by default.
    :param clock: what waits go through (tests: a fake clock).
    :raises ConfigurationError: for an unreadable recording, a bad target URL or one where
        nothing answers.
    :return: 0 when the target answered every request, 1 when one got no answer.
    """
    _check_target(target)
    if compress_gaps is not None and not 0 <= compress_gaps < math.inf:  # (nan: trial 127)
        raise ConfigurationError(
            f"--compress-gaps must be a finite number of seconds, 0 or more; got {compress_gaps:g}."
        )
    recording = load_recording(path)
    _refuse_if_nothing_answers(target)
    err = err if err is not None else sys.stderr
    for warning in recording.warnings:
        err.write(warning + "\n")
    err.flush()
    plan = plan_replay(recording.attempts, target, compress_gaps)
    total = sum(p.wait_seconds for p in plan)
    spacing = (
        "recorded spacing" if compress_gaps is None else f"gaps capped at {_seconds(compress_gaps)}"
    )
    out.write(
        f"Replaying {plural(len(plan), 'attempt')} from {path} "
        f"({recording.format}) to {target.rstrip('/')}, {spacing} "
        f"(waits {_seconds(total)} in all).\n"
    )
    for note in recording.notes:
        out.write(f"Note: {note}\n")
    if compress_gaps is None and total > 60:
        out.write("Note: pass --compress-gaps to cap each wait (e.g. --compress-gaps 1).\n")
    out.write("\n")
    lines = render_table(REPLAY_HEADERS, replay_rows(plan))
    width = max(len(line) for line in lines)
    out.write(lines[0].ljust(width) + "  ANSWER\n")
    out.flush()

    def show(index: int, item: SentAttempt) -> None:
        out.write(lines[index + 1].ljust(width) + "  " + item.answer + "\n")
        out.flush()

    sent = send_replay(plan, transport=transport, clock=clock, on_sent=show)
    unanswered = sum(1 for item in sent if item.result.status is None)
    same = sum(
        1
        for item in sent
        if item.result.status is not None
        and item.result.status == item.planned.recorded.recorded_status
    )
    out.write(
        f"\n{len(sent)} sent; {len(sent) - unanswered} answered "
        f"({same} with the recorded status), {unanswered} without an answer.\n"
    )
    return 1 if unanswered else 0


def _check_target(target: str) -> None:
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(
            f"--target must be an http:// or https:// URL such as http://127.0.0.1:8080; "
            f"got {target!r}."
        )


def _refuse_if_nothing_answers(url: str) -> None:
    """Refuse to replay when nothing accepts a connection at ``url``'s host and port (within
    2 s): every attempt would fail the same way, and an unmet expectation (exit 1) would read
    like the service's fault (trial 82: a service that had not started).

    :raises ConfigurationError: naming the URL and the connection's error.
    """
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=2).close()
    except OSError as exc:
        raise ConfigurationError(
            f"nothing answers at {url} ({exc.strerror or exc}): start the service first "
            "(replay sends every attempt there, and none would reach it)."
        ) from None


# ------------------------------------------------------------------------------- scenarios


def replay_scenario(
    path: str | Path,
    out: IO[str],
    *,
    target: str | None = None,
    seed: int | None = None,
    progress: bool | None = None,
    report_file: str | Path | None = None,
) -> int:
    """Run a scenario file and print its timeline and expectations (:func:`print_report`).

    :param path: the scenario file.
    :param out: where the report goes.
    :param target: deliver over HTTP to this URL instead of the scenario's target.
    :param seed: replaces the fault plan's seed.
    :param progress: show a progress line (default: when ``out`` is a terminal).
    :param report_file: also write the HTML report (:mod:`~scheduler_emulator.tools.report`) here.
    :raises ConfigurationError: for an invalid scenario, an app that cannot be loaded, or a
        target URL where nothing answers.
    :raises OSError: when the report cannot be written.
    :return: 0 when every expectation holds, 1 otherwise.
    """
    if target is not None:
        _check_target(target)
    scenario = load_scenario(path)
    if (url := target or scenario.target.url) is not None:
        _refuse_if_nothing_answers(url)
    plan = scenario.fault_plan()
    for note in plan.shadowed():
        print(f"warning: {path}: faults: {note}", file=sys.stderr)
    where = None if report_file is None else Path(report_file)
    if where is not None and (where.is_dir() or not where.parent.is_dir()):  # before the run
        missing = "does not exist" if not where.parent.exists() else "is not a directory"
        problem = "is a directory" if where.is_dir() else f"{where.parent} {missing}"
        raise ConfigurationError(f"--report {report_file}: {problem}.")
    show_progress = progress if progress is not None else is_terminal(out)

    def report(now: datetime, count: int) -> None:
        out.write(f"\r\x1b[K  replaying... {iso(now)}  {count} attempts")
        out.flush()

    try:
        run = run_scenario(
            scenario, target_url=target, seed=seed, progress=report if show_progress else None
        )
    finally:
        if show_progress:
            out.write("\r\x1b[K")
    code = print_report(run, out)
    if report_file is not None:
        try:
            write_report(run, report_file)
        except OSError as exc:
            raise ConfigurationError(f"--report {report_file}: {exc.strerror or exc}.") from None
        out.write(f"\nReport written to {report_file}.\n")
    return code


def print_report(run: ScenarioRun, out: IO[str]) -> int:
    """Print what a scenario run did: a header, the attempt timeline, the runs that did not
    succeed (as the ``runs`` view shows them: a pending retry's time, why one gave up), the
    probe's values and each expectation with ✓/✗ and the observed value, then the unmet ones again.

    Nothing in it depends on real time, so the same run prints the same bytes.

    :param run: from :func:`~scheduler_emulator.tools.scenario.run_scenario`.
    :param out: where to print.
    :return: 0 when every expectation holds, 1 otherwise.
    """
    scenario = run.scenario
    rules = len(scenario.faults.get("rules", []))
    out.write(
        f"Scenario {scenario.path}: {plural(len(scenario.jobs), 'job')}, "
        f"{plural(len(scenario.steps), 'step')}, {plural(rules, 'fault rule')} "
        f"(seed {run.seed}); {run.delivery}.\n"
        f"Clock {iso(scenario.start)} -> {iso(run.end)}; {run.run_states}.\n\n"
    )
    for line in render_timeline(run.attempts):
        out.write(line + "\n")
    unsettled = [r for r in reversed(run.runs) if r["state"] != "succeeded"]
    if unsettled:  # (trial 206: when a pending retry is due, and why a run gave up, went unsaid)
        out.write("\nRuns that did not succeed:\n")
        out.writelines(f"  {line}\n" for line in render_table(RUN_HEADERS, run_rows(unsettled)))
    idle = [  # (trial 184: a rule whose probability drew no attempt went unseen)
        f"  rules[{index}] ({rule['action']}): no attempt matched it, within its limit and "
        "probability\n"
        for index, rule in enumerate(scenario.faults.get("rules", []))
        if not run.fired[index]
    ]
    if idle:
        out.write("\nFault rules that never fired:\n" + "".join(idle))
    if run.executions:  # how the Cloud Run executions ended: their :run answered 200 either way
        out.write("\nCloud Run executions:\n")
        rows = execution_rows(run.executions)
        out.writelines(line + "\n" for line in render_table(EXECUTION_HEADERS, rows))
    if (probe := probe_line(run)) is not None:
        out.write(f"\n{probe}\n")
    good, bad = marks(out)
    if run.results:
        out.write("\nExpectations:\n")
    for result in run.results:
        out.write(
            f"  {good if result.ok else bad} {result.expectation.text} ({_observed(result)})\n"
        )
    unmet = run.unmet
    if not run.results:
        out.write("\nNo expectations.\n")
    elif unmet:
        out.write(f"\n{len(unmet)} of {plural(len(run.results), 'expectation')} unmet:\n")
        for result in unmet:
            out.write(f"  {result.expectation.text} ({_observed(result)})\n")
    else:
        count = len(run.results)
        out.write(
            "\nThe expectation holds.\n" if count == 1 else f"\nAll {count} expectations hold.\n"
        )
    out.flush()
    return 1 if unmet or run.probe_error else 0  # (trial 127: a failed probe alone exited 0)


def _observed(result: CheckResult) -> str:
    text = f"observed {number_text(result.observed)}"
    if result.detail:
        text += f"; {result.detail}"
    return text


# ------------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``replay`` subcommand's arguments to ``parser``.

    :param parser: the subcommand's parser.
    """
    parser.add_argument(
        "scenario", nargs="?", metavar="SCENARIO", help="scenario file (YAML or JSON) to run"
    )
    parser.add_argument(
        "--attempts",
        metavar="FILE",
        help="re-send recorded attempts instead: /_emulator/attempts JSON, the execution log "
        "(JSON lines) or a `gcloud logging read --format=json` export",
    )
    parser.add_argument(
        "--target",
        metavar="URL",
        help="where to send: overrides a scenario's target; required with --attempts",
    )
    parser.add_argument("--seed", type=_seed, metavar="N", help="replace the scenario's fault seed")
    parser.add_argument(
        "--report",
        metavar="FILE",
        help="also write the scenario run as one self-contained HTML page (timeline, "
        "attempts, expectations; opens with no network); scenarios only, not --attempts",
    )
    parser.add_argument(
        "--compress-gaps",
        nargs="?",
        type=rule_argument(lambda text: parse_duration(text).total_seconds()),
        const=DEFAULT_COMPRESSED_GAP_SECONDS,
        metavar="DURATION",
        help="with --attempts: cap each wait between attempts at DURATION, seconds or 90s, 5m… "
        f"({DEFAULT_COMPRESSED_GAP_SECONDS:g} s when no value is given); default: recorded "
        "spacing",
    )


def _seed(text: str) -> int:
    """A ``--seed`` value, checked as a fault plan's seed is (:func:`check_seed`).

    :raises argparse.ArgumentTypeError: naming the value (argparse exits 2 with it)."""
    try:
        return check_seed(int(text))
    except (ValueError, ApiError):
        message = f"must be a whole number from 0 to {MAX_SEED}; got {text[:40]!r}"
        raise argparse.ArgumentTypeError(message) from None


def run_command(args: argparse.Namespace, out: IO[str] | None = None) -> int:
    """Run ``scheduler-emulator replay`` with parsed ``args``.

    :param args: from the parser :func:`add_arguments` set up.
    :param out: where reports go (``sys.stdout`` by default).
    :raises ConfigurationError: for a bad combination of arguments (the CLI exits 2).
    :return: the exit code.
    """
    out = out if out is not None else sys.stdout
    if args.attempts is not None:
        if args.scenario is not None:  # (trial 222: "--compress-gaps 5 minutes" read so)
            raise ConfigurationError(
                f"give a SCENARIO or --attempts FILE, not both; {args.scenario!r} was read as a "
                "SCENARIO (--compress-gaps takes seconds: --compress-gaps 300)."
                if not Path(args.scenario).exists() and args.compress_gaps is not None
                else "give a SCENARIO or --attempts FILE, not both."
            )
        if args.target is None:
            raise ConfigurationError("--attempts needs --target URL (where to send them).")
        if args.seed is not None:
            raise ConfigurationError("--seed applies to scenarios, not to --attempts.")
        if args.report is not None:
            raise ConfigurationError("--report applies to scenarios, not to --attempts.")
        return replay_recording(args.attempts, args.target, out, compress_gaps=args.compress_gaps)
    if args.scenario is None:
        raise ConfigurationError("give a SCENARIO file, or --attempts FILE --target URL.")
    if args.compress_gaps is not None:
        raise ConfigurationError("--compress-gaps applies to --attempts, not to scenarios.")
    return replay_scenario(
        args.scenario, out, target=args.target, seed=args.seed, report_file=args.report
    )


__all__ = [
    "DEFAULT_COMPRESSED_GAP_SECONDS",
    "PlannedSend",
    "RecordedAttempt",
    "Recording",
    "SentAttempt",
    "add_arguments",
    "load_recording",
    "parse_attempts_json",
    "parse_log_entries",
    "parse_recording",
    "plan_replay",
    "print_report",
    "rebase",
    "replay_recording",
    "replay_scenario",
    "run_command",
    "send_replay",
]
