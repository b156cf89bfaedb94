"""Memory over a failing day (issue 11): a daemon delivering one simulated day of 20 jobs whose
every attempt fails — 10 at a refused connection, 10 at a target answering 500, each run
retried three times — stays within 50 MB of its RSS at the start.

The daemon is a subprocess (``--clock manual``, a data directory, the execution log to
/dev/null) so that nothing else in the test process moves the number; its ``VmRSS`` is read from
``/proc/<pid>/status``. The ☃ / U+2028 header jobs of the same report are refused at create:
``tests/domain/test_job_limits.py::TestHeaderValues``.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from pathlib import Path

import pytest

from tests.daemon import running_daemon, serving
from tests.support import RecordingTarget

PARENT = "projects/my-project/locations/us-central1"
JOBS = 20
SCHEDULE = "*/10 * * * *"  # 144 runs a day per job, 4 attempts each
BOUND_MIB = 50


def vm_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {key} line")


def refused_url() -> str:
    """A loopback URL nothing listens on (a port just bound and released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/refused"


@pytest.mark.slow
def test_a_failing_day_keeps_rss_within_50_mb(tmp_path: Path) -> None:
    target = RecordingTarget(status=500)
    with (
        serving(target) as failing,
        running_daemon(
            "--data-dir", str(tmp_path), "--clock", "manual",
            "--start", "2026-09-24T00:00:30Z", "--log-file", os.devnull,
        ) as daemon,
    ):  # fmt: skip
        refused = refused_url()
        for index in range(JOBS):
            uri = refused if index % 2 else f"{failing}/_triggers/timer/job{index}"
            job = {
                "name": f"{PARENT}/jobs/job{index}",
                "schedule": SCHEDULE,
                "httpTarget": {"uri": uri},
                "retryConfig": {"retryCount": 3, "minBackoffDuration": "5s"},
            }
            response = daemon.session.post(f"{daemon.url}/v1/{PARENT}/jobs", json=job)
            assert response.status_code == 200, response.text
        pid = daemon.process.pid
        start = vm_kib(pid, "VmRSS")
        for _ in range(24):
            daemon.advance(timedelta(hours=1))
        end = vm_kib(pid, "VmRSS")
        peak = vm_kib(pid, "VmHWM")
        runs = JOBS * 24 * 6
        page, _ = daemon.attempts_page(page_size=1000)
        assert page and all(a["code"] != "OK" for a in page)
        # 144 runs of 4 attempts per job, less the last run's third retry (due at 00:00:35)
        assert len(target.requests) == JOBS // 2 * (24 * 6 * 4 - 1)
        grown = (max(end, peak) - start) / 1024
        assert grown < BOUND_MIB, (
            f"RSS {start / 1024:.1f} MiB at the start, {end / 1024:.1f} MiB after {runs} "
            f"failing runs (peak {peak / 1024:.1f} MiB)"
        )
        print(f"\nRSS {start / 1024:.1f} -> {end / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB")
