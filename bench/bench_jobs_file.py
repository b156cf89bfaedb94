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

Run: ``python bench/bench_jobs_file.py [JOBS] [--baseline REV]`` (default 50,000 jobs). Prints
seconds, peak RSS and the ratio of each time to the floor, with the load average: the machine is
shared. With ``--baseline REV`` (e.g. ``e1ee125``, the tree the 50,000-job load was first
measured on: 21.7 s and 329 MB there), measurements 2 and 3 are also made on the package as it
was at git revision REV, in the same run, and each figure is given as a fraction of its.
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

JOBS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 50_000
#: ``--baseline REV``: also measure the package as it was at git revision REV (e1ee125: before
#: the jobs file's count and streaming), and print each figure as a fraction of its.
BASELINE = sys.argv[sys.argv.index("--baseline") + 1] if "--baseline" in sys.argv else None
OVER = 96_669
#: This checkout.
_ROOT = Path(__file__).resolve().parent.parent

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
in_process = globals().get("in_process", seconds)
print(json.dumps({{"seconds": seconds, "rss_mb": rss, "outcome": outcome,
                  "in_process": in_process}}))
"""

FLOOR = """
import yaml
yaml.load(open(path).read(), Loader=yaml.CSafeLoader)
"""
LOAD = """
from scheduler_emulator.tools.jobs_file import load_jobs_file
loading = time.perf_counter()
try:
    load_jobs_file(path, project="my-project", location="us-central1")
finally:
    in_process = time.perf_counter() - loading
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


def child(body: str, *args: str, tree: Path | None = None) -> dict[str, object]:
    """Run ``body`` in a fresh Python process (on ``tree``'s package when given)."""
    script = _CHILD.format(body=textwrap.indent(textwrap.dedent(body).strip(), "    "))
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        check=True,
        env=_env(tree),
        cwd=tree or _ROOT,
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def daemon(path: Path, data: Path, tree: Path | None = None) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _DAEMON, str(path), str(data)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(tree),
        cwd=tree or _ROOT,
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def _env(tree: Path | None) -> dict[str, str]:
    """The environment of a measurement: this checkout's package, or ``tree``'s (the
    measurement also runs in that directory: ``python -c`` looks there first)."""
    return {**os.environ, "PYTHONPATH": str(tree or _ROOT)}


def export(revision: str, into: Path) -> Path:
    """The package as it was at git ``revision``, written under ``into`` (git archive)."""
    archive = subprocess.run(
        ["git", "-C", str(_ROOT), "archive", revision, "scheduler_emulator"],
        capture_output=True,
        check=True,
    ).stdout
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def show(label: str, row: dict[str, object], floor: dict[str, object], base: object = None) -> None:
    """One line: seconds, the ratio to the floor, peak RSS; against ``base`` (the same
    measurement of the baseline revision) when given."""
    seconds, rss = float(row["seconds"]), float(row["rss_mb"])  # type: ignore[arg-type]
    ratio = seconds / float(floor["seconds"])  # type: ignore[arg-type]
    line = f"  {label:<50} {seconds:7.2f} s ({ratio:4.2f}x floor)  peak RSS {rss:5.0f} MB"
    if isinstance(base, dict):
        line += (
            f"  = {seconds / float(base['seconds']):.2f} of the time and "
            f"{rss / float(base['rss_mb']):.2f} of the memory of the baseline"
        )
    print(line)
    if row["outcome"] != "ok":
        print(f"      {row['outcome']}")


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
        base = export(BASELINE, work / "baseline") if BASELINE else None
        floor = child(FLOOR, str(jobs))
        show(f"floor: yaml.load CSafeLoader, {JOBS:,} jobs", floor, floor)
        for label, measure in (
            (f"load_jobs_file, {JOBS:,} jobs", lambda t: child(LOAD, str(jobs), tree=t)),
            (
                f"daemon start --jobs, {JOBS:,} jobs, to listening",
                lambda t: daemon(jobs, work / f"data-{t is None}", tree=t),
            ),
        ):
            before = measure(base) if base is not None else None
            if before is not None:
                show(f"{label} ({BASELINE})", before, floor)
            show(label, measure(None), floor, before)
        refused = child(LOAD, str(over))
        show(f"load_jobs_file, {OVER:,} jobs (refused)", refused, floor)
        in_process = float(refused["in_process"])  # type: ignore[arg-type]
        print(f"      of which in load_jobs_file (after the imports): {in_process:.2f} s")
        print(f"({time.perf_counter() - started:.0f} s in all)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
