"""The daemon over a long attempt history: first-page latency and memory with 200,000 attempts.

1. Fills a fresh SQLite data directory with N finished attempts of 100 jobs (rows written with
   one ``executemany`` into the store's own schema, not by delivering: seconds, not hours).
2. Starts ``scheduler-emulator start --data-dir DIR --port 0`` on it (system clock, no jobs
   defined: the history is what a deleted job leaves) and waits for its health check.
3. Times ``GET /_emulator/attempts`` over one kept-alive loopback connection: the first page
   (100 attempts), one job's first page, one run, a ``startAfter`` window at the end of the
   history, and walking the whole history 1000 at a time; reads the daemon's ``VmRSS`` from
   ``/proc/<pid>/status`` before and after the first-page requests, and its ``VmHWM``.

Run: ``python bench/daemon_attempts.py [--attempts 200000] [--repeat 50]``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pytest_plugin.live import LiveScheduler
from scheduler_emulator.runtime.storage.store import Store

START = datetime(2026, 1, 1, tzinfo=UTC)
JOBS = 100


def fill(data_dir: Path, count: int) -> None:
    """Write ``count`` finished attempts of :data:`JOBS` every-minute jobs into ``data_dir``."""
    db = data_dir / "emulator.db"
    Store(db).close()  # the schema, exactly as the daemon makes it
    connection = sqlite3.connect(db)
    rows = []
    for index in range(count):
        job = f"projects/my-project/locations/us-central1/jobs/job{index % JOBS}"
        when = START + timedelta(minutes=index // JOBS)
        stamp = when.isoformat()
        request = {
            "method": "POST",
            "url": f"http://127.0.0.1:8000/_triggers/timer/job{index % JOBS}",
            "headers": {
                "User-Agent": "Google-Cloud-Scheduler",
                "X-CloudScheduler": "true",
                "X-CloudScheduler-JobName": f"job{index % JOBS}",
                "X-CloudScheduler-ScheduleTime": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        }
        rows.append(
            (index + 1, job, index + 1, 1, when.strftime("%Y-%m-%dT%H:%M:%SZ"), stamp, stamp)
            + (json.dumps(request), 200, "OK", "", 0, 0)
        )
    with connection:
        connection.executemany(
            "INSERT INTO attempts (id, job, run_id, attempt, schedule_time, start_time, end_time, "
            "request, response_status, code, debug_info, forced, injected) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    connection.close()


def status_kib(pid: int, key: str) -> int:
    """A ``kB`` line of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def timed(daemon: LiveScheduler, query: str, repeat: int) -> tuple[list[float], dict]:
    times, answer = [], {}
    for _ in range(repeat):
        started = time.perf_counter()
        response = daemon.session.get(daemon.url + "/_emulator/attempts" + query, timeout=60)
        times.append(time.perf_counter() - started)
        response.raise_for_status()
        answer = response.json()
    return times, answer


def show(label: str, times: list[float], answer: dict) -> None:
    print(
        f"{label:34} median {statistics.median(times) * 1e3:7.2f} ms, "
        f"max {max(times) * 1e3:7.2f} ms ({len(answer['attempts'])} attempts)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--attempts", type=int, default=200_000, help="attempts in the history (%(default)s)"
    )
    parser.add_argument(
        "--repeat", type=int, default=50, help="first-page reads timed (%(default)s)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        started = time.perf_counter()
        fill(data_dir, args.attempts)
        size = (data_dir / "emulator.db").stat().st_size
        print(
            f"filled {args.attempts:,} attempts in {time.perf_counter() - started:.1f} s "
            f"({size / args.attempts:.0f} bytes per attempt on disk)"
        )
        started = time.perf_counter()
        daemon = LiveScheduler("--data-dir", str(data_dir), "--retain-attempts", str(args.attempts))
        try:
            daemon._admin.get("/_emulator/health")
            print(f"daemon listening and healthy after {time.perf_counter() - started:.2f} s")
            pid = daemon.process.pid
            before = status_kib(pid, "VmRSS")
            first, answer = timed(daemon, "", 1)
            show("the very first page (cold)", first, answer)
            show("first page, all jobs", *timed(daemon, "", args.repeat))
            after = status_kib(pid, "VmRSS")
            show("first page, ?job=job42", *timed(daemon, "?job=job42", args.repeat))
            show("one run, ?run=150000", *timed(daemon, "?run=150000", args.repeat))
            late = (START + timedelta(minutes=args.attempts // JOBS - 5)).isoformat()
            show(
                "?startAfter=<5 minutes before end>",
                *timed(daemon, "?startAfter=" + late.replace("+00:00", "Z"), 5),
            )
            walked, token, pages = 0, "", 0
            started = time.perf_counter()
            while True:
                query = "?pageSize=1000" + (f"&pageToken={token}" if token else "")
                _, page = timed(daemon, query, 1)
                walked += len(page["attempts"])
                pages += 1
                token = page.get("nextPageToken", "")
                if not token:
                    break
            walk = time.perf_counter() - started
            print(
                f"walked {walked:,} attempts in {pages} pages of 1000: {walk:.2f} s "
                f"({walk / pages * 1e3:.1f} ms per page)"
            )
            print(
                f"daemon VmRSS {before / 1024:.1f} MiB before the first pages, "
                f"{after / 1024:.1f} MiB after {args.repeat + 1} (+{(after - before) / 1024:.1f} "
                f"MiB); {status_kib(pid, 'VmRSS') / 1024:.1f} MiB after the walk; "
                f"peak VmHWM {status_kib(pid, 'VmHWM') / 1024:.1f} MiB"
            )
        finally:
            daemon.stop()
            daemon.close()


if __name__ == "__main__":
    main()
