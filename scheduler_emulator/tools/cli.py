"""The ``scheduler-emulator`` command line.

Subcommands:

- ``start`` — run the daemon (the engine plus its HTTP server).
- ``next SCHEDULE`` — print a schedule's next fire times (exit 2 on an invalid schedule).
- ``env-init`` — print the ``export`` lines that point gcloud and clients at the daemon.
- ``demo`` — run the example Orders service and the emulator on an accelerated manual clock.
- ``init [DIR]`` — write a small timer service with its tests and jobs (refuses to overwrite).
- ``replay SCENARIO`` / ``replay --attempts FILE --target URL`` — run a failure scenario on a
  manual clock, or re-send a recorded timeline (our attempt log or a Cloud Logging export).

Every error a user can cause prints ``error: <message>`` to stderr and exits with 2.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import IO

from .. import __version__
from ..domain.codec import parse_timestamp
from ..domain.errors import ApiError, ConfigurationError, EmulatorError
from ..domain.names import check_project_id
from ..domain.resources import Job
from ..runtime.attempt_log import AttemptLog
from ..runtime.clock import Clock, ManualClock, SystemClock
from ..runtime.data_dir_lock import DataDirLock
from ..runtime.emulator import DEFAULT_LOCATION, DEFAULT_PROJECT, Emulator
from ..runtime.store import Store
from ..runtime.tokens import GOOGLE_ISSUER, KEY_FILE_NAME, TOKEN_TIMES, TokenAuthority
from .fault_file import load_fault_file
from .jobs_file import load_jobs_file

#: Default port: not one of gcloud's emulators (8085, 8080, 8081, 8086, 9010, 9020).
DEFAULT_PORT = 8095
DEFAULT_HOST = "127.0.0.1"
DST_CHOICES = ["absolute", "vixie"]
DST_HELP = (
    "daylight-saving rule: 'absolute' fires a repeated local time twice and a skipped one "
    "never; 'vixie' fires fixed-time jobs once (%(default)s)"
)


#: Seconds a stopping daemon waits for attempts in flight before recording them as interrupted.
STOP_GRACE_SECONDS = 2.0


def default_data_dir(project_dir: Path | None = None) -> Path:
    """The data directory of the project in ``project_dir`` (default: the current directory).

    ``$XDG_DATA_HOME/scheduler-emulator/<dir name>-<10 hex digits of the SHA-256 of its
    absolute path>`` (``$XDG_DATA_HOME`` defaults to ``~/.local/share``), so two projects never
    share jobs, and the same project finds its jobs again whatever the shell's state.

    :param project_dir: the project's directory.
    :return: an absolute path (not created).
    """
    directory = (project_dir or Path.cwd()).resolve()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    digest = hashlib.sha256(str(directory).encode()).hexdigest()[:10]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", directory.name) or "root"
    return Path(base) / "scheduler-emulator" / f"{name}-{digest}"


def _timestamp(text: str) -> datetime:
    try:
        return parse_timestamp(text)
    except ApiError as exc:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 timestamp: {text!r}") from exc


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser for every subcommand."""
    parser = argparse.ArgumentParser(
        prog="scheduler-emulator",
        description="A local Google Cloud Scheduler with real schedules, headers and retries.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    start = sub.add_parser(
        "start",
        help="run the emulator daemon",
        description="Run the emulator: fire each job on its schedule, serve /_emulator/ "
        "endpoints, keep jobs and attempts in a data directory.",
    )
    start.add_argument("--host", default=DEFAULT_HOST, help="address to listen on (%(default)s)")
    start.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (%(default)s)")
    start.add_argument(
        "--jobs",
        action="append",
        default=[],
        metavar="FILE",
        help="jobs file (YAML or JSON list of Job resources); repeatable",
    )
    start.add_argument("--project", default=DEFAULT_PROJECT, help="default project (%(default)s)")
    start.add_argument(
        "--location", default=DEFAULT_LOCATION, help="default location (%(default)s)"
    )
    storage = start.add_mutually_exclusive_group()
    storage.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="where jobs and attempts are kept; one daemon per directory (default: one per "
        "project directory, under $XDG_DATA_HOME/scheduler-emulator/, here "
        f"{default_data_dir()})",
    )
    storage.add_argument("--in-memory", action="store_true", help="keep nothing on disk")
    start.add_argument(
        "--clock",
        choices=["system", "manual"],
        default="system",
        help="real time, or a virtual clock moved by POST /_emulator/clock:advance (%(default)s)",
    )
    start.add_argument(
        "--start", type=_timestamp, metavar="RFC3339", help="manual clock's start instant"
    )
    start.add_argument(
        "--faults", metavar="FILE", help="fault plan (YAML or JSON) to inject into deliveries"
    )
    start.add_argument(
        "--log-file", metavar="F", help="execution log, JSON lines (default: stdout)"
    )
    start.add_argument("--dst-policy", choices=DST_CHOICES, default="absolute", help=DST_HELP)
    start.add_argument(
        "--token-issuer",
        default=GOOGLE_ISSUER,
        metavar="URL",
        help="'iss' of the OIDC tokens jobs send (%(default)s)",
    )
    start.add_argument(
        "--token-time",
        choices=TOKEN_TIMES,
        default="emulator",
        help="stamp tokens with the emulator's clock, or with real time so that a target "
        "verifying against its own clock accepts them on a manual clock far from now "
        "(%(default)s)",
    )

    nxt = sub.add_parser("next", help="print a schedule's next fire times")
    nxt.add_argument("schedule", help='unix-cron or English-like schedule, e.g. "0 2 * * *"')
    nxt.add_argument("--time-zone", default="Etc/UTC", help="IANA time zone (%(default)s)")
    nxt.add_argument("--after", type=_timestamp, metavar="RFC3339", help="default: now")
    nxt.add_argument("-n", type=int, default=5, help="how many fire times (%(default)s)")
    nxt.add_argument("--dst-policy", choices=DST_CHOICES, default="absolute", help=DST_HELP)

    env = sub.add_parser(
        "env-init",
        help="print the export lines that point gcloud and clients at the emulator",
        description="Print shell export lines, like `gcloud beta emulators pubsub env-init`. "
        'Use: eval "$(scheduler-emulator env-init)"',
    )
    env.add_argument("--host", default=DEFAULT_HOST, help="the daemon's address (%(default)s)")
    env.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="the daemon's port (%(default)s)"
    )
    env.add_argument("--project", default=DEFAULT_PROJECT, help="gcloud's project (%(default)s)")

    demo = sub.add_parser("demo", help="the example service and emulator on a fast clock")
    demo.add_argument("--days", type=int, default=3, help="simulated days (%(default)s)")
    demo.add_argument(
        "--speed", type=float, default=0.05, help="real seconds per simulated hour (%(default)s)"
    )

    init = sub.add_parser(
        "init",
        help="write a small timer service with its tests and jobs",
        description="Write app.py (a Flask service with timers), test_app.py, jobs.yaml, "
        "requirements.txt and README.md into DIR. Existing files are never overwritten "
        "without --force.",
    )
    init.add_argument(
        "directory", nargs="?", default=".", metavar="DIR", help="where to write (%(default)s)"
    )
    init.add_argument("--force", action="store_true", help="overwrite existing project files")
    replay = sub.add_parser(
        "replay",
        help="run a scenario file, or re-send recorded attempts to a target",
        description="Run SCENARIO (jobs, steps, faults, target, expectations) on a virtual "
        "clock and print its attempt timeline and expectations (exit 1 when one is unmet); or, "
        "with --attempts FILE --target URL, re-send recorded attempts with their spacing. "
        "See docs/faults-and-replay.md.",
    )
    from .replay import add_arguments as add_replay_arguments

    add_replay_arguments(replay)
    return parser


def cmd_next(args: argparse.Namespace, out: IO[str]) -> int:
    """Print the next ``-n`` fire times of a schedule, one RFC 3339 line each (P2)."""
    from ..domain.schedule import format_schedule_time, parse_schedule

    if args.n < 1:
        raise ConfigurationError(f"-n must be at least 1; got {args.n}.")
    schedule = parse_schedule(args.schedule, args.time_zone, dst_policy=args.dst_policy)
    after = args.after or SystemClock().now()
    count = 0
    for count, instant in enumerate(schedule.iter_after(after), start=1):  # noqa: B007
        out.write(format_schedule_time(instant) + "\n")
        if count >= args.n:
            break
    if count < args.n:
        print(
            f"note: {args.schedule!r} has no further fire time within 10 years "
            f"(printed {count} of {args.n}).",
            file=sys.stderr,
        )
    return 0


def env_lines(host: str, port: int, project: str) -> list[str]:
    """The ``export`` lines that point gcloud (§16.1) and our plugin at the daemon.

    The API endpoint override ends with ``/``, which gcloud requires.
    """
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    values = {
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDSCHEDULER": f"http://{address}/",
        "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true",
        "CLOUDSDK_CORE_PROJECT": project,
        "CLOUD_SCHEDULER_EMULATOR_HOST": address,
    }
    return [f"export {key}={shlex.quote(value)}" for key, value in values.items()]


def cmd_env_init(args: argparse.Namespace, out: IO[str]) -> int:
    """Print :func:`env_lines` for the given daemon address and project."""
    check_project_id(args.project, field="--project")
    for line in env_lines(args.host, args.port, args.project):
        out.write(line + "\n")
    return 0


def _make_clock(args: argparse.Namespace) -> Clock:
    if args.clock == "manual":
        return ManualClock(args.start or SystemClock().now().replace(second=0, microsecond=0))
    if args.start is not None:
        raise ConfigurationError("--start needs --clock manual.")
    return SystemClock()


def load_jobs_files(paths: Sequence[str], *, project: str, location: str) -> list[Job]:
    """Load every jobs file; a job name defined in two files is an error.

    :raises ConfigurationError: naming the file, job, field and value of the first problem, or
        both files of a duplicated name.
    """
    jobs: list[Job] = []
    seen: dict[str, str] = {}
    for path in paths:
        for job in load_jobs_file(path, project=project, location=location):
            if job.name in seen:
                raise ConfigurationError(
                    f"{path}: job {job.job_id!r} is defined in {seen[job.name]} too; "
                    "job names must be unique across --jobs files."
                )
            seen[job.name] = path
            jobs.append(job)
    return jobs


def check_port_free(host: str, port: int) -> None:
    """Fail early, with a clear message, if ``host:port`` cannot be bound.

    :raises ConfigurationError: naming the address and the reason.
    """
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigurationError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}. Is another "
                "scheduler-emulator running? Stop it or pick another --port."
            ) from exc


def cmd_start(args: argparse.Namespace, out: IO[str]) -> int:
    """Run the daemon until SIGINT or SIGTERM."""
    from ..server.server import serve

    jobs = load_jobs_files(args.jobs, project=args.project, location=args.location)
    lock: DataDirLock | None = None
    if not args.in_memory:  # first: a second daemon on this directory names the first one
        lock = DataDirLock(args.data_dir or default_data_dir())
        lock.acquire()
    check_port_free(args.host, args.port)
    key_path: Path | None = None
    if args.in_memory:
        store = Store(":memory:")
        where = "in memory"
    else:
        data_dir = args.data_dir or default_data_dir()
        store = Store(Path(data_dir) / "emulator.db")
        key_path = Path(data_dir) / KEY_FILE_NAME
        where = f"data dir {data_dir}"
    log_stream: IO[str] = open(args.log_file, "a") if args.log_file else out  # noqa: SIM115
    faults = load_fault_file(args.faults) if args.faults else None
    clock = _make_clock(args)
    tokens = TokenAuthority(
        clock, key_path=key_path, issuer=args.token_issuer, token_time=args.token_time
    )
    if key_path is not None:
        tokens.key  # noqa: B018 - load or create the key now: a bad key file stops the start
    emulator = Emulator(
        clock,
        tokens=tokens,
        store=store,
        faults=faults,
        project=args.project,
        location=args.location,
        attempt_log=AttemptLog(log_stream),
        dst_policy=args.dst_policy,
    )
    for job in jobs:
        emulator.upsert_job(job)
    try:
        server = serve(emulator, args.host, args.port)
    except OSError as exc:
        emulator.close()
        raise ConfigurationError(f"cannot listen on {args.host}:{args.port}: {exc}") from exc

    if lock is not None:
        lock.note_port(server.server_port)
    stopping = threading.Event()
    stopped: list[int] = []

    def _stop_engine() -> None:
        in_flight = emulator.engine.in_flight
        print(
            f"scheduler-emulator stopping: {in_flight} attempt(s) in flight; waiting up to "
            f"{STOP_GRACE_SECONDS:g} s (Ctrl-C again to exit now).",
            file=sys.stderr,
            flush=True,
        )
        stopped.append(emulator.engine.stop(STOP_GRACE_SECONDS))

    def _stop(signum: int, frame: object) -> None:
        if stopping.is_set():  # the second Ctrl-C: leave now; the store is crash-safe
            print("scheduler-emulator: exiting now.", file=sys.stderr, flush=True)
            os._exit(128 + signum)
        stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()  # no new requests
        stopper.start()  # no new attempts

    stopper = threading.Thread(target=_stop_engine, name="stop", daemon=True)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    count = len(emulator.list_jobs())
    out.write(
        f"scheduler-emulator listening on http://{args.host}:{server.server_port} "
        f"({count} job{'s' if count != 1 else ''} loaded, {args.clock} clock, {where}"
        + (f", {len(faults.rules)} fault rule(s) from {args.faults}" if faults else "")
        + ")\n"
    )
    out.flush()
    emulator.start()
    try:
        server.serve_forever()
    finally:
        server.server_close()
        if stopper.is_alive():
            stopper.join()
        emulator.close()
        if lock is not None:
            lock.release()
        if log_stream is not out:
            log_stream.close()
    if stopped and stopped[0]:
        retried = "at the next start" if not args.in_memory else "never (--in-memory)"
        print(
            f"scheduler-emulator: {stopped[0]} attempt(s) recorded as interrupted; their runs "
            f"are retried per their retry config {retried}.",
            file=sys.stderr,
        )
    kept = (
        "nothing was kept (--in-memory)" if args.in_memory else f"jobs and attempts are in {where}"
    )
    print(f"scheduler-emulator stopped; {kept}.", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``scheduler-emulator``; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "next":
            return cmd_next(args, sys.stdout)
        if args.command == "start":
            return cmd_start(args, sys.stdout)
        if args.command == "env-init":
            return cmd_env_init(args, sys.stdout)
        if args.command == "demo":
            from .demo import run_demo

            return run_demo(days=args.days, speed=args.speed, out=sys.stdout)
        if args.command == "init":
            from .scaffold import run_init

            return run_init(args.directory, force=args.force, out=sys.stdout)
        if args.command == "replay":
            from .replay import run_command

            return run_command(args, sys.stdout)
    except (EmulatorError, OSError) as exc:
        message = exc.message if isinstance(exc, ApiError) else str(exc)
        detail = ""
        if isinstance(exc, ApiError) and exc.violations:
            detail = " (" + "; ".join(v.description for v in exc.violations) + ")"
        print(f"error: {message}{detail}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
