"""Jobs files at the limits: how long a 50,000-job file takes to load, and how fast a file over
the job-count limit is refused.

Each measurement runs in a fresh Python process (its peak RSS is its own):

1. floor: ``yaml.load(text, Loader=yaml.CSafeLoader)`` of the 50,000-job file — libyaml's
   parser with PyYAML's constructor, no checks, no jobs built;
2. ``load_jobs_file`` of that file: parse, bounds, every job validated as CreateJob does;
3. ``scheduler-emulator start --data-dir D --jobs FILE``: from launch to its first line
   (listening, every job stored and scheduled);
4. ``load_jobs_file`` of a 96,669-job file (about 8 MB, under the byte limit): refused for its
   job count.

Run: ``python bench/bench_jobs_file.py [JOBS]`` (default 50,000). Prints seconds, peak RSS and
the ratio of each time to the floor, with the load average: the machine is shared.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from daemon_process import work_dir  # noqa: E402

JOBS = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
OVER = 96_669

#: Runs in a child process: measure ``BODY`` (which reads ``path``), print seconds and peak RSS.
_CHILD = """
import json, resource, sys, time
path = sys.argv[1]
started = time.perf_counter()
outcome = "ok"
try:
{body}
except Exception as exc:
    outcome = str(exc).splitlines()[0][:100]
seconds = time.perf_counter() - started
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": seconds, "rss_mb": rss, "outcome": outcome}}))
"""

FLOOR = """
import yaml
yaml.load(open(path).read(), Loader=yaml.CSafeLoader)
"""
LOAD = """
from scheduler_emulator.tools.jobs_file import load_jobs_file
load_jobs_file(path, project="my-project", location="us-central1")
"""

#: Runs in a child process: start the daemon on ``path``, wait for its first line, stop it;
#: print the seconds to that line and the daemon's peak RSS.
_DAEMON = """
import json, resource, signal, subprocess, sys, time
path, data = sys.argv[1], sys.argv[2]
started = time.perf_counter()
daemon = subprocess.Popen(
    [sys.executable, "-m", "scheduler_emulator", "start", "--port", "0", "--data-dir", data,
     "--jobs", path, "--log-file", data + ".log"],
    stdout=subprocess.PIPE, text=True)
line = daemon.stdout.readline()
seconds = time.perf_counter() - started
daemon.send_signal(signal.SIGTERM)
daemon.wait(120)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
outcome = "ok" if "listening" in line or "http://" in line else line.strip()[:100]
print(json.dumps({"seconds": seconds, "rss_mb": rss, "outcome": outcome}))
"""


def write_jobs(path: Path, count: int) -> None:
    """``count`` ``* * * * *`` HTTP jobs, one flow-style line each (about 86 bytes)."""
    with path.open("w") as out:
        for index in range(count):
            out.write(
                f'- {{name: job-{index}, schedule: "* * * * *", '
                f'httpTarget: {{uri: "http://127.0.0.1:9/x"}}}}\n'
            )


def child(body: str, *args: str) -> dict[str, object]:
    script = _CHILD.format(body=textwrap.indent(textwrap.dedent(body).strip(), "    "))
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def daemon(path: Path, data: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _DAEMON, str(path), str(data)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def main() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with work_dir("bench-jobs-file-", keep=False) as work:
        jobs, over = work / "jobs.yaml", work / "over.yaml"
        write_jobs(jobs, JOBS)
        write_jobs(over, OVER)
        sizes = f"{jobs.stat().st_size / 1e6:.1f} MB and {over.stat().st_size / 1e6:.1f} MB"
        print(f"files: {JOBS:,} and {OVER:,} jobs ({sizes})")
        started = time.perf_counter()
        floor = child(FLOOR, str(jobs))
        rows = [
            (f"floor: yaml.load CSafeLoader, {JOBS:,} jobs", floor),
            (f"load_jobs_file, {JOBS:,} jobs", child(LOAD, str(jobs))),
            (f"daemon start --jobs, {JOBS:,} jobs, to listening", daemon(jobs, work / "data")),
            (f"load_jobs_file, {OVER:,} jobs (refused)", child(LOAD, str(over))),
        ]
        for label, row in rows:
            seconds, rss = float(row["seconds"]), float(row["rss_mb"])  # type: ignore[arg-type]
            ratio = seconds / float(floor["seconds"])  # type: ignore[arg-type]
            print(f"  {label:<52} {seconds:7.2f} s ({ratio:4.2f}x floor)  peak RSS {rss:6.0f} MB")
            if row["outcome"] != "ok":
                print(f"      {row['outcome']}")
        print(f"({time.perf_counter() - started:.0f} s in all)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
