"""Cloud Run jobs run locally (docs/cloud-run-jobs.md), and their executions' records.

:class:`CloudRun` holds the defined jobs and starts an execution on a run request (from
:mod:`~scheduler_emulator.runtime.cloud_run.admin_api`); :class:`ExecutionStore` keeps every
execution in a table of its own in the store's SQLite file. An execution runs on a thread of
its own, its tasks as processes following :class:`~scheduler_emulator.domain.cloud_run.
TaskRules`, in real time whatever the emulator's clock (:meth:`CloudRun.settle` waits for them).
A task runs in the daemon's working directory; its environment is the daemon's, the container's
``env`` and the contract's variables (cloud.google.com/run/docs/container-contract#jobs-env-vars).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import secrets
import shutil
import signal
import sqlite3
import string
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...domain.attempts import iso
from ...domain.cloud_run import CloudRunJob, RunOverrides, TaskRules
from ...domain.codec import camel_case
from ...domain.errors import FailedPrecondition, InvalidArgument, NotFound
from ...realtime import now as real_now
from ...realtime import real_monotonic
from ...wire import format_timestamp, parse_timestamp
from .._clock import Clock
from ..storage.store import add_condition

#: The last bytes of a task attempt's stdout and stderr that are kept.
OUTPUT_TAIL_BYTES = 4096
#: Seconds between SIGTERM and SIGKILL for a task past its timeout (Cloud Run gives a container
#: 10 seconds after SIGTERM; cloud.google.com/run/docs/container-contract#instance-shutdown).
STOP_GRACE_SECONDS = 10.0
#: Seconds a task has between SIGTERM and SIGKILL when the emulator stops (within the daemon's
#: own grace of 2 s for attempts in flight).
CLOSE_GRACE_SECONDS = 1.5
#: The states an execution is listed in.
EXECUTION_STATES = ("RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "INTERRUPTED")


@dataclass
class TaskAttempt:
    """One attempt of one task: a process.

    :param index: the task's index (``CLOUD_RUN_TASK_INDEX``).
    :param attempt: the attempt number from 0 (``CLOUD_RUN_TASK_ATTEMPT``).
    :param start: when the process started (real time, UTC).
    :param end: when it ended, ``None`` while it runs.
    :param exit_code: the process's exit status (negative: the signal that ended it), ``None``
        while it runs or when it could not start.
    :param stopped: why the emulator ended it: ``"timeout"``, ``"interrupted"`` (the emulator
        stopped), ``"cancelled"`` (its execution was), ``"not started"`` (the command could
        not be started), else ``""``.
    :param stdout: the last :data:`OUTPUT_TAIL_BYTES` of its standard output, as text.
    :param stderr: the same of its standard error (or why it could not start).
    :param pid: its process ID (and process group's), ``None`` until it started.
    """

    index: int
    attempt: int
    start: datetime
    end: datetime | None = None
    exit_code: int | None = None
    stopped: str = ""
    stdout: str = ""
    stderr: str = ""
    pid: int | None = None

    @property
    def ok(self) -> bool:
        """Whether it exited with status 0 on its own."""
        return self.exit_code == 0 and not self.stopped

    def to_json(self) -> dict[str, Any]:
        """``{"index", "attempt", "startTime", "endTime"?, "exitCode"?, "stopped"?, "stdout",
        "stderr", "pid"?}``."""
        return {
            "index": self.index,
            "attempt": self.attempt,
            "startTime": format_timestamp(self.start),
            **({} if self.end is None else {"endTime": format_timestamp(self.end)}),
            **({} if self.exit_code is None else {"exitCode": self.exit_code}),
            **({"stopped": self.stopped} if self.stopped else {}),
            "stdout": self.stdout,
            "stderr": self.stderr,
            **({} if self.pid is None else {"pid": self.pid}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskAttempt:
        """The inverse of :meth:`to_json`."""
        end = data.get("endTime")
        return cls(
            index=data["index"],
            attempt=data["attempt"],
            start=parse_timestamp(data["startTime"]),
            end=None if end is None else parse_timestamp(end),
            exit_code=data.get("exitCode"),
            stopped=data.get("stopped", ""),
            stdout=data.get("stdout", ""),
            stderr=data.get("stderr", ""),
            pid=data.get("pid"),
        )


@dataclass
class Execution:
    """One execution of a Cloud Run job and its task attempts.

    :param name: ``projects/P/locations/L/jobs/J/executions/J-xxxxx``.
    :param job: the Cloud Run job as this execution runs it (overrides applied).
    :param create_time: the emulator clock's instant of the run request.
    :param state: one of :data:`EXECUTION_STATES`.
    :param attempts: every task attempt, in start order.
    :param completion_time: when it ended (real time), ``None`` while it runs.
    :param seq: its row number in the store (listing order).
    :param scheduler_job: the ``X-CloudScheduler-JobName`` of the request that started it, ``""``
        when no scheduler job did.
    """

    name: str
    job: CloudRunJob
    create_time: datetime
    state: str = "RUNNING"
    attempts: list[TaskAttempt] = field(default_factory=list)
    completion_time: datetime | None = None
    seq: int = 0
    scheduler_job: str = ""

    @property
    def execution_id(self) -> str:
        """The last segment of :attr:`name`."""
        return self.name.rsplit("/", 1)[-1]

    def counts(self) -> dict[str, int]:
        """``{"succeeded", "failed", "running", "cancelled", "retried"}``: tasks by their last
        attempt's outcome; tasks a cancel stopped, and those an ended execution never started
        (Cloud Run's ``cancelledCount``: after a task failed for good, a cancel, or a stop);
        attempts after a task's first."""
        last = {attempt.index: attempt for attempt in self.attempts}
        ended = [a for a in last.values() if a.end is not None and not a.ok]
        stopped = sum(1 for a in ended if a.stopped == "cancelled")
        unstarted = 0 if self.completion_time is None else self.job.task_count - len(last)
        return {
            "succeeded": sum(1 for a in last.values() if a.ok),
            "failed": len(ended) - stopped,
            "running": sum(1 for a in last.values() if a.end is None),
            "cancelled": stopped + unstarted,
            "retried": sum(1 for a in self.attempts if a.attempt > 0),
        }

    def to_json(self) -> dict[str, Any]:
        """The emulator's view (``GET /_emulator/executions``): ``{"name", "job", "state",
        "createTime", "completionTime"?, "taskCount", "parallelism", "maxRetries",
        "timeout", "command", "schedulerJob"?, "succeededCount", "failedCount",
        "runningCount", "cancelledCount", "retriedCount", "taskAttempts": [...]}``."""
        return {
            "name": self.name,
            "job": self.job.name,
            "state": self.state,
            "createTime": format_timestamp(self.create_time),
            **({"completionTime": iso(self.completion_time)} if self.completion_time else {}),
            "taskCount": self.job.task_count,
            "parallelism": self.job.parallelism,
            "maxRetries": self.job.max_retries,
            "timeout": f"{self.job.timeout_seconds:g}s",
            "command": list(self.job.argv),
            **({"schedulerJob": self.scheduler_job} if self.scheduler_job else {}),
            **{f"{k}Count": v for k, v in self.counts().items()},
            "taskAttempts": [a.to_json() for a in self.attempts],
        }


_SCHEMA = """
CREATE TABLE IF NOT EXISTS cloud_run_executions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    job TEXT NOT NULL,
    state TEXT NOT NULL,
    body TEXT NOT NULL
)
"""


class ExecutionStore:
    """The executions, one row each in the table ``cloud_run_executions`` of the store's SQLite
    file (a connection of its own; ``":memory:"`` keeps them in memory).

    At most ``retain`` executions are kept, the oldest going first. A task attempt's output
    goes to files in :attr:`outputs` while it runs (so that a killed daemon's is kept), its
    tails into the record when it ends.

    :param path: the SQLite file, or ``":memory:"``.
    :param retain: executions kept; ``None``: all.
    :ivar interrupted_at_open: the executions a killed daemon left ``RUNNING``
        (:class:`CloudRun` records them ``INTERRUPTED``).
    """

    def __init__(self, path: Path | str, retain: int | None) -> None:
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()
        self.retain = retain
        self._temporary = str(path) == ":memory:"
        #: The folder (made at the first task) of the running task attempts'
        #: ``EXECUTION-INDEX-ATTEMPT.out`` / ``.err`` files.
        self.outputs = (
            Path(tempfile.gettempdir(), f"cloud-run-{uuid.uuid4().hex}")
            if self._temporary
            else Path(path).with_name("cloud-run")
        )
        self.interrupted_at_open = self.list(state="RUNNING", limit=None)

    def output_files(self, execution: Execution, attempt: TaskAttempt) -> tuple[Path, Path]:
        """The stdout and stderr files of ``attempt`` of ``execution`` while it runs."""
        self.outputs.mkdir(exist_ok=True)
        stem = self.outputs / f"{execution.execution_id}-{attempt.index}-{attempt.attempt}"
        return stem.with_suffix(".out"), stem.with_suffix(".err")

    def interrupt(self, execution: Execution, at: datetime) -> None:
        """Record ``execution``, whose task attempts have all ended, as ``INTERRUPTED`` at
        ``at``."""
        execution.state, execution.completion_time = "INTERRUPTED", at
        self.save(execution)

    def save(self, execution: Execution) -> None:
        """Insert or update ``execution``'s row (its ``seq`` is set on insert)."""
        body = json.dumps(_execution_row(execution))
        with self._lock:
            if execution.seq:
                self._db.execute(
                    "UPDATE cloud_run_executions SET state = ?, body = ? WHERE seq = ?",
                    (execution.state, body, execution.seq),
                )
                return
            cursor = self._db.execute(
                "INSERT INTO cloud_run_executions (name, job, state, body) VALUES (?, ?, ?, ?)",
                (execution.name, execution.job.name, execution.state, body),
            )
            execution.seq = int(cursor.lastrowid or 0)
            if self.retain is not None:
                self._db.execute(
                    "DELETE FROM cloud_run_executions WHERE seq <= ?",
                    (execution.seq - self.retain,),
                )

    def get(self, name: str) -> Execution | None:
        """The execution named ``name`` (full name or its ID), or ``None``."""
        sql = "SELECT seq, body FROM cloud_run_executions WHERE name = ? OR name LIKE ?"
        pattern = "%/executions/" + name.replace("%", "").replace("_", "")
        with self._lock:
            row = self._db.execute(sql, (name, pattern)).fetchone()
        return None if row is None else _execution_from_row(row[0], json.loads(row[1]))

    def list(
        self,
        *,
        job: str | None = None,
        state: str | None = None,
        after: int = 0,
        limit: int | None = 100,
        newest_first: bool = False,
    ) -> list[Execution]:
        """Executions in creation order, after row ``after``, at most ``limit`` of them
        (``None``: all); only those of the Cloud Run job ``job`` (full name) and in ``state``
        when given. ``newest_first``: the newest first, before row ``after`` (``0``: from the
        newest)."""
        clauses: list[str] = ["seq < ?" if newest_first else "seq > ?"]
        args: list[Any] = [(after or 2**63 - 1) if newest_first else after]
        add_condition(clauses, args, "job = ?", job)
        add_condition(clauses, args, "state = ?", state)
        args.append(-1 if limit is None else limit)  # SQLite: a negative LIMIT is none
        where = " AND ".join(clauses)
        order = "seq DESC" if newest_first else "seq"
        sql = f"SELECT seq, body FROM cloud_run_executions WHERE {where} ORDER BY {order} LIMIT ?"
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [_execution_from_row(seq, json.loads(body)) for seq, body in rows]

    def clear(self) -> None:
        """Delete every execution (an execution still running is not recorded again)."""
        with self._lock:
            self._db.execute("DELETE FROM cloud_run_executions")

    def close(self) -> None:
        """Close the connection (and remove an in-memory store's output folder)."""
        with self._lock:
            self._db.close()
        if self._temporary:
            shutil.rmtree(self.outputs, ignore_errors=True)


def _execution_row(execution: Execution) -> dict[str, Any]:
    return {
        "name": execution.name,
        "createTime": format_timestamp(execution.create_time),
        "completionTime": iso(execution.completion_time),
        "state": execution.state,
        "schedulerJob": execution.scheduler_job,
        # each field of the CloudRunJob by its camelCase name (tuples are written as lists)
        "job": {camel_case(f.name): getattr(execution.job, f.name) for f in fields(CloudRunJob)},
        "attempts": [a.to_json() for a in execution.attempts],
    }


def _execution_from_row(seq: int, row: Mapping[str, Any]) -> Execution:
    stored = row["job"]  # as _execution_row wrote it (a row from before "image" has none)
    values = {
        f.name: stored[key] for f in fields(CloudRunJob) if (key := camel_case(f.name)) in stored
    }
    values |= {"argv": tuple(values["argv"]), "env": tuple(map(tuple, values["env"]))}
    values["secrets"] = tuple(values.get("secrets", ()))
    completion = row.get("completionTime")
    return Execution(
        name=row["name"],
        job=CloudRunJob(**values),
        create_time=parse_timestamp(row["createTime"]),
        state=row["state"],
        attempts=[TaskAttempt.from_json(a) for a in row["attempts"]],
        completion_time=None if completion is None else parse_timestamp(completion),
        seq=seq,
        scheduler_job=row.get("schedulerJob", ""),
    )


def _tail(path: Path) -> str:
    """The last :data:`OUTPUT_TAIL_BYTES` of ``path`` as text, the file removed; ``""``
    without one."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - OUTPUT_TAIL_BYTES))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    path.unlink(missing_ok=True)
    return text


def _live_pid(execution: Execution, attempt: TaskAttempt) -> int | None:
    """``attempt``'s process ID while that process still runs: a live process (not a zombie)
    that started within seconds of the attempt (Linux's ``/proc``), not one that took the
    number since; else ``None``. Without a recorded ID (the daemon was killed before it saved
    it), the process group of a process whose environment names this execution, task and
    attempt."""
    if attempt.pid is None:
        wanted = {f"{k}={v}".encode() for k, v in _task_variables(execution, attempt).items()}
        for process in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError, ValueError):
                if wanted <= set((process / "environ").read_bytes().split(b"\0")):
                    return os.getpgid(int(process.name))
        return None
    try:
        stat = Path(f"/proc/{attempt.pid}/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        ago = uptime - int(stat[19]) / os.sysconf("SC_CLK_TCK")  # (field 22: start, in ticks)
    except (OSError, IndexError, ValueError):
        return None
    after = real_now().timestamp() - ago - attempt.start.timestamp()  # its start, seconds
    return attempt.pid if stat[0] not in "ZX" and -1 <= after <= 10 else None


class CloudRun:
    """The Cloud Run jobs the emulator defines (``jobs``) and their executions, kept in
    ``store``.

    :param clock: stamps an execution's ``createTime``.
    :ivar ids: draws the five random characters that end an execution's name; a seeded
        :class:`random.Random` makes them the same from run to run (``replay`` does).
    :ivar workdir: the folder tasks start in (relative commands resolve there); ``None``: this
        process's (``replay`` gives the scenario's folder).
    :ivar on_end: called with each execution's record (:meth:`Execution.to_json`) once it has
        ended (the text execution log's line).
    :ivar operations: Admin API operation ID → execution name, shared by the scheduler's and
        the port's Admin API (trial 139: each kept its own, and the operation a scheduled run
        answered was not found on the port).
    """

    def __init__(self, clock: Clock, store: ExecutionStore, jobs: Iterable[CloudRunJob]) -> None:
        self.clock = clock
        self.store = store
        self.ids: random.Random = secrets.SystemRandom()
        self.workdir: Path | None = None
        self.on_end: Callable[[dict[str, Any]], None] | None = None
        self.operations: dict[str, str] = {}
        self._jobs = {job.name: job for job in jobs}
        self._threads: list[threading.Thread] = []
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._closing = False
        self._cancelled: set[str] = set()  # executions cancelled that are still running
        for execution in store.interrupted_at_open:  # a killed daemon's (trials 78, 90)
            for attempt in execution.attempts:
                if attempt.end is None:
                    self._end_leftover(execution, attempt)
            store.interrupt(execution, real_now())

    def _end_leftover(self, execution: Execution, attempt: TaskAttempt) -> None:
        """End a task attempt a killed daemon left running: its process, if it runs on, gets
        SIGTERM now and SIGKILL after :data:`STOP_GRACE_SECONDS` (its end is now); else its end
        is when its output was last written. Its output's tails are kept."""
        files = self.store.output_files(execution, attempt)
        pid = _live_pid(execution, attempt)
        attempt.end, attempt.stopped = real_now(), "interrupted"
        with contextlib.suppress(OSError):  # (one that ended: when it last wrote)
            if pid is None:
                attempt.end = datetime.fromtimestamp(max(f.stat().st_mtime for f in files), UTC)
        attempt.stdout, attempt.stderr = _tail(files[0]), _tail(files[1])
        if pid is not None:
            _terminate(pid)

    def define(self, job: CloudRunJob) -> None:
        """Define ``job`` (replacing a job of the same name)."""
        self._jobs[job.name] = job

    def jobs(self) -> list[CloudRunJob]:
        """The defined jobs, in definition order."""
        return list(self._jobs.values())

    def find(self, project: str, location: str, job_id: str) -> CloudRunJob:
        """The defined job ``job_id`` of ``project`` (a project number matches any project)
        in ``location``.

        :raises NotFound: as the Admin API words it, naming ``--cloud-run-jobs`` and the jobs
            defined.
        """
        for job in self._jobs.values():
            same_project = job.project == project or project.isdigit()
            if job.job_id == job_id and job.location == location and same_project:
                return job
        defined = ", ".join(  # first, so that a reason cut short keeps it: IDs where they can
            j.job_id if j.location == location and j.project == project else j.name
            for j in self._jobs.values()
        )
        raise NotFound(
            f"Resource '{job_id}' of kind 'JOB' in region '{location}' in project '{project}' "
            f"does not exist (defined: {defined or 'none'}). The emulator runs the Cloud Run jobs "
            "given with --cloud-run-jobs FILE or a test's define_cloud_run_job()."
        )

    def run(
        self, job: CloudRunJob, overrides: RunOverrides | None = None, *, scheduler_job: str = ""
    ) -> Execution:
        """Create an execution of ``job`` with ``overrides`` and start its tasks.

        :param scheduler_job: the Cloud Scheduler job that asked for it, if one did.
        :return: the execution, recorded and running.
        :raises InvalidArgument: when the emulator is stopping.
        """
        if self._closing:
            raise InvalidArgument("The emulator is stopping; no execution starts.")
        job = job.with_overrides(overrides or RunOverrides())
        suffix = "".join(self.ids.choices(string.ascii_lowercase + string.digits, k=5))
        execution = Execution(
            name=f"{job.name}/executions/{job.job_id}-{suffix}",
            job=job,
            create_time=self.clock.now(),
            scheduler_job=scheduler_job,
        )
        self.store.save(execution)
        thread = threading.Thread(
            target=self._execute, args=(execution,), name=f"cloud-run-{suffix}", daemon=True
        )
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()
        return execution

    def cancel(self, name: str) -> Execution:
        """Cancel the running execution ``name`` (CancelExecution): no task starts from now
        on, the running ones get SIGTERM, then SIGKILL after :data:`STOP_GRACE_SECONDS`, as
        Cloud Run stops a container; it ends ``CANCELLED``, its stopped and unstarted tasks
        counted in ``cancelledCount``. Returns at once, with the execution as recorded now.

        :raises NotFound: if there is no such execution.
        :raises FailedPrecondition: if it has ended, naming its state (pinned:
            docs/differences-from-production.md).
        """
        execution = self.store.get(name)
        if execution is None:
            raise NotFound(f"Execution {name!r} does not exist.")
        if execution.state != "RUNNING":
            raise FailedPrecondition(
                f"Execution {execution.execution_id!r} has ended ({execution.state}); only a "
                "running execution can be cancelled."
            )
        with self._lock:
            self._cancelled.add(name)
        for attempt in execution.attempts:  # (one whose process is not recorded yet is
            if attempt.end is None and (pid := _live_pid(execution, attempt)):  # stopped as
                _terminate(pid)  # it registers)
        return execution

    def settle(self) -> None:
        """Wait until every execution started so far has ended (tasks run in real time)."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join()

    def close(self) -> None:
        """Stop: running task processes get SIGTERM, as Cloud Run stops a container, then
        SIGKILL after :data:`CLOSE_GRACE_SECONDS` (real time) if still running; their executions
        are recorded as ``INTERRUPTED``; then close the store."""
        with self._lock:  # a task process starting from now on is killed as it registers
            self._closing = True
            processes = list(self._processes)
        for process in processes:
            _signal(process.pid, signal.SIGTERM)
        deadline, pause = real_monotonic() + CLOSE_GRACE_SECONDS, threading.Event()
        while any(p.poll() is None for p in processes) and real_monotonic() < deadline:
            pause.wait(0.02)  # (a lock's timeout: real time under a frozen test clock too)
        for process in processes:
            _signal(process.pid, signal.SIGKILL)
        self.settle()
        self.store.close()

    def _execute(self, execution: Execution) -> None:
        job = execution.job
        rules = TaskRules(job.task_count, job.parallelism, job.max_retries)
        ended = threading.Condition()
        finished: list[TaskAttempt] = []

        def run_task(attempt: TaskAttempt) -> None:
            self._run_attempt(execution, attempt)
            with ended:
                finished.append(attempt)
                ended.notify()

        while True:
            with ended:
                while finished:
                    attempt = finished.pop()
                    rules.ended(attempt.index, ok=attempt.ok)
                    self.store.save(execution)
                stopping = self._closing or execution.name in self._cancelled
                if rules.done or stopping and not rules.running:
                    break
                started = None if stopping else rules.next_start()
                if started is None:
                    ended.wait()
                    continue
            attempt = TaskAttempt(*started, real_now())
            execution.attempts.append(attempt)
            self.store.save(execution)  # a daemon killed now keeps this attempt's record
            threading.Thread(target=run_task, args=(attempt,), daemon=True).start()
        # a task the stop cut short on its last try reads to the rules as failed (trial 119)
        cut = any(attempt.stopped == "interrupted" for attempt in execution.attempts)
        if self._closing and (cut or not rules.done):
            self.store.interrupt(execution, real_now())
        else:
            # (trial 203: a task stopped on its last try read as failed: FAILED)
            cancelled = execution.name in self._cancelled and rules.state != "SUCCEEDED"
            execution.state = "CANCELLED" if cancelled else rules.state
            execution.completion_time = real_now()
            self.store.save(execution)
        self._cancelled.discard(execution.name)
        if self.on_end is not None:
            self.on_end(execution.to_json())

    def _run_attempt(self, execution: Execution, attempt: TaskAttempt) -> None:
        job = execution.job
        env = {**os.environ, **dict(job.env), **_task_variables(execution, attempt)}
        out_file, err_file = self.store.output_files(execution, attempt)
        try:
            with out_file.open("wb") as out, err_file.open("wb") as err:
                try:
                    process = subprocess.Popen(
                        job.argv,
                        cwd=self.workdir,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=err,
                        env=env,
                        start_new_session=True,
                    )
                except (OSError, ValueError) as exc:  # (trial 127: a NUL in an arg: ValueError,
                    # which left the execution RUNNING for ever and held up the daemon's stop)
                    attempt.end, attempt.stopped = real_now(), "not started"
                    said = getattr(exc, "strerror", None) or exc
                    attempt.stderr = f"cannot start {job.argv[0]!r}: {said}"
                    return
                attempt.pid = process.pid
                self.store.save(execution)  # a daemon killed from now on stops it at its restart
                with self._lock:
                    self._processes.add(process)
                    if self._closing:  # close() already signalled the others
                        _signal(process.pid, signal.SIGKILL)
                    elif execution.name in self._cancelled:  # (cancel() read no pid for it)
                        _terminate(process.pid)
                # The timeout runs on real time: ``Popen.wait(timeout)`` reads ``time.monotonic``,
                # which a test's frozen clock replaces (a virtual day would time every task out).
                exited = threading.Event()

                def expire() -> None:  # (a cancel first keeps its mark and its SIGKILL: 216)
                    if exited.is_set() or execution.name in self._cancelled:
                        return
                    attempt.stopped = "timeout"
                    _signal(process.pid, signal.SIGTERM)
                    if not exited.wait(STOP_GRACE_SECONDS):
                        _signal(process.pid, signal.SIGKILL)

                timer = threading.Timer(job.timeout_seconds, expire)
                timer.daemon = True
                timer.start()
                try:
                    attempt.exit_code = process.wait()
                finally:
                    exited.set()
                    timer.cancel()
                    with self._lock:
                        self._processes.discard(process)
                if not attempt.stopped and attempt.exit_code != 0:
                    if self._closing:
                        attempt.stopped = "interrupted"
                    elif execution.name in self._cancelled:
                        attempt.stopped = "cancelled"
                attempt.end = real_now()
        finally:
            attempt.stdout, attempt.stderr = _tail(out_file), _tail(err_file) or attempt.stderr


def _task_variables(execution: Execution, attempt: TaskAttempt) -> dict[str, str]:
    """The container contract's variables of one task attempt, set in its environment
    (cloud.google.com/run/docs/container-contract#jobs-env-vars)."""
    return {
        "CLOUD_RUN_JOB": execution.job.job_id,
        "CLOUD_RUN_EXECUTION": execution.execution_id,
        "CLOUD_RUN_TASK_INDEX": str(attempt.index),
        "CLOUD_RUN_TASK_ATTEMPT": str(attempt.attempt),
        "CLOUD_RUN_TASK_COUNT": str(execution.job.task_count),
    }


def _terminate(pid: int) -> None:
    """SIGTERM to the task's process group ``pid`` now, SIGKILL after
    :data:`STOP_GRACE_SECONDS` (harmless once it has exited)."""
    _signal(pid, signal.SIGTERM)
    timer = threading.Timer(STOP_GRACE_SECONDS, _signal, (pid, signal.SIGKILL))
    timer.daemon = True
    timer.start()


def _signal(pid: int, signum: int) -> None:
    """Send ``signum`` to the task's process group ``pid`` (its children too), if it runs."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signum)


def run_callable(target: str) -> None:
    """Run ``module:qualname`` as a task process does and exit with its return value (``None``
    is 0, an ``int`` is the exit status, an exception prints its traceback and exits 1).

    The pytest plugin's callable jobs run ``python -c`` with this.
    """
    module_name, _, qualname = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    result = obj()
    sys.exit(0 if result is None else result)
