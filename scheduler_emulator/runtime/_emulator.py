"""The emulator as a library: jobs, their state machine, the clock and the attempt history.

:class:`Emulator` is what the pytest plugin runs in-process and what the daemon wraps with a
server. It puts the parts together (store, execution log, publisher, App Engine routing, token
authority, fault plan, engine) from its :class:`~scheduler_emulator.EmulatorOptions`, and offers
the jobs API (create, update, pause, run…, validated as the REST API does) and the attempt
history over its engine (the scheduler core, a recorder and a driver)::

    from datetime import UTC, datetime, timedelta
    from scheduler_emulator import Emulator, ManualClock

    emulator = Emulator(clock=ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC)))
    emulator.create_job({"name": "nightly", "schedule": "0 2 * * *",
                         "httpTarget": {"uri": "http://127.0.0.1:8000/_triggers/timer/nightly"}})
    emulator.advance(timedelta(minutes=2))
    [a.code for a in emulator.attempts("nightly")]      # ['OK'] (or the failure's code)
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields, replace
from datetime import datetime, timedelta
from typing import Any

from ..core.faults import FaultPlan
from ..core.scheduler import Scheduler, Upcoming
from ..domain.attempt_assertions import AttemptAssertions
from ..domain.attempts import Attempt, SkippedRun, iso
from ..domain.cloud_run import parse_cloud_run_job
from ..domain.codec import MESSAGE_FIELDS, job_from_json, same_configuration
from ..domain.errors import FailedPrecondition, InvalidArgument, StorageUnavailable
from ..domain.names import generate_job_id, qualify_job_name
from ..domain.paging import next_page_token, page_position
from ..domain.resources import Job, State
from ..domain.update_mask import apply_update
from ..wire import EMULATOR_HTTP2_HEADER, emulator_http2, to_instant
from ._clock import Clock, SystemClock
from ._options import ATTEMPTS_PAGE_SIZE, ATTEMPTS_PAGE_SIZE_MAX, EmulatorOptions
from .cloud_run.admin_api import CloudRunAdminApi, GoogleApisTransport
from .cloud_run.executions import CloudRun, ExecutionStore
from .delivery.dispatchers import (
    AppEngineDispatcher,
    Dispatcher,
    HttpDispatcher,
    parse_app_engine_urls,
)
from .delivery.pubsub import InProcessPublisher, Publisher, PubsubDispatcher
from .delivery.tokens import TokenAuthority
from .delivery.transports import HttpTransport, Transport, http2_problem
from .pipeline.drivers import Driver, driver_for
from .pipeline.recorder import Recorder
from .storage.attempt_log import AttemptLog
from .storage.store import AttemptFilter, Store


class Emulator(AttemptAssertions):
    """An in-process Cloud Scheduler.

    Settings come from ``options`` (:class:`~scheduler_emulator.EmulatorOptions`)
    or the same fields as keywords (``Emulator(clock, project="shop")``), keywords winning;
    collaborators are arguments of their own, each built from the options when not given.

    :param clock: :class:`ManualClock` (virtual time, no threads) or :class:`SystemClock`
        (default; call :meth:`start` to run the engine thread).
    :param options: the settings (project, location, DST policy, data directory…).
    :param store: persistence; by default the options' data directory, or memory.
    :param transport: delivery; real HTTP by default.
    :param attempt_log: optional writer of Cloud Logging-style execution log entries
        (``AttemptStarted``/``AttemptFinished``).
    :param faults: a fault plan (:mod:`~scheduler_emulator.core.faults`); empty by default. Add
        rules later through :attr:`faults`.
    :param tokens: mints the OIDC and OAuth tokens HTTP targets ask for; by default a
        :class:`~scheduler_emulator.runtime.delivery.tokens.TokenAuthority` on ``clock`` with the
        data directory's key (a fresh one in memory), the options' issuer and token time.
    :param publisher: where Pub/Sub jobs publish (:mod:`~scheduler_emulator.runtime.delivery.
        pubsub`); by default an :class:`~scheduler_emulator.runtime.delivery.pubsub.
        InProcessPublisher` that records messages (:attr:`publisher`).
    :param settings: fields of :class:`EmulatorOptions` overriding ``options``.
    :raises TypeError: for a keyword that is not an option.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        options: EmulatorOptions | None = None,
        store: Store | None = None,
        transport: Transport | None = None,
        attempt_log: AttemptLog | None = None,
        faults: FaultPlan | None = None,
        tokens: TokenAuthority | None = None,
        publisher: Publisher | None = None,
        **settings: Any,
    ) -> None:
        if unknown := sorted(set(settings) - {f.name for f in fields(EmulatorOptions)}):
            known = sorted(f.name for f in fields(EmulatorOptions))
            near = difflib.get_close_matches(unknown[0], known, n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"the options: {', '.join(known)}."
            raise TypeError(f"Emulator() takes no option {unknown[0]!r}; {hint}")
        self.options = options = replace(options or EmulatorOptions(), **settings)
        self.clock: Clock = clock or SystemClock()
        self.store = store or Store(
            options.store_path(),
            retain_attempts=options.retain_attempts,
            retain_megabytes=options.retain_megabytes,
        )
        self.project = options.project
        self.location = options.location
        self.locations: tuple[str, ...] = options.all_locations
        self.tokens = tokens or TokenAuthority(
            self.clock,
            key_path=options.key_path,
            issuer=options.token_issuer,
            token_time=options.token_time,
        )
        #: The transport attempts go through: the one given, or the default (what
        #: ``/_emulator/config`` reports); attempts to ``*.googleapis.com`` never reach it.
        self.transport = transport = transport or HttpTransport(http2=options.http2)
        self.publisher: Publisher = publisher or InProcessPublisher(
            self.clock, transport, project=options.project
        )
        self.app_engine_urls = parse_app_engine_urls(options.app_engine_urls or {})
        # Cloud Run jobs: the Admin API answers jobs/J:run in-process; nothing reaches Google.
        self.cloud_run = CloudRun(
            self.clock,
            ExecutionStore(self.store.path, options.retain_attempts),
            [
                parse_cloud_run_job(d, project=options.project, location=options.location)
                for d in options.cloud_run_jobs
            ],
        )
        self.cloud_run_api = CloudRunAdminApi(self.cloud_run, None, options.location)  # no token
        if attempt_log is not None:
            self.cloud_run.on_end = attempt_log.execution_ended
            for execution in self.cloud_run.store.interrupted_at_open:  # a killed daemon's
                attempt_log.execution_ended(execution.to_json())
        google_apis = GoogleApisTransport(
            CloudRunAdminApi(self.cloud_run, self.tokens, options.location), transport
        )
        http: dict[str, Any] = {"header_case": options.header_case, "google_apis": google_apis}
        #: The dispatcher of each target kind; :meth:`set_dispatcher` replaces one.
        self.dispatchers: dict[str, Dispatcher] = {
            "HTTP": HttpDispatcher(transport, self.tokens, **http),
            "PUBSUB": PubsubDispatcher(self.publisher),
            "APP_ENGINE_HTTP": AppEngineDispatcher(transport, self.app_engine_urls, **http),
        }
        self.attempt_log = attempt_log
        #: The scheduler core: it decides; the recorder carries out and records; the driver,
        #: chosen once from the clock, decides when and in which thread attempts are sent.
        self.core = Scheduler(
            dst_policy=options.dst_policy, force_run_schedule_time=options.force_run_schedule_time
        )
        #: The fault plan deliveries go through (``emulator.faults.add(action=…, …)``).
        self.faults = FaultPlan() if faults is None else faults
        self.recorder = Recorder(
            self.core, self.clock, self.store, self.dispatchers, attempt_log, self.faults
        )
        self._lock = self.recorder.lock
        self.driver: Driver = driver_for(self.clock, self.recorder, self._close_outputs)
        #: ``"manual"`` (time moves by :meth:`advance`) or ``"system"`` (real time).
        self.clock_mode = self.driver.clock_mode
        #: The last instant whose due work was stored (a refused clock move returns to it).
        self._settled = self.clock.now()
        self.clock.attach(self)
        with self._lock:
            deliveries = self.recorder.restore()
        self.driver.send_all(deliveries)
        self.driver.changed()
        #: How many scheduled times this emulator, restarting on a data directory, recorded as
        #: skipped because it was not running then (``EMULATOR_DOWN``; docs/behaviour.md), by job
        #: (full name; at most :data:`~scheduler_emulator.core.scheduler.MAX_DOWNTIME_SKIPS` a job).
        self.skipped_while_down: Mapping[str, int] = self.recorder.skipped_while_down
        #: How many attempts this emulator, restarting on a data directory, found in flight (the
        #: process was killed while they were sent) and recorded as interrupted, their runs
        #: retried (``UNAVAILABLE``; docs/behaviour.md).
        self.interrupted_at_start = self.recorder.interrupted_at_start
        #: How many of :attr:`interrupted_at_start`'s runs ended instead (a run earns one retry
        #: beyond its config at most; or its job was deleted).
        self.gave_up_at_start = self.recorder.gave_up_at_start

    def set_dispatcher(self, kind: str, dispatcher: Dispatcher) -> Dispatcher | None:
        """Send the attempts of target kind ``kind`` (``"HTTP"``, ``"PUBSUB"``,
        ``"APP_ENGINE_HTTP"``) through ``dispatcher`` from now on, e.g. one that wraps the
        current one (the Firebase bridge's); return the one it replaces, ``None`` if none."""
        with self._lock:
            previous = self.dispatchers.get(kind)
            self.dispatchers[kind] = dispatcher
            return previous

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> Emulator:
        """Start firing on a system clock (no-op on a manual clock); return ``self``."""
        self.driver.start()
        return self

    @property
    def in_flight(self) -> int:
        """Attempts being sent whose end is not recorded yet."""
        return self.driver.in_flight

    @property
    def engine_failure(self) -> str | None:
        """Why a system clock's engine stopped firing (its data directory cannot be written:
        the runs due since are fired late at the next start on it, or skipped when their minute
        could not be stored), or ``None``."""
        return self.driver.failure

    def stop(self, timeout: float = 10.0) -> int:
        """Stop firing at once, wait up to ``timeout`` seconds for attempts in flight, and
        record those still unfinished as interrupted (``UNAVAILABLE``, like an emulator restart:
        their runs are retried under the job's retry config plus one retry beyond it, at the
        next start if the store is kept); then close the transport's connections. Idempotent.

        On a manual clock a move under way (``clock:advance``) ends at the due instant it has
        reached, with what ran there recorded. On a system clock a due batch being recorded
        (thousands of jobs at one minute) ends with the slice of 400 decisions under way; its
        other runs are left as a crash would leave them: the next start on the same data
        directory runs them late.

        :param timeout: seconds to wait in all (real time) for the engine thread and the
            attempts in flight; recording the interrupted ones may take a moment more.
        :return: how many attempts were recorded as interrupted (in flight, or started by
            their ends and not sent).
        """
        return self.driver.stop(timeout)

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until nothing is due now and no attempt is in flight
        (system clock); return ``True`` if idle, ``False`` on timeout."""
        return self.driver.wait_idle(timeout)

    def close(self) -> None:
        """Stop the engine (which closes the transport's connections), stop running Cloud Run
        tasks (their executions recorded as interrupted) and close the store."""
        self.stop()
        self.cloud_run.close()
        self.store.close()

    def _close_outputs(self) -> None:
        """Close the transport's connections and write the log's queued lines (idempotent)."""
        self.transport.close()
        if self.attempt_log is not None:
            self.attempt_log.flush()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def job_name(self, name: str) -> str:
        """The full job name of a short job ID (default project and location) or of a full
        name. :raises InvalidArgument: if ``name`` is neither. :raises TypeError: if it is not
        text."""
        if not isinstance(name, str):
            raise TypeError(f"a job is named by its ID or full name, as text; got {name!r}.")
        return qualify_job_name(name, self.project, self.location)

    # ---------------------------------------------------------------- jobs

    def create_job(self, job: Job | Mapping[str, Any] | None = None, **fields: Any) -> Job:
        """Create a job (CreateJob) from a :class:`Job`, its REST JSON, or keywords.

        Keywords are REST field names in snake_case (``schedule=…, http_target={"uri": …}``).
        A short ``name`` gets the emulator's project and location; no name gets a generated ID.
        Its first fire time is the first scheduled time after now.

        :raises InvalidArgument: for any invalid field (the message names field and value).
        :raises AlreadyExists: if a job of that name exists.
        :return: the stored job with its output-only fields (state ENABLED, scheduleTime…).
        """
        if not isinstance(job, Job):
            data = {**(job or {}), **fields}
            data["name"] = self.job_name(data.get("name") or generate_job_id())
            job = job_from_json(data)
        return self._create(job)

    def _create(self, job: Job, from_start: bool = False) -> Job:
        fresh: dict[str, Any] = dict.fromkeys(MESSAGE_FIELDS["Job"].output_only)
        fresh |= {"state": State.ENABLED, "user_update_time": self.clock.now()}
        job = replace(job, **fresh)
        _refuse_unsendable_http2(job)
        return self._put_job(job, create=True, from_start=from_start)

    def upsert_job(self, job: Job) -> Job:
        """Create ``job``, or, if it exists (a restart with the same jobs file), replace its
        configuration while keeping its state, status and history; return the stored job.

        The next fire time is computed from now either way; at the instant the clock started
        (or resumed) from, a time at that very instant counts unless its run is recorded
        (docs/behaviour.md, "The start instant")."""
        if not self.has_job(job.name):
            return self._create(job, from_start=True)
        current = self.get_job(job.name)
        if same_configuration(job, current):
            return current
        kept = {name: getattr(current, name) for name in MESSAGE_FIELDS["Job"].output_only}
        _refuse_unsendable_http2(job)
        kept["user_update_time"] = self.clock.now()
        return self._put_job(replace(job, **kept), from_start=True)

    def _put_job(self, job: Job, *, create: bool = False, from_start: bool = False) -> Job:
        """Store ``job``, rescheduled from now (``Scheduler.put``); nothing changes if it raises."""
        with self._lock:
            with self._stored_or_undone():
                view, decisions = self.core.put(
                    job, self.clock.now(), create=create, from_start=from_start
                )
                self.store.save_job(view, self.core.upcoming(view.name).next_fire)
            deliveries = self.recorder.carry_out(decisions)
        self.driver.send_all(deliveries)
        self.driver.changed()  # the engine thread re-reads the next due instant
        return view

    @contextlib.contextmanager
    def _stored_or_undone(self, undone: Callable[[], None] = lambda: None) -> Iterator[None]:
        """Keep the core's changes made in the block only if the store took them: on a full disk
        (:class:`StorageUnavailable`) put back every job it changed, call ``undone()`` if any, and
        re-raise (503). The lock is taken per step (:meth:`run_due`'s block runs without it)."""
        with self._lock:
            self.core.checkpoint()
        try:
            yield
        except StorageUnavailable:
            with self._lock:
                rolled_back = self.core.rollback()
            if rolled_back:
                undone()
            raise
        finally:
            with self._lock:
                self.core.release()

    def _change_state(self, name: str, required: State, new: State, rule: str) -> Job:
        """Move the job from state ``required`` to ``new`` atomically (PauseJob / ResumeJob)."""
        name = self.job_name(name)
        with self._lock:
            job = self.core.get(name)
            if job.state != required:
                raise FailedPrecondition(f"Job {job.name} is {job.state.name}; {rule}.")
            return self._put_job(replace(job, state=new))

    def get_job(self, name: str) -> Job:
        """Return the job (GetJob). :raises NotFound: ``Job not found.``"""
        with self._lock:
            return self.core.get(self.job_name(name))

    def has_job(self, name: str) -> bool:
        """Tell whether a job of that ID or full name exists."""
        with self._lock:
            return self.core.has(self.job_name(name))

    def upcoming(self, name: str) -> Upcoming:
        """What comes next for the job: its next scheduled time, its runs' pending retries and
        a late run owed (:meth:`Scheduler.upcoming`; all ``None`` when there is no such job)."""
        name = self.job_name(name)
        with self._lock:
            return self.core.upcoming(name) if self.core.has(name) else Upcoming()

    def job_config(self, name: str) -> Job | None:
        """Return the job of full name ``name`` as configured (its retry config decides its
        runs' states; output-only fields not brought up to date), ``None`` if there is none
        (a deleted job's runs)."""
        with self._lock:
            return self.core.config(name)

    def list_jobs(self) -> list[Job]:
        """Return every job in creation order."""
        with self._lock:
            return self.core.jobs()

    def jobs_page(self, prefix: str, size: int, from_seq: int) -> tuple[list[Job], int | None]:
        """Return up to ``size`` jobs whose names start with ``prefix`` (``projects/P/locations/
        L/jobs/``), in creation order from creation sequence number ``from_seq`` on, and the
        sequence number the next page starts at (``None`` after the last job). ListJobs pages
        over this (api/ rules the page size and the token)."""
        with self._lock:
            return self.core.page(prefix, size, from_seq)

    def update_job(
        self, name: str, body: Mapping[str, Any], update_mask: str | Sequence[str] | None = None
    ) -> Job:
        """Update a job (UpdateJob): the fields the mask names are replaced by the body's (a
        masked field absent from the body is cleared); an empty or absent mask applies every
        field present in the body. A target's ``headers`` map holding a ``null`` value (``None``
        in Python) edits the stored map (``null`` deletes that header, other names are added or
        replaced: gcloud's ``--update-headers`` and ``--remove-headers``); otherwise it replaces
        the stored map. The state is kept; ``userUpdateTime`` moves; the next fire time is
        computed from now. An update that would leave the job invalid, or whose mask names only
        output-only fields or ``name``, changes nothing.

        :param name: job ID or full name (the body's ``name`` is ignored).
        :param body: the PATCH body, REST JSON.
        :param update_mask: comma-separated or listed field paths, camelCase or snake_case.
        :raises NotFound: ``Job not found.``
        :raises InvalidArgument: for a bad field, mask path or resulting job.
        """
        name = self.job_name(name)
        now = self.clock.now()
        with self._lock:
            current = self.core.get(name)
            updated = apply_update(current, body, update_mask)
            if updated is current:  # a mask of output-only paths alone: nothing changes
                return current
            _refuse_unsendable_http2(updated)
            return self._put_job(replace(updated, user_update_time=now))

    def delete_job(self, name: str) -> None:
        """Delete the job (DeleteJob): no further runs or retries; an attempt in flight still
        completes, one not sent yet ends ``CANCELLED``. :raises NotFound: ``Job not found.``"""
        name = self.job_name(name)
        with self._lock:
            self.core.get(name)  # NotFound first
            self.store.delete_job(name)  # then memory, once the disk has it
            for decision in self.core.remove(name, self.clock.now()):  # its open runs end too
                self.store.save(decision)
        self.driver.deleted(name)  # and its attempts not sent yet

    def pause_job(self, name: str) -> Job:
        """Pause an ENABLED job (PauseJob): no more runs; pending retries are dropped.

        :raises NotFound: ``Job not found.``
        :raises FailedPrecondition: if the job is not ENABLED (the message names its state).
        """
        return self._change_state(
            name, State.ENABLED, State.PAUSED, "only an ENABLED job can be paused"
        )

    def resume_job(self, name: str) -> Job:
        """Resume a PAUSED job (ResumeJob); the next fire time counts from now (missed times are
        not run).

        :raises NotFound: ``Job not found.``
        :raises FailedPrecondition: if the job is not PAUSED (the message names its state).
        """
        return self._change_state(
            name, State.PAUSED, State.ENABLED, "only a PAUSED job can be resumed"
        )

    def run_job(
        self, name: str, *, wait: bool = True, schedule_time: datetime | None = None
    ) -> Job:
        """Force a run now (RunJob), even while the job is paused (its state is kept) or a run is
        going. Its ``X-CloudScheduler-ScheduleTime`` is the job's next scheduled time (none for
        English-like schedules, or when the emulator was made with the option
        ``force_run_schedule_time="omit"``). A failed attempt is retried under the job's retry
        config, as for a scheduled run.

        :param name: the job's ID or full name.
        :param wait: under a manual clock, deliver the first attempt before returning (its
            retries come as the clock moves; on the system clock it is sent on the engine's
            threads and this returns at once). ``False`` returns once the run and its first
            attempt are recorded (in flight, started at the clock's instant), as the daemon's
            RunJob does (the job returned is as the run was accepted, even when its attempt
            failed at once); the attempt is sent on another thread, before the clock's next
            move.
        :param schedule_time: send the run as if scheduled at this aware instant, carried (in
            its own UTC offset) as ``X-CloudScheduler-ScheduleTime`` whatever the schedule
            (emulator-only, for testing a handler's date window; RunJob has no such field).
        :return: the job as stored.
        :raises NotFound: ``Job not found.``
        :raises NaiveDatetimeError: for a naive ``schedule_time``.
        """
        name = self.job_name(name)
        with self._lock, self._stored_or_undone():  # the run and its attempt stored, or none
            decisions = self.core.force(name, self.clock.now(), schedule_time)
            accepted = self.core.get(name)  # not what an attempt that failed at once left
            deliveries = self.recorder.carry_out(decisions)
        self.driver.send_forced(deliveries, wait=wait)
        return self.get_job(name) if wait else accepted

    # ---------------------------------------------------------------- history

    def attempts(self, job: str | None = None) -> list[Attempt]:
        """Return every attempt in start order, optionally only those of ``job`` (ID or name),
        as it reads now: one whose recorded end lies after the clock's instant (a ``delay``
        fault under a manual clock) is still in flight (:meth:`Attempt.as_of`) — what
        ``GET /_emulator/attempts`` and both pytest fixtures show too."""
        now = self.clock.now()
        attempts = self.store.attempts(None if job is None else self.job_name(job))
        return [attempt.as_of(now) for attempt in attempts]

    def _next_runs(self) -> dict[str, tuple[str, str | None]]:
        return {j.job_id: (j.state.name, iso(j.schedule_time)) for j in self.list_jobs()}

    def attempts_page(
        self,
        job: str | None = None,
        *,
        run_id: int | None = None,
        start_after: datetime | None = None,
        start_before: datetime | None = None,
        page_size: int = ATTEMPTS_PAGE_SIZE,
        page_token: str = "",
        failed: bool = False,
    ) -> tuple[list[Attempt], str]:
        """Return one page of attempts in start order and the next page's token (``""`` on
        the last page); only that page is read, however long the history. Attempts read as
        :meth:`attempts` says (an end after the clock's instant is not shown yet).

        :param job: only this job's attempts (ID or full name).
        :param run_id: only this run's attempts.
        :param start_after: only attempts that started at or after this instant (aware).
        :param start_before: only attempts that started before this instant (aware).
        :param page_size: 1 to 1000 attempts (default 100).
        :param page_token: ``""`` for the first page, else a token this method returned.
        :param failed: only attempts that ended with a code other than ``OK``.
        :raises InvalidArgument: naming ``pageSize`` or ``pageToken`` for a bad value.
        """
        after = _page_start(page_size, page_token)
        where = AttemptFilter(
            job=None if job is None else self.job_name(job),
            run_id=run_id,
            start_after=None if start_after is None else to_instant(start_after, "start_after"),
            start_before=None if start_before is None else to_instant(start_before, "start_before"),
            failed=failed,
        )
        attempts, last = self.store.attempts_page(where, after_id=after, page_size=page_size)
        now = self.clock.now()
        return [a.as_of(now) for a in attempts], next_page_token(last)

    def skipped_runs(self, job: str | None = None) -> list[SkippedRun]:
        """Return the scheduled times that got no run, optionally only those of ``job``.

        A run (with its retries) that outlasts scheduled times is followed by one delayed run
        for the earliest of them; the others are skipped. Times the emulator was down for are
        skipped too.
        """
        name = None if job is None else self.job_name(job)
        return self.store.skipped_page(job=name, page_size=None)[0]  # all: at most the retention

    def skipped_page(
        self, job: str | None = None, *, page_size: int = ATTEMPTS_PAGE_SIZE, page_token: str = ""
    ) -> tuple[list[SkippedRun], str]:
        """Return one page of skipped scheduled times in the order they were recorded and the
        next page's token (``""`` on the last page), as :meth:`attempts_page` does.

        :raises InvalidArgument: naming ``pageSize`` or ``pageToken`` for a bad value.
        """
        after = _page_start(page_size, page_token)
        records, last = self.store.skipped_page(
            job=None if job is None else self.job_name(job), after_id=after, page_size=page_size
        )
        return records, next_page_token(last)

    def reset(self) -> None:
        """Delete every job, run, attempt and skipped-run record, and every Cloud Run
        execution."""
        with self._lock:
            self.store.reset()  # then memory, once the disk has it
            self.core.clear()
        self.cloud_run.store.clear()

    # ---------------------------------------------------------------- clock

    def next_due(self) -> datetime | None:
        """Earliest instant with something due (a fire time, a retry), or ``None``."""
        with self._lock:
            return self.core.next_due()

    def due_jobs(self) -> list[str]:
        """The jobs (full names, sorted) with something due at :meth:`next_due` (a fire time, a
        retry, an attempt's recorded end)."""
        with self._lock:
            return self.core.due_jobs()

    def run_due(self) -> None:
        """Run everything due now, delivering attempts in order in this thread (what a manual
        clock calls at each due instant; harmless on the system clock, whose engine thread
        does it).

        A due instant whose runs the store refuses (:class:`StorageUnavailable`, a full disk)
        changes nothing: its jobs are put back and a manual clock returns to the last instant
        whose work was stored, so the move answers 503 with clock, jobs and next due instant as
        before — unless an attempt was already sent there (what was done stays). On a manual
        clock the Cloud Run executions started there end before this returns, so runs hours
        apart are not run at once in real time (not in the thread that sends the forced runs
        accepted over the API: the clock's next move waits for them)."""
        manual = self.clock_mode == "manual"
        with self._stored_or_undone(lambda: self.reset_clock(self._settled) if manual else None):
            self.driver.run_due()
        self._settled = self.clock.now()
        if manual and not self.driver.sending_forced_runs():
            self.cloud_run.settle()

    def idle(self) -> None:
        """The manual clock is done moving: wait for requests a ``deadline`` fault left running
        and note their answers on their attempts."""
        self.driver.idle()

    def now(self) -> datetime:
        """The emulator's current instant (aware UTC)."""
        return self.clock.now()

    def reset_clock(self, instant: datetime) -> None:
        """Set a manual clock to ``instant``, backwards too, firing nothing (after :meth:`reset`:
        pending work would otherwise be due in the past).

        :raises ClockError: on a system clock.
        :raises NaiveDatetimeError: for a naive instant.
        """
        self.driver.manual_clock().reset_to(instant)
        self._settled = instant

    def advance(self, delta: timedelta | float) -> datetime:
        """Advance a manual clock, firing everything due on the way (see
        :meth:`ManualClock.advance`), and return once the Cloud Run executions started on the
        way have ended (their tasks run in real time). :raises ClockError: on a system clock."""
        now = self.driver.manual_clock().advance(delta)
        self.cloud_run.settle()
        return now

    def move_to(self, instant: datetime) -> datetime:
        """Move a manual clock to ``instant``, firing everything due on the way, and return once
        the Cloud Run executions started on the way have ended.

        :raises ClockError: on a system clock, or for a past instant.
        :raises NaiveDatetimeError: for a naive instant.
        """
        now = self.driver.manual_clock().move_to(instant)
        self.cloud_run.settle()
        return now


def _page_start(page_size: int, page_token: str) -> int:
    """Check a page request; return the record id the page starts after (``0``: the first)."""
    if type(page_size) is not int or not 1 <= page_size <= ATTEMPTS_PAGE_SIZE_MAX:
        raise InvalidArgument(
            f"pageSize must be a whole number from 1 to {ATTEMPTS_PAGE_SIZE_MAX}; "
            f"got {page_size!r}.",
            field="pageSize",
        )
    return page_position(page_token)


def _refuse_unsendable_http2(job: Job) -> None:
    """Refuse a job whose emulator-only ``X-Emulator-Http2: true`` this process cannot honour
    (HTTP/2 needs ``pycurl`` whose libcurl has it: :func:`http2_problem`)."""
    target = job.http_target
    value = None if target is None else emulator_http2(target.headers)
    if value and value.strip().lower() == "true" and (reason := http2_problem()) is not None:
        raise InvalidArgument(
            f"httpTarget.headers {EMULATOR_HTTP2_HEADER}: true (emulator-only) cannot be "
            f"honoured: this emulator cannot send HTTP/2: {reason}",
            field="httpTarget.headers",
        )
