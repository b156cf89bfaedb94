"""The run-once guard's protocol, on every store: per run key, a completed run answers 200
without running, one in progress under an unexpired lease 409, and a retryable failure frees
the key for the retry.

Every test takes the ``store`` fixture, so it runs on a SQLite file and on Firestore (the
emulator). Leases are driven by a manual clock: nothing sleeps.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from datetime import timedelta
from typing import Any

import pytest

from scheduler_emulator import ManualClock
from scheduler_emulator.service import (
    Attempt,
    ClaimOutcome,
    MissingRunHeadersError,
    RunInProgressError,
    RunOnceGuard,
    RunStatus,
    RunStore,
)

from .guard_support import SCHEDULE_TIME, raw_fields, scheduler_headers

LOGGER = "scheduler_emulator.service.guard"
HEADERS = scheduler_headers()
KEY = hashlib.sha256(f"nightly/{SCHEDULE_TIME}".encode()).hexdigest()
LEASE = timedelta(minutes=5)


class Work:
    """A run's work that counts its calls; raises ``error`` when given one."""

    def __init__(self, result: Any = "done", error: BaseException | None = None) -> None:
        self.calls = 0
        self.result = result
        self.error = error

    def __call__(self) -> Any:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.result


def messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    """The guard's log lines at exactly ``level``."""
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


class TestFirstDelivery:
    def test_first_delivery_claims_the_run_and_runs_the_work(self, guard: RunOnceGuard) -> None:
        work = Work("swept")

        result = guard.run(HEADERS, work)

        assert (result.ran, result.value, work.calls) == (True, "swept", 1)
        assert result.attempt.outcome is ClaimOutcome.CLAIMED

    def test_successful_work_marks_the_record_completed_under_its_attempt_id(
        self, guard: RunOnceGuard, store: RunStore
    ) -> None:
        result = guard.run(HEADERS, Work())

        record = store.get(KEY)
        assert record is not None
        assert record.status is RunStatus.COMPLETED
        assert record.attempt_id == result.attempt.attempt_id
        assert len(record.attempt_id) == 32 and int(record.attempt_id, 16) >= 0  # uuid4().hex

    def test_a_claim_writes_in_progress_with_lease_and_ttl_from_the_clock(
        self, store: RunStore, clock: ManualClock
    ) -> None:
        guard = RunOnceGuard(
            store, lease=timedelta(minutes=10), retention=timedelta(hours=2), clock=clock.now
        )

        attempt = guard.claim(HEADERS)

        record = store.get(KEY)
        assert record is not None
        assert record.status is RunStatus.IN_PROGRESS
        assert record.attempt_id == attempt.attempt_id
        assert record.lease_expires == clock.now() + timedelta(minutes=10)
        assert record.expire_at == clock.now() + timedelta(hours=2)
        assert record.run == f"nightly/{SCHEDULE_TIME}"

    def test_the_ttl_field_is_named_expire_at_in_the_store(
        self, guard: RunOnceGuard, store: RunStore, clock: ManualClock
    ) -> None:
        guard.claim(HEADERS)

        fields = raw_fields(store, KEY)

        assert fields is not None
        assert {"status", "attempt_id", "lease_expires", "expire_at"} <= set(fields)
        assert fields["status"] == "in_progress"
        expire_at = fields["expire_at"]
        if isinstance(expire_at, str):  # SQLite: ISO 8601 UTC text
            assert expire_at == (clock.now() + timedelta(days=1)).isoformat(timespec="microseconds")
        else:  # Firestore: a timestamp, so that a TTL policy can use it
            assert expire_at == clock.now() + timedelta(days=1)


class TestDuplicates:
    def test_duplicate_of_a_completed_run_answers_without_running_the_work(
        self, guard: RunOnceGuard
    ) -> None:
        first, again = Work(), Work()
        guard.run(HEADERS, first)

        result = guard.run(HEADERS, again)

        assert (result.ran, result.value, again.calls) == (False, None, 0)
        assert result.attempt.outcome is ClaimOutcome.COMPLETED

    def test_duplicate_of_a_completed_run_is_logged_at_info(
        self, guard: RunOnceGuard, caplog: pytest.LogCaptureFixture
    ) -> None:
        guard.run(HEADERS, Work())
        caplog.set_level(logging.INFO, LOGGER)

        guard.run(HEADERS, Work())

        assert messages(caplog, logging.INFO) == [
            f"Job 'nightly' run {SCHEDULE_TIME} already completed; answered 200 without running "
            "it again (a duplicate delivery)."
        ]

    def test_a_completed_run_stays_completed_after_its_lease(
        self, guard: RunOnceGuard, clock: ManualClock
    ) -> None:
        guard.run(HEADERS, Work())
        clock.advance(timedelta(hours=6))
        again = Work()

        assert guard.run(HEADERS, again).ran is False
        assert again.calls == 0

    def test_full_resource_name_and_short_name_are_the_same_run(self, guard: RunOnceGuard) -> None:
        guard.run(
            scheduler_headers("projects/my-project/locations/us-central1/jobs/nightly"), Work()
        )

        assert guard.run(scheduler_headers("nightly"), Work()).ran is False

    def test_header_names_in_any_case_are_the_same_run(self, guard: RunOnceGuard) -> None:
        guard.run(HEADERS, Work())
        http2 = {name.lower(): value for name, value in HEADERS.items()}

        assert guard.run(http2, Work()).ran is False


class TestInProgress:
    def test_run_in_progress_with_a_live_lease_is_refused_with_409(
        self, guard: RunOnceGuard
    ) -> None:
        holder = guard.claim(HEADERS)
        work = Work()

        with pytest.raises(RunInProgressError) as refused:
            guard.run(HEADERS, work)

        assert work.calls == 0
        assert refused.value.status == 409
        assert refused.value.record.attempt_id == holder.attempt_id
        assert refused.value.response().status == 409  # never 503

    def test_run_in_progress_is_logged_at_warning(
        self, guard: RunOnceGuard, clock: ManualClock, caplog: pytest.LogCaptureFixture
    ) -> None:
        holder = guard.claim(HEADERS)
        caplog.set_level(logging.INFO, LOGGER)

        with pytest.raises(RunInProgressError):
            guard.run(HEADERS, Work())

        until = (clock.now() + LEASE).isoformat()
        assert messages(caplog, logging.WARNING) == [
            f"Job 'nightly' run {SCHEDULE_TIME} is in progress in attempt {holder.attempt_id}, "
            f"whose lease runs until {until}; answered 409 so that Cloud Scheduler retries."
        ]

    def test_a_refused_attempt_leaves_the_holders_record_alone(
        self, guard: RunOnceGuard, store: RunStore
    ) -> None:
        holder = guard.claim(HEADERS)
        before = store.get(KEY)

        with pytest.raises(RunInProgressError):
            guard.run(HEADERS, Work())

        assert store.get(KEY) == before
        assert holder.complete() is True

    def test_the_lease_still_holds_one_microsecond_before_it_expires(
        self, guard: RunOnceGuard, clock: ManualClock
    ) -> None:
        guard.claim(HEADERS)
        clock.advance(LEASE - timedelta(microseconds=1))

        with pytest.raises(RunInProgressError):
            guard.run(HEADERS, Work())


class TestExpiredLease:
    def test_expired_lease_lets_a_new_attempt_claim_and_run(
        self, guard: RunOnceGuard, store: RunStore, clock: ManualClock
    ) -> None:
        crashed = guard.claim(HEADERS)
        clock.advance(LEASE)
        work = Work()

        result = guard.run(HEADERS, work)

        assert (result.ran, work.calls) == (True, 1)
        assert result.attempt.claim.previous is not None
        assert result.attempt.claim.previous.attempt_id == crashed.attempt_id
        record = store.get(KEY)
        assert record is not None
        assert (record.status, record.attempt_id) == (
            RunStatus.COMPLETED,
            result.attempt.attempt_id,
        )

    def test_taking_over_an_expired_lease_is_logged_at_warning(
        self, guard: RunOnceGuard, clock: ManualClock, caplog: pytest.LogCaptureFixture
    ) -> None:
        crashed = guard.claim(HEADERS)
        clock.advance(LEASE + timedelta(seconds=1))

        taker = guard.claim(HEADERS)

        expired = (clock.now() - timedelta(seconds=1)).isoformat()
        assert messages(caplog, logging.WARNING) == [
            f"Job 'nightly' run {SCHEDULE_TIME}: the lease of attempt {crashed.attempt_id} ran "
            f"out at {expired} before it finished; attempt {taker.attempt_id} takes the run "
            "over. If that attempt is still working, the work runs twice: make the lease longer "
            "than the work takes."
        ]


class TestFailure:
    def test_failing_work_deletes_the_record_and_re_raises(
        self, guard: RunOnceGuard, store: RunStore
    ) -> None:
        boom = RuntimeError("downstream unavailable")

        with pytest.raises(RuntimeError) as raised:
            guard.run(HEADERS, Work(error=boom))

        assert raised.value is boom
        assert store.get(KEY) is None

    def test_a_retry_after_a_failure_runs_at_once(self, guard: RunOnceGuard) -> None:
        with pytest.raises(RuntimeError):
            guard.run(HEADERS, Work(error=RuntimeError("first attempt fails")))
        retry = Work("second attempt")

        result = guard.run(HEADERS, retry)

        assert (result.ran, result.value, retry.calls) == (True, "second attempt", 1)

    def test_a_released_claim_is_logged_at_info(
        self, guard: RunOnceGuard, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, LOGGER)

        with pytest.raises(RuntimeError):
            guard.run(HEADERS, Work(error=RuntimeError("boom")))

        [line] = messages(caplog, logging.INFO)
        assert line.startswith(f"Job 'nightly' run {SCHEDULE_TIME} failed in attempt ")
        assert line.endswith("; its claim is released so that a retry can run it.")

    def test_work_judged_unsuccessful_releases_the_claim(
        self, guard: RunOnceGuard, store: RunStore
    ) -> None:
        result = guard.run(HEADERS, Work(503), succeeded=lambda status: status < 300)

        assert (result.ran, result.value) == (True, 503)
        assert store.get(KEY) is None


class TestAttemptId:
    @staticmethod
    def stale_and_current(guard: RunOnceGuard, clock: ManualClock) -> tuple[Attempt, Attempt]:
        """A claim whose lease ran out and the claim a retry then took over the run with."""
        stale = guard.claim(HEADERS)
        clock.advance(LEASE)
        return stale, guard.claim(HEADERS)

    @pytest.mark.parametrize("finish", ["complete", "release"])
    def test_a_stale_attempt_cannot_finish_someone_elses_claim(
        self, guard: RunOnceGuard, store: RunStore, clock: ManualClock, finish: str
    ) -> None:
        stale, current = self.stale_and_current(guard, clock)

        assert getattr(stale, finish)() is False
        record = store.get(KEY)
        assert record is not None
        assert (record.status, record.attempt_id) == (RunStatus.IN_PROGRESS, current.attempt_id)

    def test_the_current_attempt_still_completes_after_a_stale_one_tried(
        self, guard: RunOnceGuard, store: RunStore, clock: ManualClock
    ) -> None:
        stale, current = self.stale_and_current(guard, clock)
        stale.complete()

        assert current.complete() is True
        record = store.get(KEY)
        assert record is not None and record.status is RunStatus.COMPLETED

    def test_finishing_after_losing_the_claim_answers_as_the_work_did_and_warns(
        self,
        guard: RunOnceGuard,
        store: RunStore,
        clock: ManualClock,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        taken_over: list[str] = []

        def slow_work() -> str:
            clock.advance(LEASE)  # the work outlives its lease; a retry takes the run over
            taken_over.append(guard.claim(HEADERS).attempt_id)
            return "done late"

        result = guard.run(HEADERS, slow_work)

        assert (result.ran, result.value) == (True, "done late")
        record = store.get(KEY)
        assert record is not None
        assert (record.status, record.attempt_id) == (RunStatus.IN_PROGRESS, taken_over[0])
        assert any(
            "completed in attempt" in line and "after its lease ran out" in line
            for line in messages(caplog, logging.WARNING)
        )

    def test_a_failure_after_losing_the_claim_leaves_the_new_record(
        self, guard: RunOnceGuard, store: RunStore, clock: ManualClock
    ) -> None:
        def slow_failing_work() -> None:
            clock.advance(LEASE)
            guard.claim(HEADERS)
            raise RuntimeError("late failure")

        with pytest.raises(RuntimeError):
            guard.run(HEADERS, slow_failing_work)

        record = store.get(KEY)
        assert record is not None and record.status is RunStatus.IN_PROGRESS


class TestMissingHeaders:
    @pytest.mark.parametrize(
        ("headers", "missing"),
        [
            pytest.param(
                scheduler_headers(schedule_time=None),
                ("X-CloudScheduler-ScheduleTime",),
                id="no-schedule-time",
            ),
            pytest.param(
                {"X-CloudScheduler-ScheduleTime": SCHEDULE_TIME},
                ("X-CloudScheduler-JobName",),
                id="no-job-name",
            ),
            pytest.param(
                {}, ("X-CloudScheduler-JobName", "X-CloudScheduler-ScheduleTime"), id="neither"
            ),
            pytest.param(
                scheduler_headers(schedule_time="  "),
                ("X-CloudScheduler-ScheduleTime",),
                id="blank-schedule-time",
            ),
            pytest.param(
                scheduler_headers("projects/my-project/locations/l/jobs/"),
                ("X-CloudScheduler-JobName",),
                id="resource-name-without-job",
            ),
        ],
    )
    def test_missing_headers_are_refused_with_400_without_running(
        self,
        guard: RunOnceGuard,
        headers: dict[str, str],
        missing: tuple[str, ...],
    ) -> None:
        work = Work()

        with pytest.raises(MissingRunHeadersError) as refused:
            guard.run(headers, work)

        assert work.calls == 0
        assert refused.value.missing == missing
        assert refused.value.status == 400
        assert refused.value.response().status == 400

    def test_a_missing_header_is_logged_at_warning_naming_it(
        self, guard: RunOnceGuard, caplog: pytest.LogCaptureFixture
    ) -> None:
        with pytest.raises(MissingRunHeadersError):
            guard.run(scheduler_headers(schedule_time=None), Work())

        assert messages(caplog, logging.WARNING) == [
            "Run-once guard refused to run it (a delivery is answered 400): The "
            "X-CloudScheduler-ScheduleTime header is missing, "
            "so the run-once guard cannot tell which scheduled run this is. Cloud Scheduler sends "
            "X-CloudScheduler-ScheduleTime only for unix-cron schedules: a job with an "
            'English-like schedule ("every 5 minutes") sends none, so the guard refuses every one '
            'of its deliveries. Give the job a unix-cron schedule ("*/5 * * * *") to guard it.'
        ]


class TestKeys:
    def test_the_key_is_the_sha256_of_job_name_and_raw_schedule_time(
        self, guard: RunOnceGuard, store: RunStore
    ) -> None:
        attempt = guard.claim(scheduler_headers("projects/my-project/locations/l/jobs/nightly"))

        assert attempt.run.key == KEY
        assert store.get(KEY) is not None

    def test_different_schedule_times_are_different_runs(self, guard: RunOnceGuard) -> None:
        first, second = Work(), Work()

        guard.run(scheduler_headers(schedule_time="2026-09-24T02:00:00Z"), first)
        guard.run(scheduler_headers(schedule_time="2026-09-25T02:00:00Z"), second)

        assert (first.calls, second.calls) == (1, 1)

    def test_different_jobs_at_one_schedule_time_are_different_runs(
        self, guard: RunOnceGuard
    ) -> None:
        guard.run(scheduler_headers("nightly"), Work())

        assert guard.run(scheduler_headers("weekly"), Work()).ran is True

    def test_scope_separates_projects_sharing_a_job_id(
        self, store: RunStore, clock: ManualClock
    ) -> None:
        one = RunOnceGuard(store, scope="project-one/us-central1", clock=clock.now)
        two = RunOnceGuard(store, scope="project-two/us-central1", clock=clock.now)

        ran = [one.run(HEADERS, Work()).ran, two.run(HEADERS, Work()).ran]

        assert ran == [True, True]
        assert one.run(HEADERS, Work()).ran is False
        text = f"project-one/us-central1/nightly/{SCHEDULE_TIME}"
        assert one.run_for(HEADERS).key == hashlib.sha256(text.encode()).hexdigest()

    def test_a_scoped_guard_and_an_unscoped_one_do_not_share_runs(
        self, store: RunStore, clock: ManualClock
    ) -> None:
        RunOnceGuard(store, clock=clock.now).run(HEADERS, Work())

        scoped = RunOnceGuard(store, scope="p/l", clock=clock.now)

        assert scoped.run(HEADERS, Work()).ran is True


class TestConcurrentThreads:
    def test_threads_delivering_one_run_at_once_run_it_once(
        self, guard: RunOnceGuard, request: pytest.FixtureRequest
    ) -> None:
        if request.node.callspec.params.get("store") == "firestore":
            # Six claims of one document at once can still fail on the Firestore emulator on a
            # busy machine despite the claims' backoff ('409 Transaction lock timeout', CI, once
            # in three runs). The claim rule itself is the same function the SQLite store runs.
            pytest.skip(
                "not run on the Firestore emulator: six transactions on one document at once "
                "time out there on a busy machine; test_guard_processes runs Firestore claims"
            )
        threads_count = 6
        start = threading.Barrier(threads_count, timeout=30)
        finish = threading.Event()
        ran = threading.Semaphore(0)
        outcomes: list[str] = []
        done = threading.Condition()

        def work() -> None:
            ran.release()
            assert finish.wait(30), "the test never let the work finish"

        def deliver() -> None:
            start.wait()
            try:
                guard.run(HEADERS, work)
                outcome = "ran"
            except RunInProgressError:
                outcome = "409"
            with done:
                outcomes.append(outcome)
                done.notify_all()

        threads = [threading.Thread(target=deliver) for _ in range(threads_count)]
        for thread in threads:
            thread.start()
        with done:
            refused = done.wait_for(lambda: len(outcomes) == threads_count - 1, timeout=60)
        finish.set()
        for thread in threads:
            thread.join(timeout=60)

        assert refused, f"expected {threads_count - 1} refusals, got {outcomes}"
        assert sorted(outcomes) == ["409"] * (threads_count - 1) + ["ran"]
        assert ran.acquire(blocking=False) and not ran.acquire(blocking=False)
