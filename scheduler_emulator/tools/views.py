"""``scheduler-emulator jobs``, ``attempts``, ``runs``, ``skipped``, ``executions``, ``run``
and ``clock``: aligned tables from a running daemon (and two actions on it), found by
``--host``/``--port`` as ``env-init`` takes them.

They read the daemon's read model (``GET /_emulator/jobs``, ``GET /_emulator/attempts``, ``GET
/_emulator/runs``, ``GET /_emulator/skipped``), a page at a time; with ``--json`` each prints
the records it read, one per line, instead of its table. Every table keeps to the terminal's
width (:data:`TABLE_WIDTH` columns in a file or a pipe): the last column (REASON) wraps to fit,
then SCHEDULE and LAST, then the JOB column, and the rest is shown under ``--wide``, one line
per row. ``attempts`` shows one schedule-time column (the ScheduleTime each attempt carried)
and, for a failure, the reason (:func:`~scheduler_emulator.domain.attempts.failure_reason`);
``--failed`` keeps the failures, ``--follow`` keeps printing attempts as they finish, until
Ctrl-C. ``runs`` lists runs with how each ended or when its next attempt is due
(``--failed``, ``--gave-up``, ``--succeeded``, ``--in-progress``, ``--retrying`` filter them).
A REASON too long for the width wraps onto continuation lines under its column. ``skipped``
lists the newest scheduled times that got no run (``--last``), with the reason.
``executions`` lists the Cloud Run executions (``GET /_emulator/executions``) with their
tasks' outcome, filtered by ``--job`` and ``--state``. ``run JOB [--schedule-time T]`` starts
a run now, as if scheduled at T when given; ``clock`` prints the daemon's clock and moves a
manual one. On a terminal outcomes are coloured, unless ``NO_COLOR`` is set.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import shutil
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from heapq import nlargest
from itertools import groupby, islice
from operator import attrgetter
from typing import IO, Any

from ..clients import EMULATOR_HOST_VARIABLE
from ..core.scheduler import MAX_DOWNTIME_SKIPS
from ..domain.attempts import REASON_WIDTH, Attempt, is_copy, iso
from ..domain.cloud_run import (
    execution_reason,
    execution_summary,
    run_execution,
    started_execution,
    tasks_complete,
)
from ..domain.codec import parse_timestamp
from ..domain.errors import ApiError, ConfigurationError, show_value
from ..domain.names import job_labels, qualify_job_name
from ..domain.timezones import resolve_time_zone
from ..runtime import EXECUTION_STATES
from ..wire import format_schedule_time, host_port
from .timeline import IN_FLIGHT, attempt_cells, duplicate_notes, render_table, shorten

__all__ = [
    "ADMIN_TOKEN_ENV",
    "admin_token_argument",
    "COMMANDS",
    "add_arguments",
    "cmd_attempts",
    "cmd_executions",
    "cmd_jobs",
    "cmd_run",
    "cmd_runs",
    "cmd_skipped",
    "took",
]

#: The widest line of a table without ``--wide`` when it is not written to a terminal (a file, a
#: pipe), in characters; on a terminal, its width (:func:`table_width`).
TABLE_WIDTH = 120
JOBS_HEADERS = ("JOB", "STATE", "SCHEDULE", "TIME ZONE", "LAST", "NEXT")
WIDE_JOBS_HEADERS = (
    "JOB", "STATE", "SCHEDULE", "TIME ZONE", "READS AS", "LAST", "NEXT", "TARGET",
)  # fmt: skip
#: The environment variable that sets ``--admin-token``, for ``start`` and for these commands.
ADMIN_TOKEN_ENV = "SCHEDULER_EMULATOR_ADMIN_TOKEN"
ATTEMPT_HEADERS = ("TIME", "JOB", "TRY", "HTTP", "CODE", "TOOK", "SCHEDULED", "REASON")
WIDE_ATTEMPT_HEADERS = (
    "TIME", "JOB", "RUN", "TRY", "INJ", "HTTP", "CODE", "TOOK", "SCHEDULED", "SCHEDULED (UTC)",
    "REASON",
)  # fmt: skip
RUN_HEADERS = ("SCHEDULED", "JOB", "RUN", "TRIES", "STATE", "NEXT ATTEMPT", "REASON")
WIDE_RUN_HEADERS = (*RUN_HEADERS[:1], "FIRST ATTEMPT", *RUN_HEADERS[1:])
SKIPPED_HEADERS = ("SCHEDULED", "JOB", "RECORDED AT", "REASON")
WIDE_SKIPPED_HEADERS = ("SCHEDULED", "SCHEDULED (UTC)", "JOB", "RECORDED AT", "REASON")
EXECUTION_HEADERS = (
    "CREATED", "EXECUTION", "STATE", "COMPLETE", "EXIT CODES", "SCHEDULER JOB", "REASON"
)  # fmt: skip
#: What a skipped run's reason code means, in the ``skipped`` table.
SKIPPED_REASONS = {
    "RUN_STILL_GOING": "RUN_STILL_GOING: the previous run was still going",
    "EMULATOR_DOWN": "EMULATOR_DOWN: the emulator was not running",
}
#: Attempts ``attempts`` (and runs ``runs``) shows without ``--since``: the newest ones.
DEFAULT_LAST = 20
#: Seconds between two looks at the daemon under ``--follow``.
FOLLOW_INTERVAL = 1.0
#: Seconds between two looks at the attempt ``run --wait`` waits for.
WAIT_INTERVAL = 0.1
#: Seconds a ``clock`` move may take before it says what it waits for.
MOVE_NOTE_SECONDS = 3.0
#: ANSI colours of outcomes on a terminal: OK and succeeded green, failures red, pending yellow.
_GREEN, _RED, _YELLOW, _RESET = "\033[32m", "\033[31m", "\033[33m", "\033[0m"
#: ``runs``' filter flags and the ``state`` of ``GET /_emulator/runs`` each asks for.
RUN_FILTER_FLAGS = {
    "failed": "failed", "gave_up": "gave-up", "succeeded": "succeeded",
    "in_progress": "in-progress", "retrying": "retrying",
}  # fmt: skip


def whole_number(text: str, smallest: int = 1) -> int:
    """An argparse ``type``: ``text`` as an int of at least ``smallest``.

    :raises argparse.ArgumentTypeError: naming the value (argparse exits 2 with it).
    """
    if text.isascii() and text.isdigit() and len(text) <= 18 and int(text) >= smallest:
        return int(text)
    raise argparse.ArgumentTypeError(
        f"must be a whole number of at least {smallest} (18 digits at most); got {text[:40]!r}"
    )


def add_arguments(sub: Any, add_address: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add the ``jobs``, ``attempts``, ``runs``, ``skipped``, ``executions``, ``run``,
    ``pause``, ``resume``, ``delete``, ``cancel`` and ``clock`` subcommands to the CLI's
    subparsers ``sub``; ``add_address(parser)`` adds --host/--port."""
    jobs = sub.add_parser(
        "jobs",
        help="print the running daemon's jobs as a table",
        description="Print every job of the daemon at --host/--port: state, schedule, last "
        "attempt and next fire time (--wide: the schedule read out in English and the whole "
        "target).",
    )
    skipped = sub.add_parser(
        "skipped",
        help="print the running daemon's skipped runs as a table",
        description="Print the newest scheduled times of the daemon at --host/--port that got no "
        "run, oldest first, with the reason: the previous run was still going, or the emulator "
        "was not running.",
    )
    attempts = sub.add_parser(
        "attempts",
        help="print the running daemon's attempts as a table",
        description="Print attempts of the daemon at --host/--port, oldest first: the newest "
        f"{DEFAULT_LAST} (or --last N), or every one since --since; --follow keeps printing "
        "them as they finish.",
    )
    runs = sub.add_parser(
        "runs",
        help="print the running daemon's runs: how each ended, or when it tries next",
        description="Print the newest runs of the daemon at --host/--port, oldest first: "
        "attempts made, whether the run succeeded, gave up (and why: retry count, max retry "
        "duration, no retries, job paused or job deleted) or is still going with its next "
        "attempt's time, "
        "and the last failure's reason.",
    )
    run = sub.add_parser(
        "run",
        help="start a run of a job now (as if scheduled at --schedule-time T)",
        description="Start a run of JOB on the daemon at --host/--port now. Without "
        "--schedule-time this is RunJob (its ScheduleTime is the job's next scheduled time); "
        "with it, an emulator-only action: the run's attempts carry T as "
        "X-CloudScheduler-ScheduleTime, to test a handler for a chosen schedule time.",
    )
    pause, resume, delete = (
        sub.add_parser(verb, help=what, description=f"{verb.title()} JOB on the daemon at "
                       f"--host/--port ({method} /v1/{{name}}{suffix}).")
        for verb, method, suffix, what in (
            ("pause", "POST", ":pause",
             "pause a job (PauseJob): no scheduled run until it is resumed; a scheduled run's "
             "pending retry is dropped"),
            ("resume", "POST", ":resume",
             "resume a paused job (ResumeJob) and print its next scheduled time"),
            ("delete", "DELETE", "", "delete a job (DeleteJob): its attempts stay in the history"),
        )
    )  # fmt: skip
    executions = sub.add_parser(
        "executions",
        help="print the running daemon's Cloud Run executions as a table",
        description="Print the Cloud Run executions (--cloud-run-jobs) of the daemon at "
        "--host/--port, oldest first: state, tasks succeeded and failed, each task attempt's "
        "exit code, and the scheduler job that started it.",
    )
    cancel = sub.add_parser(  # (trial 208: only curl or a client could)
        "cancel",
        help="cancel a running Cloud Run execution (CancelExecution)",
        description="Cancel the Cloud Run execution EXECUTION on the daemon at --host/--port "
        "(POST /v2/{name}:cancel): no further task starts, the running ones get SIGTERM, then "
        "SIGKILL, and it ends CANCELLED.",
    )
    cancel.add_argument(
        "execution", metavar="EXECUTION", help="its ID, as `executions` lists it, or full name"
    )
    clock = sub.add_parser(
        "clock",
        help="print the running daemon's clock, or move its manual clock",
        description="Print the clock of the daemon at --host/--port: its mode, its instant and "
        "the next instant something is due. On a manual clock --advance, --to or --next moves "
        "it first, returning once everything due on the way was delivered.",
    )
    move = clock.add_mutually_exclusive_group()
    move.add_argument(
        "--advance", type=rule_argument(_duration), metavar="DURATION",
        help="move it forward this long: seconds, or 90m, 1h30m, 7d…",
    )  # fmt: skip
    move.add_argument(
        "--to", type=timestamp_argument, metavar="RFC3339", help="move it to this instant"
    )
    move.add_argument("--next", action="store_true", help="move it to the next due instant")
    for parser in (jobs, attempts, runs, skipped, executions, run, pause, resume, delete, cancel,
                   clock):  # fmt: skip
        add_address(parser)
        add_admin_token(parser)
    for parser in (skipped, attempts, runs):
        parser.add_argument("--job", metavar="J", help="only this job's (ID or full name)")
    executions.add_argument(
        "--job", metavar="J", help="only this Cloud Run job's (ID or full name)"
    )
    executions.add_argument(  # (trial 204: which scheduler job started them was not a filter)
        "--scheduler-job", metavar="J", help="only those this scheduler job started (ID or name)"
    )
    jobs.add_argument("--name", metavar="TEXT", help="only jobs whose ID holds TEXT (any case)")
    jobs.add_argument(
        "--state", type=str.upper, choices=["ENABLED", "PAUSED"], help="only jobs in this state"
    )
    jobs.add_argument("--failed", action="store_true", help="only jobs whose last attempt failed")
    executions.add_argument(
        "--state", type=_execution_state, metavar="{" + ",".join(EXECUTION_STATES) + "}",
        help="only the executions in this state (any case)",
    )  # fmt: skip
    wide_help = ((jobs, "every column, "), (attempts, "every column, "),
                 (runs, "when each run's first attempt started, "), (skipped, ""),
                 (executions, ""))  # fmt: skip
    for parser, more in wide_help:
        wraps = "a long cell" if parser is jobs else "a long REASON"
        parser.add_argument(
            "--wide",
            action="store_true",
            help=f"{more}one line per row (by default the table fits the terminal's width, "
            f"{TABLE_WIDTH} columns when not a terminal, "
            f"{wraps} wrapping under itself)",
        )
    window = attempts.add_mutually_exclusive_group()  # the newest N, or all since an instant
    runs_window = runs.add_mutually_exclusive_group()
    executions_window = executions.add_mutually_exclusive_group()
    for group, newest in (
        (window, "N"), (runs_window, "N"), (skipped, "N scheduled times"), (executions_window, "N")
    ):  # fmt: skip
        group.add_argument(
            "--last", type=whole_number, default=DEFAULT_LAST, metavar="N",
            help=f"the newest {newest} (%(default)s)",
        )  # fmt: skip
    which = runs.add_mutually_exclusive_group()
    which.add_argument("--failed", action="store_true", help="runs with a failed attempt")
    which.add_argument("--gave-up", action="store_true", help="runs that ended without a success")
    which.add_argument("--succeeded", action="store_true", help="runs that ended with a success")
    which.add_argument(
        "--in-progress", action="store_true", help="runs with an attempt in flight or pending"
    )
    which.add_argument(
        "--retrying", action="store_true", help="runs waiting for a retry, none in flight"
    )
    for parser in (run, pause, resume, delete):
        parser.add_argument("job", metavar="JOB", help="the job's ID or full name")
    run.add_argument(
        "--wait", action="store_true",
        help="wait for the run's first attempt to end (and for the Cloud Run execution it "
        "started, if it ran a Cloud Run job), print its outcome, exit 1 if it failed",
    )  # fmt: skip
    run.add_argument(
        "--schedule-time", type=timestamp_argument, metavar="RFC3339",
        help="send the run as if scheduled at this instant (emulator-only)",
    )  # fmt: skip
    for parser, help_text in (
        (jobs, "job as one JSON object per line (the /_emulator/jobs shape: the job, its next "
         "fire time and last attempt)"),
        (attempts, "attempt as one JSON object per line (the /_emulator/attempts shape)"),
        (runs, "run as one JSON object per line (the /_emulator/runs shape: its state, limits "
         "and attempts, each with duplicate)"),
        (skipped, "skipped scheduled time as one JSON object per line (the /_emulator/skipped "
         "shape)"),
        (executions, "execution as one JSON object per line (the /_emulator/executions shape: "
         "every task attempt's exit code, times and the end of its output)"),
    ):  # fmt: skip
        parser.add_argument("--json", action="store_true", help="print each " + help_text)
    for group, since in (
        (window, "attempts started"), (runs_window, "runs scheduled"),
        (executions_window, "executions created"),  # (trial 204: --since was refused)
    ):  # fmt: skip
        group.add_argument(
            "--since", type=_since, metavar="RFC3339|DURATION",
            help=f"{since} at or after this instant, or this long before the daemon's clock "
            "reads now (1h, 30m, 2d; not with --last)",
        )  # fmt: skip
    attempts.add_argument(
        "--follow", "-f", action="store_true", help="keep printing attempts as they finish"
    )
    attempts.add_argument(
        "--failed", action="store_true",
        help="only attempts that failed (ended with a code other than OK)",
    )  # fmt: skip
    attempts.add_argument(  # (trial 122: the API took run=, the view did not)
        "--run", type=whole_number, metavar="ID", help="only the attempts of run ID (runs' RUN)"
    )


def rule_argument(rule: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse ``type`` that runs ``rule`` on the flag's text (a name rule of the API, a
    timestamp, an address…), so that a flag takes what the rule takes.

    :raises argparse.ArgumentTypeError: with the message of the rule's :class:`ApiError` or
        :class:`ValueError` (argparse names the flag and exits 2).
    """

    def run(text: str) -> Any:
        try:
            return rule(text)
        except ApiError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return run


#: An argparse ``type``: an RFC 3339 timestamp as aware UTC, refused saying why it is not one.
timestamp_argument = rule_argument(partial(parse_timestamp, field="the time"))


def _since(text: str) -> datetime | timedelta:
    """``--since``'s argparse ``type``: an RFC 3339 timestamp (aware UTC), or a duration
    (``1h``, ``90m``, ``2d``) that :func:`_since_instant` counts back from the daemon's clock
    (trial 122: a relative ``--since`` was missing).

    :raises argparse.ArgumentTypeError: for neither, naming both forms.
    """
    with contextlib.suppress(argparse.ArgumentTypeError):
        return timestamp_argument(text)
    try:
        return _duration(text)
    except ValueError as exc:
        if "at most" in str(exc):  # (trial 133: a duration past the cap read as no duration)
            said = str(exc).replace("a step may advance", "--since reaches back")
            raise argparse.ArgumentTypeError(said) from None
        raise argparse.ArgumentTypeError(
            f"not a time or a duration: {show_value(text)} (use RFC 3339 such as "
            '"2026-05-07T05:46:25Z", or how long ago on the daemon\'s clock, such as "1h", '
            '"30m", "2d")'
        ) from None


def _since_instant(client: DaemonClient, since: datetime | timedelta) -> datetime:
    """``--since``'s instant: a duration counted back from the daemon's clock (a manual
    clock's virtual now; ``GET /_emulator/clock``)."""
    if isinstance(since, datetime):
        return since
    return parse_timestamp(client.get("/_emulator/clock")["now"]) - since


def admin_token_argument(text: str) -> str:
    """An ``--admin-token`` value without the whitespace around it (trial 166: a secret file's
    newline made a token nothing matched).

    :raises argparse.ArgumentTypeError: for an empty or blank token (it would leave
        ``/_emulator/`` unprotected) and one that is not up to 1,000 printable ASCII characters.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "an empty token would leave /_emulator/ unprotected; give a non-empty token, or "
            "leave --admin-token out"
        )
    if not re.fullmatch(r"[!-~]{1,1000}", text.strip()):  # (trials 176, 177: "a\nb", 100 kB)
        raise argparse.ArgumentTypeError(
            "the token is sent in an HTTP header: up to 1000 printable ASCII characters, no spaces"
        )
    return text.strip()


def add_admin_token(parser: argparse.ArgumentParser) -> None:
    """Add ``--admin-token``, the daemon's (default: ``$SCHEDULER_EMULATOR_ADMIN_TOKEN``,
    which :func:`~scheduler_emulator.tools.cli.admin_token` reads after parsing)."""
    parser.add_argument(
        "--admin-token",
        type=admin_token_argument,  # (the variable is read after parsing, as start's)
        help=f"the daemon's --admin-token (default: ${ADMIN_TOKEN_ENV})",
    )


class Refused(ConfigurationError):
    """The daemon answered, and refused the request (exit 2)."""


#: Pauses (seconds) before a view asks again a daemon that answered 503 "Too many requests in
#: progress" or "Too many connections" (docs/api.md, "Connections"); then the 503 is its answer.
BUSY_RETRY_SECONDS = (0.1, 0.2, 0.5, 1.0, 2.0, 4.0)

#: What a view says of an answer that is not the daemon's.
_NOT_OURS = "not a scheduler-emulator's answer: pass the --host and --port of its startup line"


class DaemonClient:
    """JSON calls to a running daemon's endpoints (``/_emulator/``, ``/v1/``), on one session.

    :param token: the daemon's ``--admin-token``, or ``None``.
    :param timeout: seconds to wait for each answer (``None``: as long as it takes).
    :raises ConfigurationError: (exit 2) when no daemon answers, or it refuses the request.
    """

    def __init__(
        self, host: str, port: int, token: str | None = None, timeout: float | None = 30
    ) -> None:
        import requests

        self.base = f"http://{host_port(host, port)}"
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        self.timeout = timeout
        self.answered = False  # once it has, no answer means it stopped (--follow, --wait)

    def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON answer of ``GET path?params``."""
        return self.call("GET", path, params=params)

    def call(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The JSON answer of ``method path?params`` with the JSON ``body`` (a parameter that
        is ``None`` is left out).

        :raises ConfigurationError: when nothing answers, or what answers 200 is not a JSON
            object (another server: a trial's views printed "(no jobs)" for one).
        :raises Refused: for another status (:meth:`refused`).
        """
        import requests

        try:
            for pause in (*BUSY_RETRY_SECONDS, None):
                response = self.session.request(
                    method, self.base + path, params=params, json=body, timeout=self.timeout
                )
                # a refusal before the request was read (the cap of requests at once): again
                if pause is None or response.status_code != 503 or "Too many" not in response.text:
                    break
                time.sleep(pause)  # (trial 112: a view exited 2 while 100 clients were busy)
        except requests.ReadTimeout:  # (trial 86: it said no daemon answers, and one had)
            raise ConfigurationError(
                f"the scheduler-emulator at {self.base} did not answer {method} {path} within "
                f"{self.timeout:g} s; it may still be carrying it out (see its log)."
            ) from None
        except requests.RequestException as exc:
            unknown = "NameResolutionError" in repr(exc)  # urllib3's, inside requests' error
            raise ConfigurationError(
                f"cannot resolve the host name of {self.base}; pass the --host and --port of "
                "the daemon's startup line."
                if unknown
                else f"the scheduler-emulator at {self.base} stopped answering (stopped?)."
                if self.answered or "Connection aborted" in repr(exc)  # (went away mid-request)
                else f"no scheduler-emulator answers at {self.base}; start it (a stopped one "
                "again on its --data-dir, to read what it recorded), or pass the --host and "
                f"--port of its startup line (or set {EMULATOR_HOST_VARIABLE})."
            ) from None
        self.answered = True
        if response.status_code != 200:
            raise self.refused(path, response)
        try:
            return dict(response.json())
        except (TypeError, ValueError):  # not JSON, or not an object
            raise ConfigurationError(
                f"{self.base}{path} answered 200 with {response.text[:40]!r} ({_NOT_OURS})."
            ) from None

    def refused(self, path: str, response: Any) -> Exception:
        """The error :meth:`call` raises for ``response`` (a ``requests.Response`` to
        ``path``, not 200): a :class:`Refused` giving the daemon's message first,
        then the status and the URL; for an answer without the daemon's error (another
        server), a :class:`ConfigurationError` naming the URL and the status first."""
        try:
            message = response.json()["error"]["message"]
        except (TypeError, ValueError, KeyError):  # another server's answer may be anything
            return ConfigurationError(
                f"{self.base}{path} answered {response.status_code} {response.reason} "
                f"({_NOT_OURS})."
            )
        return Refused(f"{message} ({response.status_code} from {self.base}{path})")

    def pages(self, path: str, key: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every item of a paged listing, page by page (``params`` as :meth:`call`'s)."""
        params = dict(params)
        while True:
            page = self.get(path, params)
            yield from page.get(key, [])
            token = page.get("nextPageToken")
            if not token:
                return
            params["pageToken"] = token


#: The attempts ``attempts --follow`` keeps after printing them, to name a later delivery to the
#: same run a duplicate (a lost acknowledgement's retry): the newest this many.
FOLLOW_CONTEXT = 2000
#: A run whose first attempt started this many seconds after its scheduled instant or more
#: says so in the ``runs`` table's REASON.
LATE_SECONDS = 60.0
#: Rows the views ask the daemon for per page (its ``pageSize`` limit); longer listings follow
#: ``nextPageToken``.
PAGE_SIZE = 1000


def job_rows(
    jobs: Sequence[dict[str, Any]], wide: bool = False, reasons: bool = False
) -> list[list[str]]:
    """The cells of the ``jobs`` table (:data:`JOBS_HEADERS`, or :data:`WIDE_JOBS_HEADERS`
    with ``wide``), from ``GET /_emulator/jobs`` rows; NEXT is the next fire time in the job's
    time zone (as its ScheduleTime header will read, and the other views' SCHEDULED), or
    ``retry T`` while its scheduled run's retry is pending, and ``S late`` (after it: ``retry
    T, then S late``) for a scheduled time missed while the job's run went on, which runs as
    that run ends; then ``; forced run's retry T`` while one is pending; ``never`` for an
    enabled job whose schedule has no fire time within 10 years. With ``reasons`` a
    last REASON: why the last attempt failed (``lastAttempt.reason``; ``jobs --failed``)."""
    rows = []
    for job, label in zip(
        jobs, job_labels([job.get("name") or job["id"] for job in jobs]), strict=True
    ):
        last = job.get("lastAttempt")
        fire = job.get("nextFireTimes") or []
        retry, delayed = job.get("nextAttemptTime"), job.get("delayedRunTime")
        forced = job.get("forcedRunRetryTime")  # (trial 170: it hid the scheduled run's)
        zone = resolve_time_zone(job["timeZone"])
        upcoming = f"retry {cut(retry, wide)}" if retry else "-"
        if fire and not retry:
            upcoming = format_schedule_time(parse_timestamp(fire[0]).astimezone(zone))
        elif not fire and not retry and job["state"] == "ENABLED":  # (trial 207: read as paused)
            upcoming = "never"  # no fire time within 10 years (0 0 31 2 *)
        if delayed:  # (trial 149: NEXT promised times the run skipped, not the late one)
            late = format_schedule_time(parse_timestamp(delayed).astimezone(zone))
            # (trial 213: "retry 08:45, then 08:43 late" read backwards)
            upcoming = f"{upcoming}, then the {late} run, late" if retry else f"{late} late"
        if forced:
            upcoming = f"{upcoming}; forced run's retry {cut(forced, wide)}".removeprefix("-; ")
        rows.append(
            [
                label,
                job["state"],
                job["schedule"],
                job["timeZone"],
                *([job["scheduleText"]] if wide else []),
                "-" if not last else f"{last['code'] or IN_FLIGHT} {cut(last['time'], wide)}",
                upcoming,
                *([job["target"]] if wide else []),
                *([_last_reason(last or {})] if reasons else []),
            ]
        )
    return rows


def _last_reason(last: dict[str, Any]) -> str:
    """A job's REASON cell: its last attempt's reason, after the target's HTTP status when it
    answered (``HTTP 404: Not Found``; trial 183: which jobs got a 5xx was not said)."""
    reason, status = last.get("reason") or "-", last.get("responseStatus")
    return f"HTTP {status}: {reason}" if status else reason


def attempt_rows(
    attempts: Sequence[Attempt], wide: bool = False, earlier: Sequence[Attempt] = ()
) -> list[list[str]]:
    """The cells of the ``attempts`` table (:data:`ATTEMPT_HEADERS`; with ``wide``
    :data:`WIDE_ATTEMPT_HEADERS`): SCHEDULED is :func:`scheduled_cell`; TRY ends in ``*`` for
    an attempt fault injection altered (the INJ column under ``wide``), and REASON names a
    duplicate delivery (:func:`~scheduler_emulator.tools.timeline.duplicate_notes`, among the
    attempts shown) and an injected fault (a copy, a delay) even when the target answered 2xx;
    TIME to the millisecond, cut, on whole seconds too (to the microsecond under ``wide``:
    :func:`fraction`).
    ``earlier``: other attempts whose answers count too (``--follow``'s shown before these, the
    attempts of the shown runs a window left out)."""
    rows = []
    every = sorted(
        {a.id: a for a in [*earlier, *attempts]}.values(), key=attrgetter("start_time", "id")
    )
    noted = dict(zip((a.id for a in every), duplicate_notes(every), strict=True))
    notes = [noted[a.id] for a in attempts]
    labels = job_labels([attempt.job for attempt in attempts])
    for attempt, duplicate, job in zip(attempts, notes, labels, strict=True):
        time_, _, _, number, injected, status, code = attempt_cells(attempt)
        time_ = fraction(time_, wide)
        nominal = iso(attempt.nominal)
        run = scheduled_cell(attempt.sent_schedule_time, nominal, attempt.forced)
        # a 2xx to a run already answered 2xx has no failure reason, but is named, as is the
        # fault injected into one (a copy, a delay: trial 132)
        reason = (
            duplicate
            or attempt.reason
            or (shorten(attempt.debug_info, REASON_WIDTH) if attempt.injected else "")
        )
        if wide:
            row = [time_, job, str(attempt.run_id), number, injected, status, code, took(attempt),
                   run, nominal or "-", reason]  # fmt: skip
        else:
            row = [time_, job, number + injected, status, code, took(attempt), run, reason]
        rows.append(row)
    return rows


def fraction(stamp: str, wide: bool = False) -> str:
    """An RFC 3339 UTC timestamp cut to the millisecond, or with ``wide`` to the microsecond,
    padded on whole seconds too (``""`` as is).

    >>> fraction("2026-12-03T18:04:00.000600Z"), fraction("2026-12-03T18:05:00Z", wide=True)
    ('2026-12-03T18:04:00.000Z', '2026-12-03T18:05:00.000000Z')
    """
    whole, _, digits = stamp.removesuffix("Z").partition(".")
    return f"{whole}.{(digits + '000000')[: 6 if wide else 3]}Z" if stamp else stamp


def cut(stamp: str, wide: bool) -> str:
    """A LAST or NEXT time: with a fraction of a second cut to the millisecond (the system
    clock's), unless ``wide``; a whole second as it is (a manual clock's, a fire time).

    >>> cut("2026-12-04T01:53:40.030873Z", False), cut("2026-12-04T01:54:00Z", False)
    ('2026-12-04T01:53:40.030Z', '2026-12-04T01:54:00Z')
    """
    return fraction(stamp) if "." in stamp and not wide else stamp


def scheduled_cell(header: str | None, instant: str | None, forced: bool) -> str:
    """A SCHEDULED cell: the ScheduleTime an attempt carried (its run's instant in UTC when no
    header was sent); for a forced run, which was started on request rather than scheduled,
    ``forced`` and the header it sent (RunJob sends the job's next scheduled time).

    >>> scheduled_cell("2026-01-01T03:00:00Z", "2026-01-01T03:00:00Z", True)
    'forced, sent 2026-01-01T03:00:00Z'

    :param header: the ``X-CloudScheduler-ScheduleTime`` sent, or ``None``.
    :param instant: the run's instant (RFC 3339 UTC), or ``None``.
    :param forced: whether the run was forced.
    """
    if forced:
        return f"forced, sent {header}" if header else "forced"
    return header or instant or "-"


def took(attempt: Attempt) -> str:
    """How long the attempt took, start to end, in seconds with milliseconds (``"0.012s"``);
    ``"-"`` while it is in flight."""
    if attempt.end_time is None:
        return "-"
    return f"{(attempt.end_time - attempt.start_time).total_seconds():.3f}s"


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is an open terminal (not a file, a pipe, closed, or without isatty)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # closed
        return False


def table_width(out: IO[str], wide: bool) -> int | None:
    """The widest line of a table written to ``out``: ``None`` (one line per row) with
    ``--wide``; the terminal's width on a terminal (``$COLUMNS`` when set); else
    :data:`TABLE_WIDTH`."""
    if wide:
        return None
    return shutil.get_terminal_size((TABLE_WIDTH, 24)).columns if is_terminal(out) else TABLE_WIDTH


def painter(out: IO[str]) -> Callable[[str, str], str] | None:
    """Colours for outcome cells when ``out`` is a terminal and ``NO_COLOR`` is not set
    (https://no-color.org); ``None`` (plain text) otherwise."""
    if not is_terminal(out) or os.environ.get("NO_COLOR"):
        return None
    if os.environ.get("TERM") == "dumb":
        return None

    def paint(header: str, cell: str) -> str:
        if header not in ("CODE", "STATE"):
            return cell
        word = cell.strip()  # (trial 122: every job's ENABLED, an execution's SUCCEEDED read red)
        if word in ("OK", "succeeded", "SUCCEEDED"):
            colour = _GREEN
        elif word in (IN_FLIGHT, "retrying", "in progress", "RUNNING", "PAUSED"):
            colour = _YELLOW
        elif word and word != "ENABLED":
            colour = _RED
        else:
            return cell
        return colour + cell + _RESET

    return paint


def _print_table(
    out: IO[str],
    headers: Sequence[str],
    rows: list[list[str]],
    empty: str,
    wide: bool = False,
) -> int:
    """Write ``rows`` as a table under ``headers`` (cut to :func:`table_width`, outcomes
    coloured on a terminal), or the line ``empty`` when there are none.

    :return: the exit status, 0.
    """
    if not rows:
        out.write(empty + "\n")
        return 0
    for line in render_table(headers, rows, width=table_width(out, wide), paint=painter(out)):
        out.write(line + "\n")
    return 0


def _print_json(out: IO[str], records: Iterable[dict[str, Any]]) -> int:
    """Print ``records`` as JSON lines (``--json``): one object per line, as the API gives it."""
    out.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    return 0


def cmd_jobs(args: argparse.Namespace, out: IO[str]) -> int:
    """Print the ``jobs`` table."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    params = {"pageSize": 500, "fireTimes": None if args.json else 1}  # the table shows one
    params |= {"name": args.name or None, "state": args.state, "failed": args.failed or None}
    jobs = list(client.pages("/_emulator/jobs", "jobs", params))
    if args.json:
        return _print_json(out, jobs)
    headers = (WIDE_JOBS_HEADERS if args.wide else JOBS_HEADERS) + ("REASON",) * args.failed
    rows = job_rows(jobs, args.wide, reasons=args.failed)  # why each fails (trial 178)
    return _print_table(out, headers, rows, "(no jobs)", args.wide)


def skipped_rows(records: Sequence[dict[str, Any]], wide: bool = False) -> list[list[str]]:
    """The cells of the ``skipped`` table (:data:`SKIPPED_HEADERS`; with ``wide``
    :data:`WIDE_SKIPPED_HEADERS`, RECORDED AT to the microsecond: :func:`fraction`), from
    ``GET /_emulator/skipped`` records; SCHEDULED as the ``attempts`` table's
    (:func:`scheduled_cell`: the instant in UTC for an English-like schedule's time)."""
    rows = []
    labels = job_labels([str(record["job"]) for record in records])
    for record, job in zip(records, labels, strict=True):
        recorded = str(record.get("recordedAt") or "")
        rows.append(
            [
                scheduled_cell(record.get("scheduleTime"), record.get("nominalTime"), False),
                *([str(record.get("nominalTime") or "-")] if wide else []),
                job,
                fraction(recorded, wide) or "-",
                SKIPPED_REASONS.get(str(record.get("reason")), str(record.get("reason"))),
            ]
        )
    return rows


def cmd_skipped(args: argparse.Namespace, out: IO[str]) -> int:
    """Print the ``skipped`` table: the newest ``--last`` skipped scheduled times, oldest first
    (of one time, in the order recorded)."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    params = {"pageSize": PAGE_SIZE, "job": args.job or None}
    listed = [*enumerate(client.pages("/_emulator/skipped", "skipped", params))]  # as recorded
    newest = nlargest(
        args.last, listed, key=lambda pair: (parse_timestamp(pair[1]["nominalTime"]), pair[0])
    )
    if len(listed) > args.last:  # (as _newest says it; trial 94 read the 20 as all of them)
        times = "time" if args.last == 1 else "times"
        note = f"the newest {args.last} skipped scheduled {times}, of {len(listed)}"
        print(f"note: {note}; a larger --last N lists more.", file=sys.stderr)
    restarts = Counter((record["job"], record["recordedAt"]) for _, record in listed)
    if cut := sorted(
        {job.rsplit("/", 1)[-1] for (job, _), n in restarts.items() if n >= MAX_DOWNTIME_SKIPS}
    ):
        print(  # (trial 159: 119 listed of about 3,950 missed, unsaid)
            f"note: a restart lists the first {MAX_DOWNTIME_SKIPS} of a job's scheduled times that "
            f"passed while the emulator was down, not the later ones: more passed for "
            f"{', '.join(cut)}, recorded nowhere.",
            file=sys.stderr,
        )
    records = [record for _, record in newest[::-1]]
    if args.json:
        return _print_json(out, records)
    headers = WIDE_SKIPPED_HEADERS if args.wide else SKIPPED_HEADERS
    rows = skipped_rows(records, args.wide)
    return _print_table(out, headers, rows, "(no skipped runs)", args.wide)


def run_state_text(run: dict[str, Any]) -> str:
    """A run's STATE cell: ``succeeded``, ``gave up (retry count)``, ``retrying`` or
    ``in progress`` — with ``(until T)`` when only its max retry duration bounds its retries
    (none is decided after T) —, from a ``GET /_emulator/runs`` run."""
    state = str(run.get("state") or "in progress")
    if run.get("retryUntil") and run.get("maxAttempts") is None:  # (trial 213: no end in sight)
        return f"{state} (until {run['retryUntil']})"
    return f"{state} ({run['gaveUp']})" if run.get("gaveUp") else state


def run_rows(runs: Sequence[dict[str, Any]], wide: bool = False) -> list[list[str]]:
    """The cells of the ``runs`` table (:data:`RUN_HEADERS`; with ``wide``
    :data:`WIDE_RUN_HEADERS`, when the first attempt started), from ``GET /_emulator/runs``
    runs: the ScheduleTime (or the run's instant), attempts made (of at most N), the state,
    the next attempt's time (:func:`cut`), and the reason of its last failed attempt, preceded
    by how many of its deliveries were duplicates (a 2xx after the target had answered 2xx),
    or the run of the same ScheduleTime the target answered 2xx before (among ``runs``)."""
    rows = []
    shown = sorted((Attempt.from_json(a) for r in runs for a in r.get("attempts") or []), key=_id)
    earlier = dict(zip(map(_id, shown), duplicate_notes(shown), strict=True))  # (trial 170)
    for run, job in zip(runs, job_labels([str(run["job"]) for run in runs]), strict=True):
        attempts = run.get("attempts") or []
        failed = [a for a in attempts if a.get("reason")]
        most, tries = run.get("maxAttempts"), run.get("tries", len(attempts))
        first = fraction(str(attempts[0]["startTime"]), wide=True) if attempts else "-"
        sent = run.get("scheduleTime")  # the header the run sent: a publish sends none
        sent = Attempt.from_json(attempts[0]).sent_schedule_time if attempts else sent
        rows.append(
            [
                scheduled_cell(sent, run.get("nominalTime"), bool(run.get("forced"))),
                *([first] if wide else []),
                job,
                str(run["id"]),
                f"{tries}/{most}" if most else str(tries),
                run_state_text(run),
                cut(run.get("nextAttemptTime") or "-", wide),
                _run_reason(run, _failure(run, failed), attempts, earlier),
            ]
        )
    return rows


_id = attrgetter("id")


def _failure(run: dict[str, Any], failed: Sequence[dict[str, Any]]) -> str:
    """The last failed attempt's reason, ``"attempt N failed: …"`` in a run that succeeded
    (trial 164: a succeeded run's REASON read as its failure)."""
    if not failed:
        return ""
    # an original's own failure before a copy's (trial 224: a concurrent copy's 409 hid the
    # lost answer the run was retried for)
    own = [a for a in failed if not is_copy(str(a.get("debugInfo", "")))]
    last = (own or failed)[-1]
    done = run.get("state") == "succeeded"
    return f"attempt {last['attempt']} failed: {last['reason']}" if done else last["reason"]


def _run_reason(
    run: dict[str, Any], reason: str, attempts: Sequence[dict[str, Any]], earlier: Mapping[int, str]
) -> str:
    """A run's REASON: ``started N s late`` (in min, h or d from two of each) when its first
    attempt started a minute or more after its scheduled instant (a restart runs what it owed
    late), its duplicate deliveries or the earlier run of its ScheduleTime (``earlier``: the
    attempts' :func:`duplicate_notes` by id), then its last failure's reason."""
    notes = []
    if attempts and run.get("nominalTime") and not run.get("forced"):
        start, nominal = attempts[0]["startTime"], run["nominalTime"]
        late = (parse_timestamp(start) - parse_timestamp(nominal)).total_seconds()
        if late >= LATE_SECONDS:  # (in days or hours when long: trial 141's 21851126 s)
            units = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))  # (trial 143: min)
            unit, size = next((u, n) for u, n in units if late >= 2 * n or n == 1)
            notes.append(f"started {late / size:.{int(size > 1)}f} {unit} late")
    count = sum(1 for a in attempts if a.get("duplicate"))
    if count:
        notes.append(f"{count} duplicate deliver{'y' if count == 1 else 'ies'} (2xx again)")
    said = (earlier.get(a.get("id", 0), "") for a in attempts)
    notes += [next((n for n in said if n.startswith("same ScheduleTime")), "")]
    if execution := run.get("execution"):  # (added by cmd_runs: trial 90)
        notes.append(
            f"execution {execution['name'].rsplit('/', 1)[-1]} " + execution_summary(execution)
        )
    return "; ".join(filter(None, [*notes, reason]))


def execution_rows(records: Sequence[dict[str, Any]], wide: bool = False) -> list[list[str]]:
    """The cells of the ``executions`` table (:data:`EXECUTION_HEADERS`), from
    ``GET /_emulator/executions`` records; COMPLETE is the tasks that succeeded of all (``2 / 3``,
    as ``gcloud run jobs executions list`` shows it); EXIT CODES lists each task's attempts in order
    (``0:3,0`` — task 0 exited 3, then 0; ``timeout`` for one stopped at its timeout; ``1:3×4``
    for four attempts that each exited 3); REASON
    is :func:`~scheduler_emulator.domain.cloud_run.execution_reason`; CREATED as :func:`cut`
    (to the millisecond unless ``wide``, as the other tables)."""
    rows = []
    for record in records:
        codes: dict[int, list[str]] = {}
        for attempt in sorted(
            record.get("taskAttempts", []), key=lambda a: (a["index"], a.get("attempt", 0))
        ):
            shown = attempt.get("stopped") or str(attempt.get("exitCode", "…"))
            codes.setdefault(int(attempt["index"]), []).append(shown)
        rows.append(
            [
                cut(str(record["createTime"]), wide),
                str(record["name"]).rsplit("/", 1)[-1],
                str(record["state"]),
                tasks_complete(record),
                " ".join(f"{i}:{_repeats(c)}" for i, c in sorted(codes.items())) or "-",
                str(record.get("schedulerJob") or "-"),
                execution_reason(record),
            ]
        )
    return rows


def _repeats(values: list[str]) -> str:
    """``values`` joined with ``,``, a value repeated in a row once with its count: ``3×4``
    (trial 96: ``0:not started,not started,…`` made a row 174 columns wide)."""
    return ",".join(v if (n := len(list(same))) == 1 else f"{v}×{n}" for v, same in groupby(values))


def _newest(
    client: DaemonClient, path: str, key: str, params: dict[str, Any], last: int
) -> list[Any]:
    """The newest ``last`` items of ``path`` (newest first, as the daemon lists them), oldest
    first; says on stderr when there are more (a trial read the 20 as all of them)."""
    params = {**params, "pageSize": min(last + 1, PAGE_SIZE)}
    return _at_most(last, key, [*islice(client.pages(path, key, params), last + 1)][::-1])


def _at_most(last: int, key: str, items: list[Any]) -> list[Any]:
    """The last ``last`` of ``items`` (oldest first); says on stderr when there are more."""
    if len(items) > last:
        print(
            f"note: the newest {last} {key.removesuffix('s') if last == 1 else key}, of more; "
            "a larger --last N or --since RFC3339 lists more.",
            file=sys.stderr,
        )
    return items[-last:]


def cmd_runs(args: argparse.Namespace, out: IO[str]) -> int:
    """Print the ``runs`` table: the newest ``--last`` runs (by schedule time), or every one
    scheduled since ``--since``, oldest first; with ``--json`` one JSON object per run, as
    ``GET /_emulator/runs`` gives it."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    params = {"pageSize": min(args.last, PAGE_SIZE), "job": args.job or None}
    for flag, state in RUN_FILTER_FLAGS.items():
        if getattr(args, flag, False):
            params["state"] = state
    if args.since is not None:  # every run since, not the newest N
        since = _since_instant(client, args.since)
        params.update(pageSize=PAGE_SIZE, scheduledAfter=iso(since))
        runs = [*client.pages("/_emulator/runs", "runs", params)][::-1]
        _note_trimmed(client, since, "runs", args.job)
    else:
        runs = _newest(client, "/_emulator/runs", "runs", params, args.last)
    if args.json:
        return _print_json(out, runs)
    for run in runs:  # a Cloud Run job's run: its RunJob's 200 says nothing of the execution
        if started := run_execution(a.get("responseExcerpt") for a in run["attempts"]):
            with contextlib.suppress(Refused):  # (an execution retention dropped)
                run["execution"] = client.get(f"/_emulator/executions/{started}")
    headers = WIDE_RUN_HEADERS if args.wide else RUN_HEADERS
    return _print_table(out, headers, run_rows(runs, args.wide), "(no runs)", args.wide)


def cmd_run(args: argparse.Namespace, out: IO[str]) -> int:
    """Start a run of ``args.job`` now: RunJob, or, with ``--schedule-time``, a run sent as if
    scheduled at that instant (``POST /_emulator/runs``); with ``--wait``, wait for its first
    attempt to end (and for the Cloud Run execution an attempt to a ``jobs/J:run`` URI started),
    say when the run's retry is due if it failed, and exit 0 if it succeeded, 1 if not."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    if args.schedule_time is None:
        name, ran = _job_method(client, args.job, "run")
    else:
        name = _job_name(client, args.job)
        when = iso(args.schedule_time)
        client.call("POST", "/_emulator/runs", body={"job": args.job, "scheduleTime": when})
    try:
        runs = client.get("/_emulator/runs", {"job": name, "pageSize": 5})["runs"]  # this first
    except Refused as exc:  # (trial 177: RunJob needs no admin token, reading the run back does)
        out.write(f"started a run of {args.job}\n")  # (it did: exit 2 would invite a second)
        if args.wait:
            raise ConfigurationError(f"the run started; waiting was refused: {exc}") from None
        print(f"note: what it sent is not shown: {exc}", file=sys.stderr)
        return 0
    run: dict[str, Any] = next(
        (run for run in runs if run["forced"]), {"scheduleTime": None, "attempts": []}
    )
    if args.schedule_time is None:
        sent = f"sending ScheduleTime {run['scheduleTime']}" if run["scheduleTime"] else ""
        if topic := (ran.get("pubsubTarget") or {}).get("topicName"):  # (trial 105: a message
            sent = f"publishing to {topic}"  # has no ScheduleTime)
        paused = " (the job is PAUSED: a forced run goes anyway)" * (ran.get("state") == "PAUSED")
        # as named (maybe another project's job), and what it sent: a later run may send it too
        out.write(f"started a run of {args.job}, {sent or 'sending no ScheduleTime'}{paused}\n")
    else:
        shown = run["scheduleTime"] or when  # as the header reads: in the job's time zone
        out.write(f"started a run of {args.job} as if scheduled at {shown}\n")
    if not args.wait:
        return 0
    out.flush()
    first = run["attempts"][0]["id"] if run["attempts"] else 0
    while (attempt := _attempt_after(client, {"job": name}, first - 1)) and attempt.code is None:
        time.sleep(WAIT_INTERVAL)
    if attempt is None or attempt.id != first:  # retention dropped it (it had ended)
        raise ConfigurationError("the run's attempt is no longer kept; see `attempts --job`.")
    reason = f": {attempt.reason}" if attempt.reason else ""
    if attempt.code == "OK":  # (trial 88: a second forced run read OK; a guard had skipped it)
        page = client.get("/_emulator/attempts", {"job": name, "order": "newest", "pageSize": 100})
        history = [Attempt.from_json(item) for item in reversed(page.get("attempts", []))]
        note = dict(zip((a.id for a in history), duplicate_notes(history), strict=True))
        reason = f"; {note[attempt.id]}" if note.get(attempt.id) else reason
    out.write(f"attempt 1 ended: {attempt.outcome} in {took(attempt)}{reason}\n")
    if attempt.code != "OK":  # its retry, stored with the attempt's end (trial 206: unsaid)
        runs = client.get("/_emulator/runs", {"job": name, "pageSize": 5})["runs"]
        ours: dict[str, Any] = next((r for r in runs if r["id"] == run.get("id")), {})
        if due := ours.get("nextAttemptTime"):
            out.write(f"its retry, attempt {ours['nextAttempt']}, is due at {due}\n")
    started = started_execution(attempt.response_excerpt)
    if attempt.code != "OK" or not attempt.runs_cloud_run_job or started is None:
        return 0 if attempt.code == "OK" else 1
    out.write(f"it started Cloud Run execution {started}; waiting for it to end\n")
    out.flush()  # (its :run is answered 200 whatever the execution does)
    while (execution := client.get(f"/_emulator/executions/{started}"))["state"] == "RUNNING":
        time.sleep(WAIT_INTERVAL)
    out.write(f"execution {started} ended: {execution_summary(execution)}\n")
    return 0 if execution["state"] == "SUCCEEDED" else 1


def _job_name(client: DaemonClient, job: str) -> str:
    """``job``'s full name: as given, or an ID in the daemon's project and location.

    :raises ConfigurationError: for a ``job`` that is neither (trial 176: ``delete
        '../../_emulator/faults'`` cleared the fault plan).
    """
    config = {"project": "-", "location": "-"} if "/" in job else client.get("/_emulator/config")
    try:
        return qualify_job_name(job, config["project"], config["location"])
    except ApiError as exc:
        raise ConfigurationError(f"JOB {show_value(job)}: {exc.message}") from None


def _job_method(client: DaemonClient, job: str, verb: str) -> tuple[str, dict[str, Any]]:
    """``POST /v1/{name}:{verb}`` (RunJob, PauseJob, ResumeJob; ``DELETE /v1/{name}`` for
    ``"delete"``, ``GET`` for ``"get"``) for ``job`` (an ID or a full name): its full name and
    the daemon's answer.

    :raises ConfigurationError: for a refusal, naming the jobs there are when it is not found.
    """
    name = _job_name(client, job)
    try:
        if verb in ("delete", "get"):
            return name, client.call(verb.upper(), f"/v1/{name}")
        return name, client.call("POST", f"/v1/{name}:{verb}", body={})
    except Refused as exc:  # Google's "Job not found." names no job: name those there are
        parent, there = name.rpartition("/jobs/")[0], ""
        if "not found" in str(exc).lower():
            page = client.get(f"/v1/{parent}/jobs", {"pageSize": 20})
            ids = [listed["name"].rsplit("/", 1)[-1] for listed in page.get("jobs", [])]
            more = ", …" if page.get("nextPageToken") else ""
            there = f" Jobs in {parent}: {', '.join(ids) or 'none'}{more}."
            # the ID meant, or the job of the Firebase function named (trial 227)
            near = difflib.get_close_matches(job, ids, n=1) or [i for i in ids if f"-{job}-" in i]
            deleted = False
            with contextlib.suppress(Refused):  # a deleted job's attempts stay listed
                deleted = bool(client.get("/_emulator/attempts", {"job": name})["attempts"])
            if deleted:  # (trial 207: a second delete was answered with another job's name)
                there += f" It has recorded attempts: deleted? (`attempts --job {job}`)."
            elif near:  # (trial 82)
                there += f" Did you mean {near[0]!r}?"
            named = {"name": job, "fireTimes": 0, "pageSize": PAGE_SIZE}  # (IDs holding it)
            every = client.pages("/_emulator/jobs", "jobs", named)
            if elsewhere := [j["name"] for j in every if j["name"].endswith(f"/jobs/{job}")][:3]:
                there = f" Jobs of that ID elsewhere (name one in full): {', '.join(elsewhere)}."
        raise ConfigurationError(f"job {job!r}: {exc}{there}") from None


def cmd_pause(args: argparse.Namespace, out: IO[str]) -> int:
    """Pause ``args.job`` (PauseJob) and say what that stops: a scheduled run's pending retry
    and a late run owed, when there were (trials 163, 165: the same words for every job; "no
    retry until it is resumed" read as if a dropped retry came back)."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    before = _job_row(client, _job_name(client, args.job))
    _job_method(client, args.job, "pause")
    dropped = []
    if retry := before.get("nextAttemptTime"):  # (the scheduled run's: trial 170)
        dropped.append(f"its run's retry due {retry} is dropped, the run giving up")
    if late := before.get("delayedRunTime"):
        dropped.append(f"the late run owed to {late} is dropped (`skipped` lists that time)")
    out.write(
        f"paused {args.job}: it starts no scheduled run until it is resumed"
        + "".join(f"; {what}" for what in dropped)
        + " (a forced run's retries go on, and `run` still starts one)\n"
    )
    return 0


def _job_row(client: DaemonClient, name: str) -> dict[str, Any]:
    """The ``GET /_emulator/jobs`` row of the job ``name`` (full), ``{}`` when there is none."""
    rows = client.get("/_emulator/jobs", {"name": name.rsplit("/", 1)[-1], "fireTimes": 0})
    return next((row for row in rows["jobs"] if row["name"] == name), {})


def cmd_delete(args: argparse.Namespace, out: IO[str]) -> int:
    """Delete ``args.job`` (DeleteJob; trial 159: a job dropped from a jobs file ran on)."""
    _job_method(DaemonClient(args.host, args.port, args.admin_token), args.job, "delete")
    out.write(f"deleted {args.job}: its attempts and runs stay in the history\n")
    return 0


def cmd_cancel(args: argparse.Namespace, out: IO[str]) -> int:
    """Cancel the Cloud Run execution ``args.execution`` (CancelExecution) and say what that
    does to its tasks; a refusal (none of that name, one that has ended) exits 2 with it."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    execution = client.get(f"/_emulator/executions/{args.execution}")
    client.call("POST", f"/v2/{execution['name']}:cancel", body={})
    running = execution.get("runningCount", 0)
    out.write(
        f"cancelled {execution['name'].rsplit('/', 1)[-1]}: no further task starts; {running} "
        "running task(s) get SIGTERM, then SIGKILL (`executions` shows it CANCELLED once they "
        "end)\n"
    )
    return 0


def cmd_resume(args: argparse.Namespace, out: IO[str]) -> int:
    """Resume ``args.job`` (ResumeJob) and print its next scheduled time."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    name, job = _job_method(client, args.job, "resume")
    after, zone = "", resolve_time_zone(job.get("timeZone") or "Etc/UTC")
    if when := job.get("scheduleTime"):  # in the job's time zone, as `jobs` shows it (trial 105)
        after = f"; next run at {format_schedule_time(parse_timestamp(when).astimezone(zone))}"
    if retry := _job_row(client, name).get("forcedRunRetryTime"):  # (trial 114: unsaid; 225:
        retry = format_schedule_time(parse_timestamp(retry).astimezone(zone))  # in UTC)
        after += f"; first, a forced run's retry, due {retry}"
    out.write(f"resumed {args.job}{after}\n")
    return 0


def _duration(text: str) -> Any:
    from .scenario.model import parse_duration  # (what a scenario's advance step takes)

    return parse_duration(text)


def cmd_clock(args: argparse.Namespace, out: IO[str]) -> int:
    """Move a manual clock (``--advance``, ``--to``, ``--next``; ``POST
    /_emulator/clock:advance`` or ``:moveTo``), then print ``manual clock at T; next due at
    T`` (``GET /_emulator/clock``).

    :raises ConfigurationError: for a move the daemon refuses (a system clock, an instant before
        the clock), naming its reason.
    """
    client = DaemonClient(args.host, args.port, args.admin_token)
    before = client.get("/_emulator/clock")
    due = before.get("nextDue") if args.next else None
    client.timeout = None  # a move waits for what it delivers, up to their attempt deadlines
    waiting = threading.Timer(MOVE_NOTE_SECONDS, _say_waiting, (args,))
    waiting.start()
    try:
        if args.advance is not None:
            seconds = args.advance.total_seconds()
            client.call("POST", "/_emulator/clock:advance", body={"seconds": seconds})
        elif args.to is not None or due is not None:
            client.call("POST", "/_emulator/clock:moveTo", body={"time": iso(args.to) or due})
    except Refused as exc:
        again = ""
        if "cannot go back" in str(exc):  # (not a system clock's refusal)
            again = " To start earlier, restart the daemon with --start T and --in-memory or a "
            again += "new --data-dir (on its data dir it resumes where it stopped)."
        client.timeout = 10
        after = None
        with contextlib.suppress(ConfigurationError):  # (a daemon that stopped answers no more)
            after = client.get("/_emulator/clock").get("now")
        if before.get("mode") != "manual":  # (trial 219: the system clock's moved on its own)
            what = "the clock did not move"
        elif after not in (None, before.get("now")):  # (trial 187: a full disk's part way)
            what = f"the clock moved to {after}, short of its target"
        elif "stopped at" in str(exc):  # a stop ended the move part way (trial 149)
            what = "the clock did not reach its target"
        else:
            what = "the clock did not move"
        raise ConfigurationError(f"{what}: {exc}{again}") from None
    finally:
        waiting.cancel()
    clock = client.get("/_emulator/clock")
    due, jobs = clock.get("nextDue"), clock.get("nextDueJobs") or []
    more = clock.get("nextDueJobCount", 0) - min(len(jobs), 3)
    which = ": " + ", ".join(jobs[:3]) + (f" and {more} more" if more > 0 else "") if jobs else ""
    upcoming = f"next due at {due}{which}" if due else "nothing due"
    out.write(f"{clock['mode']} clock at {clock['now']}; {upcoming}\n")
    return 0


def _say_waiting(args: argparse.Namespace) -> None:
    """Say on stderr what a slow ``clock`` move waits for, naming the jobs whose attempts are
    in flight, the oldest first: the one a manual clock is sending, the others queued behind it
    (trials 158, 170: a move held for a Cloud Run run said nothing; trial 172: one slow job of
    5,000 was found only in the target's log; trial 183: named in alphabetical order, the slow
    one was cut off behind "…"; trials 207, 211: it read as a slow target's when the move
    was long for the number of attempts on its way)."""
    going: list[str] = []
    with contextlib.suppress(ConfigurationError):  # (a daemon gone: the move's call says so)
        page = DaemonClient(args.host, args.port, args.admin_token).get(
            "/_emulator/attempts", {"order": "newest", "pageSize": 100}
        )
        jobs = (a["job"].rsplit("/", 1)[-1] for a in page["attempts"][::-1] if not a["code"])
        going = list(dict.fromkeys(jobs))
    then = f"; then {', '.join(going[1:3])}{', …' if len(going) > 3 else ''}" * (len(going) > 1)
    which = f" ({going[0]}{then})" if going else ""
    print(
        f"note: the clock sends each attempt due on its way and waits for its answer{which}: "
        "many attempts take a while, a slow target up to its attempt deadline, a Cloud Run "
        "execution until it ends (see `attempts --follow`, `executions --state running`)…",
        file=sys.stderr,
        flush=True,
    )


def cmd_executions(args: argparse.Namespace, out: IO[str]) -> int:
    """Print the ``executions`` table (the newest ``--last`` Cloud Run executions, or every one
    created since ``--since``, oldest first; ``--job``, ``--scheduler-job`` and ``--state`` keep
    those of one Cloud Run job, started by one scheduler job, in one state), or with ``--json``
    one JSON object per execution, as ``GET /_emulator/executions`` gives it."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    params = {"pageSize": PAGE_SIZE, "job": args.job or None, "state": args.state or None}
    listed = [*client.pages("/_emulator/executions", "executions", params)]  # oldest first
    if args.scheduler_job:  # an execution keeps the X-CloudScheduler-JobName it got: an ID
        started = {record.get("schedulerJob") for record in listed} - {None, ""}
        job_id = args.scheduler_job.rsplit("/", 1)[-1]
        listed = [record for record in listed if record.get("schedulerJob") == job_id]
        if not listed and job_id not in started:  # a typo, or a job that started none
            _job_method(client, args.scheduler_job, "get")  # (trial 208: a typo listed none)
    if args.since is not None:
        since = _since_instant(client, args.since)
        listed = [r for r in listed if parse_timestamp(r["createTime"]) >= since]
    records = listed if args.since is not None else listed[-args.last :]
    if len(listed) > len(records):  # (as the other views say it: trial 180)
        note = f"the newest {args.last} of {len(listed)} executions"
        print(f"note: {note}; a larger --last N lists more.", file=sys.stderr)
    if args.json:
        return _print_json(out, records)
    rows = execution_rows(records, args.wide)
    return _print_table(out, EXECUTION_HEADERS, rows, "(no executions)", args.wide)


def cmd_attempts(
    args: argparse.Namespace, out: IO[str], sleep: Callable[[float], None] = time.sleep
) -> int:
    """Print the ``attempts`` table (or JSON lines with ``--json``); with ``--follow`` keep
    printing until interrupted."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    base: dict[str, Any] = {"job": args.job or None, "run": getattr(args, "run", None)}
    if base["run"] is not None and args.follow:
        raise ConfigurationError("--run lists a run's attempts so far; drop --run or --follow.")
    failed = bool(getattr(args, "failed", False))
    listed = {**base, "failed": "true"} if failed else base
    if args.since is not None or base["run"] is not None:  # (a run's attempts are few: all)
        if args.since is not None:
            since = _since_instant(client, args.since)
            base["startAfter"] = listed["startAfter"] = iso(since)
            _note_trimmed(client, since, job=args.job)
        items = list(
            client.pages("/_emulator/attempts", "attempts", {**listed, "pageSize": PAGE_SIZE})
        )
        if args.since is None:  # --run: its newest --last N, as the views list (trial 123)
            items = _at_most(args.last, "attempts", items)
        run, one = base["run"], {**base, "startAfter": None, "pageSize": 1}
        if run is not None and not items and not client.get("/_emulator/attempts", one)["attempts"]:
            of = f" of job {args.job}" if args.job else ""  # (trial 123: it listed nothing, exit 0)
            raise ConfigurationError(
                f"no run {run}{of}: --run takes a RUN that `runs` lists (the history's bound "
                "drops the oldest runs)."
            )
    else:
        params = {**listed, "order": "newest"}
        items = _newest(client, "/_emulator/attempts", "attempts", params, args.last)
    if failed and args.follow:  # and the attempts in flight, watched until they end
        going = client.get("/_emulator/attempts", {**base, "order": "newest", "pageSize": 100})
        items += [item for item in going.get("attempts", []) if item.get("code") is None]
        items = sorted({int(item["id"]): item for item in items}.values(), key=lambda i: i["id"])
    attempts = [Attempt.from_json(item) for item in items]
    wide = bool(getattr(args, "wide", False))
    as_json = bool(getattr(args, "json", False))
    if not args.follow:
        if as_json:
            return _print_json(out, (attempt.to_json() for attempt in attempts))
        headers = WIDE_ATTEMPT_HEADERS if wide else ATTEMPT_HEADERS
        # a duplicate's note names the answer before it, shown or not (trial 224: it changed
        # with --last)
        whole = {(a.job, a.run_id) for a in attempts if a.attempt == 1 and not a.copy}
        runs = {(a.job, a.run_id) for a in attempts} - whole if base["run"] is None else set()
        earlier = [  # (of the runs whose first attempt is not shown: the window's oldest, few)
            Attempt.from_json(item)
            for job, run in sorted(runs)
            for item in client.pages(
                "/_emulator/attempts", "attempts", {"job": job, "run": run, "pageSize": PAGE_SIZE}
            )
        ]
        rows = attempt_rows(attempts, wide, earlier)
        return _print_table(out, headers, rows, "(no attempts)", wide)
    return _follow(client, base, attempts, out, sleep, wide=wide, as_json=as_json, failed=failed)


def _note_trimmed(
    client: DaemonClient, since: datetime, what: str = "attempts", job: str | None = None
) -> None:
    """Say on stderr when retention dropped attempts since ``since``: the answer's
    ``droppedThrough`` is the newest it dropped, and every attempt after it is kept. Those
    after the first attempt kept since then (a run still going keeps its attempts: trials 123,
    211), all of them (trial 214), or those just before the first one kept; the listing of
    ``what`` (attempts, or runs, which go whole with their attempts: trial 172) is whole from
    there. The bound is the whole history's: under ``--job`` (``job``) the note says that
    job's went too (trial 173 read the instant as the job's own; trial 178 read "may all be
    kept" of a job that lost four hours)."""
    page = client.get("/_emulator/attempts", {"pageSize": 1, "startAfter": iso(since)})
    first = (page.get("attempts") or [None])[0]
    number, through = 0 if first is None else int(first.get("id") or 0), page.get("droppedThrough")
    if not through or through < number - 1:
        return
    whole = _attempt_after(client, {}, through)  # the first attempt of the history's whole tail
    known = page.get("droppedThroughStart")  # (its start: when this daemon dropped it)
    upto = whole.start_time if whole else parse_timestamp(known) if known else None
    start = parse_timestamp(str(first["startTime"])) if first else None
    if through > number and upto is not None and upto >= since:  # after the first kept, or all
        said = f"{what} from {iso(since)} to {iso(upto)} were dropped"
        kept = "but some: runs still going, and runs newer than those dropped"
        tail = "the listing is whole from there" if whole else "only those kept are listed"
    elif start is not None and through == number - 1 and start > since:
        said, kept = f"{what} before {iso(start)} were dropped", ""
        tail = f"the listing since {iso(since)} starts there"
    else:
        return
    alike = f"every job's alike, {job}'s too" if job else ""
    which = "; ".join(filter(None, (kept, alike)))
    print(
        f"note: {said} by the history's bound (--retain-attempts, --retain-megabytes; "
        f'docs/behaviour.md, "Attempt history"){f" ({which})" if which else ""}: {tail}.',
        file=sys.stderr,
    )


def _follow(
    client: DaemonClient,
    base: dict[str, Any],
    shown: list[Attempt],
    out: IO[str],
    sleep: Callable[[float], None],
    *,
    wide: bool = False,
    as_json: bool = False,
    failed: bool = False,
) -> int:
    """Print ``shown``'s finished attempts, then every attempt as it finishes, each look's in
    id order (as a table, each batch aligned on the widest cells seen so far, under the header
    again when that widened a column; or as JSON lines; with ``failed``, only those that
    failed). An attempt in flight is looked up again at each look until it ends (one request
    each), so a long one holds back no other."""
    headers = WIDE_ATTEMPT_HEADERS if wide else ATTEMPT_HEADERS
    # The rows printed that hold a column's widest cell, so that later batches align with
    # earlier ones (not every row printed: a follow of days would grow without bound).
    seen: list[list[str]] = []
    header_printed = ""
    shown_before: deque[Attempt] = deque(maxlen=FOLLOW_CONTEXT)  # for their answers' duplicates

    def emit(batch: list[Attempt]) -> None:
        nonlocal header_printed
        batch = [attempt for attempt in batch if not failed or attempt.code != "OK"]
        if as_json:
            _print_json(out, (attempt.to_json() for attempt in batch))
            out.flush()
            return
        rows = attempt_rows(batch, wide, shown_before)
        shown_before.extend(batch)
        seen.extend(rows)
        lines = render_table(headers, seen, width=table_width(out, wide), paint=painter(out))
        # A row is its line and the lines its wrapped REASON continues on (indented).
        starts = [i for i, line in enumerate(lines) if i and not line.startswith(" ")]
        if lines[0] != header_printed:  # the first, or the columns changed: rows line up
            out.write(lines[0] + "\n")
            header_printed = lines[0]
        out.writelines(line + "\n" for line in (lines[starts[-len(rows)] :] if rows else []))
        out.flush()
        if seen:
            widest = {id(max(seen, key=lambda row: len(row[c]))) for c in range(len(headers))}
            seen[:] = [row for row in seen if id(row) in widest]

    going = [attempt.id for attempt in shown if attempt.code is None]  # printed once they end
    seen.extend(attempt_rows([a for a in shown if a.code is None], wide))  # widths of those
    emit([attempt for attempt in shown if attempt.code is not None])
    if shown:
        cursor = shown[-1].id  # the id after which attempts are still to be read
    else:
        newest = client.get("/_emulator/attempts", {**base, "order": "newest", "pageSize": 1})
        cursor = int((newest.get("attempts") or [{"id": 0}])[0]["id"])
    try:
        while True:
            sleep(FOLLOW_INTERVAL)
            try:
                looked = [_attempt_after(client, base, attempt_id - 1) for attempt_id in going]
                new = client.get(
                    "/_emulator/attempts",
                    {**base, "pageSize": PAGE_SIZE, "pageToken": str(cursor)},
                )
            except ConfigurationError as exc:  # (trial 86: an all-day follow ended at a restart)
                if _answering_again(client, exc, sleep) < cursor:  # a new history (in memory)
                    cursor, going = 0, []
                continue
            fresh = [Attempt.from_json(item) for item in new.get("attempts", [])]
            cursor = fresh[-1].id if fresh else cursor
            # an attempt no longer stored (retention dropped it once it ended) is let go
            now = [a for a, i in zip(looked, going, strict=True) if a is not None and a.id == i]
            going = [a.id for a in now + fresh if a.code is None]
            ended = sorted((a for a in now + fresh if a.code is not None), key=attrgetter("id"))
            if ended:
                emit(ended)
    except KeyboardInterrupt:
        return 0


def _answering_again(client: DaemonClient, gone: Exception, sleep: Callable[[float], None]) -> int:
    """Say that the daemon stopped answering (``gone``) and look again every
    :data:`FOLLOW_INTERVAL` until it answers (a restart); return its newest attempt's id."""
    print(f"note: {gone} --follow waits for it to answer again (Ctrl-C to stop).", file=sys.stderr)
    while True:
        sleep(FOLLOW_INTERVAL)
        try:
            page = client.get("/_emulator/attempts", {"order": "newest", "pageSize": 1})
        except ConfigurationError:
            continue
        print(f"note: {client.base} answers again.", file=sys.stderr)
        return int((page.get("attempts") or [{"id": 0}])[0]["id"])


def _attempt_after(client: DaemonClient, base: dict[str, Any], after: int) -> Attempt | None:
    """The first attempt (of ``base``'s job) whose id is above ``after``, ``None`` for none."""
    page = client.get("/_emulator/attempts", {**base, "pageSize": 1, "pageToken": str(after)})
    return next((Attempt.from_json(item) for item in page.get("attempts", [])), None)


#: The command functions by subcommand name.
COMMANDS: dict[str, Callable[[argparse.Namespace, IO[str]], int]] = {
    "jobs": cmd_jobs,
    "attempts": cmd_attempts,
    "runs": cmd_runs,
    "skipped": cmd_skipped,
    "run": cmd_run,
    "pause": cmd_pause,
    "resume": cmd_resume,
    "delete": cmd_delete,
    "cancel": cmd_cancel,
    "executions": cmd_executions,
    "clock": cmd_clock,
}


def _execution_state(text: str) -> str:
    """``--state``'s value in any case, as the daemon spells it.

    :raises argparse.ArgumentTypeError: naming the states and the value as typed.
    """
    state = text.upper()
    if state not in EXECUTION_STATES:
        raise argparse.ArgumentTypeError(
            f"must be one of {', '.join(EXECUTION_STATES)}; got {text!r}"
        )
    return state
