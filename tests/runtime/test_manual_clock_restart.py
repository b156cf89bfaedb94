"""A manual clock survives a daemon restart on its data dir: it resumes at its virtual now,
and no time it never passed is recorded as skipped."""

from __future__ import annotations

import contextlib
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from scheduler_emulator.domain.errors import ClockError
from scheduler_emulator.runtime._clock import ClockFile, ManualClock
from scheduler_emulator.runtime.storage.store import Store, stopped_at
from scheduler_emulator.wire import parse_timestamp
from tests.daemon import running_daemon, serving
from tests.support import RecordingTarget, nightly_job, wait_for

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"


@pytest.mark.timeout(90)
@pytest.mark.parametrize("ended", ["stopped", "killed during a move"])
def test_a_restarted_manual_daemon_resumes_at_its_virtual_now(tmp_path: Path, ended: str) -> None:
    """Killed: the clock's file is written at most once a real second during a move, so a kill
    -9 in a long one (an attempt waiting on its target) leaves an instant the move has passed;
    the store's, written with each due instant's starts, wins, and nothing runs twice."""
    target = RecordingTarget()
    data = ("--data-dir", str(tmp_path), "--clock", "manual")
    with serving(target) as base:
        with running_daemon(*data, "--start", "2026-03-02T14:00:00Z") as daemon:
            job = nightly_job(
                name=f"{JOBS[4:]}/minutely", schedule="* * * * *", httpTarget={"uri": base}
            )
            daemon.post(JOBS, job).raise_for_status()
            assert daemon.advance(timedelta(minutes=3)) == {"now": "2026-03-02T14:03:00Z"}
            assert len(target.requests) == 3  # 14:01, 14:02, 14:03
            if ended == "stopped":
                assert daemon.stop() == 0
            else:
                daemon.kill()  # SIGKILL, and the file as a kill mid-move may leave it:
                clock = ClockFile(tmp_path / "manual-clock.json")
                clock.write(parse_timestamp("2026-03-02T14:01:00Z"))
        with running_daemon(*data) as daemon:
            where = "where it stopped" if ended == "stopped" else "where it last ran here"
            assert f"manual clock at 2026-03-02T14:03:00Z (resumed {where}" in daemon.first_line
            assert daemon.get("/_emulator/clock")["now"] == "2026-03-02T14:03:00Z"
            assert daemon.skipped() == []
            daemon.advance(timedelta(minutes=1))
            times = [a["scheduleTime"] for a in daemon.attempts()]
    assert times == [f"2026-03-02T14:0{minute}:00Z" for minute in range(1, 5)]
    assert len(target.requests) == 4


@pytest.mark.timeout(90)
def test_a_stop_during_a_move_keeps_the_cut_attempts_retry_and_exits_at_once(
    tmp_path: Path,
) -> None:
    """SIGTERM while a move waits on a target that does not answer: the daemon exits after its
    2 s grace, not at the 60 s deadline; the run keeps the retry the stop report promises,
    one beyond its retry config (of one: a trial's run got only that one), across the restart;
    no traceback."""
    release = threading.Event()

    def status(received: object) -> int:
        if len(target.requests) == 1:
            release.wait(60)  # the first delivery waits on the target until the test ends
        return 500 if len(target.requests) == 2 else 200

    target = RecordingTarget(status=status)
    data = ("--data-dir", str(tmp_path), "--clock", "manual")
    job = {"name": f"{JOBS[4:]}/minutely", "schedule": "* * * * *", "attemptDeadline": "60s",
           "retryConfig": {"retryCount": 1}}  # fmt: skip
    try:
        with serving(target) as base, running_daemon(*data, "--start", "2026-03-02T14:00:00Z") as d:
            d.post(JOBS, job | {"httpTarget": {"uri": base}}).raise_for_status()

            def move() -> None:
                with contextlib.suppress(requests.ConnectionError):  # the stop closes it
                    d.post("/_emulator/clock:advance", {"seconds": 60})

            threading.Thread(target=move).start()
            target.wait_for(1)
            assert d.stop(timeout=10) == 0  # 2 s of grace (it took 13 s without pycurl)
            assert d.process.stderr is not None
            err = d.process.stderr.read()
            assert "Traceback" not in err and "1 attempt(s) recorded as interrupted" in err, err
            with running_daemon(*data) as daemon:
                daemon.advance(30)  # past the retries' 5 s and 10 s backoffs
                tries = [(a.schedule_time, a.attempt, a.code) for a in daemon.attempts()]
    finally:
        release.set()
    assert tries == [
        ("2026-03-02T14:01:00Z", 1, "UNAVAILABLE"),
        ("2026-03-02T14:01:00Z", 2, "INTERNAL"),
        ("2026-03-02T14:01:00Z", 3, "OK"),  # the extra retry
    ]


def test_start_wins_over_the_kept_instant_and_a_bad_file_is_named(tmp_path: Path) -> None:
    kept = ClockFile(tmp_path / "manual-clock.json")
    assert kept.read() is None
    clock = ManualClock(parse_timestamp("2026-03-02T14:00:00Z"), keep=kept.write)
    clock.advance(timedelta(minutes=3))
    assert kept.read() == parse_timestamp("2026-03-02T14:03:00Z")
    for garbage in (b"garbage", b'{"now": "\xff"}'):  # not JSON; not UTF-8 (a traceback once)
        kept.path.write_bytes(garbage)
        with pytest.raises(ClockError, match="manual-clock.json does not hold"):
            kept.read()


@pytest.mark.timeout(90)
def test_a_manual_clock_on_a_data_dir_a_system_clock_ran_starts_where_it_fired_last(
    tmp_path: Path,
) -> None:
    """So that a stopped data dir can be looked at without firing anything (a trial's wish): no
    ``manual-clock.json``, so the clock starts at the last instant the store says a daemon fired
    jobs at, not at the current minute, which would run every minute since as late."""
    target = RecordingTarget()
    with serving(target) as base:
        with running_daemon(
            "--data-dir", str(tmp_path), "--clock", "manual", "--start", "2026-03-02T14:00:00Z"
        ) as daemon:
            job = nightly_job(
                name=f"{JOBS[4:]}/minutely", schedule="* * * * *", httpTarget={"uri": base}
            )
            daemon.post(JOBS, job).raise_for_status()
            daemon.advance(timedelta(minutes=3))
            assert daemon.stop() == 0
        # What a system clock leaves: the instant it fired at last, and no manual clock file.
        (tmp_path / "manual-clock.json").unlink()
        store = Store(str(tmp_path / "emulator.db"))
        store.save_alive(parse_timestamp("2026-03-02T14:03:00.004Z"))
        store.close()
        assert stopped_at(tmp_path / "emulator.db") == parse_timestamp("2026-03-02T14:03:00.004Z")
        with running_daemon("--data-dir", str(tmp_path), "--clock", "manual") as daemon:
            assert "manual clock at 2026-03-02T14:03:00.004" in daemon.first_line
            assert "(resumed where it last ran here)" in (daemon.first_line)
            assert (daemon.skipped(), len(daemon.attempts())) == ([], 3)
    assert len(target.requests) == 3
    assert stopped_at(tmp_path / "nothing.db") is None


def run_slow_job(daemon: Any, base: str, target: RecordingTarget) -> None:
    """Create job ``slow`` aimed at ``base`` and force a run; return once ``target`` has its
    request (its answer waits for the test)."""
    job = nightly_job(name=f"{JOBS[4:]}/slow", httpTarget={"uri": base})
    daemon.post(JOBS, job).raise_for_status()
    daemon.post(f"{JOBS}/slow:run").raise_for_status()
    target.wait_for(1)


@pytest.mark.timeout(90)
def test_a_manual_clock_after_a_system_clocks_stop_shows_every_attempt_ended(
    tmp_path: Path,
) -> None:
    """A trial looked at a stopped data dir with ``--clock manual``: the clock resumed at the
    last due instant, before a retry's answer came, so a run the daemon had seen succeed read
    in progress, its attempt in flight. A stop now records the instant it stopped at."""
    release = threading.Event()  # the answer comes once the test has seen the request
    target = RecordingTarget(status=lambda received: release.wait(30) and 200)
    data = ("--data-dir", str(tmp_path))
    with serving(target) as base:
        with running_daemon(*data) as daemon:
            run_slow_job(daemon, base, target)
            release.set()
            wait_for(lambda: [a.code for a in daemon.attempts()] == ["OK"], 30)
            ended = daemon.attempts()[0].end_time
            assert daemon.stop() == 0
        with running_daemon(*data, "--clock", "manual") as daemon:
            assert daemon.now() >= ended
            assert [(a.code, a.end_time) for a in daemon.attempts()] == [("OK", ended)]
    assert len(target.requests) == 1


@pytest.mark.timeout(90)
def test_a_manual_clock_after_a_kill_resumes_no_earlier_than_the_last_attempt_started(
    tmp_path: Path,
) -> None:
    """A trial killed a system-clock daemon while a forced run's attempt was in flight: the
    manual clock resumed at the last due instant, 31 s before that attempt started, which then
    read -31.481s long, its retry due before it."""
    release = threading.Event()
    target = RecordingTarget(status=lambda received: release.wait(30) and 200)
    data = ("--data-dir", str(tmp_path))
    try:
        with serving(target) as base:
            with running_daemon(*data) as daemon:
                run_slow_job(daemon, base, target)
                daemon.kill()  # SIGKILL, the attempt in flight
            with running_daemon(*data, "--clock", "manual") as daemon:
                [attempt] = daemon.attempts()
                assert "1 attempt in flight when it ended abruptly" in daemon.first_line
                assert daemon.output[0] == daemon.first_line  # then that attempt's log line:
                wait_for(lambda: any("RESTARTED" in line for line in daemon.output), 10)
                assert daemon.now() >= attempt.start_time
    finally:
        release.set()
    assert attempt.end_time is not None and attempt.end_time >= attempt.start_time
    assert attempt.code == "UNAVAILABLE"
