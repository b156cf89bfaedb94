"""Attempt history at size: first-page latency and memory with 200,000 recorded attempts.

Prints the time to answer the first page of ``Emulator.attempts_page`` (and of one job's
attempts) over a SQLite data directory holding 200,000 attempts, and how much the process's
memory grew while answering; plus the store's bytes per attempt on disk. Run:
``python bench/bench_attempts.py [ATTEMPTS]``.
"""

from __future__ import annotations

import resource
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scheduler_emulator import Emulator, ManualClock, WsgiTransport
from scheduler_emulator.runtime.storage.store import Store


def app(environ, start_response):  # type: ignore[no-untyped-def]
    start_response("200 OK", [])
    return [b""]


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "emulator.db"
        store = Store(db, retain_attempts=None)
        emulator = Emulator(
            ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), store=store, transport=WsgiTransport(app)
        )
        jobs = 100
        for index in range(jobs):
            emulator.create_job(
                name=f"job{index}", schedule="* * * * *", http_target={"uri": "http://t.test/"}
            )
        started = time.perf_counter()
        emulator.advance(timedelta(minutes=count // jobs))
        made = time.perf_counter() - started
        print(f"recorded {count:,} attempts in {made:.1f} s")
        before = rss_mib()
        for label, job in (("first page, all jobs", None), ("first page, one job", "job42")):
            times = []
            for _ in range(20):
                t0 = time.perf_counter()
                page, _token = emulator.attempts_page(job, page_size=100)
                times.append(time.perf_counter() - t0)
            print(
                f"{label:24}: median {statistics.median(times) * 1e3:.2f} ms, "
                f"max {max(times) * 1e3:.2f} ms ({len(page)} attempts)"
            )
        grown = rss_mib() - before
        print(f"max RSS growth while paging: {grown:.1f} MiB (max RSS {rss_mib():.0f} MiB)")
        emulator.close()
        print(f"data directory: {db.stat().st_size / count:.0f} bytes per attempt")


if __name__ == "__main__":
    main()
