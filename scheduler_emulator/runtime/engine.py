"""The runtime: drives the scheduler core, carries out its decisions, and records it all.

The core (:class:`~scheduler_emulator.core.scheduler.Scheduler`) decides; this module does the
I/O around it. One delivery flows like this (docs/architecture.md):

1. The core says :class:`~scheduler_emulator.core.scheduler.StartAttempt` (a fire time, a
   retry or a delayed run fell due, or RunJob).
2. The engine persists the run, asks the dispatcher of the job's target kind to prepare the
   attempt (an exception there, or a kind without dispatcher, is recorded on the attempt), and
   records the attempt as started — all before anything is sent, so a crash loses nothing.
3. The attempt is sent (through the fault plan), with no lock held.
4. The engine records its end, logs it, and hands the outcome to the core, whose decisions
   (a retry, the run's end, a delayed run) go round again. On a system clock one thread does
   this for the attempts sent on the pool, a batch of ends per hold of the engine lock, and
   their store updates are deferred (committed a few ms later, many per transaction).

Two ways to drive it, and only here: with a :class:`~scheduler_emulator.runtime.clock.
ManualClock` the clock calls :meth:`Engine.run_due` at each due instant and deliveries run one
after another in the caller's thread — deterministic timelines; with a system clock one
engine thread waits for the next due instant and hands deliveries to a bounded pool
(:mod:`~scheduler_emulator.runtime.delivery_pool`) that runs at most ``max_per_job`` attempts
of one job at once, so a slow target delays only its own job. There an attempt's
``start_time`` is the instant it is sent (it was recorded as queued before); on a manual clock
it stays the virtual instant at which it fell due.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..core.faults import AttemptContext, FaultPlan
from ..core.scheduler import (
    AttemptEnd,
    Decision,
    RecordSkipped,
    SaveNextFire,
    SaveRun,
    Scheduler,
    StartAttempt,
)
from ..domain.attempts import Attempt
from ..domain.errors import FailedPrecondition, StorageUnavailable
from ..domain.outcomes import Failure, Outcome, classify_failure
from ..domain.resources import Job, State, Status
from ..domain.schedule import DEFAULT_DST_POLICY
from ..realtime import real_monotonic
from .attempt_log import AttemptLog, log_target_type
from .clock import Clock
from .delivery_pool import DeliveryPool
from .dispatchers import Dispatcher, HttpDispatcher, NotDispatched, Prepared, dispatcher_for
from .injection import Injected, LateResponse, outcome_of, send_with_faults
from .options import DEFAULT_HEADER_CASE
from .store import Store
from .transports import Transport, TransportResult

if TYPE_CHECKING:
    from .tokens import TokenAuthority

logger = logging.getLogger("scheduler_emulator")


@dataclass(eq=False)
class _Delivery:
    """An attempt that has been recorded as started and must now be sent.

    ``ended`` is set once its end is recorded (by the sender, or by :meth:`Engine.stop` for an
    attempt still in flight), so that it is recorded once.
    """

    attempt: Attempt
    prepared: Prepared
    run_number: int
    sent: bool = False
    ended: bool = False


class Engine:
    """Fires jobs on schedule and records every attempt.

    :param clock: the clock; a manual clock drives the engine, a system clock needs
        :meth:`start`.
    :param store: where jobs, runs and attempts are kept.
    :param transport: how HTTP attempts reach targets (the ``"HTTP"`` dispatcher's transport).
    :param dispatchers: more dispatchers by target kind (``"PUBSUB"``, ``"APP_ENGINE_HTTP"``),
        or replacements; see :mod:`~scheduler_emulator.runtime.dispatchers`.
    :param attempt_log: optional execution log (§14).
    :param faults: the fault plan (empty by default: exactly-once delivery).
    :param dst_policy: ``"absolute"`` (P1 default) or ``"vixie"``.
    :param force_run_schedule_time: ``"next"`` (P3 default) or ``"omit"``.
    :param max_workers: delivery threads under a system clock.
    :param max_per_job: attempts of one job sent at once under a system clock; more wait
        behind their own job (their ``start_time`` is when they are sent).
    :param tokens: mints the ``Authorization`` token of jobs with ``oidcToken`` or
        ``oauthToken`` at each attempt's instant (§13); without it no token is sent.
    :param header_case: how HTTP header names are spelled (``"google"``, ``"lower"``,
        ``"canonical"``; :func:`~scheduler_emulator.wire.spell_header`).
    """

    def __init__(
        self,
        clock: Clock,
        store: Store,
        transport: Transport,
        *,
        dispatchers: Mapping[str, Dispatcher] | None = None,
        attempt_log: AttemptLog | None = None,
        faults: FaultPlan | None = None,
        dst_policy: str = DEFAULT_DST_POLICY,
        force_run_schedule_time: str = "next",
        max_workers: int = 32,
        max_per_job: int = 4,
        tokens: TokenAuthority | None = None,
        header_case: str = DEFAULT_HEADER_CASE,
    ) -> None:
        self.core = Scheduler(
            dst_policy=dst_policy, force_run_schedule_time=force_run_schedule_time
        )
        self.clock = clock
        self.store = store
        self.transport = transport
        self.dispatchers: dict[str, Dispatcher] = {
            "HTTP": HttpDispatcher(transport, tokens, header_case=header_case)
        }
        self.dispatchers.update(dispatchers or {})
        self.attempt_log = attempt_log
        self.faults = faults if faults is not None else FaultPlan()
        #: Emulator errors while preparing or sending attempts, counted (each is recorded on
        #: its attempt and logged once); the last one is kept for inspection.
        self.error_count = 0
        self.last_error: BaseException | None = None
        self._late: list[tuple[Attempt, LateResponse, float]] = []
        self._overlaps: dict[int, int] = {}  # run id -> attempts still allowed to overlap
        self._lock = threading.RLock()
        self._wakeup = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: DeliveryPool | None = None
        self._max_workers = max_workers
        self._max_per_job = max_per_job
        self._outstanding: set[_Delivery] = set()  # submitted to the pool, end not recorded
        self._idle = threading.Condition(self._lock)
        # Ends of attempts sent on the pool, recorded by one thread a batch at a time (one
        # engine-lock hold per batch instead of 32 threads contending for it per attempt).
        self._ends: deque[tuple[_Delivery, Injected]] = deque()
        self._ends_ready = threading.Condition(threading.Lock())
        self._ender: threading.Thread | None = None
        self._ender_stopping = False
        clock.attach(self)

    # ---------------------------------------------------------------- jobs

    def put_job(self, job: Job, *, reschedule: bool = True, create: bool = False) -> Job:
        """Add or replace ``job`` and persist it; return it with output-only fields updated.

        See :meth:`Scheduler.put <scheduler_emulator.core.scheduler.Scheduler.put>`.

        :raises InvalidArgument: for a bad schedule or time zone (nothing changes).
        :raises AlreadyExists: with ``create``, if the job exists.
        """
        with self._lock:
            new = not self.core.has(job.name)
            view, decisions = self.core.put(
                job, self.clock.now(), reschedule=reschedule, create=create
            )
            try:
                self.store.save_job(view, self.core.next_fire(view.name))
            except StorageUnavailable:  # a full disk: list nothing that is not stored
                if new:
                    self.core.remove(view.name)
                raise
            deliveries = self._carry_out(decisions)
        self._send_all(deliveries)
        self._wakeup.set()  # the engine thread re-reads the next due instant
        return view

    def modify(self, name: str, change: Callable[[Job], Job]) -> Job:
        """Replace the job by ``change(job)`` atomically and reschedule it from now.

        If ``change`` raises, the job is left as it was.

        :raises NotFound: if there is no such job.
        """
        with self._lock:
            return self.put_job(change(self.core.get(name)))

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
            self.core.get(name)  # NotFound first
            self.store.delete_job(name)  # then memory, once the disk has it
            self.core.remove(name)

    def get_job(self, name: str) -> Job:
        """Return the job with its current output-only fields. :raises NotFound:"""
        with self._lock:
            return self.core.get(name)

    def jobs(self) -> list[Job]:
        """Return every job in creation order."""
        with self._lock:
            return self.core.jobs()

    def jobs_page(self, prefix: str, size: int, from_seq: int) -> tuple[list[Job], int | None]:
        """One ListJobs page (see :meth:`Scheduler.page
        <scheduler_emulator.core.scheduler.Scheduler.page>`)."""
        with self._lock:
            return self.core.page(prefix, size, from_seq)

    def has_job(self, name: str) -> bool:
        """Tell whether a job of that full name exists."""
        with self._lock:
            return self.core.has(name)

    def force_run(self, name: str) -> Job:
        """Start a forced run of the job now (RunJob, §5.8, P3), even if paused or running.

        Under a manual clock the attempt is delivered (and anything then due) before this
        returns.

        :raises NotFound: if there is no such job.
        """
        with self._lock:
            deliveries = self._carry_out(self.core.force(name, self.clock.now()))
        self._send_all(deliveries)
        if self.clock.manual:
            settle = getattr(self.clock, "settle", None)
            if settle is not None:
                settle()
        return self.get_job(name)

    def clear(self) -> None:
        """Forget every job and timer and empty the store."""
        with self._lock:
            self.core.clear()
            self.store.reset()

    def load(self) -> int:
        """Load the stored jobs after a restart and resume open runs; return the job count.

        Next fire times count from now (no backfill). An attempt that was in flight when the
        process died is recorded as failed (``UNAVAILABLE``, emulator restarted) and its run
        retried under the job's retry config; a pending retry is kept (due at once if its time
        has passed).
        """
        with self._lock:
            now = self.clock.now()
            in_flight = {a.run_id: a for a in self.store.attempts(unfinished=True)}
            decisions, orphans = self.core.restore(
                self.store.load_jobs(),
                self.store.open_runs(),
                set(in_flight),
                now,
                self.store.last_run_id(),
                self.store.next_fires(),
                self.store.last_skipped(),
            )
            for run in orphans:
                run.finished = True
                self.store.save_run(run)
            restarted = classify_failure(Failure.RESTARTED, _RESTARTED_DETAIL)
            for attempt in in_flight.values():
                self._record_end(attempt, restarted, TransportResult())
                if self.core.has(attempt.job):
                    end = AttemptEnd(restarted.code, _status(restarted), attempt.end_time or now)
                    decisions.extend(self.core.attempt_ended(attempt.job, attempt.run_id, end, now))
            deliveries = self._carry_out(decisions)
            for job in self.core.jobs():
                self._save_state(job.name)
            count = len(self.core.jobs())
        self._send_all(deliveries)
        self._wakeup.set()
        return count

    # ---------------------------------------------------------------- clock interface

    def next_due(self) -> datetime | None:
        """Earliest instant with something due, or ``None`` (used by the manual clock)."""
        with self._lock:
            return self.core.next_due()

    def run_due(self) -> None:
        """Run everything due now, delivering attempts in order in this thread (manual clock).

        Under a system clock the engine thread does this itself; calling it is harmless.
        """
        queue: deque[_Delivery] = deque()
        while True:
            with self._lock:
                queue.extend(self._carry_out(self.core.due(self.clock.now())))
            if not queue:
                return
            while queue:
                queue.extend(self._deliver(queue.popleft()))

    def idle(self) -> None:
        """The manual clock is done moving: wait for requests a ``deadline`` fault left running
        and note their answers on their attempts."""
        while self._late:
            self._finish_late(self._late.pop(0))
        self._overlaps.clear()

    # ---------------------------------------------------------------- system-clock thread

    def start(self) -> None:
        """Start the engine thread and delivery pool (system clock only; no-op otherwise)."""
        if self.clock.manual or self._thread is not None:
            return
        self._stopping.clear()
        self._pool = DeliveryPool(self._max_workers, self._max_per_job)
        self._ender_stopping = False
        self._ender = threading.Thread(target=self._end_loop, name="attempt-ends", daemon=True)
        self._ender.start()
        self._thread = threading.Thread(target=self._loop, name="scheduler-engine", daemon=True)
        self._thread.start()

    @property
    def in_flight(self) -> int:
        """Attempts handed to the delivery pool whose end is not recorded yet (system clock)."""
        with self._lock:
            return len(self._outstanding)

    def stop(self, timeout: float = 10.0) -> int:
        """Stop firing at once, wait up to ``timeout`` seconds for attempts in flight, and
        record those still unfinished as interrupted (``UNAVAILABLE``, like an emulator restart:
        their runs are retried under the job's retry config, at the next start if the store
        is kept); then close the transport's connections. Idempotent.

        :param timeout: seconds to wait in all (real time) for the engine thread and the
            attempts in flight; recording the interrupted ones may take a moment more.
        :return: how many attempts were recorded as interrupted.
        """
        deadline = real_monotonic() + timeout

        def left() -> float:
            return max(0.0, deadline - real_monotonic())

        self._stopping.set()
        self._wakeup.set()
        if self._thread is not None:
            self._thread.join(left())
            self._thread = None
        if self._pool is None:
            self._close_outputs()
            return 0
        pool, self._pool = self._pool, None
        pool.shutdown()  # queued attempts are not sent
        with self._idle:
            self._idle.wait_for(lambda: self._running_count() == 0, left())
            unfinished = sorted(self._outstanding, key=lambda d: d.attempt.id)
            for delivery in unfinished:
                for follow_up in self._finish(delivery, Injected(TransportResult(), _INTERRUPTED)):
                    self._submit(follow_up)  # recorded as not sent: the engine stopped
        self._stop_ender(max(left(), _ENDER_GRACE_SECONDS))
        self._close_outputs()
        return len(unfinished)

    def _close_outputs(self) -> None:
        """Close the transport (its kept-alive connections) and write the execution log's
        queued lines (idempotent)."""
        self.transport.close()
        if self.attempt_log is not None:
            self.attempt_log.flush()

    def _stop_ender(self, timeout: float) -> None:
        """Let the ends thread record the ends queued so far, then stop it."""
        ender, self._ender = self._ender, None
        if ender is None:
            return
        with self._ends_ready:
            self._ender_stopping = True
            self._ends_ready.notify()
        if ender is not threading.current_thread():
            ender.join(timeout)

    def _running_count(self) -> int:
        return sum(1 for d in self._outstanding if d.sent)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is due now and no delivery is in flight (system clock).

        :param timeout: seconds.
        :return: ``True`` if idle, ``False`` on timeout.
        """
        with self._idle:
            return self._idle.wait_for(
                lambda: (
                    not self._outstanding
                    and not ((due := self.core.next_due()) is not None and due <= self.clock.now())
                ),
                timeout,
            )

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wakeup.clear()
            with self._lock:
                decisions = self.core.due(self.clock.now())
            # Record and hand over a few hundred at a time, each slice in one transaction, so
            # that the first attempts of a large due batch leave while the rest are recorded.
            for first in range(0, len(decisions), _SLICE):
                with self._lock, self.store.batch():
                    deliveries = self._carry_out(decisions[first : first + _SLICE])
                self._send_all(deliveries)
            self.clock.wait(self.next_due(), self._wakeup)

    def _send_all(self, deliveries: Iterable[_Delivery]) -> None:
        """Send ``deliveries``: in this thread, in order, on a manual clock; else on the pool."""
        if self.clock.manual:
            queue = deque(deliveries)
            while queue:
                queue.extend(self._deliver(queue.popleft()))
            return
        for delivery in deliveries:
            self._submit(delivery)

    def _submit(self, delivery: _Delivery) -> None:
        with self._lock:
            pool = self._pool
            if pool is not None:
                self._outstanding.add(delivery)
        if pool is None:  # stopped, or never started: record it as interrupted by the stop
            self._finish(delivery, Injected(TransportResult(), _STOPPED))
            return
        try:
            pool.submit(delivery.attempt.job, lambda: self._deliver_async(delivery))
        except RuntimeError:  # shut down meanwhile: Engine.stop records it
            return
        self._wakeup.set()

    def _deliver_async(self, delivery: _Delivery) -> None:
        """Send on a pool thread; the end is recorded by the ends thread (:meth:`_end_loop`)."""
        if self._stopping.is_set():
            return  # taken from the queue as the engine stopped: Engine.stop records it
        try:
            injected = self._send(delivery)
        except Exception as exc:  # e.g. the log's file is gone: log, count, record it still
            self._note_error(exc, f"job {delivery.attempt.job_id}: attempt not sent")
            detail = f"EMULATOR_ERROR. The emulator failed while delivering: {exc!r}."
            injected = Injected(TransportResult(), Outcome("UNKNOWN", detail, None))
        with self._ends_ready:
            self._ends.append((delivery, injected))
            if len(self._ends) == 1:
                self._ends_ready.notify()

    def _end_loop(self) -> None:
        """The ends thread: record the ends of attempts sent on the pool, a batch per hold of
        the engine lock (their store updates deferred: one transaction for many), then submit
        their follow-ups (a delayed run)."""
        while True:
            with self._ends_ready:
                while not self._ends and not self._ender_stopping:
                    self._ends_ready.wait()
                if not self._ends:
                    return
                batch = [self._ends.popleft() for _ in range(min(len(self._ends), _ENDS))]
            follow_ups: list[_Delivery] = []
            with self._lock:
                for delivery, injected in batch:
                    try:
                        follow_ups.extend(self._finish(delivery, injected))
                    except Exception as exc:  # recording failed (e.g. the store is closed)
                        self._note_error(
                            exc, f"job {delivery.attempt.job_id}: attempt not recorded"
                        )
                        with self._idle:
                            self._outstanding.discard(delivery)
                            self._idle.notify_all()
            for follow_up in follow_ups:
                self._submit(follow_up)
            self._wakeup.set()

    # ---------------------------------------------------------------- decisions

    def _carry_out(self, decisions: Sequence[Decision]) -> list[_Delivery]:
        """Persist the core's decisions (lock held); return the attempts to send, each already
        recorded as started. An attempt that cannot be prepared is recorded as failed here and
        its outcome goes back to the core."""
        if not decisions:
            return []
        deliveries: list[_Delivery] = []
        pending = deque(decisions)
        while pending:
            decision = pending.popleft()
            # Exact types (the decision classes are not subclassed), the commonest first.
            if type(decision) is StartAttempt:
                delivery, follow_ups = self._start(decision)
                if delivery is not None:
                    deliveries.append(delivery)
                pending.extend(follow_ups)
            elif type(decision) is SaveRun:
                self.store.save_run(decision.run)
            elif type(decision) is SaveNextFire:
                self.store.save_next_fire(decision.job, decision.next_fire)
            elif type(decision) is RecordSkipped:
                self.store.add_skipped(decision.skipped)
            else:
                raise TypeError(f"not a decision: {decision!r}")
        return deliveries

    def _start(self, decision: StartAttempt) -> tuple[_Delivery | None, list[Decision]]:
        job, run = decision.job, decision.run
        now = self.clock.now()
        if decision.new_run:
            self.store.add_run(run)
        else:
            self.store.save_run(run)
        failure: Outcome | None = None
        try:
            prepared = dispatcher_for(self.dispatchers, job).prepare(job, run.schedule_time, now)
        except NotDispatched as exc:
            prepared, failure = _unsent(job), Outcome("FAILED_PRECONDITION", str(exc), None)
        except Exception as exc:  # a bug of ours or an undeliverable job: record, don't raise
            self._note_error(exc, f"job {job.job_id}: attempt {run.attempts} not prepared")
            detail = f"EMULATOR_ERROR. The emulator could not prepare the attempt: {exc!r}."
            prepared, failure = _unsent(job), Outcome("UNKNOWN", detail, None)
        attempt = Attempt(
            id=0,
            job=job.name,
            run_id=run.id,
            attempt=run.attempts,
            schedule_time=run.schedule_time,
            start_time=now,
            request=prepared.record,
            forced=run.forced,
            nominal=run.nominal,
        )
        self.store.add_attempt(attempt)
        if self.attempt_log is not None and (self.clock.manual or failure is not None):
            self.attempt_log.started(attempt, job.target_type)  # else when it is sent
        delivery = _Delivery(attempt, prepared, run.number)
        if failure is None:
            return delivery, []
        return None, self._ended(delivery, Injected(TransportResult(), failure))

    # ---------------------------------------------------------------- delivery

    def _deliver(self, delivery: _Delivery) -> list[_Delivery]:
        """Send one attempt (no lock held), then record it; return follow-up deliveries."""
        return self._finish(delivery, self._send(delivery))

    def _send(self, delivery: _Delivery) -> Injected:
        """Send one attempt (no lock held) through the fault plan; return what happened."""
        attempt = delivery.attempt
        if self._late:
            self._await_late(attempt.run_id)
        if not self.clock.manual:
            self._stamp_sent(delivery)
        try:
            rules = self.faults.decide(_context(delivery)) if self.faults.rules else []
            timeout = delivery.prepared.timeout_seconds
            if rules:
                injected = send_with_faults(delivery.prepared.send, self.clock, timeout, rules)
                # A duplicate rule adds copies (marked injected) to a delivery it leaves as is.
                attempt.injected = any(rule.action != "duplicate" for rule in rules)
            else:
                result = delivery.prepared.send(timeout)
                injected = Injected(result, outcome_of(result))
        except Exception as exc:  # a bug of ours: record the attempt rather than lose it
            self._note_error(exc, f"job {attempt.job_id}: attempt {attempt.attempt} not sent")
            detail = f"EMULATOR_ERROR. The emulator failed while delivering: {exc!r}."
            injected = Injected(TransportResult(), Outcome("UNKNOWN", detail, None))
        return injected

    def _stamp_sent(self, delivery: _Delivery) -> None:
        """The attempt leaves now (system clock): its start is this instant, not the one at
        which it was queued; log AttemptStarted with it."""
        # No lock: Engine.stop reads ``sent`` under it and waits for the attempt's end anyway.
        delivery.sent = True
        delivery.attempt.start_time = self.clock.now()
        if self.attempt_log is not None:
            job = self._job_or_none(delivery.attempt.job)
            self.attempt_log.started(delivery.attempt, job.target_type if job else "HTTP")

    def _finish(self, delivery: _Delivery, injected: Injected) -> list[_Delivery]:
        """Record the end of ``delivery`` once (a second call, after :meth:`stop` recorded it
        as interrupted, does nothing); return the follow-up deliveries."""
        with self._idle:
            if delivery.ended:
                return []
            delivery.ended = True
            if self.clock.manual:
                follow_ups = self._carry_out(self._ended(delivery, injected))
            else:  # the end may be committed a few ms later, with others (Store.deferred)
                with self.store.deferred():
                    follow_ups = self._carry_out(self._ended(delivery, injected))
            if delivery in self._outstanding:
                if self._pool is not None:
                    self._outstanding.update(follow_ups)
                self._outstanding.discard(delivery)
                self._idle.notify_all()
            return follow_ups

    def _ended(self, delivery: _Delivery, injected: Injected) -> list[Decision]:
        """Record the end of an attempt (lock held); return the core's decisions."""
        attempt = delivery.attempt
        job = self._job_or_none(attempt.job)
        self._record_end(attempt, injected.outcome, injected.result, injected, job)
        for copy in injected.copies:
            self._record_copy(job, attempt, copy)
        if injected.late is not None and self.clock.manual:  # noted when the clock idles
            self._late.append((attempt, injected.late, delivery.prepared.timeout_seconds))
            self._overlaps[attempt.run_id] = 1
        assert attempt.end_time is not None
        end = AttemptEnd(
            injected.outcome.code,
            _status(injected.outcome),
            attempt.end_time,
            injected.extra_retry,
            injected.outcome.http_status in delivery.prepared.retry_always,
        )
        decisions = self.core.attempt_ended(attempt.job, attempt.run_id, end, self.clock.now())
        if job is not None:
            self._save_state(attempt.job)
        return decisions

    def _record_end(
        self,
        attempt: Attempt,
        outcome: Outcome,
        result: TransportResult,
        injected: Injected | None = None,
        job: Job | None = None,
    ) -> None:
        now = self.clock.now()
        latency = injected.latency_seconds if injected is not None else 0.0
        attempt.end_time = now + timedelta(seconds=latency) if latency else now
        attempt.response_status = outcome.http_status
        attempt.code = outcome.code
        attempt.debug_info = outcome.debug_info
        attempt.response_excerpt, attempt.response_content_type = (
            result.excerpt,
            result.content_type,
        )
        attempt.exception = result.exception
        self.store.finish_attempt(attempt)
        if self.attempt_log is not None:
            self.attempt_log.finished(attempt, job.target_type if job else "HTTP")

    def _record_copy(self, job: Job | None, original: Attempt, result: TransportResult) -> None:
        """Record a duplicate delivery of ``original`` (fault injection)."""
        copy = replace(original, id=0, injected=True, end_time=None, code=None)
        self.store.add_attempt(copy)
        kind = job.target_type if job else "HTTP"
        if self.attempt_log is not None:
            self.attempt_log.started(copy, kind)
        outcome = outcome_of(result)
        copy.end_time = self.clock.now()
        copy.response_status, copy.code = outcome.http_status, outcome.code
        copy.debug_info = "Injected duplicate delivery. " + outcome.debug_info
        copy.response_excerpt, copy.response_content_type = result.excerpt, result.content_type
        self.store.finish_attempt(copy)
        if self.attempt_log is not None:
            self.attempt_log.finished(copy, kind)

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

    # ---------------------------------------------------------------- helpers

    def _note_error(self, exc: BaseException, what: str) -> None:
        self.error_count += 1
        self.last_error = exc
        logger.error("%s: %s", what, exc, exc_info=logger.isEnabledFor(logging.DEBUG))

    def _job_or_none(self, name: str) -> Job | None:
        """The job's configuration (for its target kind), without copying its view."""
        return self.core.config(name)

    def _save_state(self, name: str) -> None:
        """Persist the output-only fields attempts change (cheap: no JSON encoding)."""
        state, status, last_attempt_time = self.core.state_of(name)
        self.store.save_job_state(name, state, status, last_attempt_time)


#: The debug text of an attempt found in flight at start-up. The request may have reached the
#: target, and been answered, before the process died: the run is retried under its config, as
#: Cloud Scheduler's at-least-once delivery allows (spec §9.3).
_RESTARTED_DETAIL = (
    "Emulator restarted. The emulator stopped before this attempt's answer was recorded; the "
    "target may have received and answered it."
)

#: Decisions of one due batch recorded per store transaction (system clock).
_SLICE = 200
#: Ends of attempts recorded per hold of the engine lock (system clock).
_ENDS = 256
#: Seconds :meth:`Engine.stop` gives the ends thread to record the ends queued when the stop's
#: own time is up (they are a few ms of work).
_ENDER_GRACE_SECONDS = 0.5
_STOPPED = classify_failure(Failure.RESTARTED, "The emulator stopped before the attempt was sent.")
_INTERRUPTED = classify_failure(
    Failure.RESTARTED, "The emulator stopped while the attempt was in flight."
)


_OK_STATUS = Status()


def _status(outcome: Outcome) -> Status:
    """The job status an attempt's outcome leaves (§12)."""
    return _OK_STATUS if outcome.ok else Status(outcome.code_number, outcome.debug_info)


def _context(delivery: _Delivery) -> AttemptContext:
    """What fault rules match an attempt on."""
    attempt = delivery.attempt
    return AttemptContext(
        attempt.job_id, delivery.run_number, attempt.schedule_time, attempt.attempt
    )


def _unsent(job: Job) -> Prepared:
    """What an attempt that could not be prepared records as its request."""
    record: dict[str, Any] = {"targetType": log_target_type(job.target_type)}
    if job.pubsub_target is not None:  # where it would have gone, as a prepared record says
        record["pubsubTopic"] = job.pubsub_target.topic_name
    if job.http_target is not None:
        method = job.http_target.http_method
        record |= {"method": getattr(method, "name", "POST"), "url": job.http_target.uri}
    return Prepared(record, 0.0, lambda timeout: TransportResult())
