"""pytest fixtures: an in-process Cloud Scheduler emulator on a virtual clock.

``cloud_scheduler`` gives each test a fresh :class:`~scheduler_emulator.Emulator` on a
:class:`~scheduler_emulator.ManualClock` (2026-01-01T00:00:00Z, or the ``start`` of a
``@pytest.mark.cloud_scheduler(start=...)`` marker) whose deliveries go in-process to apps
mounted with ``cloud_scheduler.transport.mount(base_url, wsgi_app)`` and over real HTTP
otherwise::

    def test_nightly_sweeps(cloud_scheduler):
        cloud_scheduler.transport.mount("http://orders.test", app)
        cloud_scheduler.create_job(name="nightly", schedule="0 2 * * *",
                                   http_target={"uri": "http://orders.test/_triggers/timer/nightly"})
        cloud_scheduler.advance(timedelta(days=1))
        assert [a.code for a in cloud_scheduler.attempts("nightly")] == ["OK"]
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from scheduler_emulator.clock import ManualClock
from scheduler_emulator.emulator import Emulator
from scheduler_emulator.transports import MountTransport

DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``cloud_scheduler`` marker."""
    config.addinivalue_line(
        "markers",
        "cloud_scheduler(start=datetime): start instant of the cloud_scheduler fixture's clock",
    )


class EmulatorFixture(Emulator):
    """An :class:`Emulator` whose ``transport`` is a :class:`MountTransport`."""

    transport: MountTransport


@pytest.fixture
def cloud_scheduler(request: pytest.FixtureRequest) -> Iterator[EmulatorFixture]:
    """A fresh in-process emulator on a manual clock, closed after the test.

    The clock starts at 2026-01-01T00:00:00Z unless the test carries
    ``@pytest.mark.cloud_scheduler(start=<aware datetime>)``. Mount WSGI apps with
    ``cloud_scheduler.transport.mount("http://host", app)``; other URLs are sent over HTTP.
    """
    marker = request.node.get_closest_marker("cloud_scheduler")
    start = marker.kwargs.get("start", DEFAULT_START) if marker else DEFAULT_START
    transport = MountTransport()
    emulator = EmulatorFixture(ManualClock(start), transport=transport)
    emulator.transport = transport
    yield emulator
    emulator.close()
