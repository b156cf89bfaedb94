"""What the daemon benchmarks share: run ``scheduler-emulator start`` on a jobs file."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def work_dir(prefix: str, keep: bool) -> Iterator[Path]:
    """A fresh temporary directory for one benchmark run, removed when the run ends (also when
    it is interrupted) unless ``keep``, when its path is printed instead."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        if keep:
            print(f"  (data in {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)


@contextmanager
def daemon_running(
    work: Path, jobs: list[dict[str, Any]]
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Write ``jobs`` to ``work/jobs.json`` and run the daemon on a free port, system clock,
    data dir ``work/data``, execution log ``work/attempts.log``; stop it (SIGTERM, then kill)
    on leaving, also when the benchmark is interrupted, unless it was stopped already.

    :return: the process (its stdout a pipe) and its start-up line, which names its URL.
    """
    (work / "jobs.json").write_text(json.dumps(jobs))
    daemon = subprocess.Popen(
        [sys.executable, "-m", "scheduler_emulator", "start", "--port", "0"]
        + ["--data-dir", str(work / "data"), "--jobs", str(work / "jobs.json")]
        + ["--log-file", str(work / "attempts.log")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert daemon.stdout is not None
        yield daemon, daemon.stdout.readline().strip()
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
