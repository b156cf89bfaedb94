"""The execution engine: fires runs on schedule, delivers attempts, retries, and records it all.

Design (spec §9, §11, §12, §17 P3–P6, P21):

- One timer heap of ``(instant, seq, kind, job, run)`` entries for every job — no thread per
  job and no scan of all jobs per tick. A popped entry is acted on only if it still matches the
  job's live state (its next fire time, or the run's pending retry), so changing a job simply
  pushes a new entry and leaves the old one to be discarded.
- A run is one scheduled (or forced) occurrence with its attempts. At most one *scheduled* run
  of a job is outstanding; scheduled times that pass meanwhile are missed: the earliest gets one
  delayed run when the current run ends, the others are recorded as skipped (P6). Forced runs
  (RunJob) neither wait for nor block scheduled runs (P3).
- A failed attempt is retried after :func:`~scheduler_emulator.domain.retry.backoff`, counted from
  the end of the failed attempt (P5), while :func:`~scheduler_emulator.domain.retry.may_retry`
  allows.
- With a :class:`~scheduler_emulator.runtime.clock.SystemClock` a single engine thread waits for the
  next due instant and hands deliveries to a bounded thread pool. With a
  :class:`~scheduler_emulator.runtime.clock.ManualClock` there is no thread: the clock calls
  :meth:`Engine.run_due` at each due instant and deliveries run one after another, in order,
  in the caller's thread — deterministic timelines.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ..core.faults import AttemptContext, FaultPlan
from ..domain.attempts import Attempt, Run, SkippedRun
from ..domain.errors import AlreadyExists, FailedPrecondition, NotFound
from ..domain.outcomes import Failure, Outcome, classify_failure
from ..domain.resources import Job, State, Status
from ..domain.retry import backoff, may_retry
from ..domain.schedule import Schedule, format_schedule_time, parse_schedule
from .attempt_log import AttemptLog
from .clock import Clock
from .dispatch import build_request
from .injection import Injected, LateResponse, outcome_of, send_with_faults
from .store import Store
from .transports import DeliveryRequest, Transport, TransportResult

if TYPE_CHECKING:
    from .tokens import TokenAuthority

logger = logging.getLogger("scheduler_emulator")

_FIRE, _RETRY, _FORCE = "fire", "retry", "force"


@dataclass
class _Runtime:
    """Live state of one job."""

    job: Job  # configuration, state and userUpdateTime; see Engine._view for the rest
    schedule: Schedule
    seq: int = 0  # creation order (ListJobs order and page tokens, P15)
    status: Status | None = None
    last_attempt_time: datetime | None = None
    next_fire: datetime | None = None  # in the job's zone (fold matters for the header)
    next_fire_utc: datetime | None = None
    active: Run | None = None  # the outstanding scheduled run
    missed: datetime | None = None  # earliest scheduled time missed while ``active`` ran
    runs: dict[int, Run] = field(default_factory=dict)  # every unfinished run, forced included
    runs_started: int = 0


@dataclass
class _Delivery:
    """An attempt that has started and must now be sent."""

    attempt: Attempt
    request: DeliveryRequest
    timeout_seconds: float
    run_number: int = 0


class Engine:
    """Fires jobs on schedule and records every attempt.

    :param clock: the clock; a manual clock drives the engine, a system clock needs
        :meth:`start`.
    :param store: where jobs, runs and attempts are kept.
    :param transport: how attempts reach targets.
    :param attempt_log: optional execution log (§14).
    :param faults: the fault plan (empty by default: exactly-once delivery).
    :param dst_policy: ``"absolute"`` (P1 default) or ``"vixie"``.
    :param force_run_schedule_time: ``"next"`` (P3 default: the next scheduled time) or
        ``"omit"`` (no ScheduleTime header on forced runs).
    :param max_workers: delivery threads under a system clock.
    :param tokens: mints the ``Authorization`` token of jobs with ``oidcToken`` or
        ``oauthToken`` at each attempt's instant (§13); without it no token is sent.
    """

    def __init__(
        self,
        clock: Clock,
        store: Store,
        transport: Transport,
        *,
        attempt_log: AttemptLog | None = None,
        faults: FaultPlan | None = None,
        dst_policy: str = "absolute",
        force_run_schedule_time: str = "next",
        max_workers: int = 32,
        tokens: TokenAuthority | None = None,
    ) -> None:
        if force_run_schedule_time not in ("next", "omit"):
            raise ValueError(
                "force_run_schedule_time must be 'next' or 'omit'; "
                f"got {force_run_schedule_time!r}."
            )
        self.clock = clock
        self.store = store
        self.transport = transport
        self.attempt_log = attempt_log
        self.faults = faults if faults is not None else FaultPlan()
        self.tokens = tokens
        self._late: list[tuple[Attempt, LateResponse, float]] = []
        self._overlaps: dict[int, int] = {}  # run id -> attempts still allowed to overlap
        self.dst_policy = dst_policy
        self.force_run_schedule_time = force_run_schedule_time
        self.errors: list[BaseException] = []
        self._lock = threading.RLock()
        self._jobs: dict[str, _Runtime] = {}
        self._timers: list[tuple[datetime, int, str, str, int]] = []
        self._seq = itertools.count()
        self._job_seq = itertools.count(1)
        self._wakeup = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._max_workers = max_workers
        self._in_flight = 0
        self._idle = threading.Condition(self._lock)
        clock.attach(self)

    # ---------------------------------------------------------------- job bookkeeping

    def parse(self, job: Job) -> Schedule:
        """Parse the job's schedule in its time zone with the engine's DST policy.

        :raises InvalidArgument: for a bad schedule or time zone.
        """
        return parse_schedule(job.schedule, job.time_zone, dst_policy=self.dst_policy)

    def put_job(self, job: Job, *, reschedule: bool = True, create: bool = False) -> Job:
        """Add or replace ``job`` and persist it; return it with output-only fields updated.

        Replacing keeps the job's runs in progress. With ``reschedule`` the next fire time is
        computed from now (create, update, resume: §9.4); without it an existing fire time is
        kept.

        :param create: refuse to replace an existing job (CreateJob, §5.1).
        :raises InvalidArgument: for a bad schedule or time zone.
        :raises AlreadyExists: with ``create``, if the job exists.
        """
        schedule = self.parse(job)
        with self._lock:
            rt = self._jobs.get(job.name)
            if create and rt is not None:
                raise AlreadyExists(f"Job {job.name} already exists.")
            if rt is None:
                rt = _Runtime(job, schedule, next(self._job_seq))
                self._jobs[job.name] = rt
                reschedule = True
            else:
                rt.job, rt.schedule = job, schedule
            rt.status, rt.last_attempt_time = job.status, job.last_attempt_time
            if job.state != State.ENABLED:
                rt.next_fire = rt.next_fire_utc = None
                if job.state == State.PAUSED:
                    self._cancel_retries(rt)
            elif reschedule or rt.next_fire is None:
                self._set_next_fire(rt, schedule.next_after(self.clock.now()))
            view = self._view(rt)
            self.store.save_job(view)
            return view

    def modify(self, name: str, change: Callable[[Job], Job]) -> Job:
        """Replace the job by ``change(job)`` atomically and reschedule it from now.

        If ``change`` raises, the job is left as it was.

        :param change: maps the current job (with output-only fields) to the new one.
        :raises NotFound: if there is no such job.
        """
        with self._lock:
            return self.put_job(change(self.get_job(name)))

    def change_state(self, name: str, required: State, new: State, rule: str) -> Job:
        """Move the job from state ``required`` to ``new`` atomically (PauseJob / ResumeJob, §4).

        :param rule: the end of the error sentence, e.g. ``"only an ENABLED job can be paused"``.
        :raises NotFound: if there is no such job.
        :raises FailedPrecondition: if the job is not in ``required`` (P11).
        """

        def change(job: Job) -> Job:
            if job.state != required:
                raise FailedPrecondition(f"Job {name} is {job.state.name}; {rule}.")
            return replace(job, state=new)

        return self.modify(name, change)

    def remove_job(self, name: str) -> None:
        """Forget the job: no further runs or retries. An attempt in flight still completes.

        :raises NotFound: if there is no such job.
        """
        with self._lock:
            if self._jobs.pop(name, None) is None:
                raise NotFound("Job not found.")
            self.store.delete_job(name)

    def get_job(self, name: str) -> Job:
        """Return the job with its current output-only fields.

        :raises NotFound: if there is no such job.
        """
        with self._lock:
            rt = self._jobs.get(name)
            if rt is None:
                raise NotFound("Job not found.")
            return self._view(rt)

    def jobs(self) -> list[Job]:
        """Return every job in creation order."""
        with self._lock:
            return [self._view(rt) for rt in self._jobs.values()]

    def jobs_page(self, prefix: str, size: int, from_seq: int) -> tuple[list[Job], int | None]:
        """Return up to ``size`` jobs whose names start with ``prefix``, in creation order,
        from creation number ``from_seq`` on, and the creation number where the next page
        starts (``None`` when there is none). Stable when jobs are added or deleted between
        pages (P15)."""
        with self._lock:
            chosen = [
                rt
                for rt in self._jobs.values()
                if rt.seq >= from_seq and rt.job.name.startswith(prefix)
            ]
            next_seq = chosen[size].seq if len(chosen) > size else None
            return [self._view(rt) for rt in chosen[:size]], next_seq

    def has_job(self, name: str) -> bool:
        """Tell whether a job of that full name exists."""
        with self._lock:
            return name in self._jobs

    def force_run(self, name: str) -> Job:
        """Start a forced run of the job now (RunJob, §5.8, P3), even if paused or running.

        Under a manual clock the attempt is delivered before this returns.

        :raises NotFound: if there is no such job.
        """
        with self._lock:
            if name not in self._jobs:
                raise NotFound("Job not found.")
            self._push(self.clock.now(), _FORCE, name, 0)
        self._kick()
        return self.get_job(name)

    def clear(self) -> None:
        """Forget every job and timer and empty the store."""
        with self._lock:
            self._jobs.clear()
            self._timers.clear()
            self.store.reset()

    def load(self) -> int:
        """Load the stored jobs after a restart and resume open runs; return the job count.

        Next fire times are computed from now (no backfill). An attempt that was in flight when
        the process died is recorded as failed (``UNAVAILABLE``, emulator restarted) and
        retried under the job's retry config; a pending retry is kept (due at once if its time
        has passed).
        """
        with self._lock:
            for job in self.store.load_jobs():
                schedule = self.parse(job)
                rt = _Runtime(job, schedule, next(self._job_seq), job.status, job.last_attempt_time)
                self._jobs[job.name] = rt
                if job.state == State.ENABLED:
                    self._set_next_fire(rt, schedule.next_after(self.clock.now()))
            in_flight = {a.run_id: a for a in self.store.attempts(unfinished=True)}
            for run in self.store.open_runs():
                owner = self._jobs.get(run.job)
                if owner is None:
                    run.finished = True
                    self.store.save_run(run)
                    continue
                owner.runs[run.id] = run
                if not run.forced:
                    owner.active = run
                attempt = in_flight.pop(run.id, None)
                if attempt is not None:
                    outcome = classify_failure(Failure.RESTARTED, "Emulator restarted.")
                    self._record_end(owner.job, attempt, outcome, TransportResult())
                    self._after_attempt(owner, run, attempt)
                elif run.next_attempt_at is not None:
                    self._push(run.next_attempt_at, _RETRY, run.job, run.id)
                else:  # a run without attempt or retry cannot progress: close it
                    self._end_run(owner, run)
            for attempt in in_flight.values():  # orphaned (run row missing)
                outcome = classify_failure(Failure.RESTARTED, "Emulator restarted.")
                self._record_end(None, attempt, outcome, TransportResult())
            for rt in self._jobs.values():
                self._save_state(rt)
            return len(self._jobs)

    # ---------------------------------------------------------------- clock interface

    def next_due(self) -> datetime | None:
        """Earliest instant with a live timer, or ``None`` (used by the manual clock)."""
        with self._lock:
            while self._timers and not self._live(self._timers[0]):
                heapq.heappop(self._timers)
            return self._timers[0][0] if self._timers else None

    def run_due(self) -> None:
        """Run everything due now, delivering attempts in order in this thread (manual clock).

        Under a system clock the engine thread does this itself; calling it is harmless.
        """
        queue: deque[_Delivery] = deque()
        while True:
            with self._lock:
                queue.extend(self._pop_due())
            if not queue:
                return
            while queue:
                delivery = queue.popleft()
                queue.extend(self._deliver(delivery))

    # ---------------------------------------------------------------- system-clock thread

    def start(self) -> None:
        """Start the engine thread and delivery pool (system clock only; no-op otherwise)."""
        if self.clock.manual or self._thread is not None:
            return
        self._stopping.clear()
        self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix="delivery")
        self._thread = threading.Thread(target=self._loop, name="scheduler-engine", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the engine thread; wait up to ``timeout`` seconds for deliveries in flight."""
        self._stopping.set()
        self._wakeup.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is due now and no delivery is in flight (system clock).

        :param timeout: seconds.
        :return: ``True`` if idle, ``False`` on timeout.
        """
        with self._idle:
            return self._idle.wait_for(
                lambda: (
                    self._in_flight == 0
                    and not (self._timers and self._timers[0][0] <= self.clock.now())
                ),
                timeout,
            )

    def _kick(self) -> None:
        if self.clock.manual:
            settle = getattr(self.clock, "settle", None)
            if settle is not None:
                settle()
        else:
            self._wakeup.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wakeup.clear()
            try:
                with self._lock:
                    deliveries = self._pop_due()
                    self._in_flight += len(deliveries)
                for delivery in deliveries:
                    self._submit(delivery)
            except Exception as exc:  # keep the engine alive; surface the error
                logger.exception("engine error")
                self.errors.append(exc)
            self.clock.wait(self.next_due(), self._wakeup)

    def _submit(self, delivery: _Delivery) -> None:
        assert self._pool is not None
        self._pool.submit(self._deliver_async, delivery)

    def _deliver_async(self, delivery: _Delivery) -> None:
        try:
            follow_ups = self._deliver(delivery)
            with self._lock:
                self._in_flight += len(follow_ups)
            for follow_up in follow_ups:
                self._submit(follow_up)
        except Exception as exc:
            logger.exception("delivery error")
            self.errors.append(exc)
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()
            self._wakeup.set()

    # ---------------------------------------------------------------- timers and runs

    def _push(self, when: datetime, kind: str, name: str, run_id: int) -> None:
        entry = (when.astimezone(UTC), next(self._seq), kind, name, run_id)
        heapq.heappush(self._timers, entry)
        if not self.clock.manual and self._timers[0] is entry:
            self._wakeup.set()

    def _live(self, entry: tuple[datetime, int, str, str, int]) -> bool:
        when, _, kind, name, run_id = entry
        rt = self._jobs.get(name)
        if rt is None:
            return False
        if kind == _FIRE:
            return rt.next_fire_utc == when
        if kind == _RETRY:
            run = rt.runs.get(run_id)
            return run is not None and run.next_attempt_at == when
        return True

    def _set_next_fire(self, rt: _Runtime, when: datetime | None) -> None:
        rt.next_fire = when
        rt.next_fire_utc = None if when is None else when.astimezone(UTC)
        if when is not None:
            self._push(when, _FIRE, rt.job.name, 0)

    def _pop_due(self) -> list[_Delivery]:
        """Act on every live timer due now; return the attempts to send."""
        now = self.clock.now()
        out: list[_Delivery] = []
        while self._timers and self._timers[0][0] <= now:
            entry = heapq.heappop(self._timers)
            if not self._live(entry):
                continue
            when, _, kind, name, run_id = entry
            rt = self._jobs[name]
            if kind == _FIRE:
                out.extend(self._fire(rt))
            elif kind == _RETRY:
                out.append(self._start_attempt(rt, rt.runs[run_id]))
            else:
                out.append(self._start_run(rt, when, forced=True))
        return out

    def _fire(self, rt: _Runtime) -> list[_Delivery]:
        nominal = rt.next_fire
        assert nominal is not None
        self._set_next_fire(rt, rt.schedule.next_after(nominal))
        if rt.active is not None:  # P6: one delayed run for the earliest missed time
            if rt.missed is None:
                rt.missed = nominal
            else:
                self.store.add_skipped(
                    SkippedRun(rt.job.name, self._header(rt, nominal), nominal, self.clock.now())
                )
            return []
        return [self._start_run(rt, nominal, forced=False)]

    def _header(self, rt: _Runtime, nominal: datetime | None) -> str | None:
        if nominal is None or not rt.schedule.is_cron:
            return None
        return format_schedule_time(nominal)

    def _start_run(self, rt: _Runtime, nominal: datetime, *, forced: bool) -> _Delivery:
        if forced:  # P3: the next scheduled time (of the schedule, when paused)
            upcoming = rt.next_fire or rt.schedule.next_after(self.clock.now())
            omit = self.force_run_schedule_time == "omit"
            header = None if omit else self._header(rt, upcoming)
        else:
            header = self._header(rt, nominal)
        rt.runs_started += 1
        run = Run(0, rt.job.name, header, nominal.astimezone(UTC), forced, number=rt.runs_started)
        return self._start_attempt(rt, run)

    def _start_attempt(self, rt: _Runtime, run: Run) -> _Delivery:
        now = self.clock.now()
        run.attempts += 1
        run.next_attempt_at = None
        if run.first_attempt_start is None:  # a new run
            run.first_attempt_start = now
            self.store.add_run(run)
            rt.runs[run.id] = run
            if not run.forced:
                rt.active = run
        else:
            self.store.save_run(run)
        authorization = None if self.tokens is None else self.tokens.authorization(rt.job, now)
        request = build_request(rt.job, run.schedule_time, authorization)
        attempt = Attempt(
            id=0,
            job=rt.job.name,
            run_id=run.id,
            attempt=run.attempts,
            schedule_time=run.schedule_time,
            start_time=now,
            request={
                "method": request.method,
                "url": request.url,
                "headers": dict(request.headers),
            },
            forced=run.forced,
        )
        self.store.add_attempt(attempt)
        rt.last_attempt_time = now
        if self.attempt_log is not None:
            self.attempt_log.started(attempt, rt.job.target_type)
        deadline = rt.job.attempt_deadline or timedelta(seconds=180)
        return _Delivery(attempt, request, deadline.total_seconds(), run.number)

    def _deliver(self, delivery: _Delivery) -> list[_Delivery]:
        """Send one attempt (no lock held), then record it; return follow-up deliveries."""
        attempt = delivery.attempt
        context = AttemptContext(
            attempt.job_id, delivery.run_number, attempt.schedule_time, attempt.attempt
        )
        if self._late:
            self._await_late(attempt.run_id)
        try:
            rules = self.faults.decide(context) if self.faults.rules else []
            if rules:
                injected = send_with_faults(
                    self.transport, self.clock, delivery.request, delivery.timeout_seconds, rules
                )
                attempt.injected = True
            else:
                result = self.transport.send(delivery.request, delivery.timeout_seconds)
                injected = Injected(result, outcome_of(result))
        except Exception as exc:  # a bug of ours: record the attempt rather than lose it
            logger.exception(
                "error while delivering attempt %s of %s", attempt.attempt, attempt.job
            )
            self.errors.append(exc)
            detail = f"EMULATOR_ERROR. The emulator failed while delivering: {exc!r}."
            injected = Injected(TransportResult(), Outcome("UNKNOWN", detail, None))
        with self._lock:
            rt = self._jobs.get(attempt.job)
            job = rt.job if rt else None
            self._record_end(job, attempt, injected.outcome, injected.result, injected)
            for copy in injected.copies:
                self._record_copy(job, attempt, copy)
            if injected.late is not None and self.clock.manual:  # noted when the clock idles
                self._late.append((attempt, injected.late, delivery.timeout_seconds))
                self._overlaps[attempt.run_id] = 1
            if rt is None:  # deleted meanwhile
                return []
            run = rt.runs.get(attempt.run_id)
            if run is not None and injected.extra_retry:
                run.extra_retry = True
            follow_ups = self._after_attempt(rt, run, attempt) if run else []
            self._save_state(rt)
            return follow_ups

    def _record_copy(self, job: Job | None, original: Attempt, result: TransportResult) -> None:
        """Record a duplicate delivery of ``original`` (fault injection)."""
        copy = replace(original, id=0, injected=True, end_time=None, code=None)
        self.store.add_attempt(copy)
        if self.attempt_log is not None:
            self.attempt_log.started(copy, job.target_type if job else "HTTP")
        outcome = outcome_of(result)
        copy.end_time = self.clock.now()
        copy.response_status, copy.code = outcome.http_status, outcome.code
        copy.debug_info = "Injected duplicate delivery. " + outcome.debug_info
        self.store.finish_attempt(copy)
        if self.attempt_log is not None:
            self.attempt_log.finished(copy, job.target_type if job else "HTTP")

    def idle(self) -> None:
        """The manual clock is done moving: wait for requests a ``deadline`` fault left running
        and note their answers on their attempts."""
        while self._late:
            self._finish_late(self._late.pop(0))
        self._overlaps.clear()

    def _await_late(self, run_id: int) -> None:
        """Before an attempt of ``run_id`` is sent (manual clock): a ``deadline`` fault lets
        exactly one later attempt of its run overlap the slow request; the next ones wait for
        it to end, so the outcome does not depend on how far one ``advance`` goes."""
        pending = [entry for entry in self._late if entry[0].run_id == run_id]
        if not pending:
            return
        if self._overlaps.get(run_id, 0) > 0:
            self._overlaps[run_id] -= 1
            return
        for entry in pending:
            self._late.remove(entry)
            self._finish_late(entry)

    def _finish_late(self, entry: tuple[Attempt, LateResponse, float]) -> None:
        attempt, late, timeout = entry
        result = late.wait(timeout)
        answer = "no answer" if result is None else outcome_of(result).debug_info
        attempt.debug_info += f" The target's late answer: {answer}"
        self.store.finish_attempt(attempt)

    def _record_end(
        self,
        job: Job | None,
        attempt: Attempt,
        outcome: Outcome,
        result: TransportResult,
        injected: Injected | None = None,
    ) -> None:
        latency = injected.latency_seconds if injected is not None else 0.0
        attempt.end_time = self.clock.now() + timedelta(seconds=latency)
        attempt.response_status = outcome.http_status
        attempt.code = outcome.code
        attempt.debug_info = outcome.debug_info
        attempt.exception = result.exception
        if result.exception is not None:
            self.errors.append(result.exception)
        self.store.finish_attempt(attempt)
        if self.attempt_log is not None:
            self.attempt_log.finished(attempt, job.target_type if job else "HTTP")
        rt = self._jobs.get(job.name) if job is not None else None
        if rt is not None:
            rt.status = Status() if outcome.ok else Status(outcome.code_number, outcome.debug_info)

    def _after_attempt(self, rt: _Runtime, run: Run, attempt: Attempt) -> list[_Delivery]:
        """Schedule a retry or end the run; return a delayed run to start, if any (P4–P6)."""
        now = attempt.end_time or self.clock.now()
        allowed = run.first_attempt_start is not None and may_retry(
            rt.job.retry_config, run.attempts - 1, run.first_attempt_start, now
        )
        if not allowed and run.extra_retry:  # a lost acknowledgement: at least once (§9.3)
            allowed, run.extra_retry = True, False
        retrying = (
            attempt.code != "OK" and (rt.job.state == State.ENABLED or run.forced) and allowed
        )
        if retrying:
            run.next_attempt_at = (now + backoff(rt.job.retry_config, run.attempts)).astimezone(UTC)
            self.store.save_run(run)
            self._push(run.next_attempt_at, _RETRY, run.job, run.id)
            return []
        return self._end_run(rt, run)

    def _end_run(self, rt: _Runtime, run: Run) -> list[_Delivery]:
        run.finished = True
        run.next_attempt_at = None
        self.store.save_run(run)
        rt.runs.pop(run.id, None)
        if rt.active is not run:
            return []
        rt.active = None
        missed, rt.missed = rt.missed, None
        if missed is not None and rt.job.state == State.ENABLED:
            return [self._start_run(rt, missed, forced=False)]
        return []

    def _cancel_retries(self, rt: _Runtime) -> None:
        """Pause: pending retries of scheduled runs are dropped; in-flight attempts finish."""
        rt.missed = None
        for run in list(rt.runs.values()):
            if not run.forced and run.next_attempt_at is not None:
                self._end_run(rt, run)

    def _view(self, rt: _Runtime) -> Job:
        """The job as the API shows it, output-only fields included (§12, P14, P21)."""
        if rt.job.state != State.ENABLED:
            when = None
        elif rt.active is not None and rt.active.next_attempt_at is not None:
            when = rt.active.next_attempt_at
        else:
            when = rt.next_fire_utc
        return replace(
            rt.job, status=rt.status, last_attempt_time=rt.last_attempt_time, schedule_time=when
        )

    def _save_state(self, rt: _Runtime) -> None:
        """Persist the output-only fields the engine changes (cheap: no JSON encoding)."""
        self.store.save_job_state(rt.job.name, rt.job.state, rt.status, rt.last_attempt_time)
