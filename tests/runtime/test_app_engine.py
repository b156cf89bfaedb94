"""App Engine HTTP targets: mapped base URLs, the documented headers, 503 retried uncounted."""

from __future__ import annotations

import base64
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from werkzeug.test import Client

from scheduler_emulator import Emulator, ManualClock, MountTransport
from scheduler_emulator.runtime.delivery.dispatchers import parse_app_engine_urls
from scheduler_emulator.runtime.storage.attempt_log import AttemptLog
from scheduler_emulator.runtime.storage.read_model import runs_page
from scheduler_emulator.server.server import create_app
from scheduler_emulator.wire import APP_ENGINE_USER_AGENT_SUFFIX
from tests.support import Received, RecordingTarget

START = datetime(2026, 9, 24, 1, 59, tzinfo=UTC)


def app_engine_job(**overrides: object) -> dict[str, object]:
    job: dict[str, object] = {
        "name": "rollup",
        "schedule": "0 2 * * *",
        "appEngineHttpTarget": {
            "relativeUri": "/tasks/rollup?day=1",
            "appEngineRouting": {"service": "worker", "version": "v2"},
            "headers": {"User-Agent": "orders-cron/1.0", "X-Trace": "abc"},
            "body": base64.b64encode(b"{}").decode(),
        },
    }
    job.update(overrides)
    return job


def emulator_for(app: RecordingTarget, urls: object, **kwargs: object) -> Emulator:
    transport = MountTransport({"http://worker.test": app, "http://app.test": app})
    return Emulator(
        ManualClock(START),
        transport=transport,
        app_engine_urls=urls,  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_request_reaches_the_mapped_url_with_the_documented_headers() -> None:
    app = RecordingTarget()
    emulator = emulator_for(app, {"worker": "http://worker.test/"})
    emulator.create_job(app_engine_job())
    emulator.advance(timedelta(minutes=1))
    [request] = app.requests
    assert (request.method, request.path, request.query) == ("POST", "/tasks/rollup", "day=1")
    assert request.headers["User-Agent"] == f"orders-cron/1.0 {APP_ENGINE_USER_AGENT_SUFFIX}"
    assert request.headers["X-Cloudscheduler"] == "true"
    assert request.headers["X-Cloudscheduler-Jobname"] == "rollup"
    assert request.headers["X-Cloudscheduler-Scheduletime"] == "2026-09-24T02:00:00Z"
    assert request.headers["Content-Type"] == "application/octet-stream"
    assert request.headers["X-Trace"] == "abc"
    assert request.body == b"{}"
    [attempt] = emulator.attempts("rollup")
    assert attempt.code == "OK"
    assert attempt.request["url"] == "http://worker.test/tasks/rollup?day=1"
    assert attempt.request["appEngineHost"] == "v2.worker.my-project.appspot.com"


def test_the_default_user_agent_is_app_engines_and_every_service_url_serves_all() -> None:
    app = RecordingTarget()
    emulator = emulator_for(app, "http://app.test")
    target = {"relativeUri": "/ping", "httpMethod": "GET"}
    emulator.create_job(app_engine_job(appEngineHttpTarget=target))
    emulator.advance(timedelta(minutes=1))
    [request] = app.requests
    assert request.method == "GET" and request.path == "/ping"
    assert request.headers["User-Agent"] == APP_ENGINE_USER_AGENT_SUFFIX
    assert "Content-Type" not in request.headers
    assert emulator.attempts("rollup")[0].request["appEngineHost"] == "my-project.appspot.com"


def test_503_is_retried_regardless_of_retry_config_and_not_counted() -> None:
    def status(received: Received) -> int:
        return 503 if len(app.requests) <= 3 else 200

    app = RecordingTarget(status=status)
    emulator = emulator_for(app, {"worker": "http://worker.test"})
    emulator.create_job(app_engine_job())  # retryCount 0: no retry of a counted failure
    emulator.advance(timedelta(minutes=2))
    attempts = emulator.attempts("rollup")
    assert [a.response_status for a in attempts] == [503, 503, 503, 200]
    assert attempts[-1].code == "OK"
    assert emulator.get_job("rollup").retry_config.retry_count == 0
    starts = [(a.start_time - attempts[0].start_time).total_seconds() for a in attempts]
    assert starts == [0, 5, 15, 35]  # pinned: the n-th 503 waits the n-th retry's backoff


def test_a_503_does_not_use_up_the_retry_count() -> None:
    statuses = iter([503, 500, 500, 500])
    app = RecordingTarget(status=lambda received: next(statuses))
    emulator = emulator_for(app, {"worker": "http://worker.test"})
    emulator.create_job(app_engine_job(retryConfig={"retryCount": 2}))
    emulator.advance(timedelta(minutes=5))
    assert [a.response_status for a in emulator.attempts("rollup")] == [503, 500, 500, 500]


def test_a_runs_most_attempts_counts_its_503s_beside_its_retry_count() -> None:
    """Trial 186: a run of 503s read "attempt 6 of 6", then 6/7, 7/8 — a limit that moved."""
    statuses = iter([503, 503, 500, 500])
    app = RecordingTarget(status=lambda received: next(statuses))
    emulator = emulator_for(app, {"worker": "http://worker.test"})
    emulator.create_job(app_engine_job(retryConfig={"retryCount": 1}))

    def run() -> dict[str, object]:
        [only], _ = runs_page(emulator.store, page_size=5, now=emulator.now(),
                              config=emulator.job_config)  # fmt: skip
        return {key: only[key] for key in ("state", "tries", "maxAttempts", "gaveUp")}

    emulator.advance(timedelta(minutes=1, seconds=6))  # two 503s: the third attempt pending
    assert run() == {"state": "retrying", "tries": 2, "maxAttempts": 4, "gaveUp": None}
    emulator.advance(timedelta(minutes=5))
    assert run() == {"state": "gave up", "tries": 4, "maxAttempts": 4, "gaveUp": "retry count"}


def test_http_targets_do_not_retry_a_503_uncounted() -> None:
    app = RecordingTarget(status=503)
    emulator = emulator_for(app, {})
    emulator.create_job(
        {"name": "plain", "schedule": "0 2 * * *", "httpTarget": {"uri": "http://app.test/x"}}
    )
    emulator.advance(timedelta(minutes=5))
    assert len(emulator.attempts("plain")) == 1


def test_an_unmapped_service_records_a_failed_attempt_naming_the_flag() -> None:
    app = RecordingTarget()
    stream = io.StringIO()
    emulator = emulator_for(app, {"other": "http://app.test"}, attempt_log=AttemptLog(stream))
    emulator.create_job(app_engine_job())
    emulator.advance(timedelta(minutes=1))
    [attempt] = emulator.attempts("rollup")
    assert attempt.code == "FAILED_PRECONDITION"
    assert "--app-engine-url worker=http://HOST:PORT" in attempt.debug_info
    assert app.requests == []
    finished = json.loads(stream.getvalue().splitlines()[-1])
    assert finished["jsonPayload"]["targetType"] == "APP_ENGINE_HTTP"
    assert finished["severity"] == "ERROR"


def test_a_job_without_a_service_goes_to_default() -> None:
    app = RecordingTarget()
    emulator = emulator_for(app, {"default": "http://app.test"})
    emulator.create_job(app_engine_job(appEngineHttpTarget={"relativeUri": "/"}))
    emulator.advance(timedelta(minutes=1))
    assert [r.path for r in app.requests] == ["/"]


@pytest.mark.parametrize(
    ("target", "urls", "shown"),
    [
        (
            {"relativeUri": "/"},
            {"default": "http://app.test"},
            "App Engine POST / (service default) → http://app.test/",
        ),
        (
            None,
            {"*": "http://app.test"},
            "App Engine POST /tasks/rollup?day=1 (service worker, version v2) → "
            "http://app.test/tasks/rollup?day=1",
        ),
        (
            None,
            {"default": "http://app.test"},
            "App Engine POST /tasks/rollup?day=1 (service worker, version v2) → "
            "not sent: no --app-engine-url maps its service",
        ),
    ],
)
def test_the_jobs_views_name_the_service_and_the_local_url_a_job_is_sent_to(
    target: dict[str, object] | None, urls: dict[str, str], shown: str
) -> None:
    """Trials: the Jobs tab showed ``App Engine POST /`` for every service alike, and not
    where ``--app-engine-url`` sends the attempts."""
    emulator = emulator_for(RecordingTarget(), urls)
    emulator.create_job(app_engine_job(**({"appEngineHttpTarget": target} if target else {})))
    [row] = Client(create_app(emulator)).get("/_emulator/jobs").get_json()["jobs"]
    assert row["target"] == shown


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["http://a.test/"], {"*": "http://a.test"}),
        (
            ["worker=http://w.test", "http://a.test"],
            {"worker": "http://w.test", "*": "http://a.test"},
        ),
        (["http://a.test/x=1"], {"*": "http://a.test/x=1"}),  # "=" in a URL alone
        (["Worker_X=http://w.test"], {"Worker_X": "http://w.test"}),  # as the API takes it
        ({"worker": "http://w.test"}, {"worker": "http://w.test"}),
    ],
)
def test_parse_app_engine_urls(values: object, expected: dict[str, str]) -> None:
    assert parse_app_engine_urls(values) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["worker=ftp://x"], "http"),
        (["http://a.test", "http://b.test"], "twice"),
        # a trial's: each started, then failed at attempt time (or made every listing 500)
        (["billing=http://[::1"], 'billing=URL must be a URL with a valid host and port; got "h'),
        (["worker=http://"], "worker=URL must be a URL with a valid host and port"),
        (["worker=http://127.0.0.1:99999"], "valid host and port"),
        (["http://127.0.0.1:8 worker"], "must be a base URL: no space"),  # URL and service swapped
        (["http://a.test/?x=1"], 'must be a base URL: no "\\?" or "#"'),
        (
            ["worker=http://a.test:1 "],
            'worker=URL must be a base URL: no space; got "http://a.test:1 "',
        ),
        (["=http://a.test"], "=http://a.test: the service name before = is empty"),
        (["w=http://u:secret@a.test"], 'user name or password .* got "http://u:\\*\\*\\*@'),
        # trial 54: it pointed to httpTarget's headers and tokens, and showed a "/…" not there
        (
            ["http://u:secret@a.test:9"],
            'in appEngineHttpTarget.headers \\(Authorization\\); got "http://u:\\*\\*\\*@a.test:9"\\.$',
        ),
        # a trial's: read as one URL for every service, the message said only "http://"
        (["a/b=http://a.test"], "a service name before = holds no ':', '/' or space\\)\\.$"),
        (["worker:http://a.test"], "\\(to map service 'worker', write worker=URL\\)\\.$"),  # 229
    ],
)
def test_parse_app_engine_urls_errors(values: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_app_engine_urls(values)
