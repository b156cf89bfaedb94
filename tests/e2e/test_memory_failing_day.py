"""Memory and disk over failing days (issues 11 and 27): a daemon delivering simulated days of
jobs whose every attempt fails — half at a refused connection, half at a target answering 500
with a 4 KiB body, each run retried three times — stays within 50 MB of its RSS at the start,
and its data directory within its byte bound (``--retain-megabytes``).

The daemon is a subprocess (``--clock manual``, a data directory, the execution log to
/dev/null) so that nothing else in the test process moves the number; its ``VmRSS`` is read from
``/proc/<pid>/status``. CI runs one day of 20 jobs under a 10 MB bound (the day writes about
30 MB); the full version runs five days of 50 jobs with the default options (about 700 MB of
history without the bound; docs/performance.md records its result)::

    SCHEDULER_EMULATOR_FAILING_DAYS=5 pytest tests/e2e/test_memory_failing_day.py -s

The ☃ / U+2028 header jobs of the same report are refused at create:
``tests/domain/test_job_limits.py::TestHeaderValues``.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta
from pathlib import Path

import pytest

from scheduler_emulator.runtime._options import DEFAULT_RETAIN_MEGABYTES
from scheduler_emulator.runtime.storage.store import WAL_LIMIT_BYTES
from tests.daemon import running_daemon, serving
from tests.support import RecordingTarget

PARENT = "projects/my-project/locations/us-central1"
SCHEDULE = "*/10 * * * *"  # 144 runs a day per job, 4 attempts each
BOUND_MIB = 50
#: What one trim interval (1,000 attempts of 4 KiB answers) adds past the byte bound.
TRIM_SLACK_BYTES = 6_000_000


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


def dir_bytes(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_failing_days_keep_rss_within_50_mb_and_the_data_dir_within_its_bound(
    tmp_path: Path,
) -> None:
    days = int(os.environ.get("SCHEDULER_EMULATOR_FAILING_DAYS", "1"))
    jobs = 20 if days == 1 else 50
    megabytes = 10 if days == 1 else DEFAULT_RETAIN_MEGABYTES
    bound = ("--retain-megabytes", str(megabytes)) if days == 1 else ()
    target = RecordingTarget(status=500, body=b"e" * 4096)
    with (
        serving(target) as failing,
        running_daemon(
            "--data-dir", str(tmp_path), "--clock", "manual",
            "--start", "2026-09-24T00:00:30Z", "--log-file", os.devnull, *bound,
        ) as daemon,
    ):  # fmt: skip
        refused = refused_url()
        for index in range(jobs):
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
        largest = 0
        for _ in range(24 * days):
            daemon.advance(timedelta(hours=1))
            largest = max(largest, dir_bytes(tmp_path))
        end = vm_kib(pid, "VmRSS")
        peak = vm_kib(pid, "VmHWM")
        page, _ = daemon.attempts_page(page_size=1000)
        assert page and all(a["code"] != "OK" for a in page)
        assert any(a["responseExcerpt"] == "e" * 4096 for a in page)  # the answers are kept
        # 144 runs of 4 attempts per job a day, less the last run's third retry (00:00:35)
        assert len(target.requests) == jobs // 2 * (days * 24 * 6 * 4 - 1)
    grown = (max(end, peak) - start) / 1024
    allowed = megabytes * 1_000_000 + TRIM_SLACK_BYTES + WAL_LIMIT_BYTES
    print(
        f"\n{days} day(s) of {jobs} jobs: RSS {start / 1024:.1f} -> {end / 1024:.1f} MiB "
        f"(peak {peak / 1024:.1f} MiB); data dir at most {largest / 1e6:.1f} MB "
        f"(allowed {allowed / 1e6:.0f} MB)"
    )
    assert grown < BOUND_MIB, f"RSS grew {grown:.1f} MiB"
    assert largest <= allowed, f"the data dir reached {largest / 1e6:.1f} MB"
