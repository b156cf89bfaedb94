"""The recorder: carries out the scheduler core's decisions and records every attempt.

It owns the engine lock, the store and the execution log. It never sends on its own and never
asks which clock runs: a driver (:mod:`~scheduler_emulator.runtime._drivers`) decides when and
in which thread each :class:`Delivery` is sent, then hands its end back to :meth:`Recorder.ended`.
One attempt passes through it twice:

1. :meth:`Recorder.carry_out` (lock held) persists the core's decisions; for a
   :class:`~scheduler_emulator.core.scheduler.StartAttempt` it persists the run, asks the
   dispatcher of the job's target kind to prepare the attempt (looked up once; a failure to
   prepare is recorded on the attempt), and records the attempt as started — before anything
   is sent, so a crash loses nothing. It returns the deliveries to send.
2. :meth:`Recorder.send` (no lock) sends one delivery through the fault plan (the threaded
   driver uses :meth:`Recorder.start`, which holds no thread while the target answers);
   :meth:`Recorder.ended` (lock held) records its end, logs it, and returns the core's next
   decisions (a retry, the run's end, a delayed run) for the driver to carry out.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from ..core.faults import AttemptContext, FaultPlan, FaultRule
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
from ..domain.outcomes import Failure, Outcome, classify_failure
from ..domain.resources import Job, Status
from ._attempt_log import AttemptLog, log_target_type
from ._clock import Clock
from ._dispatchers import Dispatcher, NotDispatched, Prepared, dispatcher_for
from ._injection import Injected, outcome_of, send_with_faults
from ._store import Store
from ._transports import TransportResult

logger = logging.getLogger("scheduler_emulator")


@dataclass(eq=False)
class Delivery:
    """An attempt that has been recorded as started and must now be sent.

    :param attempt: the attempt as recorded.
    :param prepared: its request, deadline and sender.
    :param run_number: the run's number (fault rules match on it).
    :param target_type: the job's target kind (``"HTTP"``, ``"PUBSUB"``…), looked up once.
    :ivar sent: it has left (threaded driver: its ``start_time`` is then).
    :ivar ended: its end is recorded (by the sender, or by a stop for an attempt still in
        flight), so that it is recorded once.
    """

    attempt: Attempt
    prepared: Prepared
    run_number: int
    target_type: str
    sent: bool = False
    ended: bool = False


class Recorder:
    """Carries out the core's decisions and records attempts; see the module docstring.

    :param core: the scheduler core.
    :param clock: the clock (read for instants only).
    :param store: where jobs, runs and attempts are kept.
    :param dispatchers: the dispatcher of each target kind (the engine's dict, shared).
    :param attempt_log: the execution log, or ``None``.
    :param faults: the fault plan.
    """

    def __init__(
        self,
        core: Scheduler,
        clock: Clock,
        store: Store,
        dispatchers: dict[str, Dispatcher],
        attempt_log: AttemptLog | None,
        faults: FaultPlan,
    ) -> None:
        self.core = core
        self.clock = clock
        self.store = store
        self.dispatchers = dispatchers  # the engine's own dict: changes to it count
        self.attempt_log = attempt_log
        self.faults = faults
        #: The engine lock: the core, the store and the log change only under it.
        self.lock = threading.RLock()
        #: Emulator errors while preparing or sending attempts, counted (each is recorded on
        #: its attempt and logged once); the last one is kept for inspection.
        self.error_count = 0
        self.last_error: BaseException | None = None

    # ---------------------------------------------------------------- decisions

    def carry_out(self, decisions: Sequence[Decision]) -> list[Delivery]:
        """Persist the core's decisions (lock held); return the attempts to send, each already
        recorded as started. An attempt that cannot be prepared is recorded as failed here and
        its outcome goes back to the core."""
        if not decisions:
            return []
        deliveries: list[Delivery] = []
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

    def _start(self, decision: StartAttempt) -> tuple[Delivery | None, list[Decision]]:
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
            self.note_error(exc, f"job {job.job_id}: attempt {run.attempts} not prepared")
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
        delivery = Delivery(attempt, prepared, run.number, job.target_type)
        if failure is None:
            return delivery, []  # AttemptStarted is logged by the driver (log_started)
        self.log_started(delivery)
        return None, self.ended(delivery, Injected(TransportResult(), failure))

    # ---------------------------------------------------------------- sending

    def sent_now(self, delivery: Delivery) -> None:
        """The attempt leaves now (threaded driver): its start is this instant, not the one at
        which it was queued (stored, so a reader sees the same start in flight and after);
        log AttemptStarted with it. No lock: a stop reads ``sent`` under it and waits for the
        attempt's end anyway."""
        delivery.sent = True
        delivery.attempt.start_time = self.clock.now()
        self.store.mark_sent(delivery.attempt)
        self.log_started(delivery)

    def log_started(self, delivery: Delivery) -> None:
        """Log AttemptStarted for ``delivery``: when it is recorded (a manual clock's attempts
        leave at that instant) or when it leaves (:meth:`sent_now`), as the driver knows."""
        if self.attempt_log is not None:
            self.attempt_log.started(delivery.attempt, delivery.target_type)

    def send(self, delivery: Delivery) -> Injected:
        """Send one attempt (no lock held) through the fault plan; return what happened. An
        injected ``delay`` is virtual: recorded as latency, not waited out."""
        return self._send(delivery, self._rules(delivery), wait_delays=False)

    def start(self, delivery: Delivery, done: Callable[[Injected], None]) -> None:
        """Send one attempt (no lock held) and call ``done`` once with what happened: without
        holding this thread when no fault rule applies and the attempt can begin that way
        (:attr:`~scheduler_emulator.runtime._dispatchers.Prepared.start`: ``done`` is then
        called on another thread, when the target answers); otherwise as :meth:`send`, in this
        thread, before returning, an injected ``delay`` waited out in real time."""
        rules = self._rules(delivery)
        start = delivery.prepared.start
        if not rules and start is not None:
            try:
                if start(
                    delivery.prepared.timeout_seconds,
                    lambda result: done(Injected(result, outcome_of(result))),
                ):
                    return
            except Exception as exc:  # a bug of ours: record the attempt rather than lose it
                done(self._failed(delivery, exc))
                return
        done(self._send(delivery, rules, wait_delays=True))

    def _rules(self, delivery: Delivery) -> list[FaultRule]:
        """The fault rules that fire for this attempt (decided once per attempt)."""
        return self.faults.decide(_context(delivery)) if self.faults.rules else []

    def _send(self, delivery: Delivery, rules: list[FaultRule], *, wait_delays: bool) -> Injected:
        attempt = delivery.attempt
        try:
            timeout = delivery.prepared.timeout_seconds
            if rules:
                injected = send_with_faults(
                    delivery.prepared.send,
                    self.clock,
                    timeout,
                    rules,
                    wait_delays=wait_delays,
                )
                # A duplicate rule adds copies (marked injected) to a delivery it leaves as is.
                attempt.injected = any(rule.action != "duplicate" for rule in rules)
            else:
                result = delivery.prepared.send(timeout)
                injected = Injected(result, outcome_of(result))
        except Exception as exc:  # a bug of ours: record the attempt rather than lose it
            injected = self._failed(delivery, exc)
        return injected

    def _failed(self, delivery: Delivery, exc: Exception) -> Injected:
        """Note an emulator error while sending; what the attempt records."""
        attempt = delivery.attempt
        self.note_error(exc, f"job {attempt.job_id}: attempt {attempt.attempt} not sent")
        detail = f"EMULATOR_ERROR. The emulator failed while delivering: {exc!r}."
        return Injected(TransportResult(), Outcome("UNKNOWN", detail, None))

    # ---------------------------------------------------------------- ends

    def ended(self, delivery: Delivery, injected: Injected) -> list[Decision]:
        """Record the end of an attempt (lock held); return the core's decisions."""
        attempt = delivery.attempt
        kind = delivery.target_type
        self.record_end(attempt, injected.outcome, injected.result, kind, injected)
        for copy in injected.copies:
            self._record_copy(kind, attempt, copy)
        assert attempt.end_time is not None
        end = AttemptEnd(
            injected.outcome.code,
            _status(injected.outcome),
            attempt.end_time,
            injected.extra_retry,
            injected.outcome.http_status in delivery.prepared.retry_always,
            attempt.attempt,
            attempt.start_time if delivery.sent else None,
        )
        decisions = self.core.attempt_ended(attempt.job, attempt.run_id, end, self.clock.now())
        if self.core.has(attempt.job):
            self.save_state(attempt.job)
        return decisions

    def record_end(
        self,
        attempt: Attempt,
        outcome: Outcome,
        result: TransportResult,
        kind: str,
        injected: Injected | None = None,
    ) -> None:
        """Record ``attempt``'s end now (plus any injected latency) and log it."""
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
            self.attempt_log.finished(attempt, kind)

    def _record_copy(self, kind: str, original: Attempt, result: TransportResult) -> None:
        """Record a duplicate delivery of ``original`` (fault injection)."""
        copy = replace(original, id=0, injected=True, end_time=None, code=None)
        self.store.add_attempt(copy)
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

    # ---------------------------------------------------------------- restarts

    def restore(self) -> list[Delivery]:
        """Load the stored jobs after a restart and resume open runs (lock held); return the
        attempts to send. An attempt found in flight is recorded as failed (``UNAVAILABLE``,
        emulator restarted) and its run retried under the job's retry config."""
        now = self.clock.now()
        alive = self.store.last_alive()
        in_flight = {a.run_id: a for a in self.store.attempts(unfinished=True)}
        decisions, orphans = self.core.restore(
            self.store.load_jobs(),
            self.store.open_runs(),
            set(in_flight),
            now,
            self.store.last_run_id(),
            self.store.next_fires(),
            self.store.last_skipped(),
            alive=alive,
            ran=self.store.ran_at_next_fire(alive),
        )
        for run in orphans:
            run.finished = True
            self.store.save_run(run)
        restarted = classify_failure(Failure.RESTARTED, _RESTARTED_DETAIL)
        for attempt in in_flight.values():
            job = self.core.config(attempt.job)
            kind = job.target_type if job is not None else "HTTP"
            self.record_end(attempt, restarted, TransportResult(), kind)
            if job is not None:
                end = AttemptEnd(restarted.code, _status(restarted), attempt.end_time or now)
                decisions.extend(self.core.attempt_ended(attempt.job, attempt.run_id, end, now))
        deliveries = self.carry_out(decisions)
        for job in self.core.jobs():
            self.save_state(job.name)
        return deliveries

    # ---------------------------------------------------------------- helpers

    def note_error(self, exc: BaseException, what: str) -> None:
        """Count and log an emulator error (the attempt it concerns records it too)."""
        self.error_count += 1
        self.last_error = exc
        logger.error("%s: %s", what, exc, exc_info=logger.isEnabledFor(logging.DEBUG))

    def save_state(self, name: str) -> None:
        """Persist the output-only fields attempts change (cheap: no JSON encoding)."""
        state, status, last_attempt_time = self.core.state_of(name)
        self.store.save_job_state(name, state, status, last_attempt_time)


#: The debug text of an attempt found in flight at start-up. The request may have reached the
#: target, and been answered, before the process died: the run is retried under its config, as
#: Cloud Scheduler's at-least-once delivery allows.
_RESTARTED_DETAIL = (
    "Emulator restarted. The emulator stopped before this attempt's answer was recorded; the "
    "target may have received and answered it."
)
#: The outcome of an attempt recorded but not sent because the emulator stopped.
STOPPED = classify_failure(Failure.RESTARTED, "The emulator stopped before the attempt was sent.")
#: The outcome of an attempt still in flight when the emulator stopped.
INTERRUPTED = classify_failure(
    Failure.RESTARTED, "The emulator stopped while the attempt was in flight."
)
_OK_STATUS = Status()


def _status(outcome: Outcome) -> Status:
    """The job status an attempt's outcome leaves."""
    return _OK_STATUS if outcome.ok else Status(outcome.code_number, outcome.debug_info)


def _context(delivery: Delivery) -> AttemptContext:
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
