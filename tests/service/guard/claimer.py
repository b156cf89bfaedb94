"""A child process for the two-process test: one service instance receiving one delivery.

``python -m tests.service.guard.claimer '<store spec JSON>'``, run from the repo root, serves a
guarded ``nightly`` timer through a :class:`TimerRouter`, and talks to the test over stdin/stdout,
one line at a time:

- it says ``ready`` once the store is open, then waits for ``go``;
- it posts the delivery (werkzeug's test client, Cloud Scheduler's headers);
- if its handler runs, it says ``running`` and waits for ``finish`` before returning;
- it says ``answered <status>`` and exits.
"""

from __future__ import annotations

import json
import sys

from werkzeug.test import Client

from scheduler_emulator.service import RunOnceGuard, TimerRouter

from .guard_support import open_store, scheduler_headers


def say(line: str) -> None:
    """Tell the test something (one line on stdout)."""
    print(line, flush=True)


def hear(expected: str) -> None:
    """Wait for the test to say ``expected`` on stdin.

    :raises SystemExit: when the test says something else or closes stdin.
    """
    line = sys.stdin.readline().strip()
    if line != expected:
        raise SystemExit(f"expected {expected!r} from the test, got {line!r}")


def main(argv: list[str]) -> int:
    """Run one delivery against the store described by ``argv[1]``; return the exit code."""
    guard = RunOnceGuard(open_store(json.loads(argv[1])))
    router = guard.install(TimerRouter())

    @router.timer("nightly")
    @guard.once
    def nightly() -> None:
        say("running")
        hear("finish")

    client = Client(router)
    say("ready")
    hear("go")
    response = client.post("/_triggers/timer/nightly", headers=scheduler_headers())
    say(f"answered {response.status_code}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
