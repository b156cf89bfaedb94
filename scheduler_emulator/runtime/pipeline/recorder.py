"""The attempt pipeline: carries out the scheduler core's decisions and records every attempt.

It owns the engine lock, the store and the execution log. A driver
(:mod:`~scheduler_emulator.runtime.pipeline.drivers`) decides when and in which thread an
attempt is sent, calling these steps in order (docs/architecture.md follows one attempt):

1. :meth:`Recorder.carry_out` (lock held) persists the core's decisions; for a
   :class:`~scheduler_emulator.core.scheduler.StartAttempt` the dispatcher of the job's target
   kind prepares the attempt (a failure to prepare is recorded on it), and the run and the
   attempt as started are committed (one ``Store.save``) before anything is sent, so a crash
   loses nothing. It returns the deliveries to send.
2. :meth:`Recorder.send` (no lock) sends one in this thread; :meth:`Recorder.begin` (the
   threaded driver) begins it without holding a thread when no fault rule applies and the
   transport can start it, and writes the start of one that waited in the pool's queue anew.
   Fault rules wrap the send of every target kind alike (:func:`send_with_faults`).
3. :meth:`Recorder.finish` (lock held) classifies the result (:func:`outcome_of`), completes
   the attempt's row, logs it, and carries out the core's decisions (the job's state, a
   retry, the run's end, a delayed run) with step 1.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any, cast

from ...core.faults import AttemptContext, FaultPlan, FaultRule
from ...core.scheduler import (
    SLOW_ATTEMPT,
    AttemptEnd,
    Decision,
    RecordSkipped,
    SaveRun,
    Scheduler,
    StartAttempt,
)
from ...domain.attempts import DUPLICATE_NOTE, EMULATOR_DOWN, Attempt
from ...domain.outcomes import Failure, Outcome, classify_failure, classify_status
from ...domain.resources import Job, Status
from ...realtime import real_monotonic
from .._clock import Clock
from ..delivery.dispatchers import Dispatcher, NotDispatched, Prepared
from ..delivery.pubsub import pubsub_record
from ..delivery.transports import StartingTransport, TransportResult
from ..storage.attempt_log import AttemptLog, log_target_type
from ..storage.store import Store

logger = logging.getLogger("scheduler_emulator")

#: Sends one attempt given its deadline in seconds (what :func:`send_with_faults` calls).
Send = Callable[[float], TransportResult]


@dataclass(eq=False)
class Delivery:
    """An attempt that has been recorded as started and must now be sent.

    :param attempt: the attempt as recorded.
    :param prepared: its request, deadline and transport.
    :param run_number: the run's number (fault rules match on it).
    :param target_type: the job's target kind (``"HTTP"``, ``"PUBSUB"``…), looked up once.
    :ivar sent: it has left (the threaded driver's attempts in flight).
    :ivar ended: its end is recorded (by the sender, or a stop while in flight): only once.
    :ivar answered: its end time, when its send ended before its end is recorded (the threaded
        driver records ends after the due batch it is sending).
    """

    attempt: Attempt
    prepared: Prepared
    run_number: int
    target_type: str
    sent: bool = False
    ended: bool = False
    answered: datetime | None = None


class Recorder:
    """Carries out the core's decisions and records attempts; see the module docstring.

    :param clock: the clock (read for instants only).
    :param store: where jobs, runs and attempts are kept.
    :param dispatchers: the dispatcher of each target kind (the engine's dict, shared).
    :param attempt_log: the execution log, or ``None``.
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
        #: Scheduled times the last :meth:`restore` recorded as skipped while it was down,
        #: attempts it found in flight (the process was killed) and recorded as interrupted, and
        #: how many of their runs that ended (their retries spent, or their job gone).
        self.interrupted_at_start = self.gave_up_at_start = 0
        self.skipped_while_down: Counter[str] = Counter()

    def carry_out(self, decisions: Sequence[Decision]) -> list[Delivery]:
        """Persist the core's decisions (lock held); return the attempts to send, each already
        recorded as started. An attempt that cannot be prepared is recorded as failed here and
        its outcome goes back to the core."""
        deliveries: list[Delivery] = []
        pending = deque(decisions)
        while pending:
            decision = pending.popleft()
            if type(decision) is not StartAttempt:  # exact type: decisions are not subclassed
                self.store.save(decision)
                continue
            delivery, failure = self._prepare(decision)
            self.store.save(decision, delivery.attempt)
            if failure is None:
                deliveries.append(delivery)  # AttemptStarted is logged by the driver
            else:
                self.log(delivery.attempt, delivery.target_type)
                pending.extend(self.ended(delivery, Injected(TransportResult(), failure)))
        return deliveries

    def _prepare(self, decision: StartAttempt) -> tuple[Delivery, Outcome | None]:
        """Build the attempt of ``decision``, and the outcome it failed with if not prepared."""
        job, run = decision.job, decision.run
        now = self.clock.now()
        failure: Outcome | None = None
        try:
            dispatcher = self.dispatchers.get(job.target_type)
            if dispatcher is None:
                raise NotDispatched(
                    f"EMULATOR_NOT_DISPATCHED. This emulator does not deliver {job.target_type} "
                    "targets yet; the job is stored and its runs are recorded, but nothing is sent."
                )
            prepared = dispatcher.prepare(job, run.schedule_time, now)
        except NotDispatched as exc:
            prepared, failure = _unsent(job), Outcome("FAILED_PRECONDITION", str(exc), None)
        except Exception as exc:  # a bug of ours or an undeliverable job: record, don't raise
            what = f"job {job.job_id}: attempt {run.attempts} not prepared"
            failure = self.note_error(exc, what, "could not prepare the attempt")
            prepared = _unsent(job)
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
        return Delivery(attempt, prepared, run.number, job.target_type), failure

    def log(self, attempt: Attempt, kind: str, *, finished: bool = False) -> None:
        """Log AttemptStarted (or AttemptFinished) of ``attempt``, a ``kind`` target's. A log
        that cannot take the line (a full disk, a closed stream) stops nothing: the error is
        counted and logged (:meth:`note_error`), and the attempt goes on."""
        log = self.attempt_log
        if log is None:
            return
        try:
            (log.finished if finished else log.started)(attempt, kind)
        except Exception as exc:  # a full disk, a closed stream: the attempts go on
            event = "AttemptFinished" if finished else "AttemptStarted"
            self.note_error(exc, f"job {attempt.job_id}: {event} not logged")
            if isinstance(exc, BrokenPipeError):  # its reader is gone for good: said once, not
                self.attempt_log = None  # a line an attempt on stderr (trial 107: `| jq`)
                logger.error("the execution log's reader went away: no attempt is logged now")

    def begin(self, delivery: Delivery, done: Callable[[Sent], None], *, queued: bool) -> None:
        """Send one attempt (no lock held), logging it as started, and call ``done`` once with
        what happened: the transport's result, on another thread, when no fault rule applies
        and the transport can start it (:attr:`Prepared.startable`); otherwise as :meth:`send`
        in this thread, an injected ``delay`` waited out in real time. An error here (ours) is
        what the attempt records (:meth:`failed`).

        :param queued: it waited in a queue since it was recorded: it starts now, and that
            start is written at once, so a reader sees the same start in flight and after.
        """
        attempt, prepared = delivery.attempt, delivery.prepared
        try:
            if queued:
                attempt.start_time = self.clock.now()
                self.store.mark_sent(attempt)
            delivery.sent = True
            self.log(delivery.attempt, delivery.target_type)
            rules = self._rules(delivery)
            if not rules and prepared.startable:
                starter = cast(StartingTransport, prepared.transport)
                starter.start(prepared.request, prepared.timeout_seconds, done)
                return
        except Exception as exc:  # a bug of ours: record it, not lose it
            done(self.failed(delivery, exc))
            return
        done(self.send(delivery, rules, wait_delays=True))

    def _rules(self, delivery: Delivery) -> list[FaultRule]:
        """The fault rules that fire for this attempt (decided once per attempt)."""
        if not self.faults.rules:
            return []
        attempt, run = delivery.attempt, delivery.run_number
        return self.faults.decide(
            AttemptContext(attempt.job_id, run, attempt.schedule_time, attempt.attempt)
        )

    def send(
        self, delivery: Delivery, rules: list[FaultRule] | None = None, *, wait_delays: bool = False
    ) -> Injected:
        """Send one attempt (no lock held) through the fault rules that fire for it (``rules``,
        if decided already); return what happened. An injected ``delay`` is waited out in
        real time with ``wait_delays``, else only recorded as latency (virtual time)."""
        prepared = delivery.prepared
        send = partial(prepared.transport.send, prepared.request)
        try:
            rules = self._rules(delivery) if rules is None else rules
            injected = send_with_faults(
                send, self.clock, prepared.timeout_seconds, rules, wait_delays=wait_delays
            )
        except Exception as exc:  # a bug of ours: record the attempt rather than lose it
            return self.failed(delivery, exc)
        # A duplicate rule adds copies (marked injected) to a delivery it leaves as is.
        delivery.attempt.injected = any(rule.action != "duplicate" for rule in rules)
        return injected

    def failed(self, delivery: Delivery, exc: Exception) -> Injected:
        """Note an emulator error while sending ``delivery``; return what its attempt records
        (``UNKNOWN``, the error in its debug text)."""
        attempt = delivery.attempt
        what = f"job {attempt.job_id}: attempt {attempt.attempt} not sent"
        return Injected(TransportResult(), self.note_error(exc, what, "failed while delivering"))

    def finish(self, delivery: Delivery, sent: Sent) -> list[Delivery]:
        """Record the end of ``delivery`` once (lock held, see :meth:`ended`) and carry out the
        core's decisions; return the deliveries that follow (a delayed run). A second call (a
        stop recorded it as interrupted meanwhile) does nothing and returns ``[]``."""
        if delivery.ended:
            return []
        delivery.ended = True
        with self.store.batch(whole=True):  # one hand-over: a kill leaves the end with its retry
            return self.carry_out(self.ended(delivery, sent))

    def ended(self, delivery: Delivery, sent: Sent) -> list[Decision]:
        """Classify what the send gave (what :meth:`send` returned, or the transport's result),
        record the end of the attempt (lock held) and return the core's decisions."""
        injected = sent if isinstance(sent, Injected) else Injected(sent, outcome_of(sent))
        attempt, kind, outcome = delivery.attempt, delivery.target_type, injected.outcome
        latency, at = injected.latency_seconds, injected.answered or delivery.answered
        self.record_end(attempt, outcome, injected.result, kind, latency, at)
        for result, begun, ended in injected.copies:
            copy = replace(attempt, id=0, injected=True, start_time=begun, end_time=None, code=None)
            self.store.add_attempt(copy)  # a duplicate delivery (fault injection)
            self.log(copy, kind)
            noted = outcome_of(result)
            noted = replace(noted, debug_info=DUPLICATE_NOTE + noted.debug_info)
            self.record_end(copy, noted, result, kind, at=ended)
        uncounted = outcome.http_status in delivery.prepared.retry_always
        end = _end_of(attempt, outcome, injected.extra_retry, uncounted)
        return self.core.attempt_ended(attempt.job, attempt.run_id, end, self.clock.now())

    def record_end(
        self,
        attempt: Attempt,
        outcome: Outcome,
        result: TransportResult,
        kind: str,
        latency: float = 0.0,
        at: datetime | None = None,
    ) -> None:
        """Record ``attempt``'s end at ``at`` (``None``: now), or ``latency`` seconds after its
        start if later (injected: on a manual clock, virtual seconds that did not pass), and
        log it."""
        now = self.clock.now() if at is None else at
        later = attempt.start_time + timedelta(seconds=latency) if latency else now
        attempt.end_time = max(now, later)
        attempt.response_status = outcome.http_status
        attempt.code = outcome.code
        attempt.debug_info = outcome.debug_info
        attempt.response_excerpt = result.excerpt
        attempt.response_content_type = result.content_type
        self.store.finish_attempt(attempt)
        self.log(attempt, kind, finished=True)

    def restore(self) -> list[Delivery]:
        """Load the stored jobs after a restart and resume open runs (lock held); return the
        attempts to send. An attempt found in flight is recorded as failed (``UNAVAILABLE``,
        emulator restarted) and its run retried under the job's retry config plus one retry
        beyond it (it may never have been sent: delivery is at least once)."""
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
            slow=self.store.slow_jobs(SLOW_ATTEMPT),
        )
        self.interrupted_at_start = len(in_flight)
        self.skipped_while_down = Counter(
            d.skipped.job
            for d in decisions
            if type(d) is RecordSkipped and d.skipped.reason == EMULATOR_DOWN
        )
        for run in orphans:
            run.finished = True
            self.store.save_run(run)
        restarted = classify_failure(
            Failure.RESTARTED,
            "Emulator restarted: the attempt may or may not have reached the target.",
        )
        deliveries = self.carry_out(decisions)
        for attempt in in_flight.values():
            job = self.core.config(attempt.job)
            kind = job.target_type if job is not None else "HTTP"
            with self.store.batch(whole=True):  # (one hand-over, as finish's)
                # ended at the instant decided at: a later end (a system clock moves) would hold
                # the run's retry behind it, unknown to the startup line until the engine runs
                self.record_end(attempt, restarted, TransportResult(), kind, at=now)
                if job is None:
                    self.gave_up_at_start += 1
                    continue
                # at least once: the run earns a retry beyond its config, as a lost ack does
                end = _end_of(attempt, restarted, extra_retry=True)
                ended = self.core.attempt_ended(attempt.job, attempt.run_id, end, now)
                self.gave_up_at_start += any(type(d) is SaveRun and d.run.finished for d in ended)
                deliveries += self.carry_out(ended)
        for job in self.core.jobs():  # the output-only fields attempts change
            self.store.save_job_state(job.name, *self.core.state_of(job.name))
        return deliveries

    def note_error(self, exc: BaseException, what: str, failed: str = "failed") -> Outcome:
        """Count and log an emulator error; return the outcome the attempt it concerns records
        (``UNKNOWN``, ``EMULATOR_ERROR. The emulator <failed>: <the error>.``)."""
        self.error_count += 1
        self.last_error = exc
        logger.error("%s: %s", what, exc, exc_info=logger.isEnabledFor(logging.DEBUG))
        return Outcome("UNKNOWN", f"EMULATOR_ERROR. The emulator {failed}: {exc!r}.", None)


_OK_STATUS = Status()


def _end_of(
    attempt: Attempt, outcome: Outcome, extra_retry: bool, uncounted: bool = False
) -> AttemptEnd:
    """What the core hears of the end of ``attempt`` (recorded already) with ``outcome``."""
    assert attempt.end_time is not None
    status = _OK_STATUS if outcome.ok else Status(outcome.code_number, outcome.debug_info)
    return AttemptEnd(
        outcome.code,
        status,
        attempt.end_time,
        extra_retry,
        uncounted,
        attempt.attempt,
        attempt.start_time,
    )


def _unsent(job: Job) -> Prepared:
    """What an attempt that could not be prepared records as its request."""
    record: dict[str, Any] = {"targetType": log_target_type(job.target_type)}
    if job.pubsub_target is not None:  # what it would have published, as a prepared record says
        record = pubsub_record(job.pubsub_target)
    if job.http_target is not None:
        method = job.http_target.http_method
        record |= {"method": getattr(method, "name", "POST"), "url": job.http_target.uri}
    return Prepared(record, 0.0, _NOTHING_SENT, None)


class _NothingSent:
    """The sender of an attempt that could not be prepared (it is never sent)."""

    def send(self, request: Any, timeout_seconds: float) -> TransportResult:
        return TransportResult()


_NOTHING_SENT = _NothingSent()


def outcome_of(result: TransportResult) -> Outcome:
    """Classify a transport result; a result carrying its own outcome (a
    Pub/Sub publish) keeps it. A status's detail (an in-process app's exception) ends the
    debug text."""
    if result.outcome is not None:
        return result.outcome
    if result.status is not None:
        outcome = classify_status(result.status)
        if not result.detail:
            return outcome
        return replace(outcome, debug_info=f"{outcome.debug_info}. {result.detail}")
    assert result.failure is not None
    return classify_failure(result.failure, result.detail)


class LateResponse:
    """A request the ``deadline`` fault left running after its attempt counted as timed out:
    ``send(timeout_seconds)`` on a thread of its own, started here."""

    def __init__(self, send: Send, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self.result: list[TransportResult] = []
        self.thread = threading.Thread(
            target=lambda: self.result.append(send(timeout_seconds)),
            name="late-response",
            daemon=True,
        )
        self.thread.start()

    def wait(self, timeout: float) -> TransportResult | None:
        """Wait up to ``timeout`` real seconds; return the target's answer, if it came."""
        self.thread.join(timeout)
        return self.result[0] if self.result else None


@dataclass
class Injected:
    """What happened to one attempt under faults.

    :param result: what the transport saw for the attempt itself (or the injected one).
    :param outcome: the attempt's outcome as Cloud Scheduler records it.
    :param latency_seconds: the attempt ends at least this long after its start (a ``delay``,
        a ``deadline``: virtual seconds on a manual clock).
    :param copies: the duplicate deliveries in sending order: each one's result, and when it
        was sent and answered (``clock``'s instants).
    :param answered: when the attempt itself was answered, when copies were sent after it.
    :param extra_retry: the run gets one retry even if its retry config allows none.
    :param late: the request still running after a ``deadline`` fault.
    """

    result: TransportResult
    outcome: Outcome
    latency_seconds: float = 0.0
    copies: list[tuple[TransportResult, datetime, datetime]] = field(default_factory=list)
    extra_retry: bool = False
    late: LateResponse | None = None
    answered: datetime | None = None


#: What the send of one attempt gave: :meth:`Recorder.send`'s, or the transport's own result.
Sent = Injected | TransportResult


def _cut_short(detail: str) -> Injected:
    """What a stop gives an attempt it ends: its run earns one retry beyond its retry config,
    as after a crash (:meth:`Recorder.restore`), since delivery is at least once."""
    return Injected(
        TransportResult(), classify_failure(Failure.RESTARTED, detail), extra_retry=True
    )


#: A stop's end of an attempt recorded but not sent (shared: an Injected is never changed).
STOPPED = _cut_short("The emulator stopped before the attempt was sent.")
#: A stop's end of an attempt still in flight.
INTERRUPTED = _cut_short("The emulator stopped while the attempt was in flight.")
#: The end of an attempt recorded but not sent, whose job was deleted while it waited behind
#: the job's others (trial 199: sent 15 s after DeleteJob).
DELETED = Injected(
    TransportResult(), classify_failure(Failure.DELETED, "The job was deleted before it was sent.")
)


def _send_all(
    send: Send, clock: Clock, timeout: float, count: int
) -> list[tuple[TransportResult, datetime, datetime]]:
    """Send ``count`` copies of the attempt at the same time; each one's result, when they
    were sent and when it was answered (``clock``'s instants), in start order."""
    begun = clock.now()
    results: list[tuple[TransportResult, datetime] | None] = [None] * count
    start = threading.Barrier(count)

    def send_one(index: int) -> None:
        start.wait()
        results[index] = (send(timeout), clock.now())

    threads = [threading.Thread(target=send_one, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    unsent = (TransportResult(failure=Failure.CONNECTION), clock.now())
    answers = (r if r is not None else unsent for r in results)
    return [(result, begun, ended) for result, ended in answers]


def send_with_faults(
    send: Send,
    clock: Clock,
    timeout_seconds: float,
    rules: Sequence[FaultRule],
    *,
    wait_delays: bool = False,
) -> Injected:
    """Deliver one attempt with the faults of ``rules`` applied.

    :param send: sends the attempt once, given the attempt deadline in seconds (any target
        kind: an HTTP request, a Pub/Sub publish…).
    :param timeout_seconds: the attempt deadline.
    :param rules: the rules that fired for this attempt (see ``FaultPlan.decide``).
    :param wait_delays: wait out a ``delay`` on ``clock`` (the threaded driver, real time);
        otherwise the delay only adds to the attempt's recorded latency (virtual time).
    :return: what to record.
    """
    first = {rule.action: rule for rule in reversed(rules)}  # the first rule of each action
    if (status_rule := first.get("status")) is not None:
        result = TransportResult(status=status_rule.status)
        outcome = outcome_of(result)
        note = f"{outcome.debug_info} (injected: the target was not called)"
        return Injected(result, Outcome(outcome.code, note, outcome.http_status))
    if "connection_error" in first:
        result = TransportResult(
            failure=Failure.CONNECTION, detail="Injected: connection refused before sending."
        )
        return Injected(result, outcome_of(result))

    latency = 0.0
    if (delay := first.get("delay")) is not None:
        latency = min(delay.seconds, timeout_seconds)  # the attempt deadline ends it
        if wait_delays:
            clock.wait(clock.now() + timedelta(seconds=latency), threading.Event())
        if delay.seconds >= timeout_seconds:
            result = TransportResult(
                failure=Failure.DEADLINE,
                detail=f"Injected: {delay.seconds:g} s of latency exceeds the attempt deadline.",
            )
            return Injected(result, outcome_of(result), latency_seconds=timeout_seconds)

    duplicate, deadline = first.get("duplicate"), first.get("deadline")
    copies: list[tuple[TransportResult, datetime, datetime]] = []
    late, answered = None, None
    if deadline is not None:
        started = real_monotonic()
        late = LateResponse(send, timeout_seconds)
        if duplicate is not None and duplicate.concurrent:  # beside it (trial 95: never sent)
            copies = _send_all(send, clock, timeout_seconds, duplicate.count)
        late.wait(max(0.0, deadline.seconds - (real_monotonic() - started)))
        result = TransportResult(
            failure=Failure.DEADLINE,
            detail="Injected: the attempt deadline passed before the target's answer counted.",
        )
        latency = max(latency, timeout_seconds)
    elif duplicate is not None and duplicate.concurrent:
        (result, _, answered), *copies = _send_all(
            send, clock, timeout_seconds, 1 + duplicate.count
        )
    else:
        result = send(timeout_seconds)
    if duplicate is not None and not duplicate.concurrent:
        answered = clock.now()
        for _ in range(duplicate.count):  # one after the other, each sent once one is answered
            begun = clock.now()
            copies.append((send(timeout_seconds), begun, clock.now()))

    outcome = outcome_of(result)
    if delay is not None:  # (trial 132: a delay within the deadline went unsaid)
        note = f"{outcome.debug_info} Injected delay: {delay.seconds:g} s before sending."
        outcome = Outcome(outcome.code, note, outcome.http_status)
    # an answer to lose: a status, or a publish's outcome (a refused connection has none, and
    # is recorded as it is, earning no retry beyond the config)
    lost = "lost_ack" in first and result.failure is None
    if lost and deadline is None:
        said = result.status if result.status is not None else outcome.code
        outcome = Outcome(
            "UNAVAILABLE",
            "URL_UNREACHABLE-UNREACHABLE_LOST_ACK. Injected: the target answered "
            f"{said} but the response was lost.",
            None,
        )
    return Injected(result, outcome, latency, copies, lost, late, answered)


class LateAnswers:
    """The requests ``deadline`` faults left running on a manual clock, and when their
    answers are noted on their attempts.

    A ``deadline`` fault lets exactly one later attempt of its run overlap the slow request;
    the next ones wait for it to end (:meth:`before_send`), so the outcome does not depend on
    how far one ``advance`` goes. When the clock is done moving, every late answer is waited
    for and noted (:meth:`settle`).

    :param record: stores an attempt whose debug text gained the late answer.
    """

    def __init__(self, record: Callable[[Attempt], None]) -> None:
        self._record = record
        self._late: list[tuple[Attempt, LateResponse]] = []
        self._overlap: set[int] = set()  # runs whose next attempt may overlap their late ones

    def add(self, attempt: Attempt, late: LateResponse) -> None:
        """Keep the request ``late`` that ``attempt`` left running."""
        self._late.append((attempt, late))
        self._overlap.add(attempt.run_id)

    def before_send(self, run_id: int) -> None:
        """An attempt of ``run_id`` is about to be sent: let it overlap a late request of its
        run once; otherwise wait for those requests and note their answers first."""
        if run_id in self._overlap:  # (a run is in it only while it has late requests)
            self._overlap.remove(run_id)
            return
        for entry in [entry for entry in self._late if entry[0].run_id == run_id]:
            self._late.remove(entry)
            note_late_answer(*entry, self._record)

    def settle(self) -> None:
        """The clock is done moving: wait for every late request and note its answer."""
        while self._late:
            note_late_answer(*self._late.pop(0), self._record)
        self._overlap.clear()


def note_late_answer(
    attempt: Attempt, late: LateResponse, record: Callable[[Attempt], None]
) -> None:
    """Wait for the request a ``deadline`` fault left running (up to its attempt deadline), add
    its answer (or ``no answer``) to the debug text of ``attempt`` (its end recorded already) and
    ``record`` it."""
    result = late.wait(late.timeout_seconds)
    answer = "no answer" if result is None else outcome_of(result).debug_info
    attempt.debug_info += f" The target's late answer: {answer}"
    record(attempt)
