"""``python tests/shifted_daemon.py SHIFT_SECONDS start …``: the daemon on a system clock
shifted by ``SHIFT_SECONDS`` (the daemon's :class:`~support.ShiftedClock`), so that a test can
put a minute boundary a few seconds after the daemon starts. Everything else is the real
``scheduler-emulator`` command line."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta

from scheduler_emulator.runtime import _clock as clock
from scheduler_emulator.tools.cli import main

if __name__ == "__main__":
    shift = timedelta(seconds=float(sys.argv[1]))
    real_now = clock.SystemClock.now

    def shifted_now(self: clock.SystemClock) -> datetime:
        return real_now(self) + shift

    clock.SystemClock.now = shifted_now  # type: ignore[method-assign]
    sys.exit(main(sys.argv[2:]))
