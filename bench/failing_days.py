"""Memory and disk over failing days (issues 11 and 27): a daemon delivering simulated days of
jobs whose every attempt fails — half at a refused connection, half at a target answering 500
with a 4 KiB body, each run retried three times — stays within 50 MiB of its RSS at the start,
and its data directory within its byte bound (``--retain-megabytes``).

The daemon is a subprocess (``--clock manual``, a data directory, the execution log to
/dev/null) so that nothing else moves the number; its ``VmRSS`` and ``VmHWM`` are read from
``/proc/<pid>/status`` and the data directory's size after every virtual hour.

Run: ``python bench/failing_days.py`` (one day of 20 jobs under a 10 MB bound: the day writes
about 30 MB; about 20 s; ``.ci/run`` runs it after the suite) or, issue 27's full size, five
days of 50 jobs with the default bound (about 700 MB of history without it; 10 minutes)::

    python bench/failing_days.py --days 5 --jobs 50 --retain-megabytes 200

Prints the RSS and the largest data directory; exits 1 when either is over its bound.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import tempfile
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from werkzeug.serving import make_server

from pytest_plugin.live import LiveScheduler
from scheduler_emulator.runtime.storage.store import WAL_LIMIT_BYTES

PARENT = "projects/my-project/locations/us-central1"
RSS_BOUND_MIB = 50
#: What one trim interval (1,000 attempts of 4 KiB answers) adds past the byte bound.
TRIM_SLACK_BYTES = 6_000_000


def vm_kib(pid: int, key: str) -> int:
    """``key`` (``VmRSS``, ``VmHWM``) of process ``pid``, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise SystemExit(f"no {key} line in /proc/{pid}/status")


def refused_url() -> str:
    """A loopback URL nothing listens on (a port just bound and released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/refused"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--retain-megabytes", type=int, default=10)
    args = parser.parse_args()
    answered = []

    def failing(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        answered.append(environ["PATH_INFO"])
        start_response("500 Internal Server Error", [("Content-Type", "text/plain")])
        return [b"e" * 4096]

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    server = make_server("127.0.0.1", 0, failing, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    refused = refused_url()
    with (
        tempfile.TemporaryDirectory(prefix="failing-days-") as data,
        LiveScheduler(
            "--data-dir", data, "--clock", "manual", "--start", "2026-09-24T00:00:30Z",
            "--log-file", os.devnull, "--retain-megabytes", str(args.retain_megabytes),
        ) as daemon,
    ):  # fmt: skip
        for index in range(args.jobs):
            uri = refused if index % 2 else f"http://127.0.0.1:{server.server_port}/job{index}"
            daemon.create_job({
                "name": f"{PARENT}/jobs/job{index}",
                "schedule": "*/10 * * * *",  # 144 runs a day, 4 attempts each
                "httpTarget": {"uri": uri},
                "retryConfig": {"retryCount": 3, "minBackoffDuration": "5s"},
            })  # fmt: skip
        pid = daemon.process.pid
        start, largest = vm_kib(pid, "VmRSS"), 0
        for _ in range(24 * args.days):
            daemon.advance(timedelta(hours=1))
            largest = max(largest, sum(f.stat().st_size for f in Path(data).rglob("*")))
        end, peak = vm_kib(pid, "VmRSS"), vm_kib(pid, "VmHWM")
        page, _ = daemon.attempts_page(page_size=1000)
    server.shutdown()
    # 144 runs of 4 attempts per job a day, less the last run's third retry (00:00:35)
    expected = args.jobs // 2 * (args.days * 24 * 6 * 4 - 1)
    grown = (max(end, peak) - start) / 1024
    allowed = args.retain_megabytes * 1_000_000 + TRIM_SLACK_BYTES + WAL_LIMIT_BYTES
    print(
        f"{args.days} day(s) of {args.jobs} jobs: {len(answered)} answered 500 "
        f"(expected {expected}); RSS {start / 1024:.1f} -> {end / 1024:.1f} MiB "
        f"(peak {peak / 1024:.1f} MiB, bound +{RSS_BOUND_MIB} MiB); data dir at most "
        f"{largest / 1e6:.1f} MB (allowed {allowed / 1e6:.0f} MB)"
    )
    kept = any(a["responseExcerpt"] == "e" * 4096 for a in page)
    ok = len(answered) == expected and kept and all(a["code"] != "OK" for a in page)
    return 0 if ok and grown < RSS_BOUND_MIB and largest <= allowed else 1


if __name__ == "__main__":
    sys.exit(main())
