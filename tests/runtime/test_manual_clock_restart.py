"""A manual clock survives a daemon restart on its data dir: it resumes at its virtual now,
and no time it never passed is recorded as skipped."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from scheduler_emulator.domain.errors import ClockError
from scheduler_emulator.runtime._clock import ClockFile, ManualClock
from scheduler_emulator.wire import parse_timestamp
from tests.daemon import running_daemon, serving
from tests.support import RecordingTarget, nightly_job

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"


@pytest.mark.timeout(90)
def test_a_restarted_manual_daemon_resumes_at_its_virtual_now(tmp_path: Path) -> None:
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
            assert daemon.stop() == 0
        with running_daemon(*data) as daemon:
            assert "manual clock at 2026-03-02T14:03:00Z (resumed" in daemon.first_line
            assert daemon.get("/_emulator/clock")["now"] == "2026-03-02T14:03:00Z"
            assert daemon.skipped() == []
            daemon.advance(timedelta(minutes=1))
            times = [a["scheduleTime"] for a in daemon.attempts()]
    assert times[-1] == "2026-03-02T14:04:00Z"
    assert len(times) == 4 and len(target.requests) == 4


def test_start_wins_over_the_kept_instant_and_a_bad_file_is_named(tmp_path: Path) -> None:
    kept = ClockFile(tmp_path / "manual-clock.json")
    assert kept.read() is None
    clock = ManualClock(parse_timestamp("2026-03-02T14:00:00Z"), keep=kept.write)
    clock.advance(timedelta(minutes=3))
    assert kept.read() == parse_timestamp("2026-03-02T14:03:00Z")
    kept.path.write_text("garbage")
    with pytest.raises(ClockError, match="manual-clock.json does not hold"):
        kept.read()
