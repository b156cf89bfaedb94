"""The scheduler core on its own: instants and outcomes in, decisions out; no clock, no I/O."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_emulator.core.scheduler import (
    COMPACT_SLACK,
    TIMERS_PER_JOB,
    AttemptEnd,
    Decision,
    RecordSkipped,
    SaveJobState,
    SaveNextFire,
    SaveRun,
    Scheduler,
    StartAttempt,
    Upcoming,
)
from scheduler_emulator.domain.attempts import Run
from scheduler_emulator.domain.errors import AlreadyExists, NotFound
from scheduler_emulator.domain.resources import HttpTarget, Job, RetryConfig, State, Status
from scheduler_emulator.domain.retry import next_attempt_time

T0 = datetime(2026, 9, 24, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
FAILED = Status(13, "INTERNAL")


def job(schedule: str = "*/5 * * * *", **fields: object) -> Job:
    return Job(
        "projects/my-project/locations/l/jobs/tick",
        schedule=schedule,
        http_target=HttpTarget("http://svc.test/"),
        **fields,  # type: ignore[arg-type]
    )


def failed(at: datetime) -> AttemptEnd:
    return AttemptEnd("INTERNAL", FAILED, at)


def ok(at: datetime) -> AttemptEnd:
    return AttemptEnd("OK", Status(), at)


def acted(decisions: list[Decision]) -> list[Decision]:
    """The decisions other than persisting the next fire time."""
    return [d for d in decisions if not isinstance(d, SaveNextFire)]


@pytest.fixture
def core() -> Scheduler:
    return Scheduler()


def test_a_fire_time_gives_one_start_with_the_schedule_time(core: Scheduler) -> None:
    view, decisions = core.put(job(), T0 - timedelta(seconds=1))
    assert decisions == [] and view.schedule_time == T0
    assert core.next_due() == T0
    [start] = acted(core.due(T0))
    assert isinstance(start, StartAttempt) and start.new_run
    assert start.run.schedule_time == "2026-09-24T12:00:00Z" and start.run.attempts == 1
    assert core.next_due() == T0 + timedelta(minutes=5)


def test_the_fourth_retry_of_a_run_is_due_80_s_after_the_third_failure(core: Scheduler) -> None:
    core.put(job(retry_config=RetryConfig(retry_count=5)), T0 - timedelta(seconds=1))
    [start] = acted(core.due(T0))
    now, run = T0, start.run
    for expected_wait in (5, 10, 20, 40):  # from the 5 s minimum, doubling
        end = now + timedelta(seconds=1)  # each attempt takes a second
        state, save = core.attempt_ended(run.job, run.id, failed(end), end)
        assert isinstance(state, SaveJobState) and state.status == failed(end).status
        assert isinstance(save, SaveRun)
        assert run.next_attempt_at == now + timedelta(seconds=1 + expected_wait)
        now = run.next_attempt_at
        [retry] = acted(core.due(now))
        assert isinstance(retry, StartAttempt) and not retry.new_run
    assert run.attempts == 5


def test_success_finishes_the_run(core: Scheduler) -> None:
    core.put(job(), T0 - timedelta(seconds=1))
    [start] = acted(core.due(T0))
    state, save = core.attempt_ended(start.run.job, start.run.id, ok(T0), T0)
    assert isinstance(state, SaveJobState) and state.last_attempt_time == T0
    assert isinstance(save, SaveRun) and save.run.finished


def test_an_attempt_ending_later_than_now_keeps_the_run_outstanding(core: Scheduler) -> None:
    core.put(job(), T0 - timedelta(seconds=1))
    [start] = acted(core.due(T0))
    end = T0 + timedelta(minutes=6)
    [state] = core.attempt_ended(start.run.job, start.run.id, ok(end), T0)  # its status only
    assert isinstance(state, SaveJobState)
    assert acted(core.due(T0 + timedelta(minutes=5))) == []  # 12:05 is missed, not started
    assert core.next_due() == end
    save, delayed = acted(core.due(end))
    assert isinstance(save, SaveRun) and save.run.finished
    assert isinstance(delayed, StartAttempt)
    assert delayed.run.schedule_time == "2026-09-24T12:05:00Z"


def test_a_second_missed_time_is_recorded_as_skipped(core: Scheduler) -> None:
    core.put(job(), T0 - timedelta(seconds=1))
    [start] = acted(core.due(T0))
    assert acted(core.due(T0 + timedelta(minutes=5))) == []
    [skip] = acted(core.due(T0 + timedelta(minutes=10)))
    assert isinstance(skip, RecordSkipped)
    assert skip.skipped.schedule_time == "2026-09-24T12:10:00Z"
    assert start.run.attempts == 1


def test_pausing_records_the_time_owed_a_late_run_as_skipped(core: Scheduler) -> None:
    """Trial 165: a time missed while the run went on (owed a late run as it ends) vanished
    when the job was paused: neither run nor listed as skipped."""
    retry = RetryConfig(retry_count=3, min_backoff_duration=timedelta(minutes=9))
    core.put(job(retry_config=retry), T0 - timedelta(seconds=1))
    [start] = acted(core.due(T0))
    core.attempt_ended(start.run.job, start.run.id, failed(T0), T0)
    assert acted(core.due(T0 + timedelta(minutes=5))) == []  # 12:05 is owed a late run
    paused = core.get(start.run.job)
    now = T0 + timedelta(minutes=6)
    _, decisions = core.put(Job(**{**paused.__dict__, "state": State.PAUSED}), now)
    [skip] = [d for d in decisions if isinstance(d, RecordSkipped)]
    assert skip.skipped.schedule_time == "2026-09-24T12:05:00Z"
    assert skip.skipped.reason == "RUN_STILL_GOING" and skip.skipped.recorded_at == now
    assert core.upcoming(start.run.job).missed is None  # owed nothing now


def test_deleting_records_the_time_owed_a_late_run_as_skipped(core: Scheduler) -> None:
    """Trial 213: a pause recorded it, a delete dropped it unrecorded."""
    retry = RetryConfig(retry_count=3, min_backoff_duration=timedelta(minutes=9))
    core.put(job(retry_config=retry), T0 - timedelta(seconds=1))
    [start] = acted(core.due(T0))
    core.attempt_ended(start.run.job, start.run.id, failed(T0), T0)
    assert acted(core.due(T0 + timedelta(minutes=5))) == []  # 12:05 is owed a late run
    now = T0 + timedelta(minutes=6)
    skip, gave_up = core.remove(start.run.job, now)
    assert isinstance(skip, RecordSkipped) and isinstance(gave_up, SaveRun)
    assert skip.skipped.schedule_time == "2026-09-24T12:05:00Z"
    assert skip.skipped.reason == "RUN_STILL_GOING" and skip.skipped.recorded_at == now


def test_a_forced_run_neither_waits_nor_blocks(core: Scheduler) -> None:
    core.put(job(), T0 - timedelta(seconds=1))
    [scheduled] = acted(core.due(T0))
    [forced] = core.force(scheduled.run.job, T0 + timedelta(seconds=1))
    assert forced.run.forced and forced.run.schedule_time == "2026-09-24T12:05:00Z"


def test_a_forced_runs_retry_is_told_apart_from_the_scheduled_runs(core: Scheduler) -> None:
    """Trial 170: what comes next gave the earliest retry of any run, so the views took a
    forced run's retry for the scheduled run's and dropped the next scheduled time."""
    core.put(job(retry_config=RetryConfig(retry_count=3)), T0 - timedelta(seconds=1))
    [forced] = core.force(job().name, T0)
    core.attempt_ended(job().name, forced.run.id, failed(T0), T0)
    assert core.upcoming(job().name) == Upcoming(T0, None, T0 + timedelta(seconds=5), None)
    [scheduled] = acted(core.due(T0))
    later = T0 + timedelta(seconds=2)
    core.attempt_ended(job().name, scheduled.run.id, failed(later), later)
    assert core.upcoming(job().name) == Upcoming(
        T0 + timedelta(minutes=5), later + timedelta(seconds=5), T0 + timedelta(seconds=5), None
    )
    assert core.get(job().name).schedule_time == later + timedelta(seconds=5)  # the same one


def test_the_jobs_due_next_are_those_of_the_least_instant(core: Scheduler) -> None:
    """Trial 172: the next due instant was said without the jobs due then; the heap's timers
    at its least instant are walked from its top (fire times, a retry; not a later one)."""
    assert core.due_jobs() == []
    for name, schedule in (("b", "*/5 * * * *"), ("a", "*/5 * * * *"), ("c", "0 * * * *")):
        core.put(
            replace(job(schedule), name=f"projects/my-project/locations/l/jobs/{name}"), T0 - MINUTE
        )
    core.put(job("*/5 * * * *", retry_config=RetryConfig(retry_count=3)), T0 - MINUTE)
    jobs = "projects/my-project/locations/l/jobs/"
    assert core.due_jobs() == [jobs + n for n in ("a", "b", "c", "tick")]
    started = [d for d in acted(core.due(T0)) if isinstance(d, StartAttempt)]
    [tick] = [d.run for d in started if d.run.job.endswith("/tick")]
    later = T0 + timedelta(minutes=4, seconds=55)  # its retry is due at 12:05, with a and b
    core.attempt_ended(tick.job, tick.id, failed(later), later)
    assert core.next_due() == T0 + timedelta(minutes=5)
    assert core.due_jobs() == [jobs + n for n in ("a", "b", "tick")]


def test_pausing_drops_a_pending_retry(core: Scheduler) -> None:
    core.put(job(retry_config=RetryConfig(retry_count=3)), T0 - timedelta(seconds=1))
    [start] = acted(core.due(T0))
    core.attempt_ended(start.run.job, start.run.id, failed(T0), T0)
    paused = core.get(start.run.job)
    _, decisions = core.put(Job(**{**paused.__dict__, "state": State.PAUSED}), T0)
    assert [type(d) for d in decisions] == [SaveRun] and start.run.finished
    assert acted(core.due(T0 + timedelta(hours=1))) == []


def test_create_twice_and_unknown_jobs(core: Scheduler) -> None:
    core.put(job(), T0)
    with pytest.raises(AlreadyExists):
        core.put(job(), T0, create=True)
    with pytest.raises(NotFound):
        core.force("projects/my-project/locations/l/jobs/none", T0)


def test_stale_timers_do_not_pile_up(core: Scheduler) -> None:
    last = T0 + timedelta(minutes=4999)
    for minute in range(5000):  # 5,000 updates, each leaving a stale fire timer
        core.put(job(), T0 + timedelta(minutes=minute))
    assert core.timer_count <= TIMERS_PER_JOB * 1 + COMPACT_SLACK + 1
    assert core.timer_count < 5000
    assert core.next_due() == last + timedelta(minutes=1)  # */5 after 12:00 + 4999 min


@pytest.mark.parametrize(
    ("code", "may_run", "extra", "expected"),
    [
        ("INTERNAL", True, False, T0 + timedelta(seconds=5)),
        ("OK", True, False, None),
        ("INTERNAL", False, False, None),  # paused and not forced
    ],
)
def test_next_attempt_time(
    code: str, may_run: bool, extra: bool, expected: datetime | None
) -> None:
    when, _ = next_attempt_time(
        RetryConfig(retry_count=1),
        code=code,
        attempts_made=1,
        first_attempt_start=T0,
        end_time=T0,
        may_run=may_run,
        extra_retry=extra,
    )
    assert when == expected


def test_a_lost_acknowledgement_earns_one_retry_beyond_the_config() -> None:
    when, left = next_attempt_time(
        RetryConfig(),
        code="UNAVAILABLE",
        attempts_made=1,
        first_attempt_start=T0,
        end_time=T0,
        may_run=True,
        extra_retry=True,
    )
    assert when == T0 + timedelta(seconds=5) and left is False


def test_a_backoff_past_the_calendar_ends_the_run_instead_of_raising() -> None:
    config = RetryConfig(
        retry_count=3,
        min_backoff_duration=timedelta(days=3_000_000),
        max_backoff_duration=timedelta(days=3_000_000),
    )
    when, _ = next_attempt_time(
        config, code="INTERNAL", attempts_made=1, first_attempt_start=T0, end_time=T0, may_run=True
    )
    assert when is None


def test_the_stored_next_fire_moves_only_after_the_time_is_accounted_for(
    core: Scheduler,
) -> None:
    core.put(job(), T0 - timedelta(seconds=1))
    start, moved = core.due(T0)
    assert isinstance(start, StartAttempt)  # the run is written first ...
    assert isinstance(moved, SaveNextFire) and moved.next_fire == T0 + timedelta(minutes=5)
    assert core.due(T0 + timedelta(minutes=5)) == []  # missed: held back, nothing moves
    skip, *rest = core.due(T0 + timedelta(minutes=10))
    assert isinstance(skip, RecordSkipped) and rest == []


def test_a_restart_lists_the_times_that_passed_while_down(core: Scheduler) -> None:
    stored = T0 + timedelta(minutes=5)
    decisions, _ = core.restore(
        [job()], [], set(), T0 + timedelta(minutes=16), 0, {job().name: stored}
    )
    skipped = [d.skipped for d in decisions if isinstance(d, RecordSkipped)]
    assert [(s.schedule_time, s.reason) for s in skipped] == [
        ("2026-09-24T12:05:00Z", "EMULATOR_DOWN"),
        ("2026-09-24T12:10:00Z", "EMULATOR_DOWN"),
        ("2026-09-24T12:15:00Z", "EMULATOR_DOWN"),
    ]
    assert core.next_due() == T0 + timedelta(minutes=20)


def test_the_last_attempt_time_follows_the_start_of_the_jobs_latest_attempt(
    core: Scheduler,
) -> None:
    """A start stamped again when the attempt was sent becomes the job's last attempt time,
    unless another attempt of the job started since (its own start stands)."""
    core.put(job(), T0 - timedelta(seconds=1))
    [scheduled] = acted(core.due(T0))
    [forced] = core.force(scheduled.run.job, T0 + timedelta(seconds=1))
    name = scheduled.run.job
    sent = T0 + timedelta(milliseconds=1)
    core.attempt_ended(name, scheduled.run.id, replace(ok(T0), attempt=1, start_time=sent), T0)
    assert core.state_of(name)[2] == T0 + timedelta(seconds=1)  # the forced run's start
    sent = T0 + timedelta(seconds=1, milliseconds=2)
    core.attempt_ended(name, forced.run.id, replace(ok(T0), attempt=1, start_time=sent), T0)
    assert core.state_of(name)[2] == sent


class TestTheStartInstant:
    """A job due exactly at the instant time starts (or resumes) from fires then, unless its
    run was recorded before a restart; a job created through the API at an instant first runs
    after it."""

    def test_a_job_loaded_at_the_start_instant_fires_at_it(self, core: Scheduler) -> None:
        core.restore([], [], set(), T0, 0)  # a fresh store: time starts at T0
        view, _ = core.put(job("0 * * * *"), T0, from_start=True)
        assert view.schedule_time == T0 and core.next_due() == T0
        [start] = acted(core.due(T0))
        assert isinstance(start, StartAttempt) and start.run.schedule_time == "2026-09-24T12:00:00Z"

    def test_a_job_created_at_an_instant_first_runs_after_it(self, core: Scheduler) -> None:
        core.restore([], [], set(), T0, 0)
        view, _ = core.put(job("0 * * * *"), T0)
        assert view.schedule_time == T0 + timedelta(hours=1)

    def test_only_the_instant_time_started_from_counts(self, core: Scheduler) -> None:
        core.restore([], [], set(), T0 - timedelta(hours=1), 0)
        view, _ = core.put(job("0 * * * *"), T0, from_start=True)
        assert view.schedule_time == T0 + timedelta(hours=1)

    def test_a_restart_at_an_unrecorded_run_fires_it_and_skips_only_earlier_times(
        self, core: Scheduler
    ) -> None:
        stored = T0 - timedelta(minutes=10)  # 11:50 and 11:55 passed while down; 12:00 is now
        decisions, _ = core.restore([job()], [], set(), T0, 0, {job().name: stored})
        skipped = [d.skipped.schedule_time for d in decisions if isinstance(d, RecordSkipped)]
        assert skipped == ["2026-09-24T11:50:00Z", "2026-09-24T11:55:00Z"]
        assert core.next_due() == T0
        [start] = acted(core.due(T0))
        assert isinstance(start, StartAttempt) and start.run.schedule_time == "2026-09-24T12:00:00Z"

    def test_a_restart_at_a_recorded_run_does_not_fire_it_again(self, core: Scheduler) -> None:
        stored = T0 + timedelta(minutes=5)  # the 12:00 run was recorded: the next fire moved on
        decisions, _ = core.restore([job()], [], set(), T0, 0, {job().name: stored})
        assert not [d for d in decisions if isinstance(d, RecordSkipped)]
        assert core.next_due() == T0 + timedelta(minutes=5)
        view, _ = core.put(job(), T0, from_start=True)  # the jobs file loaded again
        assert view.schedule_time == T0 + timedelta(minutes=5)


def test_a_run_as_if_scheduled_at_an_instant_carries_it_in_the_jobs_zone(core: Scheduler) -> None:
    core.put(job("0 2 * * *", time_zone="Europe/Berlin"), T0)
    asked = datetime.fromisoformat("2026-03-29T01:30:00+01:00")
    [start] = core.force(job().name, T0, asked)
    assert isinstance(start, StartAttempt) and start.run.forced
    assert start.run.schedule_time == "2026-03-29T01:30:00+01:00"
    [plain] = core.force(job().name, T0)
    assert plain.run.schedule_time == "2026-09-25T02:00:00+02:00"  # RunJob's rule unchanged


@pytest.mark.parametrize(
    ("stored", "down", "next_fire"),
    [
        (45, [], 45),  # stopped and started again within the interval: the same next time
        (-50, [-50, -5], 40),  # the times that passed are skipped; the cadence goes on
        (-45, [-45], 0),  # a time at the restart instant fires at it
    ],
)
def test_an_english_interval_keeps_its_cadence_across_a_restart(
    core: Scheduler, stored: int, down: list[int], next_fire: int
) -> None:
    """A trial's ``every 45 minutes`` job moved its cadence to the restart at every restart,
    although the docs say "N after the previous run"."""
    interval = job("every 45 minutes")
    at = {interval.name: T0 + timedelta(minutes=stored)}
    decisions, _ = core.restore([interval], [], set(), T0, 0, at)
    skipped = [d.skipped.nominal for d in decisions if isinstance(d, RecordSkipped)]
    assert skipped == [T0 + timedelta(minutes=m) for m in down]
    assert core.next_due() == T0 + timedelta(minutes=next_fire)


def test_an_english_interval_counts_from_the_start_instant(core: Scheduler) -> None:
    """``every 5 minutes`` has no time at the start instant: its first run is 5 minutes on."""
    core.restore([], [], set(), T0, 0)
    view, _ = core.put(job("every 5 minutes"), T0, from_start=True)
    assert view.schedule_time == T0 + timedelta(minutes=5)


@pytest.mark.parametrize("schedule", ["every 15 minutes from 12:00 to 15:00", "every day 12:00"])
def test_an_english_schedule_of_fixed_times_fires_at_the_start_instant(
    core: Scheduler, schedule: str
) -> None:
    """As a cron schedule does (trial 201: a window starting at the start instant skipped it)."""
    core.restore([], [], set(), T0, 0)
    view, _ = core.put(job(schedule), T0, from_start=True)
    assert view.schedule_time == T0


class TestARestartAfterAKillBeforeDispatch:
    """A scheduled time reached while the emulator was running (``alive``) but whose run was
    not recorded is run late at the restart with its own ScheduleTime; only the times after
    ``alive`` count as down."""

    def test_the_unrecorded_time_runs_late_and_nothing_is_skipped(self, core: Scheduler) -> None:
        alive, now = T0 + timedelta(milliseconds=50), T0 + timedelta(seconds=2)
        decisions, _ = core.restore([job()], [], set(), now, 0, {job().name: T0}, alive=alive)
        assert decisions == []  # its stored next fire time stays until the run is recorded
        assert core.next_due() == T0  # due at once
        start, moved = core.due(now)
        assert isinstance(start, StartAttempt) and start.run.schedule_time == "2026-09-24T12:00:00Z"
        assert start.run.nominal == T0 and start.run.first_attempt_start == now
        assert isinstance(moved, SaveNextFire) and moved.next_fire == T0 + timedelta(minutes=5)
        assert core.next_due() == T0 + timedelta(minutes=5)

    def test_only_the_times_after_the_last_alive_instant_are_down(self, core: Scheduler) -> None:
        alive, now = T0 + timedelta(seconds=1), T0 + timedelta(minutes=12)
        decisions, _ = core.restore([job()], [], set(), now, 0, {job().name: T0}, alive=alive)
        skipped = [d.skipped for d in decisions if isinstance(d, RecordSkipped)]
        assert [(s.schedule_time, s.reason) for s in skipped] == [
            ("2026-09-24T12:05:00Z", "EMULATOR_DOWN"),
            ("2026-09-24T12:10:00Z", "EMULATOR_DOWN"),
        ]
        start, moved = core.due(now)  # the late run, then on to the first time after now
        assert isinstance(start, StartAttempt) and start.run.nominal == T0
        assert isinstance(moved, SaveNextFire) and moved.next_fire == T0 + timedelta(minutes=15)
        assert core.due(now) == []

    def test_a_time_whose_run_was_recorded_is_not_run_again(self, core: Scheduler) -> None:
        alive, now = T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)
        decisions, _ = core.restore(
            [job()], [], set(), now, 0, {job().name: T0}, alive=alive, ran={job().name}
        )
        assert acted(decisions) == []
        assert core.next_due() == T0 + timedelta(minutes=5)

    def test_a_time_recorded_as_skipped_is_not_run_late(self, core: Scheduler) -> None:
        """The kill came after the skipped record of the stored next fire time was committed
        and before the next fire time that follows it was (the writer commits what has queued,
        so two writes of one due instant may land in two transactions): that time is listed
        as skipped, so it is not also run."""
        alive, now = T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)
        decisions, _ = core.restore(
            [job()], [], set(), now, 0, {job().name: T0}, {job().name: T0}, alive=alive
        )
        assert acted(decisions) == []
        assert core.due(now) == [] and core.next_due() == T0 + timedelta(minutes=5)

    def test_a_restart_killed_after_listing_later_times_still_owes_the_first(
        self, core: Scheduler
    ) -> None:
        """A restart owed the stored time a late run and recorded the later ones skipped, then
        was killed before it ran it or moved the next fire time: the next restart owes it still."""
        alive, now = T0 + timedelta(seconds=1), T0 + timedelta(minutes=12)
        listed = {job().name: T0 + timedelta(minutes=10)}  # 12:05 and 12:10 were recorded
        decisions, _ = core.restore(
            [job()], [], set(), now, 0, {job().name: T0}, listed, alive=alive
        )
        assert acted(decisions) == []  # nothing listed twice
        [start, _] = core.due(now)
        assert isinstance(start, StartAttempt) and start.run.nominal == T0

    def test_an_open_run_gets_the_late_time_as_its_delayed_run(self, core: Scheduler) -> None:
        """The one-run-per-job rule holds: the open run first, then the owed time."""
        earlier = Run(7, job().name, "2026-09-24T11:55:00Z", T0 - timedelta(minutes=5))
        earlier.first_attempt_start, earlier.attempts = T0 - timedelta(minutes=5), 1
        alive, now = T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)
        core.restore([job()], [earlier], {7}, now, 7, {job().name: T0}, alive=alive)
        assert core.due(now) == []  # missed while the open run goes on
        later = now + timedelta(seconds=1)
        after = core.attempt_ended(job().name, 7, ok(later), later)
        [delayed] = [d for d in after if isinstance(d, StartAttempt)]
        assert delayed.run.nominal == T0 and delayed.run.schedule_time == "2026-09-24T12:00:00Z"

    def test_a_restart_with_a_run_retrying_keeps_the_owed_time_and_the_skips_as_they_were(
        self, core: Scheduler
    ) -> None:
        """Trial 141: a job whose run was still retrying owed 12:00 a delayed run and had 12:05
        to 12:15 recorded skipped; restarted at 12:15 (a manual clock resumes where it stopped),
        its next scheduled time read 12:00, in the past (``clock --next`` was refused), and
        12:15 was recorded skipped a second time."""
        retrying = Run(7, job().name, "2026-09-24T11:55:00Z", T0 - timedelta(minutes=5))
        retrying.first_attempt_start, retrying.attempts = T0 - timedelta(minutes=5), 3
        retrying.next_attempt_at = T0 + timedelta(minutes=18)
        now = T0 + timedelta(minutes=15)
        listed = {job().name: now}  # 12:05, 12:10 and 12:15
        decisions, _ = core.restore(
            [job()], [retrying], set(), now, 7, {job().name: T0}, listed, alive=now
        )
        assert acted(decisions) == []
        assert core.upcoming(job().name) == Upcoming(
            T0 + timedelta(minutes=20),
            retrying.next_attempt_at,
            None,  # (no forced run)
            T0,  # owed a late run: the views say so (trial 149)
        )
        assert core.due(now) == []
        later = T0 + timedelta(minutes=20)
        skipped = [d.skipped.nominal for d in core.due(later) if isinstance(d, RecordSkipped)]
        assert skipped == [later]  # 12:20 once (12:18's retry starts too)
        ended = core.attempt_ended(job().name, 7, ok(later), later)
        [delayed] = [d for d in ended if isinstance(d, StartAttempt)]
        assert delayed.run.nominal == T0

    def test_a_time_owed_at_the_restart_instant_survives_a_schedule_change(
        self, core: Scheduler
    ) -> None:
        """Trial 143: restarted at 12:15 with 12:15 owed (its run still retrying), then given a
        new schedule: 12:15 was neither run nor listed as skipped."""
        retrying = Run(7, job().name, "2026-09-24T12:10:00Z", T0 + timedelta(minutes=10))
        retrying.first_attempt_start, retrying.attempts = T0 + timedelta(minutes=10), 2
        retrying.next_attempt_at = T0 + timedelta(minutes=18)
        now = T0 + timedelta(minutes=15)
        core.restore([job()], [retrying], set(), now, 7, {job().name: now}, alive=now)
        core.put(job("*/7 * * * *"), now)
        later = T0 + timedelta(minutes=18)
        assert not [d for d in core.due(later) if isinstance(d, StartAttempt) and d.run.id != 7]
        ended = core.attempt_ended(job().name, 7, ok(later), later)
        [delayed] = [d for d in ended if isinstance(d, StartAttempt)]
        assert delayed.run.nominal == now

    def test_a_run_ending_at_a_stop_leaves_its_missed_time_owed(self, core: Scheduler) -> None:
        """Trial 142: a SIGTERM cut a long attempt short; its run's end started the delayed run
        of a missed time, which could not be sent and was recorded as an attempt "stopped
        before it was sent", spending one of its tries. Stopping, the time stays owed: its
        stored next fire time does not move, and the next start runs it late."""
        retrying = Run(7, job().name, "2026-09-24T11:55:00Z", T0 - timedelta(minutes=5))
        retrying.first_attempt_start, retrying.attempts = T0 - timedelta(minutes=5), 1
        core.restore([job()], [retrying], {7}, T0, 7, {job().name: T0}, alive=T0)  # 12:00 owed
        core.stopping = True
        ended = core.attempt_ended(job().name, 7, ok(T0), T0)
        assert not [d for d in ended if isinstance(d, (StartAttempt, SaveNextFire))]

    def test_without_a_last_alive_instant_every_passed_time_is_down(self, core: Scheduler) -> None:
        decisions, _ = core.restore(
            [job()], [], set(), T0 + timedelta(seconds=2), 0, {job().name: T0}
        )
        [skipped] = [d.skipped for d in decisions if isinstance(d, RecordSkipped)]
        assert skipped.nominal == T0 and skipped.reason == "EMULATOR_DOWN"
        assert not [d for d in decisions if isinstance(d, StartAttempt)]


class TestARefusedChangeIsUndone:
    """:meth:`Scheduler.rollback` puts back every job a change touched, timers included."""

    def test_an_update_is_undone(self, core: Scheduler) -> None:
        before, _ = core.put(job(), T0)
        core.checkpoint()
        core.put(job("0 3 * * *", description="new"), T0 + timedelta(minutes=1))
        assert core.rollback()
        assert core.get(job().name) == before and core.jobs() == [before]
        assert core.next_due() == T0 + timedelta(minutes=5)
        assert acted(core.due(T0 + timedelta(minutes=5)))  # its fire time is live again

    def test_a_creation_is_undone(self, core: Scheduler) -> None:
        core.checkpoint()
        core.put(job(), T0)
        assert core.rollback()
        assert not core.has(job().name) and core.next_due() is None

    def test_a_due_instant_is_undone_and_fires_again(self, core: Scheduler) -> None:
        core.put(job(), T0 - timedelta(seconds=1))
        core.checkpoint()
        [first] = acted(core.due(T0))
        assert core.rollback()
        assert core.next_due() == T0 and core.get(job().name).last_attempt_time is None
        [again] = acted(core.due(T0))
        assert isinstance(again, StartAttempt) and again.run.nominal == first.run.nominal

    def test_a_pause_is_undone_with_its_pending_retry(self, core: Scheduler) -> None:
        core.put(job(retry_config=RetryConfig(retry_count=2)), T0 - timedelta(seconds=1))
        [start] = acted(core.due(T0))
        _, saved = core.attempt_ended(job().name, start.run.id, failed(T0), T0)
        retry_at = saved.run.next_attempt_at  # type: ignore[union-attr]
        assert retry_at is not None and core.next_due() == retry_at
        before = core.get(job().name)
        core.checkpoint()
        core.put(replace(before, state=State.PAUSED), T0 + timedelta(seconds=1))
        assert core.next_due() is None
        assert core.rollback()
        assert core.get(job().name) == before and core.next_due() == retry_at
        [retry] = core.due(retry_at)
        assert isinstance(retry, StartAttempt) and retry.run.attempts == 2

    def test_an_attempt_end_makes_the_change_final(self, core: Scheduler) -> None:
        core.put(job(), T0 - timedelta(seconds=1))
        core.checkpoint()
        [start] = acted(core.due(T0))
        core.attempt_ended(job().name, start.run.id, ok(T0), T0)
        assert not core.rollback()
        assert core.next_due() == T0 + timedelta(minutes=5)

    def test_a_kept_change_cannot_be_undone(self, core: Scheduler) -> None:
        core.checkpoint()
        core.put(job(), T0)
        core.release()
        assert not core.rollback() and core.has(job().name)


@pytest.mark.parametrize(("took_seconds", "order"), [(15, "b, a"), (0.5, "a, b")])
def test_a_job_whose_last_attempt_was_slow_is_started_after_the_others_due_with_it(
    core: Scheduler, took_seconds: float, order: str
) -> None:
    """Of the jobs due at one instant, one whose last attempt took 1 s or more from its send
    to its end (its target drips its answer) comes last: healthy jobs are not sent behind it."""
    names = {key: f"projects/my-project/locations/l/jobs/{key}" for key in "ab"}
    for name in names.values():
        core.put(replace(job("* * * * *"), name=name), T0 - timedelta(seconds=1))
    starts = [d for d in core.due(T0) if isinstance(d, StartAttempt)]
    assert [d.run.job for d in starts] == [names["a"], names["b"]]  # no history: as created
    sent = T0 + timedelta(milliseconds=1)
    for start in starts:
        took = took_seconds if start.run.job == names["a"] else 0.01
        end = replace(ok(sent + timedelta(seconds=took)), attempt=1, start_time=sent)
        core.attempt_ended(start.run.job, start.run.id, end, end.end_time)
    minute = T0 + timedelta(minutes=1)
    starts = [d for d in core.due(minute) if isinstance(d, StartAttempt)]
    assert [d.run.job for d in starts] == [names[key] for key in order.split(", ")]
