"""Apply the faults a :class:`~scheduler_emulator.core.faults.FaultPlan` chose to one delivery.

The engine hands :func:`send_with_faults` a function that sends the attempt once and the rules
that fired; this module calls it and returns what the engine must record: the outcome of the
attempt itself, extra (duplicate) deliveries, latency to add, whether the run earns an extra
retry (lost acknowledgement) and, for ``deadline``, the request still running in the background,
which :class:`LateAnswers` keeps until its answer is noted on its attempt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from ..core.faults import FaultRule
from ..domain.attempts import Attempt
from ..domain.outcomes import Failure, Outcome, classify_failure, classify_status
from ._clock import Clock
from ._transports import TransportResult

#: Sends one attempt given its deadline in seconds.
Send = Callable[[float], TransportResult]


def outcome_of(result: TransportResult) -> Outcome:
    """Classify a transport result; a result carrying its own outcome (a
    Pub/Sub publish) keeps it."""
    if result.outcome is not None:
        return result.outcome
    if result.status is not None:
        return classify_status(result.status)
    assert result.failure is not None
    return classify_failure(result.failure, result.detail)


@dataclass
class LateResponse:
    """A request the ``deadline`` fault left running after its attempt counted as timed out."""

    thread: threading.Thread
    result: list[TransportResult] = field(default_factory=list)

    def wait(self, timeout: float) -> TransportResult | None:
        """Wait up to ``timeout`` real seconds; return the target's answer, if it came."""
        self.thread.join(timeout)
        return self.result[0] if self.result else None


@dataclass
class Injected:
    """What happened to one attempt under faults.

    :param result: what the transport saw for the attempt itself (or the injected one).
    :param outcome: the attempt's outcome as Cloud Scheduler records it.
    :param latency_seconds: added to the attempt's end time (``delay``).
    :param copies: results of the duplicate deliveries, in sending order.
    :param extra_retry: the run gets one retry even if its retry config allows none.
    :param late: the request still running after a ``deadline`` fault.
    """

    result: TransportResult
    outcome: Outcome
    latency_seconds: float = 0.0
    copies: list[TransportResult] = field(default_factory=list)
    extra_retry: bool = False
    late: LateResponse | None = None


def _first(rules: Sequence[FaultRule], action: str) -> FaultRule | None:
    return next((rule for rule in rules if rule.action == action), None)


def _send_all(send: Send, timeout: float, count: int) -> list[TransportResult]:
    """Send ``count`` copies of the attempt at the same time; results in start order."""
    results: list[TransportResult | None] = [None] * count
    start = threading.Barrier(count)

    def send_one(index: int) -> None:
        start.wait()
        results[index] = send(timeout)

    threads = [threading.Thread(target=send_one, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [r if r is not None else TransportResult(failure=Failure.CONNECTION) for r in results]


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
    status_rule = _first(rules, "status")
    if status_rule is not None:
        result = TransportResult(status=status_rule.status)
        outcome = outcome_of(result)
        note = f"{outcome.debug_info} (injected: the target was not called)"
        return Injected(result, Outcome(outcome.code, note, outcome.http_status))
    if _first(rules, "connection_error") is not None:
        result = TransportResult(
            failure=Failure.CONNECTION, detail="Injected: connection refused before sending."
        )
        return Injected(result, outcome_of(result))

    latency = 0.0
    delay = _first(rules, "delay")
    if delay is not None:
        latency = delay.seconds
        if wait_delays:
            clock.wait(clock.now() + timedelta(seconds=delay.seconds), threading.Event())
        if delay.seconds >= timeout_seconds:
            result = TransportResult(
                failure=Failure.DEADLINE,
                detail=f"Injected: {delay.seconds:g} s of latency exceeds the attempt deadline.",
            )
            return Injected(result, outcome_of(result), latency_seconds=timeout_seconds)

    duplicate = _first(rules, "duplicate")
    deadline = _first(rules, "deadline")
    copies: list[TransportResult] = []
    late = None
    if deadline is not None:
        answers: list[TransportResult] = []

        def run_late() -> None:
            answers.append(send(timeout_seconds))

        late = LateResponse(threading.Thread(target=run_late, name="late-response", daemon=True))
        late.result = answers
        late.thread.start()
        late.thread.join(deadline.seconds)
        result = TransportResult(
            failure=Failure.DEADLINE,
            detail="Injected: the attempt deadline passed while the target was still "
            "handling the request.",
        )
        latency = max(latency, timeout_seconds)
    elif duplicate is not None and duplicate.concurrent:
        result, *copies = _send_all(send, timeout_seconds, 1 + duplicate.count)
    else:
        result = send(timeout_seconds)
    if duplicate is not None and not duplicate.concurrent:
        copies = [send(timeout_seconds) for _ in range(duplicate.count)]

    outcome = outcome_of(result)
    lost = _first(rules, "lost_ack")
    if lost is not None and deadline is None:
        answered = result.status if result.status is not None else "no answer"
        outcome = Outcome(
            "UNAVAILABLE",
            "URL_UNREACHABLE-UNREACHABLE_LOST_ACK. Injected: the target answered "
            f"{answered} but the response was lost.",
            None,
        )
    return Injected(result, outcome, latency, copies, extra_retry=lost is not None, late=late)


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
        self._late: list[tuple[Attempt, LateResponse, float]] = []
        self._overlaps: dict[int, int] = {}  # run id -> attempts still allowed to overlap

    def add(self, attempt: Attempt, late: LateResponse, timeout_seconds: float) -> None:
        """Keep the request ``late`` that ``attempt`` left running (deadline in seconds)."""
        self._late.append((attempt, late, timeout_seconds))
        self._overlaps[attempt.run_id] = 1

    def before_send(self, run_id: int) -> None:
        """An attempt of ``run_id`` is about to be sent: let it overlap a late request of its
        run once; otherwise wait for those requests and note their answers first."""
        if not self._late:
            return
        pending = [entry for entry in self._late if entry[0].run_id == run_id]
        if not pending:
            return
        if self._overlaps.get(run_id, 0) > 0:
            self._overlaps[run_id] -= 1
            return
        for entry in pending:
            self._late.remove(entry)
            self._finish(entry)

    def settle(self) -> None:
        """The clock is done moving: wait for every late request and note its answer."""
        while self._late:
            self._finish(self._late.pop(0))
        self._overlaps.clear()

    def _finish(self, entry: tuple[Attempt, LateResponse, float]) -> None:
        attempt, late, timeout = entry
        result = late.wait(timeout)
        answer = "no answer" if result is None else outcome_of(result).debug_info
        attempt.debug_info += f" The target's late answer: {answer}"
        self._record(attempt)
