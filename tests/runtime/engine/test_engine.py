"""The execution model on a manual clock: firing, headers, retries, overlap, skips, RunJob,
pause/resume and the output-only fields, as Google documents them and, where it does not, as
our pinned rules in docs/differences-from-production.md say."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest

from scheduler_emulator import Emulator, ManualClock
from scheduler_emulator.domain.errors import AlreadyExists, FailedPrecondition, NotFound
from scheduler_emulator.domain.outcomes import Failure
from scheduler_emulator.domain.resources import State, Status
from scheduler_emulator.runtime import DeliveryRequest, TransportResult, WsgiTransport
from tests.support import TARGET, Received, RecordingTarget, assert_delivered, nightly_job


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def starts(emulator: Emulator, job: str | None = None) -> list[str]:
    return [a.start_time.strftime("%H:%M:%S") for a in emulator.attempts(job)]


@pytest.fixture
def failing_nightly(emulator: Emulator, target: RecordingTarget) -> None:
    """The nightly job (02:00 UTC, retry count 3) created on ``emulator``, its target answering
    500 to every attempt."""
    target.status = 500
    emulator.create_job(nightly_job())


class TestFiring:
    def test_nightly_job_posts_once_with_the_scheduler_headers(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=2))
        assert len(target.requests) == 1
        request = target.requests[0]
        assert_delivered(request, "2026-09-24T02:00:00Z")
        assert "Content-Type" not in request.headers
        [attempt] = emulator.attempts()
        assert (attempt.attempt, attempt.code, attempt.response_status) == (1, "OK", 200)
        assert attempt.start_time == at("2026-09-24T02:00:00Z")

    def test_nothing_fires_before_the_scheduled_minute(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(seconds=59))
        assert target.requests == []
        emulator.advance(timedelta(seconds=1))
        assert len(target.requests) == 1

    def test_a_week_of_nightly_runs_sends_seven_schedule_times(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(days=7))
        assert [r.headers["X-Cloudscheduler-Scheduletime"] for r in target.requests] == [
            f"2026-09-{day}T02:00:00Z" for day in range(24, 31)
        ]

    def test_schedule_time_header_carries_the_job_zone_offset(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(nightly_job(schedule="0 22 * * *", timeZone="America/Los_Angeles"))
        emulator.advance(timedelta(days=1))
        assert target.requests[0].headers["X-Cloudscheduler-Scheduletime"] == (
            "2026-09-23T22:00:00-07:00"
        )
        assert emulator.attempts()[0].start_time == at("2026-09-24T05:00:00Z")

    def test_fall_back_overlap_fires_twice_with_distinct_offsets(
        self, target: RecordingTarget
    ) -> None:
        emu = Emulator(ManualClock(at("2026-10-31T12:00:00Z")), transport=WsgiTransport(target))
        emu.create_job(nightly_job(schedule="30 1 * * *", timeZone="America/New_York"))
        emu.advance(timedelta(days=2))
        assert [r.headers["X-Cloudscheduler-Scheduletime"] for r in target.requests] == [
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-02T01:30:00-05:00",
        ]

    def test_english_like_schedule_sends_no_schedule_time(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(nightly_job(schedule="every 5 minutes"))
        emulator.advance(timedelta(minutes=11))
        assert len(target.requests) == 2
        assert all("X-Cloudscheduler-Scheduletime" not in r.headers for r in target.requests)

    def test_body_and_default_content_type_reach_the_target(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(
            nightly_job(httpTarget={"uri": TARGET, "httpMethod": "PUT", "body": "eyJrIjoxfQ=="})
        )
        emulator.advance(timedelta(minutes=1))
        [request] = target.requests
        assert (request.method, request.body) == ("PUT", b'{"k":1}')
        assert request.headers["Content-Type"] == "application/octet-stream"


class TestRetries:
    @pytest.mark.usefixtures("failing_nightly")
    def test_retry_count_three_gives_four_attempts_five_ten_twenty_apart(
        self, emulator: Emulator
    ) -> None:
        emulator.advance(timedelta(minutes=2))
        attempts = emulator.attempts()
        assert starts(emulator) == ["02:00:00", "02:00:05", "02:00:15", "02:00:35"]
        assert [a.attempt for a in attempts] == [1, 2, 3, 4]
        assert {a.code for a in attempts} == {"INTERNAL"}
        assert {a.schedule_time for a in attempts} == {"2026-09-24T02:00:00Z"}
        emulator.move_to(at("2026-09-24T03:00:00Z"))
        assert len(emulator.attempts()) == 4

    def test_documented_backoff_example_with_a_retry_duration(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        target.status = 503
        retry = {
            "minBackoffDuration": "10s",
            "maxBackoffDuration": "300s",
            "maxDoublings": 3,
            "maxRetryDuration": "1200s",
        }
        emulator.create_job(nightly_job(retryConfig=retry))
        emulator.advance(timedelta(hours=1))
        offsets = [
            (a.start_time - at("2026-09-24T02:00:00Z")).total_seconds() for a in emulator.attempts()
        ]
        assert offsets == [0, 10, 30, 70, 150, 310, 550, 850, 1150, 1450]

    def test_success_ends_the_run(self, emulator: Emulator, target: RecordingTarget) -> None:
        target.status = lambda r: 500 if len(target.requests) == 1 else 200
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=5))
        assert [a.code for a in emulator.attempts()] == ["INTERNAL", "OK"]

    def test_no_retry_by_default(self, emulator: Emulator, target: RecordingTarget) -> None:
        target.status = 404
        emulator.create_job(nightly_job(retryConfig={}))
        emulator.advance(timedelta(hours=1))
        assert [a.code for a in emulator.attempts()] == ["NOT_FOUND"]

    def test_backoff_counts_from_the_end_of_the_failed_attempt(
        self, clock: ManualClock, target: RecordingTarget
    ) -> None:
        class SlowTransport(WsgiTransport):
            def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
                clock._now += timedelta(seconds=7)  # the attempt takes 7 virtual seconds
                return TransportResult(status=500)

        emu = Emulator(clock, transport=SlowTransport(target))
        emu.create_job(nightly_job(retryConfig={"retryCount": 1}))
        emu.advance(timedelta(minutes=5))
        first, second = emu.attempts()
        assert first.end_time == at("2026-09-24T02:00:07Z")
        assert second.start_time == at("2026-09-24T02:00:12Z")

    @pytest.mark.parametrize(
        ("failure", "code"),
        [(Failure.CONNECTION, "UNAVAILABLE"), (Failure.DEADLINE, "DEADLINE_EXCEEDED")],
    )
    def test_failures_without_response_are_retried(
        self, clock: ManualClock, target: RecordingTarget, failure: Failure, code: str
    ) -> None:
        class Failing(WsgiTransport):
            def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
                return TransportResult(failure=failure, detail="boom")

        emu = Emulator(clock, transport=Failing(target))
        emu.create_job(nightly_job(retryConfig={"retryCount": 1}))
        emu.advance(timedelta(minutes=5))
        assert [(a.code, a.response_status) for a in emu.attempts()] == [(code, None)] * 2


class TestOverlapAndSkips:
    def test_missed_times_give_one_delayed_run_and_are_otherwise_skipped(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        # every minute; the first run fails for 4.5 minutes of retries
        def answer(request: Received) -> int:
            first_run = request.headers["X-Cloudscheduler-Scheduletime"].endswith("02:00:00Z")
            return 500 if first_run else 200

        target.status = answer
        retry = {"retryCount": 5, "minBackoffDuration": "30s", "maxDoublings": 0}
        emulator.create_job(nightly_job(schedule="* * * * *", retryConfig=retry))
        emulator.move_to(at("2026-09-24T02:09:30Z"))
        runs = [
            (a.schedule_time[11:19], a.start_time.strftime("%H:%M:%S")) for a in emulator.attempts()
        ]
        # first run: 02:00:00 + 30, 60, 90, 120, 150 s → ends at 02:07:30
        assert runs[:6] == [
            ("02:00:00", t)
            for t in ["02:00:00", "02:00:30", "02:01:30", "02:03:00", "02:05:00", "02:07:30"]
        ]
        # the earliest missed time runs as soon as the first run ends; 02:08 and 02:09 on time
        assert runs[6:] == [
            ("02:01:00", "02:07:30"),
            ("02:08:00", "02:08:00"),
            ("02:09:00", "02:09:00"),
        ]
        skipped = [s.schedule_time for s in emulator.skipped_runs("nightly")]
        assert skipped == [f"2026-09-24T02:0{m}:00Z" for m in range(2, 8)]

    def test_two_runs_of_one_job_are_never_outstanding(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        target.status = 500
        retry = {"retryCount": 5, "minBackoffDuration": "20s"}
        emulator.create_job(nightly_job(schedule="* * * * *", retryConfig=retry))
        emulator.advance(timedelta(minutes=30))
        attempts = emulator.attempts()
        for earlier, later in zip(attempts, attempts[1:], strict=False):
            if later.run_id != earlier.run_id:
                assert later.attempt == 1
                assert earlier.end_time is not None and earlier.end_time <= later.start_time
        ids = [a.run_id for a in attempts]
        assert ids == sorted(ids)


class TestRunJob:
    def test_force_run_dispatches_now_with_the_next_schedule_time(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(nightly_job())
        emulator.run_job("nightly")
        [request] = target.requests
        assert request.headers["X-Cloudscheduler-Scheduletime"] == "2026-09-24T02:00:00Z"
        [attempt] = emulator.attempts()
        assert attempt.forced and attempt.start_time == at("2026-09-24T01:59:00Z")

    def test_force_run_works_on_a_paused_job_and_keeps_it_paused(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(nightly_job())
        emulator.pause_job("nightly")
        job = emulator.run_job("nightly")
        assert len(target.requests) == 1
        assert job.state == State.PAUSED
        assert emulator.get_job("nightly").state == State.PAUSED

    @pytest.mark.usefixtures("failing_nightly")
    def test_force_run_bypasses_a_run_in_progress(self, emulator: Emulator) -> None:
        emulator.advance(timedelta(minutes=1, seconds=1))  # first attempt failed, retry pending
        emulator.run_job("nightly")
        assert [a.forced for a in emulator.attempts()] == [False, True]

    def test_a_run_accepted_during_a_clock_move_is_sent_at_the_instant_it_was_recorded(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        # (a RunJob served while another client's move was at 02:00 was sent at the next
        # due instant, 02:20, its attempt lasting 20 virtual minutes)
        def answer(received: Received) -> int:
            if received.path == "/_triggers/timer/nightly" and len(target.requests) == 1:
                emulator.run_job("forced", wait=False)  # as the daemon's RunJob does
            return 200

        target.status = answer
        emulator.create_job(nightly_job(schedule="*/20 2 * * *"))
        emulator.create_job(
            nightly_job(name="forced", schedule="0 9 * * *", httpTarget={"uri": f"{TARGET}/f"})
        )
        emulator.advance(timedelta(hours=1))
        [attempt] = emulator.attempts("forced")
        assert attempt.start_time == attempt.end_time == at("2026-09-24T02:00:00Z")

    def test_runs_accepted_behind_a_forced_run_being_sent_count_as_in_flight(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """Trial 200: a stop said "0 attempt(s) in flight or queued" with one waiting."""
        held = threading.Event()
        target.status = lambda received: 200 if held.wait(30) else 500
        emulator.create_job(nightly_job())
        emulator.run_job("nightly", wait=False)
        with target.arrived:
            target.arrived.wait_for(lambda: target.requests, 30)
        emulator.run_job("nightly", wait=False)
        assert emulator.in_flight == 2  # the one being sent, the one accepted behind it
        held.set()
        emulator.advance(0)  # sends what waits first
        assert (emulator.in_flight, [a.code for a in emulator.attempts()]) == (0, ["OK", "OK"])

    def test_an_attempt_queued_at_the_instant_is_not_sent_once_its_job_is_deleted(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        """(Trial 199's bug, on a manual clock: the attempts due at one instant wait behind
        the one being sent, and a DeleteJob meanwhile left them to be sent.)"""

        def answer(received: Received) -> int:
            if received.path == "/_triggers/timer/nightly":
                emulator.delete_job("later")  # as another client's DeleteJob would
            return 200

        target.status = answer
        emulator.create_job(nightly_job())
        emulator.create_job(nightly_job(name="later", httpTarget={"uri": f"{TARGET}/later"}))
        emulator.advance(timedelta(minutes=2))
        assert [r.path for r in target.requests] == ["/_triggers/timer/nightly"]
        [attempt] = emulator.attempts("later")
        assert attempt.code == "CANCELLED" and "job was deleted before" in attempt.debug_info

    def test_force_run_of_a_missing_job_is_not_found(self, emulator: Emulator) -> None:
        with pytest.raises(NotFound, match="Job not found."):
            emulator.run_job("nope")


class TestStateMachine:
    def test_paused_job_does_not_fire_and_resume_does_not_backfill(
        self, emulator: Emulator, target: RecordingTarget
    ) -> None:
        emulator.create_job(nightly_job())
        paused = emulator.pause_job("nightly")
        assert paused.state == State.PAUSED and paused.schedule_time is None
        emulator.advance(timedelta(days=1))
        assert target.requests == []
        resumed = emulator.resume_job("nightly")
        assert resumed.schedule_time == at("2026-09-25T02:00:00Z")
        emulator.advance(timedelta(days=1))
        assert len(target.requests) == 1

    @pytest.mark.usefixtures("failing_nightly")
    def test_pause_drops_pending_retries(self, emulator: Emulator) -> None:
        emulator.advance(timedelta(minutes=1, seconds=1))
        emulator.pause_job("nightly")
        emulator.advance(timedelta(hours=1))
        assert len(emulator.attempts()) == 1

    def test_pause_of_a_paused_job_is_a_failed_precondition(self, emulator: Emulator) -> None:
        emulator.create_job(nightly_job())
        emulator.pause_job("nightly")
        with pytest.raises(FailedPrecondition, match="is PAUSED; only an ENABLED job"):
            emulator.pause_job("nightly")

    def test_resume_of_an_enabled_job_is_a_failed_precondition(self, emulator: Emulator) -> None:
        emulator.create_job(nightly_job())
        with pytest.raises(FailedPrecondition, match="is ENABLED; only a PAUSED job"):
            emulator.resume_job("nightly")

    def test_create_twice_is_already_exists(self, emulator: Emulator) -> None:
        emulator.create_job(nightly_job())
        with pytest.raises(AlreadyExists) as info:
            emulator.create_job(nightly_job())
        assert info.value.message == (
            "Job projects/my-project/locations/us-central1/jobs/nightly already exists."
        )

    def test_deleted_job_stops_firing(self, emulator: Emulator, target: RecordingTarget) -> None:
        emulator.create_job(nightly_job(schedule="* * * * *"))
        emulator.advance(timedelta(minutes=2))
        emulator.delete_job("nightly")
        emulator.advance(timedelta(minutes=5))
        assert len(target.requests) == 2
        with pytest.raises(NotFound):
            emulator.get_job("nightly")


class TestOutputFields:
    def test_new_job_has_schedule_time_and_no_status(self, emulator: Emulator) -> None:
        job = emulator.create_job(nightly_job())
        assert job.state == State.ENABLED
        assert job.schedule_time == at("2026-09-24T02:00:00Z")
        assert job.status is None and job.last_attempt_time is None
        assert job.user_update_time == at("2026-09-24T01:59:00Z")

    @pytest.mark.usefixtures("failing_nightly")
    def test_failed_attempt_shows_retry_time_and_failure_status(self, emulator: Emulator) -> None:
        emulator.advance(timedelta(minutes=1))
        job = emulator.get_job("nightly")
        assert job.status == Status(
            13, "URL_UNREACHABLE-UNREACHABLE_5xx. Original HTTP response code number = 500"
        )
        assert job.last_attempt_time == at("2026-09-24T02:00:00Z")
        assert job.schedule_time == at("2026-09-24T02:00:05Z")
        emulator.advance(timedelta(minutes=1))
        assert emulator.get_job("nightly").schedule_time == at("2026-09-25T02:00:00Z")

    def test_successful_attempt_gives_an_ok_status(self, emulator: Emulator) -> None:
        emulator.create_job(nightly_job())
        emulator.advance(timedelta(minutes=1))
        job = emulator.get_job("nightly")
        assert job.status == Status()
        assert job.schedule_time == at("2026-09-25T02:00:00Z")
