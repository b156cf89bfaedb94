"""How the suite ends on a signal: its own module, so that a test can load it into a pytest of
its own without the package (tests/project/test_suite_signals.py)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def interrupted(signum: int, frame: object) -> None:
    """A SIGTERM (a CI's cancel, ``timeout``, ``kill``) ends the run as Ctrl-C does: passed on
    to this process's children (the xdist workers, when only the controller got it), then
    raised as :class:`KeyboardInterrupt`, so that fixtures are torn down and the processes the
    tests started in sessions of their own (the Functions emulator, daemons) stop with them
    (trial 83 found five Firebase processes left running after ``timeout 300 pytest``)."""
    with contextlib.suppress(OSError):  # (no /proc: the workers are left to their own signal)
        for task in Path("/proc/self/task").iterdir():
            for pid in (task / "children").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGTERM)
    raise KeyboardInterrupt(f"signal {signum}")
