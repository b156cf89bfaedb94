"""Helpers shared by the test modules: a recording WSGI target and the seed's nightly job.

Imported as ``from support import …`` (not from ``conftest``: several conftest files exist and
would shadow each other's module name).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from scheduler_emulator import SystemClock
from scheduler_emulator.realtime import real_monotonic

TARGET = "http://target.test/_triggers/timer/nightly"

T = TypeVar("T")


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


class ShiftedClock(SystemClock):
    """Real time shifted so that the next whole minute is ``lead`` seconds away."""

    def __init__(self, lead: float) -> None:
        real = super().now()
        boundary = real.replace(second=0, microsecond=0) + timedelta(minutes=1)
        self.shift = boundary - real - timedelta(seconds=lead)

    def now(self) -> datetime:
        return super().now() + self.shift


def wait_for(condition: Callable[[], T], bound_seconds: float, what: str | None = None) -> T:
    """Poll ``condition`` every 20 ms until it returns a truthy value, for at most
    ``bound_seconds`` (real time, whatever freezegun does): the one polling helper of the tests.

    :param condition: called until its value is truthy.
    :param bound_seconds: how long to keep asking.
    :param what: what is waited for; with it, running out of time raises.
    :raises AssertionError: on timeout when ``what`` is given ("gave up waiting for <what>").
    :return: the first truthy value; on timeout without ``what``, the last (falsy) value, so
        that ``assert wait_for(...)`` fails.
    """
    deadline = real_monotonic() + bound_seconds
    tick = threading.Event()  # never set: wait() is a bounded pause between polls
    while not (value := condition()):
        if real_monotonic() > deadline:
            if what is not None:
                raise AssertionError(f"gave up waiting for {what} after {bound_seconds:g} s")
            return value
        tick.wait(0.02)
    return value


def send_started(transport: Any, request: Any, timeout_seconds: float) -> Any:
    """Send ``request`` the threaded driver's way — ``transport.start`` (a
    ``StartingTransport``), the result coming to a callback on another thread — and return that
    result (a ``TransportResult``).

    :raises AssertionError: when the transport cannot start the request, or no result came
        within ``timeout_seconds`` plus 10 s.
    """
    results: list[Any] = []
    came = threading.Event()

    def done(result: Any) -> None:
        results.append(result)
        came.set()

    assert transport.start(request, timeout_seconds, done), "the transport did not start it"
    assert came.wait(timeout_seconds + 10), "no result came"
    return results[0]
