"""A daemon over 200,000 recorded attempts answers a page, not the whole history (issue 11):
its first page is quick and answering does not grow its memory. The precise numbers are
``bench/daemon_attempts.py``'s (docs/performance.md); the bounds here are generous on purpose."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scheduler_emulator.runtime.storage.store import Store
from tests.daemon import running_daemon

COUNT = 200_000
JOBS = 100
START = datetime(2026, 1, 1, tzinfo=UTC)


def fill(data_dir: Path) -> None:
    """Write :data:`COUNT` finished attempts of :data:`JOBS` jobs into a fresh data directory,
    straight into the store's schema (delivering them would take hours): attempt ``i`` (from 0)
    is job ``job{i % JOBS}``'s, scheduled and run at minute ``i // JOBS`` after :data:`START`.
    The rows are made by SQLite itself and the table's indexes built once after them, as a bulk
    load does (the same rows and indexes: about 2 s, where rows made in Python and indexed one
    by one took 4 to 5)."""
    db = data_dir / "emulator.db"
    Store(db).close()
    request = json.dumps({"method": "POST", "url": "http://127.0.0.1:8000/t", "headers": {}})
    connection = sqlite3.connect(db)
    with connection:
        indexes = connection.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'attempts'"
            " AND sql IS NOT NULL"
        ).fetchall()
        assert indexes, "the store's attempts table has no index to rebuild"
        for name, _ in indexes:
            connection.execute(f'DROP INDEX "{name}"')
        # minute: 'YYYY-MM-DD HH:MM:SS'; ScheduleTime 'YYYY-MM-DDTHH:MM:SSZ'; the start and end
        # times as datetime.isoformat() writes them ('YYYY-MM-DDTHH:MM:SS+00:00')
        connection.execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?),"
            " m(i, minute) AS (SELECT i, replace(datetime(?, '+' || (i / ?) || ' minutes'),"
            " ' ', 'T') FROM n)"
            " INSERT INTO attempts (id, job, run_id, attempt, schedule_time, start_time, end_time,"
            " request, response_status, code, debug_info, forced, injected)"
            " SELECT i + 1, ? || (i % ?), i + 1, 1, minute || 'Z', minute || '+00:00',"
            " minute || '+00:00', ?, 200, 'OK', '', 0, 0 FROM m",
            (
                COUNT,
                START.strftime("%Y-%m-%d %H:%M:%S"),
                JOBS,
                "projects/my-project/locations/us-central1/jobs/job",
                JOBS,
                request,
            ),
        )
        for _, sql in indexes:
            connection.execute(sql)
    connection.close()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS line")


def test_the_first_page_of_200_000_attempts_is_quick_and_costs_no_memory(
    tmp_path: Path,
) -> None:
    fill(tmp_path)
    with running_daemon("--data-dir", str(tmp_path), "--retain-attempts", str(COUNT)) as daemon:
        daemon.get("/_emulator/health")  # the connection is open and the daemon serving
        before = rss_kib(daemon.process.pid)
        started = time.perf_counter()
        first = daemon.get("/_emulator/attempts")
        elapsed = time.perf_counter() - started
        for _ in range(20):
            daemon.get("/_emulator/attempts", params={"job": "job42"})
        grown_mib = (rss_kib(daemon.process.pid) - before) / 1024
        assert len(first["attempts"]) == 100 and first["nextPageToken"]
        assert first["attempts"][0]["scheduleTime"] == "2026-01-01T00:00:00Z"
        assert elapsed < 1.0, f"the first page took {elapsed:.3f} s"  # ~4 ms measured
        assert grown_mib < 20, f"RSS grew {grown_mib:.1f} MiB while answering"
        last, _ = daemon.attempts_page(start_after=START + timedelta(minutes=COUNT // JOBS - 1))
        assert len(last) == JOBS  # the newest minute's attempts are all there
