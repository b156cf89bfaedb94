"""The ``cloud_run_testing`` and ``function_testing`` façades, through ``pytester``
(Cloud Run style: the request Cloud Scheduler sends; function style: a direct call)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_emulator.service import TimerRequest, TimerRouter

pytest_plugins = ["pytester"]

SERVICE = """
from dataclasses import dataclass

from flask import Flask

from scheduler_emulator.service import TimerRequest, TimerRouter


@dataclass
class Order:
    id: str
    total: float = 0.0


class Log:
    def __init__(self):
        self.sweeps = 0
        self.headers = []
        self.orders = []


def create_app(prefix="/_triggers/timer/"):
    log = Log()
    router = TimerRouter(prefix=prefix)

    @router.timer("nightly")
    def nightly(request: TimerRequest) -> None:
        log.headers.append(dict(request.headers))
        log.sweeps += 1

    @router.timer("report")
    def report(order: Order) -> None:
        log.orders.append(order)

    @router.timer("explode")
    def explode() -> None:
        raise RuntimeError("handler bug")

    @router.timer("nightly-v2")
    def nightly_v2() -> None:
        log.sweeps += 10

    @router.timer("tick")
    def tick() -> None:
        log.sweeps += 100

    app = Flask("svc")
    router.init_app(app)
    app.extensions["log"] = log
    return app
"""


def run(pytester: pytest.Pytester, test_source: str) -> pytest.RunResult:
    pytester.makepyfile(service=SERVICE)
    pytester.makepyfile(test_source)
    return pytester.runpytest("-p", "no:cacheprovider")


@pytest.mark.parametrize(
    ("test_source", "passed"),
    [
        pytest.param(
            """
            from service import create_app

            def test_nightly(cloud_run_testing):
                app = create_app()
                timers = cloud_run_testing(app)
                assert timers.nightly() == 200
                log = app.extensions["log"]
                assert log.sweeps == 1
                headers = {k.lower(): v for k, v in log.headers[0].items()}
                assert headers["x-cloudscheduler"] == "true"
                assert headers["x-cloudscheduler-jobname"] == "nightly"
                assert headers["x-cloudscheduler-scheduletime"] == "2026-01-01T00:00:00.000Z"
                assert headers["user-agent"] == "Google-Cloud-Scheduler"
                assert "content-type" not in headers

            def test_schedule_time_per_call(cloud_run_testing):
                app = create_app()
                cloud_run_testing(app).nightly(schedule_time="2026-09-24T02:00:00Z")
                headers = {k.lower(): v for k, v in app.extensions["log"].headers[0].items()}
                assert headers["x-cloudscheduler-scheduletime"] == "2026-09-24T02:00:00Z"
            """,
            2,
            id="cloud_run_style_sends_exactly_the_scheduler_request",
        ),
        pytest.param(
            """
            import pytest
            from service import create_app

            @pytest.mark.cloud_run_testing(schedule_time="2026-03-08T07:30:00Z")
            def test_marker(cloud_run_testing):
                app = create_app()
                cloud_run_testing(app).nightly()
                headers = {k.lower(): v for k, v in app.extensions["log"].headers[0].items()}
                assert headers["x-cloudscheduler-scheduletime"] == "2026-03-08T07:30:00Z"
            """,
            1,
            id="schedule_time_from_the_marker",
        ),
        pytest.param(
            """
            from datetime import UTC, datetime
            from zoneinfo import ZoneInfo

            import pytest
            from scheduler_emulator import NaiveDatetimeError
            from service import create_app

            FALL_BACK = datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York"))

            @pytest.mark.cloud_run_testing(schedule_time=FALL_BACK)
            def test_datetimes_are_written_as_cloud_scheduler_writes_them(cloud_run_testing):
                app = create_app()
                timers = cloud_run_testing(app)
                timers.nightly()
                timers.nightly(schedule_time=datetime(2026, 9, 24, 2, tzinfo=UTC))
                with pytest.raises(NaiveDatetimeError, match="naive"):
                    timers.nightly(schedule_time=datetime(2026, 9, 24, 2))
                sent = [
                    {k.lower(): v for k, v in h.items()}["x-cloudscheduler-scheduletime"]
                    for h in app.extensions["log"].headers
                ]
                assert sent == ["2026-11-01T01:30:00-04:00", "2026-09-24T02:00:00Z"]
            """,
            1,
            id="schedule_time_datetimes_as_cloud_scheduler_writes_them",
        ),
        pytest.param(
            """
            from service import Order, create_app

            def test_messages(cloud_run_testing, function_testing):
                app = create_app()
                log = app.extensions["log"]
                cloud_run_testing(app).report(Order("o-1", 9.5))
                function_testing(app).report(Order("o-2"))
                assert log.orders == [Order("o-1", 9.5), Order("o-2", 0.0)]
                cloud_run_testing(app).fire("nightly-v2")
                function_testing(app).fire("nightly-v2")
                assert log.sweeps == 20
                cloud_run_testing(app).nightly_v2()  # the job ID's hyphen as an underscore
                function_testing(app).nightly_v2()
                assert log.sweeps == 40
            """,
            1,
            id="payload_messages_and_fire_for_any_name",
        ),
        pytest.param(
            """
            from service import create_app

            def test_direct(function_testing):
                app = create_app()
                function_testing(app).nightly()
                log = app.extensions["log"]
                assert log.sweeps == 1
                assert log.headers == [{}]
            """,
            1,
            id="function_style_calls_the_handler_with_no_headers",
        ),
        pytest.param(
            """
            import pytest
            from service import create_app

            def test_raise(cloud_run_testing, function_testing):
                app = create_app()
                with pytest.raises(RuntimeError, match="handler bug"):
                    cloud_run_testing(app).explode()
                with pytest.raises(RuntimeError, match="handler bug"):
                    function_testing(app).explode()
            """,
            1,
            id="handler_exception_propagates_in_both_styles",
        ),
        pytest.param(
            """
            import threading

            from werkzeug.serving import make_server
            from service import create_app

            def test_live(cloud_run_testing):
                app = create_app()
                server = make_server("127.0.0.1", 0, app, threaded=True)
                threading.Thread(target=server.serve_forever, daemon=True).start()
                try:
                    timers = cloud_run_testing(base_url=f"http://127.0.0.1:{server.server_port}")
                    assert timers.fire("nightly") == 200
                finally:
                    server.shutdown()
                    server.server_close()
                assert app.extensions["log"].sweeps == 1
            """,
            1,
            id="cloud_run_style_against_a_live_server",
        ),
        pytest.param(
            """
            from service import create_app

            def test_function_handler(cloud_run_testing, function_testing):
                app = create_app()
                router = app.extensions["timer_router"]
                handler = router.functions_framework_handler()  # handler(request) -> response
                assert cloud_run_testing(handler).nightly() == 200
                function_testing(handler).nightly()
                log = app.extensions["log"]
                assert log.sweeps == 2
                headers = {k.lower(): v for k, v in log.headers[0].items()}
                assert headers["x-cloudscheduler-jobname"] == "nightly"
            """,
            1,
            id="a_functions_framework_handler_in_both_styles",
        ),
    ],
)
def test_the_child_tests_pass(pytester: pytest.Pytester, test_source: str, passed: int) -> None:
    """Each child test module passes as written (its id says what it shows); ``passed`` is how
    many tests it holds."""
    run(pytester, test_source).assert_outcomes(passed=passed)


def test_a_misspelt_cloud_run_testing_option_is_refused(pytester: pytest.Pytester) -> None:
    """A trial's ``schedule_tme=`` was silently ignored (the default header was sent)."""
    result = run(
        pytester,
        """
        import pytest

        @pytest.mark.cloud_run_testing(schedule_tme="2026-03-08T07:30:00Z")
        def test_misspelt(cloud_run_testing):
            pass
        """,
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*@pytest.mark.cloud_run_testing got unknown option(s) schedule_tme; it takes "
         "schedule_time. Did you mean schedule_time?"]
    )  # fmt: skip
    result.stdout.no_fnmatch_line("*plugin.py*")  # a failure, no traceback of the plugin's


def test_a_positional_cloud_run_testing_option_is_refused(pytester: pytest.Pytester) -> None:
    """Trial 97: a schedule time given without ``schedule_time=`` was ignored."""
    result = run(
        pytester,
        """
        import pytest

        @pytest.mark.cloud_run_testing("2026-09-24T02:00:00Z")
        def test_positional(cloud_run_testing):
            pass
        """,
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*@pytest.mark.cloud_run_testing takes its options by keyword, not "
         "'2026-09-24T02:00:00Z': write @pytest.mark.cloud_run_testing("
         "schedule_time='2026-09-24T02:00:00Z').*"]
    )  # fmt: skip


def test_non_2xx_answer_fails_with_the_acknowledgement_message(
    pytester: pytest.Pytester,
) -> None:
    result = run(
        pytester,
        """
        from service import create_app

        def test_custom_prefix(cloud_run_testing):
            cloud_run_testing(create_app(prefix="/jobs/")).tick()

        def test_no_body_for_a_payload_timer(cloud_run_testing):
            cloud_run_testing(create_app()).fire("report")

        def test_a_misspelt_timer(cloud_run_testing):
            cloud_run_testing(create_app()).fire("nightly_v2")
        """,
    )
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*TimerNotAcknowledged: Cloud Scheduler would not read the answer to TIMER /tick as an "
            "acknowledgement: the service answered 404. It said: Not Found: The requested URL was "
            "not found on the server.* The façade posted to "
            "/_triggers/timer/tick; the app's router serves /jobs/, and the façade always posts "
            "under the default prefix: test this app with the cloud_scheduler fixture, whose "
            "jobs post to any URI (or with function_testing, whose direct calls carry no run "
            "headers for a guard).",
            "*TimerNotAcknowledged: Cloud Scheduler would not read the answer to TIMER /report as "
            "an acknowledgement: the service answered 400. It said: {*",
            "*TimerNotAcknowledged: * TIMER /nightly_v2 * answered 500 with an empty body. "
            "No handler is registered for the timer 'nightly_v2' *Registered timers: "
            "*'nightly-v2', 'report', 'tick'*. Did you mean 'nightly-v2'?",
        ]
    )
    assert "TIMER_PREFIX + name" not in result.stdout.str()  # the message, not the façade's code


def test_unknown_attribute_names_the_registered_timers(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
        from service import create_app

        def test_typo(cloud_run_testing):
            cloud_run_testing(create_app()).nightley()
        """,
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AttributeError: No handler is registered for the timer 'nightley' * Registered "
            "timers: 'explode',* Did you mean 'nightly'? Use fire(name, payload)*"
        ]
    )


def test_plugin_runs_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("n", range(4))
        def test_server(cloud_scheduler_server, n):
            assert cloud_scheduler_server.attempts() == []
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:benchmark", "-n", "2")
    result.assert_outcomes(passed=4)


@pytest.mark.parametrize(
    ("payload", "body", "content_type"),
    [
        ({"id": "o-1", "total": 12.5}, b'{"id":"o-1","total":12.5}', "application/octet-stream"),
        ("plain text", b'"plain text"', "application/octet-stream"),
        (b"\x00raw", b"\x00raw", "application/octet-stream"),
        (None, b"null", "application/octet-stream"),
    ],
)
def test_a_message_goes_as_a_jobs_body_does(
    payload: object, body: bytes, content_type: str
) -> None:
    """A fired message is the body, with the Content-Type Cloud Scheduler gives a job's body
    when the job sets none (found by a trial user: the façade sent no Content-Type)."""
    from pytest_plugin.facades import CloudRunTimers

    seen: list[tuple[bytes, str | None]] = []

    def app(environ: dict, start_response) -> list[bytes]:  # type: ignore[no-untyped-def]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        seen.append((environ["wsgi.input"].read(length), environ.get("CONTENT_TYPE")))
        start_response("204 No Content", [])
        return []

    timers = CloudRunTimers(app)
    assert timers.fire("report", payload) == 204
    assert timers.fire("nightly") == 204
    assert seen == [(body, content_type), (b"", None)]


def test_a_handler_that_checks_its_token_is_tested_with_one() -> None:
    """A trial's handler checked its OIDC token: the Cloud Run style could send none (401), and
    the function style passed although the handler returned its 401."""
    from pytest_plugin.facades import CloudRunTimers, FunctionTimers, TimerNotAcknowledged

    router = TimerRouter()

    @router.timer("report")
    def report(request: TimerRequest) -> tuple[str, int]:
        token = request.headers.get("Authorization", "")
        return ("", 204) if token == "Bearer t0k" else ("no token", 401)

    with pytest.raises(TimerNotAcknowledged, match="answered 401. It said: no token"):
        CloudRunTimers(router.wsgi()).report()
    assert CloudRunTimers(router.wsgi()).report(headers={"Authorization": "Bearer t0k"}) == 204
    with pytest.raises(TimerNotAcknowledged, match="answered 401. It said: no token"):
        FunctionTimers(router).report()


def test_an_async_handlers_mistakes_raise_as_they_are_under_the_function_style() -> None:
    """Trial 221: an async handler's error came chained to "no running event loop", and one
    that forgot an ``await`` returned its coroutine, so the test passed with nothing run."""
    from pytest_plugin.facades import FunctionTimers

    router = TimerRouter()
    ran: list[str] = []

    async def work() -> None:
        ran.append("work")

    @router.timer("flaky")
    async def flaky() -> None:
        raise RuntimeError("database is busy")

    @router.timer("forgot")
    async def forgot() -> Any:
        return work()

    with pytest.raises(RuntimeError, match="database is busy") as raised:
        FunctionTimers(router).flaky()
    assert raised.value.__context__ is None
    with pytest.raises(TypeError, match="without awaiting it: write return await"):
        FunctionTimers(router).forgot()
    assert ran == []


def test_an_html_error_page_is_quoted_as_its_text() -> None:
    """Trial 106: a URLconf without the timer path quoted Django's whole debug 404 page."""
    from pytest_plugin.facades import CloudRunTimers, TimerNotAcknowledged

    page = (
        "<!DOCTYPE html><html><head><title>Page not found at /_triggers/timer/nightly</title>"
        "<style>" + "body { color: #000 } " * 400 + "</style></head><body>…</body></html>"
    )

    def django(environ: Any, start_response: Any) -> list[bytes]:
        start_response("404 Not Found", [("Content-Type", "text/html")])
        return [page.encode()]

    with pytest.raises(TimerNotAcknowledged) as refused:
        CloudRunTimers(django).fire("nightly")
    assert str(refused.value).endswith(
        "answered 404. It said: Page not found at /_triggers/timer/nightly"
    )
    assert refused.value.body == page  # as answered


def test_a_token_the_fixture_mints_passes_the_handlers_check(
    cloud_scheduler: Any, cloud_run_testing: Any
) -> None:
    """docs/testing.md's recipe: a token minted at the real time the façade's call runs in,
    checked by verify_scheduler_token against the fixture's keys."""
    from datetime import UTC, datetime

    from scheduler_emulator.service import verify_scheduler_token

    audience, email = "https://svc.example/run", "scheduler@my-project.iam.gserviceaccount.com"
    router = TimerRouter()

    @router.timer("nightly")
    def nightly(request: TimerRequest) -> None:
        verify_scheduler_token(
            request, audience=audience, certs_url=cloud_scheduler.certs_url, email=email
        )

    token = cloud_scheduler.tokens.id_token(email, audience, at=datetime.now(UTC))
    timers = cloud_run_testing(router.wsgi())
    assert timers.nightly(headers={"Authorization": f"Bearer {token}"}) == 200


@pytest.mark.parametrize(
    ("answer", "status"),
    [("ok", 200), (("", 204), 204), ({"ok": True}, 200), (("busy", 409), None)],
)
def test_a_plain_functions_framework_handler_answers_as_flask_makes_its_response(
    answer: Any, status: int | None
) -> None:
    """Trial 191: a ``def handler(request)`` returning a ``str`` (or a tuple, or a dict), as
    functions-framework takes, was a TypeError from werkzeug's wrapper."""
    from pytest_plugin.facades import CloudRunTimers, TimerNotAcknowledged

    seen: list[str] = []

    def handler(request: Any) -> Any:
        seen.append(request.headers["X-CloudScheduler-JobName"])
        return answer

    timers = CloudRunTimers(handler)
    if status is None:
        with pytest.raises(TimerNotAcknowledged, match="409"):
            timers.fire("cleanup")
    else:
        assert timers.fire("cleanup") == status
    assert seen == ["cleanup"]

    def failing(request: Any) -> Any:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):  # the handler's exception reaches the test
        CloudRunTimers(failing).fire("cleanup")
