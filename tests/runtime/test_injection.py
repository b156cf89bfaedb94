"""``send_with_faults``: what each fault action does to one delivery, and what the engine is
told to record (outcome, latency, copies, an extra retry, a late response)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_emulator import ManualClock
from scheduler_emulator.core.faults import FaultRule
from scheduler_emulator.domain.outcomes import Failure, Outcome, classify_status
from scheduler_emulator.runtime.delivery.transports import TransportResult
from scheduler_emulator.runtime.pipeline.recorder import outcome_of, send_with_faults

START = datetime(2026, 9, 24, 2, 0, tzinfo=UTC)


class Target:
    """A ``Send``: answers ``status``; counts calls and the deadlines it was given."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.deadlines: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, timeout: float) -> TransportResult:
        with self.lock:
            self.deadlines.append(timeout)
        return TransportResult(status=self.status)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


def test_without_faults_the_attempt_is_sent_once_with_its_deadline(clock: ManualClock) -> None:
    target = Target(200)
    injected = send_with_faults(target, clock, 30.0, [])
    assert target.deadlines == [30.0]
    assert injected.outcome == classify_status(200)
    assert (injected.latency_seconds, injected.copies, injected.extra_retry) == (0.0, [], False)
    assert injected.late is None


def test_status_answers_for_the_target_without_calling_it(clock: ManualClock) -> None:
    target = Target(200)
    injected = send_with_faults(target, clock, 30.0, [FaultRule("status", status=503)])
    assert target.deadlines == []
    assert injected.result.status == 503
    assert injected.outcome.code == "UNAVAILABLE" and injected.outcome.http_status == 503
    assert injected.outcome.debug_info.endswith("(injected: the target was not called)")


def test_connection_error_fails_before_sending(clock: ManualClock) -> None:
    target = Target(200)
    injected = send_with_faults(target, clock, 30.0, [FaultRule("connection_error")])
    assert target.deadlines == []
    assert injected.result.failure is Failure.CONNECTION
    assert injected.outcome.code == "UNAVAILABLE" and injected.outcome.http_status is None
    assert "Injected: connection refused" in injected.outcome.debug_info


def test_a_delay_within_the_deadline_adds_latency_and_still_sends(clock: ManualClock) -> None:
    target = Target(200)
    injected = send_with_faults(target, clock, 30.0, [FaultRule("delay", seconds=12.5)])
    assert target.deadlines == [30.0]
    assert injected.latency_seconds == 12.5
    assert injected.outcome.code == "OK"
    assert clock.now() == START  # on a manual clock the latency is recorded, not waited


def test_a_delay_past_the_deadline_is_a_deadline_exceeded_without_sending(
    clock: ManualClock,
) -> None:
    target = Target(200)
    injected = send_with_faults(target, clock, 10.0, [FaultRule("delay", seconds=15)])
    assert target.deadlines == []
    assert injected.outcome.code == "DEADLINE_EXCEEDED"
    assert injected.latency_seconds == 10.0  # the attempt ends at its deadline
    assert "15 s of latency exceeds the attempt deadline" in injected.outcome.debug_info


def test_duplicate_sends_the_copies_after_the_attempt(clock: ManualClock) -> None:
    target = Target(200)
    injected = send_with_faults(target, clock, 30.0, [FaultRule("duplicate", count=2)])
    assert target.deadlines == [30.0, 30.0, 30.0]
    assert [copy.status for copy, _, _ in injected.copies] == [200, 200]
    assert injected.outcome.code == "OK"


def test_concurrent_duplicates_are_in_the_target_at_the_same_time(clock: ManualClock) -> None:
    together = threading.Barrier(3, timeout=10)  # broken (an error) unless all three meet

    def send(timeout: float) -> TransportResult:
        together.wait()
        return TransportResult(status=200)

    rule = FaultRule("duplicate", count=2, concurrent=True)
    injected = send_with_faults(send, clock, 30.0, [rule])
    assert injected.result.status == 200 and len(injected.copies) == 2


def test_concurrent_duplicates_of_a_deadline_fault_are_sent_beside_it(clock: ManualClock) -> None:
    """Trial 95: with a ``deadline`` rule the concurrent copies were never sent."""
    together = threading.Barrier(3, timeout=10)  # the attempt and both copies, at once

    def send(timeout: float) -> TransportResult:
        together.wait()
        return TransportResult(status=200)

    rules = [FaultRule("deadline", seconds=5), FaultRule("duplicate", count=2, concurrent=True)]
    injected = send_with_faults(send, clock, 30.0, rules)
    assert [copy.status for copy, _, _ in injected.copies] == [200, 200]
    assert injected.outcome.code == "DEADLINE_EXCEEDED" and injected.late is not None
    assert injected.late.wait(10) == TransportResult(status=200)


def test_each_concurrent_copy_ends_when_its_own_answer_came() -> None:
    class ThreadClock:  # each thread reads the instant its own send set: no race between them
        def __init__(self) -> None:
            self.at: dict[int, datetime] = {}

        def now(self) -> datetime:
            return self.at.get(threading.get_ident(), START)

    clock, calls, lock = ThreadClock(), [], threading.Lock()

    def send(timeout: float) -> TransportResult:
        with lock:
            calls.append(None)
            k = len(calls)  # the k-th to be sent answers 200 + k, k seconds in
        clock.at[threading.get_ident()] = START + timedelta(seconds=k)
        return TransportResult(status=200 + k)

    rule = FaultRule("duplicate", count=3, concurrent=True)
    injected = send_with_faults(send, clock, 30.0, [rule])  # type: ignore[arg-type]
    answered = [(r.status, end) for r, _, end in injected.copies]
    assert answered == [(s, START + timedelta(seconds=s - 200)) for s, _ in answered]
    assert len({end for _, end in answered}) == 3
    assert injected.answered == START + timedelta(seconds=injected.result.status - 200)


def test_a_lost_acknowledgement_fails_the_attempt_and_earns_a_retry(clock: ManualClock) -> None:
    target = Target(200)
    injected = send_with_faults(target, clock, 30.0, [FaultRule("lost_ack")])
    assert target.deadlines == [30.0]  # the target did get the request
    assert injected.result.status == 200
    assert injected.outcome == Outcome(
        "UNAVAILABLE",
        "URL_UNREACHABLE-UNREACHABLE_LOST_ACK. Injected: the target answered 200 but the "
        "response was lost.",
        None,
    )
    assert injected.extra_retry is True


def test_a_lost_acknowledgement_needs_an_answer_to_lose(clock: ManualClock) -> None:
    """A trial: with nothing listening, the attempt read "the target answered no answer but
    the response was lost" and earned a retry beyond its config."""

    def refused(timeout: float) -> TransportResult:
        return TransportResult(failure=Failure.CONNECTION, detail="Connection refused.")

    injected = send_with_faults(refused, clock, 30.0, [FaultRule("lost_ack")])
    assert injected.outcome == outcome_of(refused(30.0))  # the real failure, as it is
    assert injected.extra_retry is False
    published = TransportResult(outcome=Outcome("OK", "Published.", None))  # a Pub/Sub answer
    lost = send_with_faults(lambda timeout: published, clock, 30.0, [FaultRule("lost_ack")])
    assert lost.outcome.debug_info.endswith(
        "Injected: the target answered OK but the response was lost."
    )
    assert lost.extra_retry is True


def test_deadline_times_the_attempt_out_and_keeps_the_late_response(clock: ManualClock) -> None:
    release = threading.Event()

    def slow(timeout: float) -> TransportResult:
        assert release.wait(10), "the test never released the handler"
        return TransportResult(status=200)

    injected = send_with_faults(slow, clock, 30.0, [FaultRule("deadline", seconds=0.05)])
    try:
        assert injected.result.failure is Failure.DEADLINE
        assert injected.outcome.code == "DEADLINE_EXCEEDED"
        assert injected.latency_seconds == 30.0
        assert injected.late is not None
        assert injected.late.wait(0.01) is None  # still running
    finally:
        release.set()
    late = injected.late.wait(10)
    assert late is not None and late.status == 200


def test_outcome_of_keeps_an_outcome_the_target_kind_chose_itself() -> None:
    published = Outcome("OK", "Published.", None)
    assert outcome_of(TransportResult(outcome=published, status=500)) is published
    assert outcome_of(TransportResult(status=500)).code == "INTERNAL"
    assert outcome_of(TransportResult(failure=Failure.DEADLINE)).code == "DEADLINE_EXCEEDED"
