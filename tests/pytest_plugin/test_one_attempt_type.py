"""One attempt type: the Python API, ``cloud_scheduler`` and ``cloud_scheduler_server`` hand out
the same :class:`Attempt` records (same field names, same types) and each asserts on them
with ``assert_attempted``.

Issue: ``cloud_scheduler`` returned ``Attempt`` objects while ``cloud_scheduler_server``
returned camelCase dicts, and the daemon fixture had no ``assert_attempted``. Then: the daemon
showed an attempt whose recorded end lies in the virtual future (a ``delay`` fault on a manual
clock) as in flight, while the Python API and ``cloud_scheduler`` showed it ended.

Each source has three jobs: ``nightly`` (02:00, answered at once), ``slow`` (02:59, a ``delay``
fault of two minutes, within the attempt deadline: recorded end 03:01) and ``later`` (04:00, not
run yet), read at 03:00.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from pytest_plugin.live import LiveScheduler
from pytest_plugin.scheduler import CloudScheduler
from scheduler_emulator import Emulator, ManualClock, NaiveDatetimeError, WsgiTransport
from scheduler_emulator.domain.attempts import Attempt
from tests.daemon import serving
from tests.support import RecordingTarget, free_port

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


def slow(uri: str) -> dict[str, Any]:
    return {"name": "slow", "schedule": "59 2 * * *", "http_target": {"uri": uri}}


def later(uri: str) -> dict[str, Any]:
    """A job whose first run is after the clock (04:00): it has no attempts yet."""
    return {"name": "later", "schedule": "0 4 * * *", "http_target": {"uri": uri}}


#: Two minutes of latency for ``slow`` (less than its 180 s attempt deadline): its attempt
#: starts at 02:59 and is recorded as ending, answered, at 03:01, later than the clock (03:00)
#: when the tests read it.
DELAY_RULE = {"action": "delay", "job": "slow", "seconds": 120}


@pytest.fixture
def library_attempts() -> Iterator[tuple[Emulator, list[Attempt]]]:
    emulator = Emulator(ManualClock(START), transport=WsgiTransport(RecordingTarget()))
    emulator.create_job(**nightly("http://svc.test/"))
    emulator.create_job(**slow("http://svc.test/"))
    emulator.create_job(**later("http://svc.test/"))
    emulator.faults.add(**DELAY_RULE)
    emulator.clock.advance(timedelta(hours=3))  # type: ignore[attr-defined]
    yield emulator, emulator.attempts("nightly")
    emulator.close()


@pytest.fixture
def fixture_attempts(cloud_scheduler: CloudScheduler) -> tuple[CloudScheduler, list[Attempt]]:
    cloud_scheduler.mount("http://svc.test", RecordingTarget())
    cloud_scheduler.create_job(**nightly("http://svc.test/"))
    cloud_scheduler.create_job(**slow("http://svc.test/"))
    cloud_scheduler.create_job(**later("http://svc.test/"))
    cloud_scheduler.faults.add(**DELAY_RULE)
    cloud_scheduler.advance(timedelta(hours=3))
    return cloud_scheduler, cloud_scheduler.attempts("nightly")


@pytest.fixture
def daemon_attempts(
    cloud_scheduler_server: LiveScheduler,
) -> Iterator[tuple[LiveScheduler, list[Attempt]]]:
    with serving(RecordingTarget()) as url:
        parent = "projects/my-project/locations/us-central1"
        for make in (nightly, slow, later):
            job = make(url + "/")
            body = {"name": f"{parent}/jobs/{job['name']}", "schedule": job["schedule"],
                    "httpTarget": job["http_target"]}  # fmt: skip
            cloud_scheduler_server._admin.call("POST", f"/v1/{parent}/jobs", body=body)
        cloud_scheduler_server._admin.call("POST", "/_emulator/faults", body=DELAY_RULE)
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
    assert re.search(r"attempt 1 of run id \d+ at 2026-01-01T02:00:00Z .* -> OK \(200\)", message)
    assert "its next attempt is due at 2026-01-02T02:00:00Z: a retry, or its next run" in message
    with pytest.raises(
        AssertionError, match=r"there is no job 'other'; jobs: \['nightly', 'slow', 'later'\]"
    ):
        scheduler.assert_attempted("other")
    with pytest.raises(AssertionError) as failure:
        scheduler.assert_attempted("later")
    assert "the job has no attempts; its next run is at 2026-01-01T04:00:00Z" in str(failure.value)
    if isinstance(scheduler, LiveScheduler):
        parent = "projects/my-project/locations/us-central1"
        scheduler._admin.call("POST", f"/v1/{parent}/jobs/later:pause", body={})
    else:
        scheduler.pause_job("later")
    with pytest.raises(
        AssertionError, match="the job has no attempts and no next run: it is PAUSED"
    ):
        scheduler.assert_attempted("later")


@pytest.mark.parametrize("source", ["library_attempts", "fixture_attempts", "daemon_attempts"])
def test_an_attempt_ending_in_the_virtual_future_reads_in_flight_everywhere(
    request: pytest.FixtureRequest, source: str
) -> None:
    scheduler, _ = request.getfixturevalue(source)
    [attempt] = scheduler.attempts("slow")
    assert attempt.start_time == datetime(2026, 1, 1, 2, 59, tzinfo=UTC)
    assert attempt.end_time is None  # recorded as 03:01; the clock is at 03:00
    assert (attempt.code, attempt.response_status, attempt.debug_info) == (None, None, "")
    [paged], _token = scheduler.attempts_page("slow")
    assert paged == attempt
    scheduler.assert_attempted("slow", 0, "OK")  # not answered yet, as far as anyone can see
    scheduler.assert_attempted("slow", 1)


def test_the_three_agree_on_the_attempt_in_flight(
    library_attempts: tuple[Emulator, list[Attempt]],
    fixture_attempts: tuple[CloudScheduler, list[Attempt]],
    daemon_attempts: tuple[LiveScheduler, list[Attempt]],
) -> None:
    readings = [
        scheduler.attempts("slow")[0]
        for scheduler, _ in (library_attempts, fixture_attempts, daemon_attempts)
    ]
    assert shape(readings[0]) == shape(readings[1]) == shape(readings[2])
    fields = [
        (a.job_id, a.attempt, a.start_time, a.end_time, a.code, a.response_status, a.injected)
        for a in readings
    ]
    assert fields[0] == fields[1] == fields[2]
    library, _ = library_attempts
    library.clock.advance(timedelta(hours=1))  # type: ignore[attr-defined]
    [ended] = library.attempts("slow")  # past the recorded end: it reads as recorded
    assert (ended.end_time, ended.code) == (datetime(2026, 1, 1, 3, 1, tzinfo=UTC), "OK")


def test_the_fixture_says_when_a_failed_url_was_not_mounted(
    cloud_scheduler: CloudScheduler,
) -> None:
    """A loopback URL is sent for real; when nothing answers there, ``cloud_scheduler``'s
    assertion adds that the URL is not mounted (the library's and the daemon's do not)."""
    cloud_scheduler.mount("http://svc.test", RecordingTarget())
    url = f"http://127.0.0.1:{free_port()}/run"  # nothing listens there
    cloud_scheduler.create_job(name="lost", schedule="0 2 * * *", http_target={"uri": url})
    cloud_scheduler.advance(timedelta(hours=3))
    with pytest.raises(AssertionError) as failure:
        cloud_scheduler.assert_attempted("lost", 1, "OK")
    assert f"{url} is not mounted (mounted: http://svc.test)." in str(failure.value)


def test_a_job_without_attempts_and_a_misspelt_job_read_differently() -> None:
    with Emulator(ManualClock(START), transport=WsgiTransport(RecordingTarget())) as emulator:
        job = emulator.create_job(**nightly("http://svc.test/"))
        for name in ("nightly", job.name):
            with pytest.raises(AssertionError, match=r"its next run is at 2026-01-01T02:00:00Z"):
                emulator.assert_attempted(name)
        emulator.pause_job("nightly")
        with pytest.raises(AssertionError, match=r"no next run: it is PAUSED; jobs: \["):
            emulator.assert_attempted("nightly")
        with pytest.raises(AssertionError, match=r"there is no job 'nighly'; jobs: \['nightly'\]"):
            emulator.assert_attempted("nighly")


def test_a_failed_expectation_names_the_pending_retry_the_move_stopped_short_of() -> None:
    """Trial 198: a move that ended at the fire instant left the 503's retry seconds later, and
    the message said nothing of it."""
    target = RecordingTarget(status=503)
    with Emulator(ManualClock(START), transport=WsgiTransport(target)) as emulator:
        emulator.create_job(**nightly("http://svc.test/"), retry_config={"retry_count": 3})
        emulator.advance(timedelta(hours=2))
        with pytest.raises(AssertionError, match="next attempt is due at 2026-01-01T02:00:05Z"):
            emulator.assert_attempted("nightly", code="OK")
        with pytest.raises(AssertionError) as failure:  # too many: what comes next is moot
            emulator.assert_attempted("nightly", 0)
        assert "next attempt" not in str(failure.value)


def test_the_fixture_runs_as_if_scheduled_and_refuses_an_app_given_as_text(
    cloud_scheduler: CloudScheduler,
) -> None:
    """A trial: ``run_job(..., schedule_time=…)`` was the library's only, and ``mount`` took
    ``"service:api"``, whose attempts then failed with a timer router's hint."""
    target = RecordingTarget()
    cloud_scheduler.mount("http://svc.test", target)
    cloud_scheduler.create_job(**nightly("http://svc.test/"))
    when = datetime(2025, 12, 31, 2, tzinfo=UTC)
    cloud_scheduler.run_job("nightly", schedule_time=when)
    [attempt] = cloud_scheduler.attempts("nightly")
    assert (attempt.forced, attempt.schedule_time) == (True, "2025-12-31T02:00:00Z")
    # the same instant in another offset names it too (trial 185: a datetime was refused)
    berlin = when.astimezone(timezone(timedelta(hours=1)))
    assert cloud_scheduler.assert_attempted("nightly", 1, schedule_time=berlin) == [attempt]
    with pytest.raises(AssertionError, match=r"not 2025-12-31T03:00:00Z \(any offset\)"):
        cloud_scheduler.assert_attempted("nightly", schedule_time=when + timedelta(hours=1))
    with pytest.raises(NaiveDatetimeError, match="schedule_time"):
        cloud_scheduler.assert_attempted("nightly", schedule_time=when.replace(tzinfo=None))
    # a naive instant is refused, not read as UTC (a trial's New York job ran at 22:00 -04:00)
    with pytest.raises(NaiveDatetimeError, match="run_job's schedule_time 2025-12-31T02:00:00"):
        cloud_scheduler.run_job("nightly", schedule_time=when.replace(tzinfo=None))
    assert len(cloud_scheduler.attempts("nightly")) == 1
    with pytest.raises(TypeError, match="a WSGI or ASGI app, the object itself; got 'service:api'"):
        cloud_scheduler.mount("http://other.test", "service:api")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "says"),
    [
        ({"count": "1"}, "count must be an int; got '1'."),
        ({"code": "ok"}, "code is a google.rpc code name, 'OK'; got 'ok'."),
        # trial 169: a name that is none ran, and failed as "code OK, not SUCCESS"
        ({"code": "SUCCESS"}, "code is a google.rpc code name, such as 'OK' or 'UNAVAILABLE'; "),
        ({"schedule_time": 1790000000}, "schedule_time must be the header as sent, such as"),
    ],
)
def test_a_wrong_kind_of_expectation_says_what_to_pass(call: dict[str, Any], says: str) -> None:
    """A trial's ``count="1"`` failed saying "expected 1, found 1", ``code="ok"`` "code OK, not
    ok", and ``attempts(123)`` was a TypeError from inside the name check."""
    with Emulator(ManualClock(START), transport=WsgiTransport(RecordingTarget())) as emulator:
        emulator.create_job(**nightly("http://svc.test/"))
        with pytest.raises(TypeError) as caught:
            emulator.assert_attempted("nightly", **call)
        assert str(caught.value).startswith(says)
        with pytest.raises(TypeError, match="by its ID or full name, as text; got 123."):
            emulator.attempts(123)  # type: ignore[arg-type]


def test_a_failed_expectation_lists_the_first_and_last_ten_of_many_attempts() -> None:
    """Trial 169: a month of hourly attempts made one failure 6,410 lines long."""
    with Emulator(ManualClock(START), transport=WsgiTransport(RecordingTarget())) as emulator:
        emulator.create_job(**{**nightly("http://svc.test/"), "schedule": "0 * * * *"})
        emulator.advance(timedelta(days=2))
        with pytest.raises(AssertionError) as caught:
            emulator.assert_attempted("nightly", code="UNAVAILABLE")
    said = str(caught.value).splitlines()
    assert said[0].startswith("expected at least 1 attempt(s) of job 'nightly' with code=")
    assert "(of 48 attempts;" in said[0] and "  … 28 more …" in said
    listed = [line for line in said if line.endswith(": code OK, not UNAVAILABLE")]
    assert len(listed) == 20  # the first ten and the last ten, in start order
    assert "at 2026-01-01T01:00:00Z" in listed[0] and "at 2026-01-03T00:00:00Z" in listed[-1]


def test_a_refused_live_call_says_the_daemons_message_not_its_json(
    cloud_scheduler_server: LiveScheduler,
) -> None:
    """A trial: ``advance(-60)`` on the live fixture failed with the error envelope's JSON
    (refused before the call now, as in-process: a move back is the daemon's refusal)."""
    with pytest.raises(AssertionError) as refused:
        cloud_scheduler_server.move_to(datetime(2025, 12, 31, tzinfo=UTC))
    assert str(refused.value) == (
        "POST /_emulator/clock:moveTo answered 400: the manual clock cannot go back: it is at "
        "2026-01-01T00:00:00Z, 2025-12-31T00:00:00Z is earlier."
    )


def test_the_fixture_says_how_to_map_an_app_engine_service_it_has_no_url_for(
    cloud_scheduler: CloudScheduler,
) -> None:
    """Trial 157: the hint read " is not mounted (mounted: none)." — of an empty URL."""
    target = {"relativeUri": "/w", "appEngineRouting": {"service": "worker"}}
    cloud_scheduler.create_job(name="w", schedule="0 2 * * *", app_engine_http_target=target)
    cloud_scheduler.advance(timedelta(hours=3))
    with pytest.raises(AssertionError) as failure:
        cloud_scheduler.assert_attempted("w", 1, "OK")
    said = str(failure.value)
    assert "is not mounted" not in said
    assert (  # its own service (trial 215: the example read "default" of any service)
        "map its App Engine service with the marker's app_engine_urls= "
        '({"worker": "http://app.test"}) and mount an app at that URL.'
    ) in said
