"""What the daemon benchmarks share: start ``scheduler-emulator start`` on a jobs file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def start_daemon(work: Path, jobs: list[dict[str, Any]]) -> tuple[subprocess.Popen[str], str]:
    """Write ``jobs`` to ``work/jobs.json`` and start the daemon on a free port, system clock,
    data dir ``work/data``, execution log ``work/attempts.log``.

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
    assert daemon.stdout is not None
    return daemon, daemon.stdout.readline().strip()
