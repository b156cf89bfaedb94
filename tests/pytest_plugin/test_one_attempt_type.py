"""One attempt type: the Python API, ``cloud_scheduler`` and ``cloud_scheduler_server`` hand out
the same :class:`Attempt` records (same field names, same types) and each asserts on them
with ``assert_attempted``.

Issue: ``cloud_scheduler`` returned ``Attempt`` objects while ``cloud_scheduler_server``
returned camelCase dicts, and the daemon fixture had no ``assert_attempted``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pytest_plugin.live import LiveScheduler
from pytest_plugin.scheduler import CloudScheduler
from scheduler_emulator import Emulator, ManualClock, WsgiTransport
from scheduler_emulator.domain.attempts import Attempt
from tests.daemon import serving
from tests.support import RecordingTarget

START = datetime(2026, 1, 1, tzinfo=UTC)


def shape(attempt: Attempt) -> dict[str, type]:
    """Each field's name and the type of its value (the exception field is process-local)."""
    return {
        field.name: type(getattr(attempt, field.name))
        for field in dataclasses.fields(attempt)
        if field.name != "exception"
    }


def nightly(uri: str) -> dict[str, Any]:
    return {"name": "nightly", "schedule": "0 2 * * *", "http_target": {"uri": uri}}


@pytest.fixture
def library_attempts() -> Iterator[tuple[Emulator, list[Attempt]]]:
    emulator = Emulator(ManualClock(START), transport=WsgiTransport(RecordingTarget()))
    emulator.create_job(**nightly("http://svc.test/"))
    emulator.clock.advance(timedelta(hours=3))  # type: ignore[attr-defined]
    yield emulator, emulator.attempts("nightly")
    emulator.close()


@pytest.fixture
def fixture_attempts(cloud_scheduler: CloudScheduler) -> tuple[CloudScheduler, list[Attempt]]:
    cloud_scheduler.mount("http://svc.test", RecordingTarget())
    cloud_scheduler.create_job(**nightly("http://svc.test/"))
    cloud_scheduler.advance(timedelta(hours=3))
    return cloud_scheduler, cloud_scheduler.attempts("nightly")


@pytest.fixture
def daemon_attempts(
    cloud_scheduler_server: LiveScheduler,
) -> Iterator[tuple[LiveScheduler, list[Attempt]]]:
    with serving(RecordingTarget()) as url:
        body = {"schedule": "0 2 * * *", "httpTarget": {"uri": url + "/"}}
        job = "projects/my-project/locations/us-central1/jobs/nightly"
        cloud_scheduler_server._call("POST", f"/v1/{job.rsplit('/jobs/', 1)[0]}/jobs",
                                     {"name": job, **body})  # fmt: skip
        cloud_scheduler_server.advance(3 * 3600)
        yield cloud_scheduler_server, cloud_scheduler_server.attempts("nightly")


def test_the_three_give_the_same_attempt_type(
    library_attempts: tuple[Emulator, list[Attempt]],
    fixture_attempts: tuple[CloudScheduler, list[Attempt]],
    daemon_attempts: tuple[LiveScheduler, list[Attempt]],
) -> None:
    (library,), (in_process,), (daemon,) = (
        library_attempts[1], fixture_attempts[1], daemon_attempts[1]
    )  # fmt: skip
    assert type(library) is type(in_process) is type(daemon) is Attempt
    assert shape(library) == shape(in_process) == shape(daemon)
    assert shape(daemon)["start_time"] is datetime and shape(daemon)["end_time"] is datetime
    assert shape(daemon)["schedule_time"] is str and shape(daemon)["response_status"] is int
    for attempt in (library, in_process, daemon):
        assert (attempt.job_id, attempt.attempt, attempt.code) == ("nightly", 1, "OK")
        assert attempt.schedule_time == "2026-01-01T02:00:00Z"
        assert attempt.start_time == datetime(2026, 1, 1, 2, tzinfo=UTC)
    assert daemon["code"] == "OK"  # dict access of earlier releases, kept for one release


@pytest.mark.parametrize("source", ["library_attempts", "fixture_attempts", "daemon_attempts"])
def test_each_asserts_attempted_the_same_way(request: pytest.FixtureRequest, source: str) -> None:
    scheduler, _ = request.getfixturevalue(source)
    [attempt] = scheduler.assert_attempted("nightly", 1, "OK")
    assert attempt.schedule_time == "2026-01-01T02:00:00Z"
    scheduler.assert_attempted("nightly", schedule_time="2026-01-01T02:00:00Z")
    with pytest.raises(AssertionError) as failure:
        scheduler.assert_attempted("nightly", 1, "INTERNAL")
    message = str(failure.value)
    assert "expected 1 attempt(s) of job 'nightly' with code=INTERNAL, found 0" in message
    assert "clock at 2026-01-01T03:00:00Z" in message
    assert re.search(r"attempt 1 of run \d+ at 2026-01-01T02:00:00Z .* -> OK \(200\)", message)
    with pytest.raises(AssertionError, match=r"no attempts; jobs: \['nightly'\]"):
        scheduler.assert_attempted("other")
