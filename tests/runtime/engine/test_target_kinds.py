"""Jobs of every target kind live side by side: one kind's trouble never breaks another job.

Here the Pub/Sub job publishes in-process and the App Engine job fails every attempt (its
service has no ``--app-engine-url``): the HTTP job must not notice either.

Issue: a Pub/Sub job falling due in the same pass as an HTTP job made ``clock:advance`` answer
500, dropped the HTTP delivery, recorded a phantom attempt, and the HTTP job never fired again.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from werkzeug.test import Client

from scheduler_emulator import Emulator, ManualClock, WsgiTransport
from scheduler_emulator.server.server import create_app
from tests.support import RecordingTarget, ShiftedClock, nightly_job, wait_for

PUBSUB_JOB: dict[str, Any] = {
    "name": "publish",
    "schedule": "* * * * *",
    "pubsubTarget": {"topicName": "projects/my-project/topics/ticks", "data": "aGk="},
}
APP_ENGINE_JOB: dict[str, Any] = {
    "name": "worker",
    "schedule": "* * * * *",
    "appEngineHttpTarget": {"relativeUri": "/work", "appEngineRouting": {"service": "worker"}},
}


def every_minute_http() -> dict[str, Any]:
    return nightly_job(name="tick", schedule="* * * * *", retryConfig={})


@pytest.fixture
def mixed(emulator: Emulator) -> Emulator:
    """An HTTP job, a Pub/Sub job and an App Engine job, all every minute."""
    for job in (every_minute_http(), PUBSUB_JOB, APP_ENGINE_JOB):
        emulator.create_job(job)
    return emulator


def codes(emulator: Emulator, job: str) -> list[str | None]:
    return [a.code for a in emulator.attempts(job)]


def test_the_http_job_fires_every_minute_beside_other_kinds(
    mixed: Emulator, target: RecordingTarget
) -> None:
    mixed.advance(timedelta(minutes=3, seconds=30))  # 02:00, 02:01, 02:02
    tick = mixed.attempts("tick")
    assert [a.schedule_time for a in tick] == [
        "2026-09-24T02:00:00Z",
        "2026-09-24T02:01:00Z",
        "2026-09-24T02:02:00Z",
    ]
    assert [a.code for a in tick] == ["OK"] * 3
    assert len(target.requests) == 3
    assert len(mixed.attempts("publish")) == 3
    assert len(mixed.attempts("worker")) == 3
    assert codes(mixed, "publish") == ["OK"] * 3
    assert codes(mixed, "worker") == ["FAILED_PRECONDITION"] * 3
    assert all("--app-engine-url" in a.debug_info for a in mixed.attempts("worker"))
    assert mixed.skipped_runs() == []


def test_no_phantom_attempt_every_attempt_has_an_end(mixed: Emulator) -> None:
    mixed.advance(timedelta(minutes=3))
    assert all(a.end_time is not None and a.code is not None for a in mixed.attempts())


def test_the_http_job_keeps_firing_after_the_other_kinds_are_deleted(
    mixed: Emulator, target: RecordingTarget
) -> None:
    mixed.advance(timedelta(minutes=2))
    mixed.delete_job("publish")
    mixed.delete_job("worker")
    mixed.advance(timedelta(minutes=2))
    assert len(target.requests) == 4


@pytest.mark.parametrize(("job", "code"), [("publish", "OK"), ("worker", "FAILED_PRECONDITION")])
def test_run_job_of_another_kind_records_an_attempt(mixed: Emulator, job: str, code: str) -> None:
    mixed.run_job(job)
    [attempt] = mixed.attempts(job)
    assert attempt.forced and attempt.code == code and attempt.end_time is not None


def test_the_job_status_shows_the_failure(mixed: Emulator) -> None:
    mixed.advance(timedelta(minutes=2))
    status = mixed.get_job("worker").status
    assert status is not None and status.code == 9  # FAILED_PRECONDITION
    assert "--app-engine-url" in status.message


def test_a_kind_without_a_dispatcher_is_recorded_as_not_dispatched(
    mixed: Emulator, target: RecordingTarget
) -> None:
    del mixed.dispatchers["PUBSUB"]
    mixed.advance(timedelta(minutes=2))
    [*_, attempt] = mixed.attempts("publish")
    assert attempt.code == "FAILED_PRECONDITION" and "does not deliver PUBSUB" in attempt.debug_info
    assert codes(mixed, "tick") == ["OK", "OK"]


def test_the_clock_endpoint_answers_200_with_mixed_kinds(
    clock: ManualClock, target: RecordingTarget
) -> None:
    emulator = Emulator(clock, transport=WsgiTransport(target))
    client = Client(create_app(emulator))
    for job in (every_minute_http(), PUBSUB_JOB, APP_ENGINE_JOB):
        emulator.create_job(job)
    for _ in range(3):
        response = client.post("/_emulator/clock:advance", json={"seconds": 60})
        assert response.status_code == 200, response.get_data(as_text=True)
    assert len(target.requests) == 3
    emulator.close()


def test_an_error_preparing_one_attempt_is_recorded_on_it_and_spares_the_others(
    mixed: Emulator, target: RecordingTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    http = mixed.dispatchers["HTTP"]
    real_prepare = http.prepare

    def prepare(job: Any, schedule_time: str | None, now: datetime) -> Any:
        if job.job_id == "broken":
            raise RuntimeError("cannot build this request")
        return real_prepare(job, schedule_time, now)

    monkeypatch.setattr(http, "prepare", prepare)
    mixed.create_job(nightly_job(name="broken", schedule="* * * * *", retryConfig={}))
    mixed.advance(timedelta(minutes=2, seconds=30))
    [*_, broken] = mixed.attempts("broken")
    assert broken.code == "UNKNOWN" and "cannot build this request" in broken.debug_info
    assert [a.code for a in mixed.attempts("tick")] == ["OK", "OK"]
    assert mixed.recorder.error_count == 2


def test_on_the_system_clock_the_http_job_fires_beside_a_failing_kind(
    target: RecordingTarget,
) -> None:
    with Emulator(ShiftedClock(lead=0.5), transport=WsgiTransport(target)) as emulator:
        emulator.create_job(nightly_job(name="tick", schedule="* * * * *", retryConfig={}))
        emulator.create_job(APP_ENGINE_JOB)
        emulator.run_job("worker")  # RunJob records an attempt for the failing job too
        assert wait_for(lambda: len(emulator.attempts()) >= 3, bound_seconds=10)
        assert emulator.wait_idle(10)
        attempts = emulator.attempts()
    by_job = {(a.job_id, a.forced): a.code for a in attempts}
    assert by_job == {
        ("worker", True): "FAILED_PRECONDITION",
        ("worker", False): "FAILED_PRECONDITION",  # the minute both jobs fell due in
        ("tick", False): "OK",
    }
    assert len(target.requests) == 1
    assert emulator.recorder.error_count == 0
