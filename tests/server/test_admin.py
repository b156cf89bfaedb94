"""The /_emulator/ endpoints through werkzeug's test client (no socket)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from werkzeug.test import Client

from scheduler_emulator import Emulator, HttpTransport, ManualClock, SystemClock, WsgiTransport
from scheduler_emulator.server.server import create_app
from scheduler_emulator.tools.views import job_rows, run_state_text
from scheduler_emulator.wire import format_timestamp as iso
from tests.drip import DripTarget, drip_server
from tests.support import TARGET, RecordingTarget, nightly_job, run_command, wait_for


@pytest.fixture
def client(emulator: Emulator) -> Client:
    return Client(create_app(emulator))


def test_health_answers_ok(client: Client) -> None:
    response = client.get("/_emulator/health")
    assert (response.status_code, response.json) == (200, {"status": "ok", "pid": os.getpid()})


def test_advance_answers_after_the_deliveries(
    client: Client, emulator: Emulator, target: RecordingTarget
) -> None:
    emulator.create_job(nightly_job())
    response = client.post("/_emulator/clock:advance", json={"seconds": 60})
    assert response.json == {"now": "2026-09-24T02:00:00Z"}
    assert len(target.requests) == 1
    [attempt] = client.get("/_emulator/attempts?job=nightly").json["attempts"]
    assert attempt["scheduleTime"] == "2026-09-24T02:00:00Z"
    assert attempt["startTime"] == attempt["endTime"] == "2026-09-24T02:00:00Z"
    assert attempt["request"]["method"] == "POST"
    assert (attempt["responseStatus"], attempt["code"]) == (200, "OK")


def test_move_to_accepts_any_offset(client: Client) -> None:
    response = client.post("/_emulator/clock:moveTo", json={"time": "2026-09-24T05:00:00+02:00"})
    assert response.json == {"now": "2026-09-24T03:00:00Z"}
    assert client.get("/_emulator/clock").json == {"now": "2026-09-24T03:00:00Z", "mode": "manual"}


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        pytest.param("/_emulator/clock:advance", {"seconds": -1}, "seconds", id="negative"),
        pytest.param("/_emulator/clock:advance", {"seconds": "1"}, "seconds", id="string"),
        pytest.param("/_emulator/clock:advance", {}, "seconds", id="missing"),
        pytest.param("/_emulator/clock:moveTo", {"time": 5}, "time", id="time-not-string"),
    ],
)
def test_bad_clock_input_is_invalid_argument_naming_the_field(
    client: Client, path: str, body: dict[str, object], field: str
) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 400
    error = response.json["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["details"][0]["fieldViolations"][0]["field"] == field


@pytest.mark.parametrize(
    ("body", "said"),
    [({"minutes": 5}, "it takes seconds."), ({"second": 5}, "did you mean 'seconds'?")],
)
def test_a_field_a_body_does_not_take_is_named_with_those_it_takes(
    client: Client, body: dict[str, object], said: str
) -> None:
    """Trial 230: ``{"minutes": 5}`` got "Cannot find field", naming no field it takes."""
    response = client.post("/_emulator/clock:advance", json=body)
    [violation] = response.json["error"]["details"][0]["fieldViolations"]
    assert violation["description"].endswith(f"is not a field of this body; {said}")


def test_moving_back_is_a_failed_precondition(client: Client) -> None:
    response = client.post("/_emulator/clock:moveTo", json={"time": "2020-01-01T00:00:00Z"})
    assert response.status_code == 400
    assert response.json["error"]["status"] == "FAILED_PRECONDITION"


def test_an_overdue_next_due_is_now_and_a_move_to_it_runs_it(
    tmp_path: Any, target: RecordingTarget
) -> None:
    """Trial 141: after a restart a run owed from before it was due in the past, and ``clock
    --next`` (and the dashboard's button), which move to ``nextDue``, were refused as a move
    back. Overdue work is due now: a move to now runs it."""
    start = datetime(2026, 9, 24, 1, 59, tzinfo=UTC)
    with Emulator(ManualClock(start), data_dir=tmp_path, transport=WsgiTransport(target)) as e:
        e.create_job(nightly_job(retryConfig={"retryCount": 1, "minBackoffDuration": "60s"}))
        target.status = 503
        e.advance(timedelta(minutes=1))  # 02:00 fails; its retry is due at 02:01
        target.status = 200
    later = ManualClock(datetime(2026, 9, 24, 2, 30, tzinfo=UTC))  # (the clock was moved on)
    with Emulator(later, data_dir=tmp_path, transport=WsgiTransport(target)) as e:
        client = Client(create_app(e))
        clock = client.get("/_emulator/clock").json
        assert clock["nextDue"] == clock["now"] == "2026-09-24T02:30:00Z"
        moved = client.post("/_emulator/clock:moveTo", json={"time": clock["nextDue"]})
        assert moved.status_code == 200, moved.text
        assert [a.code for a in e.attempts("nightly")] == ["UNAVAILABLE", "OK"]


def test_a_body_that_is_not_json_is_a_400(client: Client) -> None:
    response = client.post(
        "/_emulator/clock:advance", data=b"not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json["error"]["status"] == "INVALID_ARGUMENT"


def test_system_clock_refuses_clock_moves() -> None:
    emulator = Emulator(SystemClock(), transport=WsgiTransport(RecordingTarget()))
    response = Client(create_app(emulator)).post("/_emulator/clock:advance", json={"seconds": 1})
    assert response.status_code == 400
    assert response.json["error"]["status"] == "FAILED_PRECONDITION"
    assert "ManualClock" in response.json["error"]["message"]
    emulator.close()


def test_unknown_path_is_a_json_404(client: Client) -> None:
    response = client.get("/_emulator/nope")
    assert response.status_code == 404
    assert response.json["error"]["status"] == "NOT_FOUND"


def test_reset_deletes_jobs_and_attempts(client: Client, emulator: Emulator) -> None:
    emulator.create_job(nightly_job())
    emulator.advance(timedelta(minutes=1))
    assert client.post("/_emulator/reset").json == {}
    assert emulator.list_jobs() == []
    assert client.get("/_emulator/attempts").json == {"attempts": []}


def failing_emulator(target: RecordingTarget) -> Emulator:
    """An emulator on a manual clock at 01:59Z whose target answers 500 to everything."""
    target.status = 500
    return Emulator(
        ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC)), transport=WsgiTransport(target)
    )


def test_skipped_runs_are_listed(target: RecordingTarget) -> None:
    emulator = failing_emulator(target)
    retry = {"retryCount": 5, "minBackoffDuration": "60s", "maxDoublings": 0}
    emulator.create_job(nightly_job(schedule="* * * * *", retryConfig=retry))
    client = Client(create_app(emulator))
    client.post("/_emulator/clock:advance", json={"seconds": 300})
    skipped = client.get("/_emulator/skipped?job=nightly").json["skipped"]
    assert [s["scheduleTime"] for s in skipped] == [
        "2026-09-24T02:02:00Z",
        "2026-09-24T02:03:00Z",
        "2026-09-24T02:04:00Z",
    ]
    emulator.close()


def test_reset_can_set_a_manual_clock_back(client: Client, emulator: Emulator) -> None:
    emulator.create_job(nightly_job())
    emulator.advance(timedelta(days=1))
    response = client.post("/_emulator/reset", json={"clockTime": "2026-01-01T00:00:00Z"})
    assert response.json == {}
    assert client.get("/_emulator/clock").json["now"] == "2026-01-01T00:00:00Z"
    assert emulator.list_jobs() == []


@pytest.mark.parametrize(
    ("path", "body", "said"),
    [
        ("/_emulator/reset?x=1", {}, '/_emulator/reset takes no parameter "x"; it takes none.'),
        ("/_emulator/reset", {"clocktime": "2026-01-01T00:00:00Z"}, 'Unknown name "clocktime"'),
        ("/_emulator/clock:advance", {"seconds": 60, "to": "x"}, 'Unknown name "to"'),
        ("/_emulator/clock:moveTo?seconds=5", {"time": "2026-01-01T00:00:00Z"}, "no parameter"),
    ],
)
def test_clock_and_reset_refuse_what_they_do_not_read(
    client: Client, emulator: Emulator, path: str, body: dict[str, Any], said: str
) -> None:
    """Trial 127: an extra key or parameter was taken, and not read; nothing changes."""
    emulator.create_job(nightly_job())
    before = client.get("/_emulator/clock").json["now"]
    refused = client.post(path, json=body)
    assert refused.status_code == 400 and said in refused.json["error"]["message"], refused.json
    assert client.get("/_emulator/clock").json["now"] == before
    assert len(emulator.list_jobs()) == 1


def test_clock_bounds_and_a_window_at_the_calendars_start(client: Client) -> None:
    """A trial's timeline from 0001-01-01 answered 500 (its look back fell before the first
    datetime); reset's clockTime keeps to the instants a manual clock may stand at."""
    response = client.get("/_emulator/timeline?start=0001-01-01T00:00:00Z")
    assert response.status_code == 200, response.text
    refused = client.post("/_emulator/reset", json={"clockTime": "9999-12-31T23:59:59Z"})
    assert refused.status_code == 400
    assert refused.json["error"]["details"][0]["fieldViolations"][0] == {
        "field": "clockTime",
        "description": "clockTime must be from 0001-01-02T00:00:00Z to 9999-12-30T23:59:59Z; "
        "got 9999-12-31T23:59:59Z.",
    }


def test_start_refuses_a_manual_clock_start_out_of_bounds_and_next_a_huge_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A trial's ``start --start 0001-01-01T00:00:00Z`` and ``next -n 99999999999999999999``
    ended in tracebacks (exit 1)."""
    for argv, said in (
        (("start", "--in-memory", "--clock", "manual", "--start", "0001-01-01T00:00:00Z"),
         "error: --start must be from 0001-01-02T00:00:00Z to 9999-12-30T23:59:59Z"),
        (("next", "* * * * *", "-n", "9" * 20), "argument -n: must be a whole number"),
    ):  # fmt: skip
        code, _, err = run_command(capsys, *argv)
        assert code == 2 and said in err, err


def test_skipped_runs_are_paged(target: RecordingTarget) -> None:
    emulator = failing_emulator(target)
    retry = {"retryCount": 5, "minBackoffDuration": "3600s", "maxDoublings": 0}
    emulator.create_job(nightly_job(schedule="* * * * *", retryConfig=retry))
    emulator.create_job(nightly_job(name="other", schedule="* * * * *", retryConfig=retry))
    client = Client(create_app(emulator))
    client.post("/_emulator/clock:advance", json={"seconds": 30 * 60})
    whole = [s.to_json()["scheduleTime"] for s in emulator.skipped_runs("nightly")]
    assert len(whole) > 20
    seen: list[str] = []
    query: dict[str, object] = {"job": "nightly", "pageSize": 7}
    for _ in range(10):
        answer = client.get("/_emulator/skipped", query_string=query).json
        assert len(answer["skipped"]) <= 7
        seen += [s["scheduleTime"] for s in answer["skipped"]]
        if "nextPageToken" not in answer:
            break
        query["pageToken"] = answer["nextPageToken"]
    assert seen == whole
    default = client.get("/_emulator/skipped").json
    assert len(default["skipped"]) == 2 * len(whole) and "nextPageToken" not in default
    for bad in ({"pageSize": 1001}, {"pageSize": "x"}, {"pageToken": "²"}):
        response = client.get("/_emulator/skipped", query_string=bad)
        assert response.status_code == 400
        assert next(iter(bad)) in response.json["error"]["message"]
    emulator.close()


@pytest.mark.parametrize("endpoint", ["attempts", "skipped"])
def test_an_unknown_job_is_not_found(client: Client, emulator: Emulator, endpoint: str) -> None:
    response = client.get(f"/_emulator/{endpoint}?job=nosuch")
    assert response.status_code == 404
    assert response.json == {
        "error": {
            "code": 404,
            "message": 'Job not found: job "nosuch" names no job and no recorded attempt.',
            "status": "NOT_FOUND",
        }
    }
    # with jobs there, it names them, as `run` does (a trial's `attempts --job nope` did not)
    for job_id in ("nightly", "report"):
        emulator.create_job(name=job_id, schedule="0 0 1 1 *", http_target={"uri": TARGET})
    said = client.get(f"/_emulator/{endpoint}?job=nosuch").json["error"]["message"]
    assert said.endswith(
        "no recorded attempt. Jobs in projects/my-project/locations/us-central1: nightly, report."
    )
    said = client.get(f"/_emulator/{endpoint}?job=nigthly").json["error"]["message"]
    assert said.endswith(": nightly, report. Did you mean 'nightly'?")  # (trial 206)
    for number in range(20):
        emulator.create_job(name=f"j{number}", schedule="0 0 1 1 *", http_target={"uri": TARGET})
    said = client.get(f"/_emulator/{endpoint}?job=nosuch").json["error"]["message"]
    assert said.endswith(", j17, … (22 in all).")  # (trial 141: ", …." read as a typo)


def test_an_unknown_job_id_names_the_jobs_of_that_id_elsewhere(
    emulator: Emulator, client: Client
) -> None:
    """Trial 57: a job made in another project was listed by ``jobs``, but ``attempts --job``
    with its ID said it named no job and no recorded attempt."""
    emulator.create_job(
        name="projects/other-project/locations/europe-west1/jobs/xproj",
        schedule="0 0 1 1 *",
        http_target={"uri": "http://t.test/"},
    )
    response = client.get("/_emulator/attempts?job=xproj")
    assert response.status_code == 404
    assert response.json["error"]["message"] == (
        'Job not found: job "xproj" names no job and no recorded attempt in '
        "projects/my-project/locations/us-central1; jobs of that ID elsewhere (name one in "
        "full): projects/other-project/locations/europe-west1/jobs/xproj."
    )


@pytest.mark.parametrize("endpoint", ["attempts", "skipped"])
@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("job=%25FF", ["job must be a job ID", '"%FF"']),
        ("job=" + "a" * 600, ["job must be a job ID"]),
        ("bogus=1", ['takes no parameter "bogus"', "pageSize, pageToken, job"]),
        ("pageSize=2&pageSize=3", ['pageSize is given 2 times ("2", "3")']),
    ],
)
def test_a_bad_query_is_refused_naming_the_parameter(
    client: Client, endpoint: str, query: str, names: list[str]
) -> None:
    response = client.get(f"/_emulator/{endpoint}?{query}")
    assert response.status_code == 400
    message = response.json["error"]["message"]
    for name in names:
        assert name in message, message


@pytest.mark.parametrize(
    ("endpoint", "first", "last"),
    [
        ("attempts", "startAfter", "startBefore"),
        ("runs", "scheduledAfter", "scheduledBefore"),
        ("timeline", "start", "end"),
    ],
)
def test_a_window_that_ends_before_it_starts_is_refused_alike(
    client: Client, endpoint: str, first: str, last: str
) -> None:
    """A trial got 400 from the timeline but an empty 200 from runs for the same slip."""
    query = f"{first}=2026-11-05T00:00:00Z&{last}=2026-11-01T00:00:00Z"
    response = client.get(f"/_emulator/{endpoint}?{query}")
    assert response.status_code == 400
    assert response.json["error"]["message"] == (
        f"{first} must be before {last}; got {first} 2026-11-05T00:00:00Z and {last} "
        "2026-11-01T00:00:00Z."
    )


def test_skipped_takes_no_attempt_filter(client: Client) -> None:
    for query in ("startAfter=yesterday", "run=abc"):
        response = client.get(f"/_emulator/skipped?{query}")
        assert response.status_code == 400
        assert "takes no parameter" in response.json["error"]["message"]


def test_a_run_id_up_to_the_largest_the_message_names_is_taken(client: Client) -> None:
    """Trial 127: ``run=9223372036854775807`` was refused as not "from 1 to
    9223372036854775807" (18 digits were the limit)."""
    largest = client.get("/_emulator/attempts?run=9223372036854775807")
    assert (largest.status_code, largest.json) == (200, {"attempts": []})
    past = client.get("/_emulator/attempts?run=9223372036854775808")
    assert past.status_code == 400 and "from 1 to 9223372036854775807" in past.text


def test_a_deleted_job_still_lists_its_attempts(client: Client, emulator: Emulator) -> None:
    emulator.create_job(nightly_job())
    client.post("/_emulator/clock:advance", json={"seconds": 60})
    emulator.delete_job("nightly")
    assert len(client.get("/_emulator/attempts?job=nightly").json["attempts"]) == 1


def test_config_names_the_default_project_and_location(client: Client) -> None:
    assert client.get("/_emulator/config").json == {
        "project": "my-project",
        "location": "us-central1",
        "clock": "manual",
        "dstPolicy": "absolute",  # trial 85: which one a daemon uses was nowhere to be seen
        "grpc": True,  # the [grpc] extra is in [test]
    }  # in-process delivery: no httpClient


@pytest.mark.parametrize("curl", [False, True], ids=["http.client", "libcurl"])
def test_config_says_how_a_daemon_sends_http(curl: bool) -> None:
    if curl:
        pytest.importorskip("pycurl")
    transport = HttpTransport(curl=curl)
    emulator = Emulator(ManualClock(datetime(2026, 9, 24, tzinfo=UTC)), transport=transport)
    config = Client(create_app(emulator)).get("/_emulator/config").json
    assert config["httpClient"] == ("libcurl" if curl else "http.client")
    emulator.close()


def test_a_method_an_emulator_endpoint_does_not_take_is_a_405(client: Client) -> None:
    response = client.post("/_emulator/skipped", json={})
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, HEAD"
    assert response.json["error"]["message"] == ("/_emulator/skipped takes GET or HEAD, not POST.")
    # The v1 API answers as Google's front end does: 404, no such method at that path.
    assert client.put("/v1/projects/my-project/locations/l/jobs", json={}).status_code == 404


def test_a_job_whose_attempt_awaits_its_target_shows_no_result_yet() -> None:
    # The daemon's jobs view (and `scheduler-emulator jobs`): while the target has not
    # answered, lastAttempt has no code — not the previous attempt's, nor a made-up OK.
    hang = DripTarget(mode="hang", limit_seconds=3)
    with drip_server(hang) as base:
        emulator = Emulator(SystemClock())
        try:
            emulator.create_job(
                name="hangs", schedule="0 0 1 1 *", http_target={"uri": base + "/run"}
            )
            emulator.start()
            emulator.run_job("hangs")
            assert wait_for(lambda: hang.requests == 1, 5)
            rows = Client(create_app(emulator)).get("/_emulator/jobs").get_json()["jobs"]
        finally:
            emulator.close()
    [row] = rows
    assert row["lastAttempt"] is not None and row["lastAttempt"]["code"] is None


def test_a_run_only_its_max_retry_duration_bounds_says_until_when(
    emulator: Emulator, client: Client, target: RecordingTarget
) -> None:
    """Trial 213: TRIES read 1, then 10, and nothing said when the retrying would stop."""
    target.status = 500
    bounded = {"retryCount": 0, "maxRetryDuration": "1200s", "minBackoffDuration": "10s"}
    emulator.create_job(nightly_job(schedule="0 3 * * *", retryConfig=bounded))
    emulator.run_job("nightly")
    first = emulator.attempts()[0].start_time
    [run] = client.get("/_emulator/runs").get_json()["runs"]
    assert (run["state"], run["maxAttempts"]) == ("retrying", None)
    assert run["retryUntil"] == iso(first + timedelta(seconds=1200))
    assert run_state_text(run) == f"retrying (until {iso(first + timedelta(seconds=1200))})"
    emulator.advance(timedelta(hours=1))  # it gives up: no end to say
    [ended] = client.get("/_emulator/runs").get_json()["runs"]
    assert (ended["state"], ended["retryUntil"]) == ("gave up", None)


def test_the_jobs_view_names_the_late_run_a_retrying_run_owes(
    emulator: Emulator, client: Client, target: RecordingTarget
) -> None:
    """Trial 149: a ``*/2`` job retrying past its next times had NEXT and the dashboard promise
    those times (which the run skipped) and not the missed one that runs late as it ends."""
    target.status = 500
    retried = {"retryCount": 1, "minBackoffDuration": "300s"}
    emulator.create_job(nightly_job(schedule="*/2 * * * *", retryConfig=retried))
    start = emulator.now()
    emulator.advance(timedelta(minutes=3))  # the first run fails; its retry waits 5 minutes

    [row] = client.get("/_emulator/jobs").get_json()["jobs"]

    first = start.replace(second=0) + timedelta(minutes=1)  # (the clock starts at :59)
    assert (row["nextAttemptTime"], row["delayedRunTime"]) == (
        iso(first + timedelta(minutes=5)),
        iso(first + timedelta(minutes=2)),
    )
    assert job_rows([row])[0][5] == (
        f"retry {iso(first + timedelta(minutes=5))}, then the {iso(first + timedelta(minutes=2))} "
        "run, late"
    )
    emulator.advance(timedelta(minutes=3))  # the retry fails too at 02:05: the run gives up
    scheduled = [a.schedule_time for a in emulator.attempts()]
    assert scheduled[-1] == iso(first + timedelta(minutes=2))  # the late run, as it said


def test_the_jobs_due_next_are_told_apart_across_locations(
    client: Client, emulator: Emulator
) -> None:
    """Trial 224: ``clock`` said "next due at …: nightly, nightly" of two locations' jobs."""
    for location in ("us-central1", "europe-west1"):
        emulator.create_job(
            nightly_job(name=f"projects/my-project/locations/{location}/jobs/nightly")
        )
    assert client.get("/_emulator/clock").json["nextDueJobs"] == [
        "my-project/europe-west1/nightly",
        "my-project/us-central1/nightly",
    ]
