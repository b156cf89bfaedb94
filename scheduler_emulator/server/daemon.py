"""The daemon as a library: an :class:`~scheduler_emulator.Emulator` served on one port until
a signal, with its data-directory lock, its clock, its execution log and its stop report.

``scheduler-emulator start`` parses its flags and runs a :class:`Daemon`; a test or a script
runs one the same way::

    daemon = Daemon(EmulatorOptions(data_dir=None), port=0)
    threading.Thread(target=daemon.run, daemon=True).start()
    ...                                  # the API at daemon.url
    daemon.shutdown()                    # what SIGTERM does

Only here and in :mod:`~scheduler_emulator.runtime.pipeline.drivers` is the kind of clock chosen:
``clock="manual"`` builds a :class:`~scheduler_emulator.ManualClock` that keeps its instant in
the data directory, so a restart resumes where it stopped.
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

from ..core.faults import FaultPlan
from ..core.scheduler import MAX_DOWNTIME_SKIPS
from ..domain.attempts import iso
from ..domain.errors import ConfigurationError
from ..realtime import real_monotonic
from ..runtime import (
    DAEMON_FLUSH_INTERVAL,
    AttemptLog,
    ClockFile,
    DataDirLock,
    Emulator,
    EmulatorOptions,
    ManualClock,
    Publisher,
    SystemClock,
    startup_error,
    stopped_at,
)
from ..wire import host_port
from .connections import Limits
from .server import SERVE_POLL_SECONDS, serve

#: Seconds a stop waits for attempts in flight before recording them as interrupted.
STOP_GRACE_SECONDS = 2.0
#: A stop signal this soon after the first is the same request, not "exit now" (``timeout``
#: and ``kill -- -PGID`` signal the daemon twice: trial 166's exited 143, nothing recorded).
SAME_SIGNAL_SECONDS = 1.0


class Companion(Protocol):
    """Something that runs beside the daemon (the Firebase bridge): started once the engine
    runs, closed when the daemon stops."""

    def start(self) -> object:
        """Begin (returns at once; what it returns is ignored)."""

    def close(self) -> None:
        """Stop and release what it holds."""


class Daemon:
    """An emulator, its server and what surrounds them, built in order and torn down in reverse.

    Construction takes the data directory's lock first (a second daemon on the same directory
    names the first), raises the open-file limit for sockets of slow targets, builds the clock
    (``"manual"`` resumes at the instant kept in the data directory unless ``start`` is given)
    and the execution log, opens the store, and binds the port. :meth:`run` serves until
    :meth:`shutdown` (SIGTERM and SIGINT call it when run in the main thread) and then prints
    the stop report.

    :param options: the emulator's settings (``data_dir=None``: nothing kept).
    :param host: address to bind.
    :param port: TCP port; 0 picks a free one (:attr:`port`).
    :param clock: ``"system"`` or ``"manual"``.
    :param start: a manual clock's first instant (aware), else where it stopped last time on
        the data dir (its manual clock's instant, else the last due instant a system clock
        reached there: nothing fires on start), else the current minute.
    :param admin_token: the token ``/_emulator/`` requires, or ``None``.
    :param allowed_hosts: host names a request's ``Host`` or ``Origin`` may name besides the
        loopback and bound addresses (``--allowed-host``: a container's service name).
    :param limits: the server's connection bounds (HTTP/1.1 and gRPC connections, gRPC idle
        time); ``None``: the defaults.
    :param log: where the execution log goes (``None``: no log).
    :param log_format: ``"json"`` or ``"text"``.
    :param faults: the fault plan.
    :param publisher: where Pub/Sub jobs publish (default: in process).
    :param closing: called when the daemon is torn down (or fails to build), after the emulator
        is closed (e.g. stopping a Pub/Sub emulator it started).
    :param err: where the stop report goes.
    :raises ConfigurationError: the data directory is locked by another daemon, ``start``
        without a manual clock, the port cannot be bound, or the store cannot be opened.
    """

    def __init__(
        self,
        options: EmulatorOptions,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: str = "system",
        start: datetime | None = None,
        admin_token: str | None = None,
        allowed_hosts: Sequence[str] = (),
        limits: Limits | None = None,
        log: IO[str] | None = None,
        log_format: str = "json",
        faults: FaultPlan | None = None,
        publisher: Publisher | None = None,
        closing: Sequence[Callable[[], None]] = (),
        err: IO[str] | None = None,
    ) -> None:
        if clock not in ("system", "manual"):
            raise ConfigurationError(f"clock must be 'system' or 'manual', not {clock!r}.")
        if start is not None and clock != "manual":
            raise ConfigurationError("--start needs --clock manual.")
        self.options = options
        self.host = host
        self.err = err
        self._closing = list(closing)
        self.lock: DataDirLock | None = None
        self.attempt_log: AttemptLog | None = None
        self._stopping = threading.Event()
        self._signalled_at = -SAME_SIGNAL_SECONDS  # (real monotonic seconds)
        self._interrupted = 0
        #: Why the daemon stopped by itself (:attr:`Emulator.engine_failure`), or ``None``.
        self.failure: str | None = None
        self._stopper = threading.Thread(target=self._stop_engine, name="stop", daemon=True)
        try:
            if options.data_dir is not None:
                self.lock = DataDirLock(options.data_dir)
                self.lock.acquire()
            check_port_free(host, port)
            _open_file_room()
            kept = ClockFile(options.clock_path) if options.clock_path is not None else None
            resumed, self.resumed = start, ""  # where a manual clock resumed, for the startup line
            if clock == "manual" and kept is not None:
                # the later of the kept instant (kept at most once a second during a move)
                # and the last instant the store recorded running (a due instant, a system
                # clock's stop); a --start before it is passed over: time never goes back on a
                # data dir, so nothing runs twice
                stored, at = stopped_at(Path(options.store_path())), kept.read()
                last, where = (
                    (at, "where it stopped")
                    if at is not None and (stored is None or stored <= at)
                    else (stored, "where it last ran here")
                )
                if last is not None and (start is None or start < last):
                    resumed, self.resumed = last, where
                    if start is not None:
                        self.resumed += f", not at --start {iso(start)}: its runs would run twice"
            made = _make_clock(clock, resumed, kept)
            if log is not None:
                # On a manual clock each line is written at once (a caller reads the log after
                # advancing); on a system clock a writer thread writes a busy minute's lines in
                # a few batches.
                self.attempt_log = AttemptLog(
                    log,
                    format=log_format,
                    flush_interval=None if clock == "manual" else DAEMON_FLUSH_INTERVAL,
                    held=True,  # until run(): the startup line comes first
                )
            try:
                self.emulator = Emulator(
                    made,
                    options=options,
                    faults=faults,
                    attempt_log=self.attempt_log,
                    publisher=publisher,
                )
            except sqlite3.Error as exc:  # what the store's own checks did not name
                raise startup_error(str(options.store_path()), exc) from exc
            if options.key_path is not None:
                self.emulator.tokens.key  # noqa: B018 - load or create the key: a bad one stops
            try:
                self.server = serve(
                    self.emulator,
                    host,
                    port,
                    admin_token=admin_token,
                    allowed_hosts=allowed_hosts,
                    limits=limits,
                )
            except OSError as exc:
                self.emulator.close()
                raise ConfigurationError(cannot_listen(host, port, exc)) from exc
        except BaseException:
            new_dir = self.lock.made if self.lock is not None else None
            self._tear_down()
            if new_dir is not None:  # a failed start leaves no directory behind (trial 74)
                shutil.rmtree(new_dir, ignore_errors=True)
            raise
        if self.lock is not None:
            self.lock.note_port(self.server.server_port)
        # From here the port is open: a SIGTERM or SIGINT before run() still stops it cleanly.
        # So does a SIGHUP (a closed terminal, trial 86: it killed the daemon on the spot),
        # unless it is ignored (nohup).
        self._asked = False  # a signal asked it to stop: the serving loop's watch stops it
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._signalled)
            signal.signal(signal.SIGINT, self._signalled)
            hangup = getattr(signal, "SIGHUP", None)  # (none on Windows)
            if hangup is not None and signal.getsignal(hangup) is signal.SIG_DFL:
                signal.signal(hangup, self._signalled)

    @property
    def port(self) -> int:
        """The port the daemon listens on."""
        return int(self.server.server_port)

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` of the API (a host with ``:`` in brackets)."""
        return f"http://{host_port(self.host, self.port)}"

    def run(self, companions: Sequence[Companion] = ()) -> int:
        """Start the engine and ``companions``, serve until :meth:`shutdown`, tear everything
        down and print the stop report (to ``err``).

        In the main thread SIGTERM, SIGINT and SIGHUP (unless ignored: ``nohup``), handled from
        construction on, call :meth:`shutdown`; a second one exits at once (the store is
        crash-safe).

        :return: how many attempts the stop recorded as interrupted.
        """
        _settle_garbage_collector()
        if self.attempt_log is not None:
            self.attempt_log.release()
        self.emulator.start()
        started: list[Companion] = []
        try:
            for companion in companions:
                companion.start()
                started.append(companion)
            if self._asked:  # a signal before run(): serve_forever then returns at once
                self.shutdown()
            self.server.watch = self._watch_engine
            self.server.serve_forever(SERVE_POLL_SECONDS)
        finally:
            self.server.server_close()
            for companion in reversed(started):
                companion.close()
            if self._stopper.is_alive():
                self._stopper.join()
            self.emulator.close()
            self._tear_down()
        self._report()
        return self._interrupted

    def shutdown(self) -> None:
        """Stop serving (no new requests) and stop the engine (no new attempts; those in flight
        get :data:`STOP_GRACE_SECONDS`): :meth:`run` then returns. Idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self.server.connection_router.draining()
        self._stopper.start()

    def _watch_engine(self) -> None:
        """Stop when a signal asked it to (:meth:`_signalled`), or when the engine stopped
        firing (a trial's daemon on a read-only database answered its health checks for ever
        and fired nothing)."""
        if self._asked:
            self.shutdown()
        if (failure := self.emulator.engine_failure) and not self._stopping.is_set():
            self.failure = failure
            self._say(
                f"scheduler-emulator: the engine stopped firing ({failure}); stopping. At the next "
                "start on this data directory the runs due since are fired late, or listed as "
                "skipped (EMULATOR_DOWN) when the disk refused even their minute's first write."
            )
            self.shutdown()

    def _signalled(self, signum: int, frame: object) -> None:
        """Note the request to stop, which the serving loop's watch carries out within
        :data:`SERVE_POLL_SECONDS`; a second signal (not sent with the first) exits at once.
        Nothing here takes a lock: a handler runs between two bytecodes of the code it
        interrupts, which may hold it (trial 211's daemon under ``timeout``, sent SIGTERM twice
        at once, waited for ever on its own stop event's lock)."""
        first, self._signalled_at = self._signalled_at, real_monotonic()
        asked = self._asked or self._stopping.is_set()
        if asked and self._signalled_at - first >= SAME_SIGNAL_SECONDS:
            os.write(2, b"scheduler-emulator: exiting now.\n")  # the second Ctrl-C: leave now
            os._exit(128 + signum)
        self._asked = True

    def _stop_engine(self) -> None:
        in_flight = self.emulator.in_flight
        running = len(self.emulator.cloud_run.store.list(state="RUNNING", limit=None))
        wait = ""
        if in_flight:
            wait = f"; waiting up to {STOP_GRACE_SECONDS:g} s (Ctrl-C again to exit now)"
        if running:  # their tasks get SIGTERM, then SIGKILL, and the executions are INTERRUPTED
            wait += f"; {running} Cloud Run execution(s) running are stopped (INTERRUPTED"
            wait += ", unless one ends first)"  # (trial 96: one timed out meanwhile: FAILED)
        self._say(f"scheduler-emulator stopping: {in_flight} attempt(s) in flight or queued{wait}.")
        self._interrupted = self.emulator.stop(STOP_GRACE_SECONDS)
        self.server.shutdown()  # the connections open till now close once the engine stopped

    def _tear_down(self) -> None:
        """Release what construction acquired, in reverse (idempotent)."""
        if self.attempt_log is not None:
            self.attempt_log.close()
        while self._closing:
            self._closing.pop(0)()
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def _report(self) -> None:
        in_memory = self.options.data_dir is None
        if self._interrupted:
            self._say(
                f"scheduler-emulator: {self._interrupted} attempt(s) recorded as interrupted or "
                "not sent (in flight or queued); "
                + (
                    "nothing is kept in memory, so their runs are not retried (--in-memory)."
                    if in_memory
                    else "their runs are retried at the next start (one retry beyond their "
                    "retry config, as after a crash; a run that already had that retry ends, "
                    "as its config allows)."
                )
            )
        kept = (
            "nothing was kept (--in-memory)"
            if in_memory
            else f"jobs and attempts are in data dir {self.options.data_dir}"
        )
        failure = self.emulator.store.write_failure
        if failure is not None:  # e.g. the disk filled: say that not everything could be kept
            kept += (
                f", except what could not be written ({failure}): requests it refused were "
                "answered 503"
            )
        if not in_memory:
            kept += pending_retries(self.emulator, stopping=True)
        self._say(f"scheduler-emulator stopped; {kept}.")

    def _say(self, line: str) -> None:
        print(line, file=self.err or sys.stderr, flush=True)


def pending_retries(emulator: Emulator, *, stopping: bool = False) -> str:
    """``", 2 jobs with a retry pending (the first due 2026-12-04T19:07:00Z)"``, for the startup
    and stop lines (a retry is kept across a restart), or ``""`` when none is pending; a first
    one due before the clock's instant (it came due while the daemon was down, or ``stopping``)
    is said to be overdue, and when it runs."""
    upcoming = (emulator.upcoming(job.name) for job in emulator.list_jobs())
    retries = [[t for t in (u.retry, u.forced_retry) if t] for u in upcoming]
    due = sorted(min(times) for times in retries if times)
    if not due:
        return ""
    jobs = f"{len(due)} job{'s' if len(due) != 1 else ''}"
    when = "at the next clock move" if emulator.clock_mode == "manual" else "now"
    when = "at the next start" if stopping else when  # (trial 110: "now", as it exited)
    late = f", overdue: it runs {when}" if due[0] < emulator.now() else ""
    return f", {jobs} with a retry pending (the first due {iso(due[0])}{late})"


def restart_notes(emulator: Emulator) -> str:
    """``", 1600 attempts in flight when it ended abruptly recorded as interrupted (their runs
    retried), 5 scheduled times skipped while it was down (`scheduler-emulator skipped` lists
    them), 9 finished attempts and 4 skipped-run records of the history dropped to keep within
    --retain-attempts and
    --retain-megabytes, 1 Cloud Run execution(s) running when it ended abruptly recorded as
    INTERRUPTED (…)"``,
    for the startup line after a restart: each part only when its count is not 0."""
    cut, down = emulator.interrupted_at_start, emulator.skipped_while_down
    count = sum(down.values())
    notes = ""
    if cut:
        said = "their runs retried" if cut != 1 else "its run retried"
        if ended := emulator.gave_up_at_start:  # (trial 123: it said retried for a run that ended)
            said = f"runs retried: {cut - ended}, ended: {ended} (retries spent, or job deleted)"
        notes += f", {cut} attempt{'s' if cut != 1 else ''} in flight when it ended abruptly "
        notes += f"recorded as interrupted ({said})"
    if count:
        # a job's list may be cut (trial 141: the first 100 of 360,000 read as all), not any
        most = max(down.values()) >= MAX_DOWNTIME_SKIPS  # (trial 154: 301 jobs' one each)
        notes += f", {'at least ' * most}{count} scheduled time{'s' if count != 1 else ''} "
        notes += "skipped while it was down (`scheduler-emulator skipped` lists them"
        notes += f": of each job, the first {MAX_DOWNTIME_SKIPS})" if most else ")"
    dropped, records = emulator.store.dropped_at_open  # (trial 117: dropped silently)
    if dropped or records:
        parts = [f"{dropped} finished attempt{'s' if dropped != 1 else ''}"] * bool(dropped)
        parts += [f"{records} skipped-run record{'s' if records != 1 else ''}"] * bool(records)
        notes += f", {' and '.join(parts)} of the history dropped to keep within "
        notes += "--retain-attempts and --retain-megabytes"
    if cut_short := emulator.cloud_run.store.interrupted_at_open:  # (trials 78, 81)
        ids = ", ".join(e.execution_id for e in cut_short)
        jobs = sorted({e.scheduler_job.rsplit("/", 1)[-1] for e in cut_short} - {""})
        again = [f"`scheduler-emulator run {jobs[0]}` runs it again"] if len(jobs) == 1 else []
        if len(jobs) > 1:  # (trial 96: `run a b` was said, which `run` refuses)
            again.append(f"`scheduler-emulator run JOB` runs one again (JOB: {', '.join(jobs)})")
        if not all(e.scheduler_job for e in cut_short):  # (trial 96: `run JOB` was said)
            again.append("one started over the Admin API runs again at a POST to its jobs/J:run")
        notes += f", {len(cut_short)} Cloud Run execution(s) running when it ended abruptly "
        notes += f"recorded as INTERRUPTED ({ids}; their tasks, if still running, are stopped; "
        notes += "; ".join(again) + ")"
    return notes


def env_vars(host: str, port: int, project: str, pubsub_host: str = "") -> dict[str, str]:
    """The variables (``env-init`` exports them) that point gcloud and our plugin at the
    daemon, and Pub/Sub clients at its Pub/Sub emulator (``pubsub_host``, when it has one).

    The API endpoint override ends with ``/``, which gcloud requires.
    """
    address = host_port(host, port)
    values = {
        "CLOUDSDK_API_ENDPOINT_OVERRIDES_CLOUDSCHEDULER": f"http://{address}/",
        "CLOUDSDK_AUTH_DISABLE_CREDENTIALS": "true",
        "CLOUDSDK_CORE_PROJECT": project,
        "CLOUD_SCHEDULER_EMULATOR_HOST": address,
    }
    if pubsub_host:
        values["PUBSUB_EMULATOR_HOST"] = pubsub_host
    return values


def check_port_free(host: str, port: int) -> None:
    """Fail early, with a clear message, if ``host:port`` cannot be bound.

    :raises ConfigurationError: naming the address and the reason.
    """
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigurationError(cannot_listen(host, port, exc)) from exc


def cannot_listen(host: str, port: int, exc: OSError) -> str:
    """Why ``host:port`` cannot be bound, and what to do about it.

    :return: the message, naming the address and the flag to change.
    """
    import errno

    reason = f"cannot listen on {host}:{port}: {exc.strerror or exc}."
    if exc.errno == errno.EADDRINUSE:
        return (  # (trial 81: the guess named the emulator when a Flask app held the port)
            f"{reason} Another process holds it (another scheduler-emulator, or a service: "
            f"`lsof -i :{port}` names it); stop it or pick another --port."
        )
    if exc.errno == errno.EACCES:
        return f"{reason} Ports below 1024 need privileges; pick another --port."
    if isinstance(exc, socket.gaierror):
        return f"{reason} --host {host!r} is not an address or a name this machine resolves."
    return (
        f"{reason} --host {host!r} is not an address of this machine; use 127.0.0.1 (this "
        "machine only) or 0.0.0.0 (every interface)."
    )


def _make_clock(
    kind: str, start: datetime | None, kept: ClockFile | None
) -> ManualClock | SystemClock:
    """The daemon's clock. A manual clock starts at ``start``, else at the current minute; it
    keeps its virtual now in ``kept`` as it moves."""
    if kind != "manual":
        return SystemClock()
    first = start or SystemClock().now().replace(second=0, microsecond=0)
    if kept is not None:
        kept.write(first)
    return ManualClock(first, keep=kept.write if kept is not None else None)


def _settle_garbage_collector() -> None:
    """After start-up: move what was loaded (jobs, schedules, modules) out of the cyclic
    collector's sight and collect young objects less often, so that a minute in which
    thousands of attempts are made does not spend its time re-scanning the job table."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)


def _open_file_room() -> None:
    """Raise this process's soft limit of open files toward its hard limit, so that the
    attempts the delivery pool lets wait on slow targets at once (each holds a socket; at most
    ``MAX_IN_PROGRESS``) do not fail for want of file descriptors (many systems start processes
    at 1,024)."""
    import resource

    from ..runtime import MAX_IN_PROGRESS

    wanted = 2 * MAX_IN_PROGRESS + 1024  # sockets, plus the store, the log and the server's
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        ceiling = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        if ceiling > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
