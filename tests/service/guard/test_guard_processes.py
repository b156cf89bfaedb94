"""Two service instances (processes) receive one run at once: exactly one runs it.

Each instance is ``python -m tests.service.guard.claimer`` in its own Python process, sharing the
store (a SQLite file, or the Firestore emulator). The test holds both at a start line until both are
ready, releases them together, and keeps the winner's handler running until the other one has been
answered, so that the loser must see the run in progress (409), not completed."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from scheduler_emulator.service import RunOnceGuard, RunStatus, RunStore

from .guard_support import scheduler_headers, store_spec

#: The directory ``python -m tests.service.guard.claimer`` runs from.
REPO = Path(__file__).resolve().parents[3]
#: Seconds to wait for any one line from an instance (imports and the first claim included).
LINE_TIMEOUT = 60.0


class Instances:
    """The child processes, and every line they say, in arrival order, as ``(index, line)``."""

    def __init__(self, spec: dict[str, str], count: int) -> None:
        self.lines: queue.Queue[tuple[int, str]] = queue.Queue()
        self.processes = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.service.guard.claimer", json.dumps(spec)],
                cwd=REPO,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
            for _ in range(count)
        ]
        for index, process in enumerate(self.processes):
            assert process.stdout is not None
            reader = threading.Thread(target=self._read, args=(index, process.stdout), daemon=True)
            reader.start()

    def _read(self, index: int, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put((index, line.strip()))
        self.lines.put((index, "<exited>"))

    def next_line(self) -> tuple[int, str]:
        """The next line any instance said (bounded wait)."""
        try:
            return self.lines.get(timeout=LINE_TIMEOUT)
        except queue.Empty:
            pytest.fail(f"no instance said anything within {LINE_TIMEOUT} s")

    def tell(self, index: int, line: str) -> None:
        """Say ``line`` to instance ``index``."""
        stdin = self.processes[index].stdin
        assert stdin is not None
        stdin.write(line + "\n")
        stdin.flush()

    def stop(self) -> list[int | None]:
        """Close every stdin, wait (bounded) for the exit codes; kill what is left."""
        codes: list[int | None] = []
        for process in self.processes:
            if process.stdin is not None:
                process.stdin.close()
            try:
                codes.append(process.wait(timeout=LINE_TIMEOUT))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=LINE_TIMEOUT)
                codes.append(None)
        for process in self.processes:
            if process.stdout is not None:
                process.stdout.close()
        return codes


@pytest.fixture
def instances(store: RunStore) -> Iterator[Instances]:
    """Two instances of the service on ``store``, stopped after the test."""
    started = Instances(store_spec(store), 2)
    yield started
    started.stop()


def test_two_processes_delivering_one_run_at_once_run_it_exactly_once(
    instances: Instances, store: RunStore
) -> None:
    ready = {instances.next_line(), instances.next_line()}
    assert ready == {(0, "ready"), (1, "ready")}

    instances.tell(0, "go")
    instances.tell(1, "go")
    # The winner says "running" after its claim and the loser "answered 409" after its own, so the
    # two lines may arrive in either order; a second "running" would mean both ran the work.
    said = dict(sorted([instances.next_line(), instances.next_line()], key=lambda line: line[1]))
    assert sorted(said.values()) == ["answered 409", "running"], said
    winner = next(index for index, line in said.items() if line == "running")
    instances.tell(winner, "finish")
    line = instances.next_line()
    if line == (1 - winner, "<exited>"):  # the loser ends once answered, maybe before this
        line = instances.next_line()
    assert line == (winner, "answered 200")

    assert instances.stop() == [0, 0]
    record = store.get(RunOnceGuard(store).run_for(scheduler_headers()).key)
    assert record is not None and record.status is RunStatus.COMPLETED
