"""The start instant, through the daemon: a job due exactly at ``--start`` (or where a manual
clock resumes) fires then, unless the data dir already recorded that run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon import running_daemon, serving
from tests.support import RecordingTarget

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

START = "2026-09-24T05:00:00Z"


def hourly_jobs(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "jobs.yaml"
    path.write_text(
        f"- name: hourly\n  schedule: 0 * * * *\n  httpTarget: {{uri: '{base}/hourly'}}\n",
        encoding="utf-8",
    )
    return path


def test_an_hourly_job_fires_at_the_start_instant_once_across_a_restart(tmp_path: Path) -> None:
    target = RecordingTarget()
    with serving(target) as base:
        flags = ("--jobs", str(hourly_jobs(tmp_path, base)), "--data-dir", str(tmp_path / "data"),
                 "--clock", "manual")  # fmt: skip
        with running_daemon(*flags, "--start", START) as daemon:
            daemon.post("/_emulator/clock:advance", {"seconds": 0}).raise_for_status()
            [attempt] = daemon.attempts()
            assert attempt.schedule_time == START and attempt.code == "OK"
            assert daemon.stop() == 0
        for again in ((), ("--start", START)):  # resumed where it stopped, or told the instant
            with running_daemon(*flags, *again) as daemon:
                daemon.post("/_emulator/clock:advance", {"seconds": 0}).raise_for_status()
                assert [a.schedule_time for a in daemon.attempts()] == [START]
                assert daemon.skipped() == []  # nothing passed while it was down
                assert daemon.stop() == 0
    assert len(target.requests) == 1
