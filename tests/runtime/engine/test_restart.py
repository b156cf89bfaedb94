"""Restarts on the same data: jobs, state and history survive; in-flight attempts are retried."""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_emulator import Emulator, FaultPlan, FaultRule, ManualClock, SystemClock
from scheduler_emulator.domain.attempts import Attempt, failure_reason
from scheduler_emulator.domain.resources import State
from scheduler_emulator.runtime import DeliveryRequest, TransportResult, WsgiTransport
from scheduler_emulator.runtime.storage.store import Store, _Ticket, _Writer
from scheduler_emulator.server.daemon import pending_retries, restart_notes
from tests.support import RecordingTarget, nightly_job

START = datetime(2026, 9, 24, 1, 59, tzinfo=UTC)


class ProcessDied(BaseException):
    """Stands for the process dying in the middle of a delivery."""


class DyingTransport(WsgiTransport):
    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        raise ProcessDied


def reopen(path: Path, target: RecordingTarget, at: datetime) -> Emulator:
    return Emulator(ManualClock(at), store=Store(path), transport=WsgiTransport(target))


def minutely_history(tmp_path: Path, minutes: int) -> tuple[Path, RecordingTarget]:
    """A data directory's database holding ``minutes`` of a job that fires every minute."""
    db, target = tmp_path / "emulator.db", RecordingTarget()
    first = reopen(db, target, START)
    first.create_job(nightly_job(schedule="* * * * *", retryConfig={}))
    first.advance(timedelta(minutes=minutes))
    first.close()
    return db, target


def test_a_lower_bound_at_start_says_what_it_dropped(tmp_path: Path) -> None:
    """Trial 117: a restart with a lower --retain-megabytes emptied the history silently."""
    db, target = minutely_history(tmp_path, 9)
    second = Emulator(ManualClock(START), store=Store(db, retain_attempts=3))
    assert len(second.attempts()) == 3
    assert restart_notes(second) == (
        ", 6 finished attempts of the history dropped to keep within --retain-attempts and "
        "--retain-megabytes"
    )
    second.close()
    assert restart_notes(reopen(db, target, START)) == ""


def test_the_newest_attempt_dropped_is_known_as_it_drops_and_at_the_next_open(
    tmp_path: Path,
) -> None:
    """Trial 211: ``attempts --since`` needs where the history becomes whole."""
    db, target = minutely_history(tmp_path, 9)
    stores = [Store(db), Store(db, retain_attempts=3), Store(db)]
    for store in stores:
        store.close()
    assert [store.dropped_through[0] for store in stores] == [0, 6, 6]  # (the last by the gap)
    assert stores[1].dropped_through[1] == "2026-09-24T02:05:00+00:00"  # (the 6th: 02:05)


def test_skipped_run_records_a_lower_bound_drops_are_said_too(tmp_path: Path) -> None:
    """Trial 187: 100 of 400 records of scheduled times missed while down went unsaid."""
    db, target = minutely_history(tmp_path, 2)
    later = START + timedelta(minutes=12)
    reopen(db, target, later).close()  # 9 scheduled times passed while it was down
    reader = Store(db)
    records = len(reader.skipped_page(page_size=None)[0])
    reader.close()
    third = Emulator(ManualClock(later), store=Store(db, retain_attempts=3))
    assert records > 3 and len(third.store.skipped_page(page_size=None)[0]) == 3
    assert restart_notes(third) == (
        f", {records - 3} skipped-run records of the history dropped to keep within "
        "--retain-attempts and --retain-megabytes"
    )
    third.close()


def test_a_jobs_latest_skipped_record_outlives_retention_so_no_time_is_listed_twice(
    tmp_path: Path,
) -> None:
    """Trial 211: --retain-attempts 0 dropped the RUN_STILL_GOING records of a run going on for
    days, and the same restart listed 100 of their times again, recorded at the restart."""
    db, target = tmp_path / "emulator.db", RecordingTarget(status=503)
    first = reopen(db, target, START)
    first.create_job(
        nightly_job(
            schedule="* * * * *", retryConfig={"retryCount": 5, "minBackoffDuration": "300s"}
        )
    )
    first.advance(timedelta(minutes=10))  # its first run retries on; 02:01 is owed, 02:02… skipped
    listed = [r.nominal for r in first.store.skipped_page(page_size=None)[0]]
    first.close()
    assert len(listed) == 8
    second = Emulator(
        ManualClock(START + timedelta(minutes=10)), store=Store(db, retain_attempts=0)
    )
    assert [r.nominal for r in second.store.skipped_page(page_size=None)[0]] == [max(listed)]
    second.close()


def test_a_run_killed_again_after_its_extra_retry_ends_and_the_line_says_so(
    tmp_path: Path,
) -> None:
    """Trial 123: the third kill's startup line said "its run retried" of a run that had spent
    its one retry beyond its config, and ended."""
    db, target = tmp_path / "emulator.db", RecordingTarget()
    first = Emulator(ManualClock(START), store=Store(db), transport=DyingTransport(target))
    first.create_job(nightly_job(retryConfig={}))
    with pytest.raises(ProcessDied):
        first.advance(timedelta(minutes=1))
    at = START + timedelta(minutes=3)
    second = Emulator(ManualClock(at), store=Store(db), transport=DyingTransport(target))
    assert restart_notes(second).endswith("recorded as interrupted (its run retried)")
    with pytest.raises(ProcessDied):  # its retry dies too
        second.advance(timedelta(seconds=5))
    third = reopen(db, target, at + timedelta(minutes=1))
    assert restart_notes(third) == (
        ", 1 attempt in flight when it ended abruptly recorded as interrupted (runs retried: 0, "
        "ended: 1 (retries spent, or job deleted))"
    )
    third.advance(timedelta(minutes=1))
    assert [a.attempt for a in third.attempts()] == [1, 2] and target.requests == []


def test_in_flight_attempt_is_recorded_as_failed_and_retried(tmp_path: Path) -> None:
    db = tmp_path / "emulator.db"
    target = RecordingTarget()
    first = Emulator(ManualClock(START), store=Store(db), transport=DyingTransport(target))
    first.create_job(nightly_job())
    with pytest.raises(ProcessDied):
        first.advance(timedelta(minutes=1))
    [in_flight] = first.attempts()
    assert in_flight.end_time is None  # what a crash leaves behind

    restarted_at = START + timedelta(minutes=3)
    second = reopen(db, target, restarted_at)
    crashed, *_ = second.attempts()
    assert crashed.code == "UNAVAILABLE"
    assert crashed.end_time == restarted_at
    assert failure_reason(crashed) == (  # whole (trial 209: cut at "…the emulator stopped")
        "URL_UNREACHABLE-UNREACHABLE_EMULATOR_RESTARTED. Emulator restarted: the attempt may or "
        "may not have reached the target."
    )
    assert (first.interrupted_at_start, second.interrupted_at_start) == (0, 1)
    assert restart_notes(second) == (  # the startup line says so (a trial's had not)
        ", 1 attempt in flight when it ended abruptly recorded as interrupted (its run retried)"
    )
    assert second.get_job("nightly").schedule_time == restarted_at + timedelta(seconds=5)
    second.advance(timedelta(seconds=5))
    retry = second.attempts()[-1]
    assert (retry.attempt, retry.code, retry.schedule_time) == (2, "OK", "2026-09-24T02:00:00Z")
    assert len(target.requests) == 1


def test_the_startup_line_counts_the_retry_of_an_attempt_cut_by_a_kill(tmp_path: Path) -> None:
    """Trial 52: on the system clock the interrupted attempt ended a moment after the instant
    the restart decided at, so its run's retry waited behind that end and the startup line's
    "retry pending (the first due …)" left it out (the retry ran first)."""
    db = tmp_path / "emulator.db"
    first = Emulator(
        ManualClock(START), store=Store(db), transport=DyingTransport(RecordingTarget())
    )
    first.create_job(nightly_job(schedule="* * * * *"))
    with pytest.raises(ProcessDied):
        first.advance(timedelta(minutes=1))
    first.close()
    second = Emulator(SystemClock(), store=Store(db), transport=WsgiTransport(RecordingTarget()))
    try:  # (the daemon writes its startup line before it starts firing)
        [crashed] = second.attempts()
        assert crashed.end_time is not None
        due = (crashed.end_time + timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert pending_retries(second) == f", 1 job with a retry pending (the first due {due})"
    finally:
        second.close()


def test_the_jobs_last_attempt_after_a_kill_is_the_one_it_cut(tmp_path: Path) -> None:
    """Trial 55: after a kill during an attempt, the job's status was the interrupted attempt's
    (UNAVAILABLE) but its lastAttemptTime the day before's, whose state was the last stored."""
    db = tmp_path / "emulator.db"

    class DiesOnTheSecondDay(WsgiTransport):
        def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
            if len(target.requests):
                raise ProcessDied
            return super().send(request, timeout_seconds)

    target = RecordingTarget()
    first = Emulator(ManualClock(START), store=Store(db), transport=DiesOnTheSecondDay(target))
    first.create_job(nightly_job())
    first.advance(timedelta(minutes=1))
    with pytest.raises(ProcessDied):
        first.advance(timedelta(days=1))
    second = reopen(db, target, START + timedelta(days=1, minutes=5))
    cut = second.attempts()[-1]
    assert (cut.code, cut.start_time) == ("UNAVAILABLE", START + timedelta(days=1, minutes=1))
    job = second.get_job("nightly")
    assert (job.status.code, job.last_attempt_time) == (14, cut.start_time)
    second.close()  # and so it is stored
    third = reopen(db, target, START + timedelta(days=1, minutes=5))
    assert third.get_job("nightly").last_attempt_time == cut.start_time


@pytest.mark.parametrize("retry_config", [{}, {"retryCount": 0}], ids=["default", "zero"])
def test_an_attempt_in_flight_at_a_crash_is_retried_even_without_retries(
    tmp_path: Path, retry_config: dict[str, int]
) -> None:
    """It may never have been sent: delivery is at least once, so the run gets one retry."""
    db = tmp_path / "emulator.db"
    target = RecordingTarget()
    first = Emulator(ManualClock(START), store=Store(db), transport=DyingTransport(target))
    first.create_job(nightly_job(retryConfig=retry_config))
    with pytest.raises(ProcessDied):
        first.advance(timedelta(minutes=1))

    restarted_at = START + timedelta(minutes=3)
    second = reopen(db, target, restarted_at)
    second.advance(timedelta(seconds=5))
    crashed, retry = second.attempts()
    assert crashed.code == "UNAVAILABLE"
    assert (retry.attempt, retry.code, retry.schedule_time) == (2, "OK", "2026-09-24T02:00:00Z")
    assert len(target.requests) == 1


def test_state_and_history_survive_and_nothing_is_backfilled(tmp_path: Path) -> None:
    db = tmp_path / "emulator.db"
    target = RecordingTarget(status=500)
    first = reopen(db, target, START)
    first.create_job(nightly_job(retryConfig={}))
    first.create_job(nightly_job(name="paused-one"))
    first.pause_job("paused-one")
    first.advance(timedelta(minutes=2))
    history = first.attempts()
    first.close()

    two_days_later = START + timedelta(days=2)
    second = reopen(db, target, two_days_later)
    assert [j.job_id for j in second.list_jobs()] == ["nightly", "paused-one"]
    assert second.get_job("paused-one").state == State.PAUSED
    nightly = second.get_job("nightly")
    assert nightly.status is not None and nightly.status.code == 13
    assert nightly.last_attempt_time == START + timedelta(minutes=1)
    assert nightly.schedule_time == datetime(2026, 9, 26, 2, tzinfo=UTC)
    assert [(a.id, a.code, a.start_time) for a in second.attempts()] == [
        (a.id, a.code, a.start_time) for a in history
    ]


def test_a_waiting_retry_is_kept_across_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "emulator.db"
    target = RecordingTarget(status=500)
    first = reopen(db, target, START)
    first.create_job(nightly_job())
    first.advance(timedelta(seconds=62))  # 02:00:00 failed, retry due 02:00:05
    first.close()
    target.status = 200
    second = reopen(db, target, START + timedelta(seconds=62))
    second.advance(timedelta(seconds=3))
    assert [(a.attempt, a.code) for a in second.attempts()] == [(1, "INTERNAL"), (2, "OK")]


def test_a_retry_that_came_due_while_down_is_said_to_be_overdue(tmp_path: Path) -> None:
    """A trial's restart an hour on said "the first due 05:00:10Z" at 09:00, no more: it ran
    only at the next clock move, as nothing fires at start on a manual clock."""
    db = tmp_path / "emulator.db"
    target = RecordingTarget(status=500)
    first = reopen(db, target, START)
    first.create_job(nightly_job())
    first.advance(timedelta(seconds=62))  # 02:00:00 failed, retry due 02:00:05
    assert (
        pending_retries(first)
        == ", 1 job with a retry pending (the first due 2026-09-24T02:00:05Z)"
    )
    first.close()
    second = reopen(db, target, START + timedelta(hours=1))
    assert pending_retries(second) == (
        ", 1 job with a retry pending (the first due 2026-09-24T02:00:05Z, overdue: it runs at "
        "the next clock move)"
    )
    assert pending_retries(second, stopping=True).endswith(  # (trial 110: "it runs now")
        "overdue: it runs at the next start)"
    )
    second.close()


def test_scheduled_times_that_passed_while_down_are_listed_as_skipped(tmp_path: Path) -> None:
    db = tmp_path / "emulator.db"
    target = RecordingTarget()
    first = reopen(db, target, START)
    first.create_job(nightly_job(schedule="* * * * *", retryConfig={}))
    first.advance(timedelta(minutes=1, seconds=10))  # 02:00 delivered
    first.store.close()  # the process dies here, with 02:01 its next scheduled time

    second = reopen(db, target, START + timedelta(minutes=4, seconds=30))  # back at 02:03:30
    skipped = second.skipped_runs()
    assert [(s.schedule_time, s.reason) for s in skipped] == [
        ("2026-09-24T02:01:00Z", "EMULATOR_DOWN"),
        ("2026-09-24T02:02:00Z", "EMULATOR_DOWN"),
        ("2026-09-24T02:03:00Z", "EMULATOR_DOWN"),
    ]
    name = "projects/my-project/locations/us-central1/jobs/nightly"
    assert first.skipped_while_down == {} and second.skipped_while_down == {name: 3}
    assert restart_notes(second) == (  # the daemon's startup line says so
        ", 3 scheduled times skipped while it was down (`scheduler-emulator skipped` lists them)"
    )
    assert second.get_job("nightly").schedule_time == START + timedelta(minutes=5)
    second.advance(timedelta(minutes=1))
    assert [a.schedule_time for a in second.attempts()] == [
        "2026-09-24T02:00:00Z",
        "2026-09-24T02:04:00Z",
    ]


def test_a_long_downtime_records_a_bounded_number_of_skipped_times(tmp_path: Path) -> None:
    db = tmp_path / "emulator.db"
    first = reopen(db, RecordingTarget(), START)
    first.create_job(nightly_job(schedule="* * * * *"))
    first.store.close()
    second = reopen(db, RecordingTarget(), START + timedelta(days=30))
    assert len(second.skipped_runs()) == 100
    assert restart_notes(second) == (  # (trial 141: read as the whole count)
        ", at least 100 scheduled times skipped while it was down (`scheduler-emulator skipped` "
        "lists them: of each job, the first 100)"
    )


def test_a_downtime_of_many_jobs_skipping_one_time_each_is_not_said_to_be_cut(
    tmp_path: Path,
) -> None:
    """Trial 154: 301 jobs that each missed one minute read "at least 301 …: of each job, the
    first 100" — the cap is a job's, and no job's list was cut."""
    db = tmp_path / "emulator.db"
    first = reopen(db, RecordingTarget(), START)
    for index in range(101):
        first.create_job(nightly_job(name=f"job-{index}", schedule="* * * * *"))
    first.store.close()
    second = reopen(db, RecordingTarget(), START + timedelta(minutes=1, seconds=30))
    assert restart_notes(second) == (
        ", 101 scheduled times skipped while it was down (`scheduler-emulator skipped` lists them)"
    )


def test_a_data_directory_of_the_first_release_still_loads(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "emulator.db"
    first = reopen(db, RecordingTarget(), START)
    first.create_job(nightly_job())
    first.store.close()
    con = sqlite3.connect(db)  # back to the first release's schema: no new columns
    con.executescript(
        "ALTER TABLE jobs DROP COLUMN next_fire; ALTER TABLE skipped DROP COLUMN reason;"
        "DROP INDEX attempts_start; DROP INDEX attempts_job_start;"
        "ALTER TABLE attempts DROP COLUMN nominal;"
        "ALTER TABLE attempts DROP COLUMN response_excerpt;"
        "ALTER TABLE attempts DROP COLUMN response_content_type;"
        "PRAGMA user_version = 0;"
    )
    con.close()
    second = reopen(db, RecordingTarget(), START)
    assert second.get_job("nightly").schedule_time == datetime(2026, 9, 24, 2, tzinfo=UTC)
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone() == (3,)
    second.advance(timedelta(minutes=1))  # the 02:00 run, recorded in the added columns
    (attempt,) = second.attempts()
    assert attempt.nominal == datetime(2026, 9, 24, 2, tzinfo=UTC)


@pytest.mark.parametrize(
    ("status", "faults", "tries", "sent"),
    [
        (500, FaultPlan([FaultRule("duplicate")]), 3, 24),
        (200, FaultPlan([FaultRule("delay", seconds=150)]), 1, 2),
        (200, FaultPlan([FaultRule("lost_ack", attempt=1)]), 2, 8),
    ],
    ids=["failing, each attempt duplicated", "overlapping", "lost acks"],
)
def test_a_kill_after_any_commit_loses_no_retry_and_runs_no_time_twice(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    faults: FaultPlan,
    tries: int,
    sent: int,
) -> None:
    """The store's writer commits each hand-over on its own, and a due batch hands over each
    decision on its own (the finest splits they may make: the writer commits whatever has
    queued, a batch hands over once 150 statements have gathered); the database is copied
    after each commit, each copy what a SIGKILL there leaves, and so is each restart's while it
    restores. Restarted from every copy under the same faults, every run of a failing job
    still gets all its retries (an attempt's end once committed without its run's retry, or a
    retry's start without its attempt, finished the run at the restart), every run of a job
    that answers 200 ends in success (an answer lost or cut on the way), and no scheduled time
    is lost, runs twice or both runs and is listed as skipped (attempts that last 150 s: the
    next minute's time is owed and those after it are skipped)."""
    copies: list[Path] = []
    into: list[Path] | None = copies  # where the copies of each commit go
    numbers = itertools.count()

    def submit(self: _Writer, *items: Any, waiter: bool = False) -> None:
        with self._lock:
            changes = self.db.total_changes
            self._carry_out(list(items))
            for item in items:
                if isinstance(item, _Ticket):
                    item.set()
            if self.db.total_changes != changes and into is not None:
                into.append(tmp_path / f"copy-{next(numbers)}.db")
                with contextlib.closing(sqlite3.connect(into[-1])) as copy:
                    self.db.backup(copy)

    def restart(copy: Path) -> Emulator:
        """The emulator restarted from ``copy`` at 02:03:30 (the first one's end)."""
        at, target = START + timedelta(minutes=4, seconds=30), RecordingTarget(status=status)
        return Emulator(ManualClock(at), store=Store(copy), transport=WsgiTransport(target),
                        faults=faults)  # fmt: skip

    def check(restarted: Emulator, copy: Path) -> None:
        restarted.advance(START + timedelta(minutes=8, seconds=30) - restarted.clock.now())
        runs: dict[int, list[Attempt]] = {}
        for attempt in restarted.attempts():
            if not attempt.copy:  # (a duplicate fault's copies)
                runs.setdefault(attempt.run_id, []).append(attempt)
        for attempts in runs.values():
            if status == 200:  # it ends in success, whatever was lost or cut on the way
                assert attempts[-1].code in ("OK", None), (copy.name, attempts)  # (or goes on)
                continue
            cut = sum("EMULATOR_RESTARTED" in a.debug_info for a in attempts)  # one more retry
            assert len(attempts) == tries + cut, (copy.name, attempts)
        nominal = [attempts[0].nominal for attempts in runs.values()]
        skipped = [s.nominal for s in restarted.skipped_runs()]
        assert len(nominal + skipped) == len(set(nominal + skipped)), copy.name
        minutes = [START + timedelta(minutes=m) for m in range(1, 5)]  # 02:00 to 02:03
        assert set(minutes) <= set(nominal + skipped), copy.name  # none lost
        restarted.close()

    monkeypatch.setattr(_Writer, "submit", submit)
    monkeypatch.setattr("scheduler_emulator.runtime.storage.store._GATHERED", 1)
    target = RecordingTarget(status=status)
    job = nightly_job(schedule="* * * * *", retryConfig={"retryCount": 2})
    first = Emulator(ManualClock(START), store=Store(tmp_path / "emulator.db"),
                     transport=WsgiTransport(target), faults=faults)  # fmt: skip
    first.create_job(job)
    first.advance(timedelta(minutes=4, seconds=30))  # the runs of 02:00 to 02:03
    assert len(target.requests) == sent and len(copies) > 6
    assert len(first.skipped_runs()) == int(tries == 1)  # (02:02, while 02:01's was owed)
    first.close()
    for copy in copies[:]:
        into = killed = []  # the commits of its restore
        restarted = restart(copy)
        into = None
        check(restarted, copy)
        for again in killed:
            check(restart(again), again)


def test_a_job_whose_last_attempt_was_slow_stays_last_after_a_restart(tmp_path: Path) -> None:
    """Trial 202: the order that keeps healthy jobs from queueing behind slow ones lived only
    in memory, so the first minute after each restart ran 3-5 times later than the next."""
    db, target = tmp_path / "emulator.db", RecordingTarget()
    with reopen(db, target, START) as emulator:
        for name in ("slow", "healthy"):  # created in that order: sent in it with no history
            emulator.create_job(nightly_job(name=name, schedule="* * * * *"))
        emulator.faults.add(action="delay", seconds=5, job="slow")  # its attempt lasts 5 s
        emulator.advance(timedelta(minutes=1))
        assert [a.job_id for a in emulator.attempts()] == ["slow", "healthy"]
        emulator.faults.clear()
    with reopen(db, target, START + timedelta(minutes=1, seconds=30)) as emulator:
        emulator.advance(timedelta(seconds=30))
        last_minute = [a.job_id for a in emulator.attempts()][2:]
    assert last_minute == ["healthy", "slow"]
