"""Shared fixtures: UTC pinned, a recording WSGI target, an emulator on a manual clock."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

os.environ["TZ"] = "UTC"
time.tzset()

from scheduler_emulator.clock import ManualClock  # noqa: E402
from scheduler_emulator.emulator import Emulator  # noqa: E402
from scheduler_emulator.transports import WsgiTransport  # noqa: E402

TARGET = "http://target.test/_triggers/timer/nightly"


@dataclass
class Received:
    """One request the recording target received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class RecordingTarget:
    """A WSGI app that records each request and answers ``status`` (a code or a callable)."""

    status: int | Callable[[Received], int] = 200
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        headers = {
            key[5:].replace("_", "-").title(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        received = Received(
            environ["REQUEST_METHOD"],
            environ["PATH_INFO"],
            environ.get("QUERY_STRING", ""),
            headers,
            environ["wsgi.input"].read(length) if length else b"",
        )
        with self.lock:
            self.requests.append(received)
        with self.arrived:
            self.arrived.notify_all()
        status = self.status(received) if callable(self.status) else self.status
        start_response(f"{status} X", [("Content-Type", "text/plain")])
        return [b"ok"]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        """Return the requests once at least ``count`` arrived (over a real socket).

        :param timeout: seconds to wait at most.
        :raises AssertionError: if fewer than ``count`` arrived within ``timeout``.
        """
        with self.arrived:
            done = self.arrived.wait_for(lambda: len(self.requests) >= count, timeout)
        assert done, f"expected {count} request(s) within {timeout} s; got {self.requests}"
        return list(self.requests)


@pytest.fixture
def target() -> RecordingTarget:
    """A recording WSGI target answering 200 (set ``.status`` to change that)."""
    return RecordingTarget()


@pytest.fixture
def clock() -> ManualClock:
    """A manual clock at 2026-09-24T01:59:00Z."""
    return ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))


@pytest.fixture
def emulator(clock: ManualClock, target: RecordingTarget) -> Iterator[Emulator]:
    """An in-memory emulator on ``clock`` delivering every request to ``target`` in-process."""
    emu = Emulator(clock, transport=WsgiTransport(target))
    yield emu
    emu.close()


def nightly_job(**overrides: Any) -> dict[str, Any]:
    """The seed's nightly job as REST JSON, pointed at the recording target."""
    job: dict[str, Any] = {
        "name": "nightly",
        "schedule": "0 2 * * *",
        "timeZone": "Etc/UTC",
        "httpTarget": {"uri": TARGET, "httpMethod": "POST"},
        "retryConfig": {"retryCount": 3},
    }
    job.update(overrides)
    return job
