"""``scheduler-emulator jobs``, ``attempts``, ``skipped`` and ``executions``: aligned tables
from a running daemon, found by ``--host``/``--port`` as ``env-init`` takes them.

They read the daemon's read model (``GET /_emulator/jobs``, ``GET /_emulator/attempts``,
``GET /_emulator/skipped``), a page at a time. ``attempts`` prints the replay table's columns
plus the schedule time of each attempt's run and, for a failure, the reason (the service's
answer, or the debug text) — cut to :data:`REASON_WIDTH` only on a terminal, never with
``--wide`` or when piped; ``--json`` prints one ``/_emulator/attempts`` record per line instead;
``--follow`` keeps printing attempts as they finish, until Ctrl-C. ``skipped`` lists the
scheduled times that got no run, with the reason. ``executions`` lists the Cloud Run
executions (``GET /_emulator/executions``) with their tasks' outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import IO, Any

from ..domain.attempts import Attempt, failure_reason, iso
from ..domain.codec import parse_timestamp
from ..domain.errors import ConfigurationError, InvalidArgument
from .timeline import IN_FLIGHT, attempt_cells, render_table

__all__ = [
    "ADMIN_TOKEN_ENV",
    "add_arguments",
    "cmd_attempts",
    "cmd_executions",
    "cmd_jobs",
    "cmd_skipped",
    "took",
]

JOBS_HEADERS = ("JOB", "STATE", "SCHEDULE", "TIME ZONE", "READS AS", "LAST", "NEXT", "TARGET")
#: The environment variable that sets ``--admin-token``, for ``start`` and for these commands.
ADMIN_TOKEN_ENV = "SCHEDULER_EMULATOR_ADMIN_TOKEN"
ATTEMPT_HEADERS = (
    "TIME", "JOB", "RUN (ScheduleTime)", "TRY", "INJ", "HTTP", "CODE", "TOOK", "SCHEDULED",
    "REASON",
)  # fmt: skip
SKIPPED_HEADERS = ("SCHEDULED", "JOB", "ScheduleTime", "RECORDED AT", "REASON")
EXECUTION_HEADERS = (
    "CREATED", "EXECUTION", "STATE", "TASKS", "SUCCEEDED", "FAILED", "RETRIED", "EXIT CODES",
    "SCHEDULER JOB",
)  # fmt: skip
#: What a skipped run's reason code means, in the ``skipped`` table.
SKIPPED_REASONS = {
    "RUN_STILL_GOING": "RUN_STILL_GOING: the previous run was still going",
    "EMULATOR_DOWN": "EMULATOR_DOWN: the emulator was not running",
}
#: Characters of an attempt's REASON on a terminal (untruncated when piped or with --wide).
REASON_WIDTH = 100
#: Attempts ``attempts`` shows without ``--since``: the newest ones.
DEFAULT_LAST = 20
#: Seconds between two looks at the daemon under ``--follow``.
FOLLOW_INTERVAL = 1.0


def add_arguments(sub: Any, default_host: str, default_port: int, port_type: Any) -> None:
    """Add the ``jobs`` and ``attempts`` subcommands to the CLI's subparsers ``sub``."""
    jobs = sub.add_parser(
        "jobs",
        help="print the running daemon's jobs as a table",
        description="Print every job of the daemon at --host/--port: state, schedule read out "
        "in English, last attempt and next fire time.",
    )
    skipped = sub.add_parser(
        "skipped",
        help="print the running daemon's skipped runs as a table",
        description="Print the scheduled times of the daemon at --host/--port that got no run, "
        "with the reason: the previous run was still going, or the emulator was not running.",
    )
    attempts = sub.add_parser(
        "attempts",
        help="print the running daemon's attempts as a table",
        description="Print attempts of the daemon at --host/--port, oldest first: the newest "
        f"{DEFAULT_LAST} (or --last N), or every one since --since; --follow keeps printing "
        "them as they finish.",
    )
    executions = sub.add_parser(
        "executions",
        help="print the running daemon's Cloud Run executions as a table",
        description="Print the Cloud Run executions (--cloud-run-jobs) of the daemon at "
        "--host/--port, oldest first: state, tasks succeeded and failed, each task attempt's "
        "exit code, and the scheduler job that started it.",
    )
    for parser in (jobs, attempts, skipped, executions):
        parser.add_argument(
            "--host", default=default_host, help="the daemon's address (%(default)s)"
        )
        parser.add_argument(
            "--port", type=port_type, default=default_port, help="the daemon's port (%(default)s)"
        )
        parser.add_argument(
            "--admin-token",
            default=os.environ.get(ADMIN_TOKEN_ENV) or None,
            help=f"the daemon's --admin-token (default: ${ADMIN_TOKEN_ENV})",
        )
    skipped.add_argument("--job", metavar="J", help="only this job's (ID or full name)")
    executions.add_argument(
        "--job", metavar="J", help="only this Cloud Run job's (ID or full name)"
    )
    attempts.add_argument("--job", metavar="J", help="only this job's (ID or full name)")
    attempts.add_argument(
        "--wide", action="store_true", help="never cut REASON (it is cut only on a terminal)"
    )
    attempts.add_argument(
        "--json",
        action="store_true",
        help="print each attempt as one JSON object per line (the /_emulator/attempts shape)",
    )
    attempts.add_argument(
        "--since", type=_since, metavar="RFC3339", help="attempts started at or after this instant"
    )
    attempts.add_argument(
        "--last", type=int, default=DEFAULT_LAST, metavar="N",
        help="without --since: the newest N attempts (%(default)s)",
    )  # fmt: skip
    attempts.add_argument(
        "--follow", "-f", action="store_true", help="keep printing attempts as they finish"
    )


def _since(text: str) -> datetime:
    try:
        return parse_timestamp(text, field="--since")
    except InvalidArgument as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


class DaemonClient:
    """GETs JSON from the daemon's ``/_emulator/`` endpoints.

    :raises ConfigurationError: (exit 2) when no daemon answers, or it refuses the request.
    """

    def __init__(self, host: str, port: int, token: str | None = None) -> None:
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.base = f"http://{address}"
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON answer of ``GET path?params``."""
        import requests

        try:
            response = requests.get(
                self.base + path, params=params, headers=self.headers, timeout=30
            )
        except requests.RequestException:
            raise ConfigurationError(
                f"no scheduler-emulator answers at {self.base}; start it, or pass the --host "
                "and --port of its startup line."
            ) from None
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code != 200:
            message = body.get("error", {}).get("message", response.reason)
            raise ConfigurationError(f"{self.base}{path}: {response.status_code} {message}")
        return dict(body)

    def pages(self, path: str, key: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every item of a paged listing, page by page."""
        params = dict(params)
        while True:
            page = self.get(path, params)
            yield from page.get(key, [])
            token = page.get("nextPageToken")
            if not token:
                return
            params["pageToken"] = token


def job_rows(jobs: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The cells of the ``jobs`` table, from ``GET /_emulator/jobs`` rows."""
    rows = []
    for job in jobs:
        last = job.get("lastAttempt")
        fire = job.get("nextFireTimes") or []
        rows.append(
            [
                job["id"],
                job["state"],
                job["schedule"],
                job["timeZone"],
                job["scheduleText"],
                "-" if not last else f"{last['code'] or IN_FLIGHT} {last['time']}",
                fire[0] if fire else "-",
                job["target"],
            ]
        )
    return rows


def attempt_from_json(item: dict[str, Any]) -> Attempt:
    """An :class:`Attempt` from its ``/_emulator/attempts`` JSON (:meth:`Attempt.from_json`)."""
    return Attempt.from_json(item)


def attempt_rows(attempts: Sequence[Attempt], width: int | None = None) -> list[list[str]]:
    """The cells of the ``attempts`` table (:data:`ATTEMPT_HEADERS`).

    :param width: the longest REASON (longer ones end in ``…``); ``None``: never cut.
    """
    limit = 2**62 if width is None else width
    return [
        [
            *attempt_cells(attempt),
            took(attempt),
            iso(attempt.nominal) or "-",
            failure_reason(attempt, limit),
        ]
        for attempt in attempts
    ]


def took(attempt: Attempt) -> str:
    """How long the attempt took, start to end, in seconds with milliseconds (``"0.012s"``);
    ``"-"`` while it is in flight."""
    if attempt.end_time is None:
        return "-"
    return f"{(attempt.end_time - attempt.start_time).total_seconds():.3f}s"


def _print_table(out: IO[str], headers: Sequence[str], rows: list[list[str]], empty: str) -> int:
    """Write ``rows`` as a table under ``headers``, or the line ``empty`` when there are none.

    :return: the exit status, 0.
    """
    if not rows:
        out.write(empty + "\n")
        return 0
    for line in render_table(headers, rows):
        out.write(line + "\n")
    return 0


def cmd_jobs(args: argparse.Namespace, out: IO[str]) -> int:
    """Print the ``jobs`` table."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    jobs = list(client.pages("/_emulator/jobs", "jobs", {"pageSize": 500, "fireTimes": 1}))
    return _print_table(out, JOBS_HEADERS, job_rows(jobs), "(no jobs)")


def skipped_rows(records: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The cells of the ``skipped`` table (:data:`SKIPPED_HEADERS`), from
    ``GET /_emulator/skipped`` records."""
    return [
        [
            str(record.get("nominalTime") or "-"),
            str(record["job"]).rsplit("/", 1)[-1],
            str(record.get("scheduleTime") or "-"),
            str(record.get("recordedAt") or "-"),
            SKIPPED_REASONS.get(str(record.get("reason")), str(record.get("reason"))),
        ]
        for record in records
    ]


def cmd_skipped(args: argparse.Namespace, out: IO[str]) -> int:
    """Print the ``skipped`` table (every skipped run, in the order recorded)."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    params: dict[str, Any] = {"pageSize": 1000}
    if args.job:
        params["job"] = args.job
    records = list(client.pages("/_emulator/skipped", "skipped", params))
    return _print_table(out, SKIPPED_HEADERS, skipped_rows(records), "(no skipped runs)")


def execution_rows(records: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The cells of the ``executions`` table (:data:`EXECUTION_HEADERS`), from
    ``GET /_emulator/executions`` records; EXIT CODES lists each task's attempts in order
    (``0:3,0`` — task 0 exited 3, then 0; ``timeout`` for one stopped at its timeout)."""
    rows = []
    for record in records:
        codes: dict[int, list[str]] = {}
        for attempt in record.get("taskAttempts", []):
            shown = attempt.get("stopped") or str(attempt.get("exitCode", "…"))
            codes.setdefault(int(attempt["index"]), []).append(shown)
        rows.append(
            [
                str(record["createTime"]),
                str(record["name"]).rsplit("/", 1)[-1],
                str(record["state"]),
                str(record["taskCount"]),
                str(record["succeededCount"]),
                str(record["failedCount"]),
                str(record["retriedCount"]),
                " ".join(f"{i}:{','.join(c)}" for i, c in sorted(codes.items())) or "-",
                str(record.get("schedulerJob") or "-"),
            ]
        )
    return rows


def cmd_executions(args: argparse.Namespace, out: IO[str]) -> int:
    """Print the ``executions`` table (every Cloud Run execution, oldest first)."""
    client = DaemonClient(args.host, args.port, args.admin_token)
    params: dict[str, Any] = {"pageSize": 1000}
    if args.job:
        params["job"] = args.job
    records = list(client.pages("/_emulator/executions", "executions", params))
    return _print_table(out, EXECUTION_HEADERS, execution_rows(records), "(no executions)")


def _reason_width(args: argparse.Namespace, out: IO[str]) -> int | None:
    """How long a REASON may be: cut to :data:`REASON_WIDTH` only on a terminal."""
    if getattr(args, "wide", False):
        return None
    isatty = getattr(out, "isatty", None)
    return REASON_WIDTH if isatty is not None and isatty() else None


def cmd_attempts(
    args: argparse.Namespace, out: IO[str], sleep: Callable[[float], None] = time.sleep
) -> int:
    """Print the ``attempts`` table (or JSON lines with ``--json``); with ``--follow`` keep
    printing until interrupted."""
    if args.last < 1:
        raise ConfigurationError(f"--last must be 1 or more; got {args.last}.")
    client = DaemonClient(args.host, args.port, args.admin_token)
    base: dict[str, Any] = {}
    if args.job:
        base["job"] = args.job
    if args.since is not None:
        base["startAfter"] = iso(args.since)
        items = list(client.pages("/_emulator/attempts", "attempts", {**base, "pageSize": 1000}))
    else:
        newest = client.get(
            "/_emulator/attempts", {**base, "order": "newest", "pageSize": min(args.last, 1000)}
        )
        items = list(reversed(newest.get("attempts", [])))
    attempts = [attempt_from_json(item) for item in items]
    width = _reason_width(args, out)
    as_json = bool(getattr(args, "json", False))
    if not args.follow:
        if as_json:
            lines = [json.dumps(a.to_json(), ensure_ascii=False) for a in attempts]
        elif attempts:
            lines = render_table(ATTEMPT_HEADERS, attempt_rows(attempts, width))
        else:
            lines = ["(no attempts)"]
        for line in lines:
            out.write(line + "\n")
        return 0
    return _follow(client, base, attempts, out, sleep, width=width, as_json=as_json)


def _follow(
    client: DaemonClient,
    base: dict[str, Any],
    shown: list[Attempt],
    out: IO[str],
    sleep: Callable[[float], None],
    *,
    width: int | None = None,
    as_json: bool = False,
) -> int:
    """Print ``shown`` (finished ones), then every attempt as it finishes, in id order (as a
    table with REASON cut to ``width``, or as JSON lines)."""
    widths = [len(h) for h in ATTEMPT_HEADERS]
    cursor = 0  # the id after which attempts are still to be printed

    def emit(batch: list[Attempt], header: bool) -> None:
        if as_json:
            for attempt in batch:
                out.write(json.dumps(attempt.to_json(), ensure_ascii=False) + "\n")
            out.flush()
            return
        rows = attempt_rows(batch, width)
        for row in rows:
            for i, cell in enumerate(row[:-1]):
                widths[i] = max(widths[i], len(cell))
        lines = [list(ATTEMPT_HEADERS)] if header else []
        for cells in [*lines, *rows]:
            text = "  ".join(
                cell.rjust(widths[i])
                if ATTEMPT_HEADERS[i] in ("TRY", "HTTP", "TOOK")
                else cell.ljust(widths[i])
                if i < len(cells) - 1
                else cell
                for i, cell in enumerate(cells)
            )
            out.write(text.rstrip() + "\n")
        out.flush()

    finished = _finished_prefix(shown)
    for attempt in shown:
        widths[:] = [
            max(w, len(c)) for w, c in zip(widths, attempt_rows([attempt], width)[0], strict=True)
        ]
    emit(finished, header=True)
    if finished:
        cursor = finished[-1].id
    elif shown:
        cursor = shown[0].id - 1
    else:
        newest = client.get("/_emulator/attempts", {**base, "order": "newest", "pageSize": 1})
        cursor = int((newest.get("attempts") or [{"id": 0}])[0]["id"])
    try:
        while True:
            sleep(FOLLOW_INTERVAL)
            page = client.get(
                "/_emulator/attempts", {**base, "pageSize": 1000, "pageToken": str(cursor)}
            )
            batch = _finished_prefix([attempt_from_json(a) for a in page.get("attempts", [])])
            if batch:
                emit(batch, header=False)
                cursor = batch[-1].id
    except KeyboardInterrupt:
        return 0


def _finished_prefix(attempts: list[Attempt]) -> list[Attempt]:
    """The attempts up to the first one still in flight (printed once it ends)."""
    for index, attempt in enumerate(attempts):
        if attempt.code is None:
            return attempts[:index]
    return attempts
