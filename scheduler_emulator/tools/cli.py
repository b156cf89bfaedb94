"""The ``scheduler-emulator`` command line: :func:`build_parser` defines every subcommand
(``start``, ``next``, ``env-init``, ``demo``, ``init``, ``replay`` and the views of a running
daemon; ``scheduler-emulator --help`` describes each).

Every error a user can cause prints ``error: <message>`` to stderr and exits with 2.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import hashlib
import importlib.util
import json
import os
import re
import shlex
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import IO, Any, NoReturn

from .. import __version__
from ..clients import EMULATOR_HOST_VARIABLE, emulator_host
from ..domain.codec import same_configuration
from ..domain.errors import ApiError, ConfigurationError, EmulatorError
from ..domain.names import JOB_ID_RE, check_location_id, check_project_id, job_labels
from ..domain.resources import Job
from ..domain.schedule import DEFAULT_DST_POLICY, DST_POLICIES, parse_schedule
from ..realtime import real_time
from ..runtime import (
    DEFAULT_HEADER_CASE,
    DEFAULT_LOCATION,
    DEFAULT_PROJECT,
    DEFAULT_RETAIN_ATTEMPTS,
    DEFAULT_RETAIN_MEGABYTES,
    LOG_FORMATS,
    TOKEN_TIMES,
    EmulatorOptions,
    NoPublisher,
    SystemClock,
    app_engine_url,
    http2_problem,
)
from ..server.connections import Limits
from ..wire import GOOGLE_ISSUER, HEADER_CASES, format_schedule_time, format_timestamp, is_loopback
from . import replay, targets_setup, views
from .client_recipes import client_notes, grpc_note, sender_note
from .cloud_run_file import load_cloud_run_jobs, unauthenticated_runs, undefined_runs
from .fault_file import load_fault_file
from .firebase import command as firebase_command
from .jobs_file import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_JOBS, load_jobs_file
from .scaffold import FRAMEWORKS
from .views import (
    ADMIN_TOKEN_ENV,
    admin_token_argument,
    is_terminal,
    rule_argument,
    timestamp_argument,
    whole_number,
)

#: Default port: not one of gcloud's emulators (8085, 8080, 8081, 8086, 9010, 9020).
DEFAULT_PORT = 8095
DEFAULT_HOST = "127.0.0.1"
DST_HELP = (
    "daylight-saving rule (default: %(default)s): 'absolute' fires a repeated local time twice "
    "and a skipped one never; 'vixie' fires a fixed-time job once on both days, at the first "
    "occurrence of a repeated time and right after a skipped one"
)


class _GivenStore(argparse.Action):
    """Store the value and mark ``<dest>_given`` (tells an explicit value from the default)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def default_data_dir(project_dir: Path | None = None) -> Path:
    """The data directory of the project in ``project_dir`` (default: the current directory).

    ``$XDG_DATA_HOME/scheduler-emulator/<dir name>-<10 hex digits of the SHA-256 of its
    absolute path>`` (``$XDG_DATA_HOME`` defaults to ``~/.local/share``, which a relative
    value also gives, as the XDG Base Directory spec says), so two projects never
    share jobs, and the same project finds its jobs again whatever the shell's state.

    :return: an absolute path (not created).
    """
    directory = (project_dir or Path.cwd()).resolve()
    base = os.environ.get("XDG_DATA_HOME", "")  # a relative one is ignored, as the XDG spec
    if not Path(base).is_absolute():  # says (trial 211: ./relative/dir/… was made)
        base = str(Path.home() / ".local" / "share")
    digest = hashlib.sha256(str(directory).encode()).hexdigest()[:10]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", directory.name) or "root"
    return Path(base) / "scheduler-emulator" / f"{name}-{digest}"


def _port(text: str) -> int:
    with contextlib.suppress(ValueError):
        if 0 <= (port := int(text)) <= 65535:
            return port
    raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)")


def _host(text: str) -> str:
    """A ``--host`` value, an IPv6 address maybe in the brackets of the startup line's URL."""
    host = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if not host.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is empty; give an address such as 127.0.0.1")
    return host


def _host_name(text: str) -> str:
    """An ``--allowed-host`` value: a name alone, as a ``Host`` header's port is not checked."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a host name alone; give it without a port (any port is taken), "
            "as in 'scheduler'"
        )
    return text.lower()


def _directory(text: str) -> Path:
    if not text.strip():  # Path("") would be the current directory
        raise argparse.ArgumentTypeError(f"{text!r} is empty; give a directory")
    return Path(text)


def _whole_options(default: int, smallest: int = 1, metavar: str = "N") -> dict[str, Any]:
    type_ = functools.partial(whole_number, smallest=smallest)
    return dict(type=type_, default=default, metavar=metavar)


def _id_argument(check: Callable[..., object]) -> Callable[[str], Any]:
    return rule_argument(functools.partial(check, field="the value"))


def _daemon_address(parser: argparse.ArgumentParser) -> None:
    """Add ``--host``/``--port`` of a running daemon (``env-init``, the views): by default
    ``$CLOUD_SCHEDULER_EMULATOR_HOST``'s (env-init exports it), else 127.0.0.1:8095; a value
    that is not HOST:PORT is refused when the command runs (:func:`main`), naming it, unless
    both flags are given."""
    host: str | None = DEFAULT_HOST
    port: int | None = DEFAULT_PORT
    if os.environ.get(EMULATOR_HOST_VARIABLE, "").strip():
        try:
            exported, _, number = emulator_host().rpartition(":")
            host, port = exported.strip("[]"), int(number)
        except ValueError as exc:  # (a trial's was ignored: "no daemon answers at …:8095")
            host = port = None
            parser.set_defaults(address_problem=str(exc))
    where = f"(%(default)s; ${EMULATOR_HOST_VARIABLE}'s when set)"
    parser.add_argument("--host", type=_host, default=host, help=f"the daemon's address {where}")
    parser.add_argument("--port", type=_port, default=port, help=f"the daemon's port {where}")


def _issuer(text: str) -> str:
    """A ``--token-issuer`` value: an ``http(s)://`` URL or a bare host, without spaces
    (Google's ID tokens carry ``https://accounts.google.com`` or ``accounts.google.com``)."""
    if not text or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f"{text!r} is empty or has a space; give the 'iss'")
    scheme, sep, _ = text.partition("://")
    if (sep and scheme.lower() not in ("http", "https")) or (
        not sep and not re.fullmatch(r"[A-Za-z0-9.-]+(:\d+)?", text)  # (trial 176: javascript:)
    ):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an https:// URL nor a bare host such as accounts.google.com"
        )
    return text


def admin_token(given: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The token ``start`` requires on ``/_emulator/*`` and the views send: ``--admin-token``'s
    value (``given``, refused empty by the parser), else ``$SCHEDULER_EMULATOR_ADMIN_TOKEN``'s,
    else ``None`` (unprotected, said on stderr at start); without the whitespace around it (a
    secret file's last newline).

    :param given: the ``--admin-token`` value, ``None`` when the flag was left out.
    :param environ: the environment to read the variable from.
    :raises ConfigurationError: when the variable is set but empty or blank, naming it: an empty
        token would leave ``/_emulator/`` unprotected without a word.
    """
    value = environ.get(ADMIN_TOKEN_ENV)
    if given is not None or value is None:
        return given
    if not value.strip():
        raise ConfigurationError(
            f"{ADMIN_TOKEN_ENV} is set but empty ({value!r}), which would leave /_emulator/ "
            f"unprotected; give it a non-empty token, or unset it (unset {ADMIN_TOKEN_ENV})."
        )
    try:
        return admin_token_argument(value)
    except argparse.ArgumentTypeError as exc:
        raise ConfigurationError(f"{ADMIN_TOKEN_ENV}: {exc}.") from None


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose refusal is the error line and a pointer to ``--help`` (exit 2),
    not the usage block (22 lines for ``start``) with the error under it."""

    #: Words put back in a refusal, as ``{parsed: said}`` (trial 209b: ``firebase --hub x``,
    #: parsed as ``start --firebase x``, was refused as "start: error: argument --firebase").
    spoken: dict[str, str] = {}  # noqa: RUF012 (replaced, never changed in place)

    def error(self, message: str) -> NoReturn:
        prog = self.prog
        text = f"{prog}: error: {message}\n(`{prog} --help` lists what it takes.)\n"
        if self.spoken:
            words = "|".join(map(re.escape, sorted(self.spoken, key=len, reverse=True)))
            text = re.sub(rf"(?:{words})(?![\w-])", lambda m: self.spoken[m[0]], text)
        self.exit(2, text)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser for every subcommand."""
    parser: argparse.ArgumentParser = _Parser(
        prog="scheduler-emulator",
        description="A local Google Cloud Scheduler with real schedules, headers and retries.",
        epilog="Jobs come from --jobs files, or are created over the v1 API the daemon serves "
        "(gcloud scheduler, Google's client libraries: see env-init). Guides: README.md and "
        "docs/ in the project's source.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    start = sub.add_parser(
        "start",
        help="run the emulator daemon",
        description="Run the emulator: fire each job on its schedule, serve /_emulator/ "
        "endpoints, keep jobs and attempts in a data directory.",
    )
    storage = start.add_mutually_exclusive_group()  # --data-dir or --in-memory
    limits = Limits()
    options: dict[str, Any]
    for flag, options, text in (
        ("--host", dict(type=_host, default=DEFAULT_HOST),
         "address to listen on (%(default)s); anything but loopback warns on stderr"),
        ("--allowed-host", dict(action="append", default=[], metavar="NAME", type=_host_name),
         "also answer requests whose Host or Origin names NAME, e.g. a docker-compose service's "
         "name, on any port (loopback names and the --host address always); repeatable"),
        ("--admin-token", dict(type=admin_token_argument, metavar="TOKEN"),
         f"require 'Authorization: Bearer TOKEN' on /_emulator/* (default: ${ADMIN_TOKEN_ENV})"),
        ("--port", dict(type=_port, default=DEFAULT_PORT),
         "port; 0 picks a free one (%(default)s)"),
        ("--max-connections", _whole_options(limits.max_connections),
         "HTTP/1.1 connections open at once; one more is answered 503 (%(default)s)"),
        ("--max-grpc-connections", _whole_options(limits.max_grpc_connections),
         "gRPC connections open at once; one more gets UNAVAILABLE (%(default)s)"),
        ("--grpc-idle-timeout", _whole_options(round(limits.grpc_idle_timeout), metavar="SECONDS"),
         "send GOAWAY to a gRPC connection without a call for this long, up to twice it "
         "(grpcio's timer) (%(default)s)"),
        ("--jobs", dict(action="append", default=[], metavar="FILE"),
         "jobs file (YAML or JSON list of Job resources); repeatable"),
        ("--cloud-run-jobs", dict(action="append", default=[], metavar="FILE"),
         "Cloud Run jobs that scheduler jobs calling the Admin API's jobs/J:run run locally "
         "(YAML or JSON: v2 Job resources or gcloud run jobs describe --format=export); "
         "repeatable"),
        ("--max-jobs-file-bytes", _whole_options(DEFAULT_MAX_FILE_BYTES),
         "refuse a --jobs file larger than N bytes (%(default)s)"),
        ("--max-jobs-per-file", _whole_options(DEFAULT_MAX_JOBS),
         "refuse a --jobs file holding more than N jobs (%(default)s)"),
        # --firebase: the Functions emulator's project unless given (_GivenStore marks it)
        ("--project", dict(type=_id_argument(check_project_id), default=DEFAULT_PROJECT,
                           action=_GivenStore), "default project (%(default)s)"),
        ("--location", dict(type=_id_argument(check_location_id), default=DEFAULT_LOCATION),
         "default location (%(default)s)"),
        ("--data-dir", dict(type=_directory, metavar="DIR"),
         "where jobs and attempts are kept; one daemon per directory (default: one per project "
         f"directory, under $XDG_DATA_HOME/scheduler-emulator/, here {default_data_dir()})"),
        ("--in-memory", dict(action="store_true"), "keep nothing on disk"),
        ("--retain-attempts", _whole_options(DEFAULT_RETAIN_ATTEMPTS, smallest=0),
         "keep about the newest N finished attempts (finished runs go whole) and N skipped-run "
         "records; runs still going are always kept; checked at start and every 1,000 attempts "
         "(%(default)s)"),
        ("--retain-megabytes", _whole_options(DEFAULT_RETAIN_MEGABYTES, metavar="MB"),
         "drop the oldest finished runs while the database holds more than MB megabytes "
         "(10^6 bytes), checked as --retain-attempts; the execution log is not bounded "
         "(%(default)s)"),
        ("--clock", dict(choices=["system", "manual"], default="system", type=str.lower),
         "real time, or a virtual clock moved by POST /_emulator/clock:advance (%(default)s)"),
        ("--start", dict(type=timestamp_argument, metavar="RFC3339"),
         "manual clock's start instant (default: where it stopped on the data dir, else now "
         "rounded down to the whole minute)"),
        ("--faults", dict(metavar="FILE"), "fault plan (YAML or JSON) to inject into deliveries"),
        ("--log-file", dict(metavar="F"), "append the execution log to F (default: stdout)"),
        ("--log-format", dict(choices=LOG_FORMATS, type=str.lower),
         "'json': Cloud Logging entries, AttemptStarted and AttemptFinished; 'text': one line "
         "per attempt (time, job, attempt, outcome, latency). Default: text when the log goes "
         "to a terminal, json otherwise (a pipe, --log-file)"),
        ("--dst-policy", dict(choices=DST_POLICIES, default=DEFAULT_DST_POLICY, type=str.lower),
         DST_HELP),
        ("--header-case", dict(choices=HEADER_CASES, default=DEFAULT_HEADER_CASE, type=str.lower),
         "how attempts spell header names: 'google' as Google documents them "
         "(X-CloudScheduler-JobName), 'lower' as an HTTP/2 front end such as Cloud Run hands "
         "them on, 'canonical' as X-Cloudscheduler-Jobname (%(default)s)"),
        ("--http2", dict(action="store_true"),
         "send http:// attempts over HTTP/2 with prior knowledge (h2c), as Cloud Run's "
         "end-to-end HTTP/2 does; needs pycurl with an HTTP/2 libcurl (the curl extra)"),
        ("--token-issuer", dict(type=_issuer, default=GOOGLE_ISSUER, metavar="URL"),
         "'iss' of the OIDC tokens jobs send: an https:// URL or a bare host (%(default)s)"),
        ("--token-time", dict(choices=TOKEN_TIMES, default="emulator", type=str.lower),
         "stamp tokens with the emulator's clock, or with real time so that a target verifying "
         "against its own clock accepts them on a manual clock far from now (%(default)s)"),
    ):  # fmt: skip
        group = storage if flag in ("--data-dir", "--in-memory") else start
        group.add_argument(flag, help=text, **options)
    targets_setup.add_arguments(start, _port)
    firebase_command.add_start_arguments(start)
    firebase_command.add_command(sub)

    nxt = sub.add_parser("next", help="print a schedule's next fire times")
    nxt.add_argument(
        "schedule", metavar="SCHEDULE", help='unix-cron or English-like schedule, e.g. "0 2 * * *"'
    )
    nxt.add_argument("--time-zone", default="Etc/UTC", help="IANA time zone (%(default)s)")
    nxt.add_argument(
        "--after", type=timestamp_argument, metavar="RFC3339",
        help="default: this machine's clock now, not a daemon's manual clock",
    )  # fmt: skip
    nxt.add_argument("-n", **_whole_options(5), help="how many fire times (%(default)s)")
    nxt.add_argument(
        "--dst-policy",
        choices=DST_POLICIES,
        default=DEFAULT_DST_POLICY,
        help=DST_HELP,
        type=str.lower,
    )

    env = sub.add_parser(
        "env-init",
        help="print the export lines that point gcloud and clients at the emulator",
        description="Print shell export lines, like `gcloud beta emulators pubsub env-init`. "
        'Use: eval "$(scheduler-emulator env-init)"',
    )
    _daemon_address(env)
    views.add_admin_token(env)
    env.add_argument(
        "--project",
        help=f"gcloud's project (default: the running daemon's --project, else {DEFAULT_PROJECT})",
    )

    demo = sub.add_parser(
        "demo",
        help="the example service and emulator on a fast clock",
        description="Start the example Orders service (examples/orders/app.py) on --port, "
        "load its jobs into an in-memory emulator on a manual clock, and run --days simulated "
        "days at --speed real seconds per simulated hour, printing every attempt as the service "
        "receives it. Needs Flask (pip install 'cloud-scheduler-emulator[examples]').",
    )
    demo.add_argument("--days", type=int, default=3, help="simulated days (%(default)s)")
    demo.add_argument(
        "--port", type=_port, default=0, help="the service's port; 0 picks a free one (%(default)s)"
    )
    demo.add_argument(
        "--speed", type=float, default=0.05, help="real seconds per simulated hour (%(default)s)"
    )

    init = sub.add_parser(
        "init",
        help="write a small timer service with its tests and jobs",
        description="Write app.py (a Flask or FastAPI service with timers), test_app.py, "
        "pytest.ini, jobs.yaml, requirements.txt and README.md into DIR. Existing files are never "
        "overwritten without --force.",
    )
    init.add_argument(
        "directory", nargs="?", default=".", metavar="DIR", help="where to write (%(default)s)"
    )
    init.add_argument("--force", action="store_true", help="overwrite existing project files")
    init.add_argument(
        "--framework",
        choices=list(FRAMEWORKS),
        default="flask",
        help="(%(default)s)",
        type=str.lower,
    )
    replay_parser = sub.add_parser(
        "replay",
        help="run a scenario file, or re-send recorded attempts to a target",
        description="Run SCENARIO (jobs, steps, faults, target, expectations) on a virtual "
        "clock and print its attempt timeline and expectations (exit 1 when one is unmet); or, "
        "with --attempts FILE --target URL, re-send recorded attempts with their spacing. "
        "See docs/faults-and-replay.md.",
    )
    replay.add_arguments(replay_parser)
    views.add_arguments(sub, _daemon_address)
    return parser


def cmd_next(args: argparse.Namespace, out: IO[str]) -> int:
    """Print the next ``-n`` fire times of a schedule, one RFC 3339 line each, as the
    ``X-CloudScheduler-ScheduleTime`` header shows them."""
    if not args.time_zone.strip():  # (a job's empty timeZone is UTC; an empty flag is a slip)
        raise ConfigurationError(
            f"--time-zone: {args.time_zone!r} is empty; give an IANA time zone such as "
            "America/New_York, or leave the flag out for Etc/UTC."
        )
    try:
        schedule = parse_schedule(args.schedule, args.time_zone, dst_policy=args.dst_policy)
    except ApiError as exc:  # the flag or argument and why, not Google's summary
        culprit = "--time-zone" if exc.field == "timeZone" else "SCHEDULE"
        hint = ""
        if culprit == "SCHEDULE" and JOB_ID_RE.fullmatch(args.schedule.strip()):  # a job's?
            hint = (
                f" (a daemon's job's next fire times, on its clock: `scheduler-emulator jobs "
                f"--name {args.schedule.strip()} --json`, nextFireTimes)"
            )
        raise ConfigurationError(f"{culprit}: {exc.violations[0].description}{hint}") from None
    after = args.after or SystemClock().now()
    count = 0
    for count, instant in enumerate(islice(schedule.iter_after(after), args.n), 1):  # noqa: B007
        out.write(format_schedule_time(instant) + "\n")
    if not schedule.is_cron:
        print(
            f"note: {args.schedule!r} is an English-like schedule: Cloud Scheduler sends its "
            "job no X-CloudScheduler-ScheduleTime header; these are the instants it fires.",
            file=sys.stderr,
        )
    if count < args.n:
        print(
            f"note: {args.schedule!r} has no further fire time within 10 years "
            f"(printed {count} of {args.n}).",
            file=sys.stderr,
        )
    return 0


def cmd_env_init(args: argparse.Namespace, out: IO[str]) -> int:
    """Export :func:`~scheduler_emulator.server.daemon.env_vars` (and print :func:`client_notes`)
    for the daemon at ``--host``/``--port``, with the project it says it uses (``--project``
    overrides it) and ``PUBSUB_EMULATOR_HOST`` when it publishes to a Pub/Sub emulator."""
    if args.port == 0:
        raise ConfigurationError(
            "--port 0 is not a daemon's port (0 tells start to pick a free one); give the port "
            "of its startup line, 'scheduler-emulator listening on http://HOST:PORT'."
        )
    client = views.DaemonClient(args.host, args.port, args.admin_token, timeout=2)
    try:  # the running daemon's defaults (project, grpc, pubsubEmulatorHost…)
        config = client.get("/_emulator/config")
    except ConfigurationError as exc:  # (trial 110: a refusal read as no daemon at all)
        if isinstance(exc, views.Refused):
            raise
        config = {}
    answered = "project" in config  # else no emulator answers there
    if args.project is None and not answered:
        print(
            f"note: no scheduler-emulator answers at {args.host}:{args.port}; printing "
            f"project {DEFAULT_PROJECT}. Start the daemon first, or pass --port/--project.",
            file=sys.stderr,
        )
    project = str(config.get("project", DEFAULT_PROJECT)) if args.project is None else args.project
    check_project_id(project, field="--project")
    grpc = bool(config.get("grpc", True)) if answered else None
    pubsub_host = str(config.get("pubsubEmulatorHost", "")) if answered else ""
    from ..server.daemon import env_vars

    for key, value in env_vars(args.host, args.port, project, pubsub_host).items():
        out.write(f"export {key}={shlex.quote(value)}\n")
    out.writelines(line + "\n" for line in client_notes(args.host, args.port, grpc=grpc))
    return 0


def load_jobs_by_file(
    paths: Sequence[str],
    *,
    project: str,
    location: str,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_jobs: int = DEFAULT_MAX_JOBS,
) -> list[tuple[str, list[Job]]]:
    """Load every jobs file, keeping which jobs each file holds; warn (on stderr) about a file
    that holds none.

    :param max_bytes: the largest file read (``--max-jobs-file-bytes``).
    :param max_jobs: the most jobs one file may hold (``--max-jobs-per-file``).
    :raises ConfigurationError: naming the file, job, field and value of the first problem,
        both files of a job name defined twice, or a file over a limit.
    :return: ``(path, jobs)`` per file, in order.
    """
    per_file: list[tuple[str, list[Job]]] = []
    seen: dict[str, str] = {}
    for path in paths:
        with contextlib.suppress(OSError):  # a large file takes seconds: say so, not silence
            if max_bytes >= (size := os.path.getsize(path)) > SAY_LOADING_BYTES:
                print(
                    f"scheduler-emulator: loading {size / 1e6:.1f} MB of jobs from {path}; "
                    "the startup line follows once they are stored and scheduled (about 15 s "
                    "for 50,000 jobs)…",
                    file=sys.stderr,
                )
        loaded = load_jobs_file(
            path, project=project, location=location, max_bytes=max_bytes, max_jobs=max_jobs
        )
        if not loaded:
            print(f"warning: {path} holds no jobs; nothing was loaded from it.", file=sys.stderr)
        per_file.append((path, list(loaded)))
        for job in loaded:
            if job.name in seen:
                raise ConfigurationError(
                    f"{path}: job {job.job_id!r} is defined in {seen[job.name]} too; "
                    "job names must be unique across --jobs files."
                )
            seen[job.name] = path
    return per_file


#: A jobs file larger than this (about 10,000 short jobs) is announced on stderr first.
SAY_LOADING_BYTES = 1_000_000


def loaded_jobs(per_file: Sequence[tuple[str, int]], stored: int | None) -> str:
    """Say where the daemon's jobs came from, for its startup line.

    >>> loaded_jobs([("jobs.yaml", 2)], 1)
    '2 jobs loaded from jobs.yaml, 1 from the data directory'
    >>> loaded_jobs([("a.yaml", 1), ("b.yaml", 0)], None)
    '1 job loaded from a.yaml, 0 from b.yaml'
    >>> loaded_jobs([], 0), loaded_jobs([], None)
    ('no jobs in the data directory', 'no jobs')

    :param per_file: each ``--jobs`` file with its number of jobs, in order.
    :param stored: jobs found in the data directory that no file defines; ``None`` in memory.
    """
    if stored == 0 and not per_file:
        return "no jobs in the data directory"
    sources = [*per_file, *([("the data directory", stored)] if stored else [])]
    parts = [
        f"{n} job{'s' if n != 1 else ''} loaded from {path}" if index == 0 else f"{n} from {path}"
        for index, (path, n) in enumerate(sources)
    ]
    return ", ".join(parts) or "no jobs"


def log_format_for(chosen: str | None, log_file: str | None, out: IO[str]) -> str:
    """The execution log's format, ``"json"`` or ``"text"``: ``chosen`` (``--log-format``) when
    given, else ``text`` for a terminal (``out``, the daemon's stdout, with no ``log_file``) and
    ``json`` for a file or a pipe (what scripts and ``replay --attempts`` read)."""
    if chosen is not None:
        return chosen
    return "text" if log_file is None and is_terminal(out) else "json"


def log_format_note(log_format: str, log_file: str | None) -> str:
    """The startup line's second line: where the execution log goes, in which format, and the
    flag that changes it.

    >>> log_format_note("json", None)
    'execution log: JSON lines (Cloud Logging entries) on stdout; --log-format text for one readable line per attempt'
    """  # noqa: E501
    where = f"to {log_file}" if log_file else "on stdout"
    if log_format == "json":
        what, other = "JSON lines (Cloud Logging entries)", "text for one readable line per attempt"
    else:
        what, other = "one text line per attempt", "json for Cloud Logging entries"
    return f"execution log: {what} {where}; --log-format {other}"


#: The ``start`` flags that set the :class:`EmulatorOptions` and :class:`Limits` fields of
#: their names.
_OPTION_FLAGS = (
    *("project", "location", "dst_policy", "header_case", "http2", "token_issuer", "token_time"),
    *("retain_attempts", "retain_megabytes"),
)
_LIMIT_FLAGS = ("max_connections", "max_grpc_connections", "grpc_idle_timeout")


def cmd_start(args: argparse.Namespace, out: IO[str]) -> int:
    """Run the daemon (:class:`~scheduler_emulator.server.daemon.Daemon`) until SIGINT or
    SIGTERM."""
    from ..server.daemon import Daemon, pending_retries, restart_notes

    token = args.admin_token
    firebase_command.check_hub(args)  # nothing answering at --firebase's hub: exit 2 now
    if args.http2 and (reason := http2_problem()) is not None:
        raise ConfigurationError(f"--http2: HTTP/2 deliveries are not possible here: {reason}")
    per_file = load_jobs_by_file(
        args.jobs,
        project=args.project,
        location=args.location,
        max_bytes=args.max_jobs_file_bytes,
        max_jobs=args.max_jobs_per_file,
    )
    jobs = [job for _, file_jobs in per_file for job in file_jobs]
    log_format = log_format_for(args.log_format, args.log_file, out)
    data_dir = None if args.in_memory else args.data_dir or default_data_dir()
    cloud_run_jobs = load_cloud_run_jobs(
        args.cloud_run_jobs, project=args.project, location=args.location
    )
    try:
        log_stream: IO[str] = open(args.log_file, "a") if args.log_file else out  # noqa: SIM115
    except OSError as exc:
        raise ConfigurationError(f"--log-file {args.log_file}: {exc.strerror}.") from None

    def close_log() -> None:  # a full disk reports the lost lines, not an error exit
        try:
            log_stream.close()
        except OSError as exc:
            print(f"note: --log-file {args.log_file}: lines not written: {exc}", file=sys.stderr)

    closing = [close_log] if log_stream is not out else []
    faults = load_fault_file(args.faults) if args.faults else None
    for note in faults.shadowed() if faults else []:
        print(f"warning: {args.faults}: {note}", file=sys.stderr)
    if args.start is not None:
        if args.clock != "manual":
            raise ConfigurationError("--start needs --clock manual.")
        from ..server.admin import check_clock_instant

        check_clock_instant(args.start, "--start")
    # may start the Pub/Sub emulator; warns on stderr, as start's other warnings (trial 125)
    targets = targets_setup.configure(args, jobs, sys.stderr)
    daemon = Daemon(
        EmulatorOptions(
            **{name: getattr(args, name) for name in _OPTION_FLAGS},
            data_dir=data_dir,
            cloud_run_jobs=cloud_run_jobs,
            app_engine_urls=targets.app_engine_urls,
        ),
        host=args.host,
        port=args.port,
        clock=args.clock,
        start=args.start,
        admin_token=token,
        allowed_hosts=args.allowed_host,
        limits=Limits(**{name: getattr(args, name) for name in _LIMIT_FLAGS}),
        log=log_stream,
        log_format=log_format,
        faults=faults,
        publisher=targets.publisher,
        closing=[targets.close, *closing],
    )
    emulator = daemon.emulator
    file_names = {job.name for job in jobs}
    before = {job.name: job for job in emulator.list_jobs()}
    stored = None if args.in_memory else sum(name not in file_names for name in before)
    if args.jobs:  # (without --jobs there are no files to compare the data directory with)
        kept = firebase_command.unbridged(args, list(before.values()))  # (the bridge's: its own)
        _note_file_changes({job.name: job for job in kept}, jobs, daemon.port)
    with emulator.store.batch():  # one transaction: the engine thread is not started yet
        for job in jobs:
            emulator.upsert_job(job)
    if not is_loopback(args.host):
        print(
            f"warning: listening on {args.host}, which is not a loopback address: other "
            "machines can reach the emulator, create jobs that send requests from this machine "
            "and read every attempt."
            + (
                " --admin-token protects /_emulator/, not the v1 API."
                if token
                else " Set --admin-token to protect /_emulator/ (not the v1 API)."
            ),
            file=sys.stderr,
        )
    every_job = emulator.list_jobs()
    own_jobs = firebase_command.unbridged(args, every_job)  # (not those the bridge sends)
    targets.add_topics([job for job in own_jobs if job.name not in file_names], sys.stderr)
    for note in faults.unmatched(job.job_id for job in every_job) if faults else []:
        print(f"warning: {args.faults}: {note}", file=sys.stderr)
    if isinstance(targets.publisher, NoPublisher):
        try:  # (found, not imported: that is slow)
            missing = importlib.util.find_spec("google.pubsub_v1") is None
        except ModuleNotFoundError:  # no google package at all (trial 57: a traceback)
            missing = True
        _warn_jobs(
            [job for job in own_jobs if job.target_type == "PUBSUB"],
            "Pub/Sub job(s) ({}) have nowhere to publish: their attempts fail FAILED_PRECONDITION "
            "until the daemon is started with --pubsub-emulator-host HOST:PORT or --with-pubsub "
            + ("(either needs pip install 'cloud-scheduler-emulator[pubsub]'; " if missing else "(")
            + "docs/pubsub.md).",
        )
    run_jobs = [job.job_id for job in emulator.cloud_run.jobs()]
    _warn_jobs(
        [job for _, job, _ in undefined_runs(every_job, run_jobs)],
        "job(s) ({}) run a Cloud Run job no --cloud-run-jobs file defines: their attempts fail "
        f"NOT_FOUND until one does (defined: {', '.join(run_jobs) or 'none'}).",
    )
    refused = unauthenticated_runs(every_job)
    _warn_jobs(  # (trial 108: found only at the first run)
        refused,
        "job(s) ({}) call the Cloud Run Admin API without an oauthToken: their attempts fail "
        "401 UNAUTHENTICATED, as in production (docs/cloud-run-jobs.md).",
    )
    urls = targets.app_engine_urls
    served = [(j, t) for j in every_job if (t := j.app_engine_http_target)]
    unmapped = [(j, t) for j, t in served if not app_engine_url(t, urls)]
    unserved = sorted({t.service for _, t in unmapped})
    near = [  # a mapping no job's service takes, close to one unmapped (trial 215: "wroker")
        f" --app-engine-url {given}=… names no job's service: did you mean {meant[0]}?"
        for given in sorted(set(urls) - {t.service for _, t in served} - {"*"})
        if (meant := difflib.get_close_matches(given, unserved, 1))
    ]
    _warn_jobs(
        [j for j, _ in unmapped],
        f"App Engine job(s) ({{}}) have no local URL for their service ({', '.join(unserved)}): "
        "their attempts fail FAILED_PRECONDITION until the daemon is started with "
        "--app-engine-url SERVICE=URL, or --app-engine-url URL for every service." + "".join(near),
    )
    off = abs(emulator.now().timestamp() - real_time())
    if args.clock == "manual" and args.token_time == "emulator" and off > 3600:  # (trial 73)
        far = f"{off / 3600:.0f} hours" if off < 172800 else f"{off / 86400:.0f} days"
        _warn_jobs(  # (trial 192: not a job the Admin API refuses whatever its token's time)
            [
                j
                for j in own_jobs
                if j.http_target and j.http_target.oidc_token and j not in refused
            ],
            f"job(s) ({{}}) send OIDC tokens stamped with the manual clock's time, {far} from "
            "real time: a service that checks their iat and exp on its own clock refuses them; "
            "--token-time real stamps them with real time (docs/authentication.md).",
        )
    clock_note = f"{args.clock} clock"
    if args.clock == "manual":
        clock_note += f" at {format_timestamp(emulator.now())}"
        clock_note += f" (resumed {daemon.resumed})" if daemon.resumed else ""
        clock_note += ", OIDC tokens on real time" if args.token_time == "real" else ""
    if args.dst_policy != DEFAULT_DST_POLICY:  # (trial 85: two daemons fired different runs)
        clock_note += f", DST policy {args.dst_policy}"
    lines = (
        f"scheduler-emulator listening on {daemon.url} "
        f"({loaded_jobs([(p, len(js)) for p, js in per_file], stored)}, {clock_note}, "
        + ("in memory" if data_dir is None else f"data dir {data_dir}")
        + pending_retries(emulator)
        + restart_notes(emulator)
        + (f", {len(faults.rules)} fault rule(s) from {args.faults}" if faults else "")
        + (f", Cloud Run jobs {', '.join(run_jobs)} run locally" if run_jobs else "")
        + (f", {targets.description}" if targets.description else "")
        + grpc_note(getattr(daemon.server, "connection_router", None))
        + sender_note(emulator.transport, len(jobs) + (stored or 0))
        + ")",
        log_format_note(log_format, args.log_file),
    )
    as_json = log_format == "json" and log_stream is out  # (trial 166: `| jq` stopped at them)
    for line in lines:
        entry = {"severity": "NOTICE", "textPayload": line}
        out.write((json.dumps(entry, ensure_ascii=False) if as_json else line) + "\n")
    out.flush()
    bridge = firebase_command.bridge_from_args(args, emulator, sys.stderr)  # (not the log's)
    daemon.run([bridge] if bridge is not None else [])
    return 0 if daemon.failure is None else 1


def _note_file_changes(before: Mapping[str, Job], jobs: Sequence[Job], port: int) -> None:
    """Say on stderr which jobs of the ``--jobs`` files the data directory's jobs (``before``,
    by name) did not hold, or held configured otherwise: the files win, silently otherwise (a
    trial's jobs deleted and changed over the API came back as the files had them); and which
    of its jobs no file holds: they are kept (a trial's job deleted from the file was)."""
    if not before:
        return
    named = {job.name for job in jobs}
    new = [job for job in jobs if job.name not in before]
    changed = [j for j in jobs if j.name in before and not same_configuration(j, before[j.name])]
    kept = [job for name, job in before.items() if name not in named]
    names = [job.name for js in (new, changed, kept) for job in js]  # (trial 209: the same IDs
    labels = dict(zip(names, job_labels(names), strict=True))  # in two projects)
    only = kept[0] if len(kept) == 1 else None
    what = "ID" if only is None else only.job_id if labels[only.name] == only.job_id else only.name
    drop = f"`scheduler-emulator delete {what} --port {port}`"
    said = (  # (how many, which, and what becomes of them: one, several)
        (new, "of their jobs not in it (new in the files, or deleted over the API",
         "is created", "are created"),
        (changed, "configured otherwise there (changed in the files, or over the API",
         "takes the files' configuration", "take the files' configuration"),
        (kept, "of its jobs in no file (deleted from the files, or created over the API",
         f"is kept: {drop} drops it", f"are kept: {drop} drops one"),
    )  # fmt: skip
    parts = [
        f"{len(js)} {which}{_ids(js, labels)}) {one if len(js) == 1 else more}"
        for js, which, one, more in said
        if js
    ]
    if parts:
        print(
            "note: each job in the --jobs files replaces the data directory's of its name: "
            f"{'; '.join(parts)}. Start without --jobs to keep the data directory's jobs as they "
            "are.",
            file=sys.stderr,
        )


def _ids(jobs: Sequence[Job], labels: Mapping[str, str] | None = None) -> str:
    """``": a, b, c, …"``: up to three job IDs (or their ``labels`` by full name), ``""`` for
    none."""
    more = ", …" if len(jobs) > 3 else ""
    shown = (labels[job.name] if labels else job.job_id for job in jobs[:3])
    return f": {', '.join(shown)}{more}" if jobs else ""


def _warn_jobs(jobs: Sequence[Job], what: str) -> None:
    """Warn on stderr about ``jobs`` (if any; ones that cannot be delivered, or whose target
    may refuse them): ``what`` with their count first and up to three IDs in its ``{}``."""
    if jobs:
        print(f"warning: {len(jobs)} {what.format(_ids(jobs)[2:])}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``scheduler-emulator``; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    for i, arg in enumerate(argv[:-1]):  # --advance -5m, not a flag -5m (trial 75): refused
        if arg == "--advance" and re.fullmatch(r"-[\d.].*", argv[i + 1]):  # as a duration
            argv[i : i + 2] = [f"--advance={argv[i + 1]}"]
            break
    parser = build_parser()
    commands_ = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if argv[:1] == ["firebase"]:  # parsed as start: refused in firebase's words
        parser.spoken = commands_.choices["start"].spoken = firebase_command.SPOKEN  # type: ignore[attr-defined]
    args, extra = parser.parse_known_args(firebase_command.start_argv(argv))
    if extra:  # refused under its command's name, so that the pointer leads to its help
        parser.prog = f"{parser.prog} {args.command}"
        flags = [*commands_.choices[args.command]._option_string_actions]  # (trial 72: --prot)
        flags += [flag for flag in getattr(parser, "spoken", {}).values() if flag[:2] == "--"]
        name, _, value = extra[0].partition("=")
        near = difflib.get_close_matches(name, flags, 1, 0.8)
        value = (value or "".join(extra[1:2])).lower().replace("_", "-")
        if name == "--state" and f"--{value}" in flags:  # REST's ?state=failed (trial 219)
            near = [f"--{value}"]
        said = f"; did you mean {near[0]}?" if near and extra[0].startswith("--") else ""
        if args.command == "replay" and name == "--faults":  # (trial 222)
            said = "; a scenario's fault rules go under its faults: key (a list, or a file's path)"
        if args.command == "next" and not extra[0].startswith("-"):  # (trial 226: its * were
            said = "; quote the schedule, as in next '0 2 * * *' (the shell splits it at its "
            said += "spaces, and turns each * into the folder's file names)"  # the file names)
        parser.error(f"unrecognized arguments: {' '.join(extra)}{said}")
    commands = {
        "next": cmd_next,
        "start": cmd_start,
        "env-init": cmd_env_init,
        "replay": replay.run_command,
        **views.COMMANDS,
    }
    try:
        if "admin_token" in vars(args):  # (the daemon's and the views' alike: trial 211)
            args.admin_token = admin_token(args.admin_token)
        if (problem := getattr(args, "address_problem", None)) and None in (args.host, args.port):
            raise ConfigurationError(problem)
        if args.command == "demo":
            from .demo import run_demo

            return run_demo(days=args.days, speed=args.speed, out=sys.stdout, port=args.port)
        if args.command == "init":
            from .scaffold import run_init

            return run_init(
                args.directory, force=args.force, out=sys.stdout, framework=args.framework
            )
        return commands[args.command](args, sys.stdout)
    except KeyboardInterrupt:  # Ctrl-C where a command has no handler of its own (demo)
        print("scheduler-emulator: interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Whoever read stdout (``| head``) went away: stop quietly, as a tool killed by
        # SIGPIPE, with stdout on /dev/null so that the interpreter's final flush does not fail.
        with contextlib.suppress(OSError, ValueError):  # ValueError: stdout is not a real file
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except (EmulatorError, OSError) as exc:
        # One line without an API error's status (its field violations when they add anything),
        # printable whatever the input held (a lone surrogate is shown escaped).
        text = str(exc).removeprefix(f"{exc.status}: ") if isinstance(exc, ApiError) else str(exc)
        print(f"error: {text}".encode("utf-8", "backslashreplace").decode("utf-8"), file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
