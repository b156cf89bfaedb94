"""The run-once guard in front of real handlers: TimerRouter, Flask views, functions-framework.

Every request goes through werkzeug's test client (no socket) with Cloud Scheduler's headers, on
every store (the ``store`` fixture behind the ``guard`` fixture).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import flask
import pytest
import starlette.requests
from werkzeug.test import Client
from werkzeug.wrappers import Response

from pytest_plugin.facades import CloudRunTimers, TimerNotAcknowledged
from scheduler_emulator.service import (
    PROPAGATE_EXCEPTIONS_KEY,
    MissingRunHeadersError,
    RunInProgressError,
    RunOnceGuard,
    RunStore,
    TimerRequest,
    TimerRouter,
)
from tests.service.apps import functions_framework_app

from .guard_support import SCHEDULE_TIME, scheduler_headers

DUPLICATE = b"Already completed by an earlier delivery: not run again (run-once guard).\n"

GUARD_LOGGER = "scheduler_emulator.service.guard"
ROUTER_LOGGER = "scheduler_emulator.service"
PROBLEM_500 = (
    b'{"detail":"The server could not complete this request.",'
    b'"type":"urn:hardened:problem:internal-server-error",'
    b'"title":"Internal Server Error","status":500}'
)
CONFLICT = {
    "type": "https://tools.ietf.org/html/rfc9110#section-15.5.10",
    "title": "Conflict",
    "status": 409,
    "detail": "This scheduled run is in progress in another attempt; retry later.",
}


def missing_schedule_time_problem() -> dict[str, Any]:
    """The 400 body for a delivery without ``X-CloudScheduler-ScheduleTime``."""
    return {
        "type": "https://tools.ietf.org/html/rfc9110#section-15.5.1",
        "title": "One or more validation errors occurred.",
        "status": 400,
        "detail": (
            "The X-CloudScheduler-ScheduleTime header is missing, so the run-once guard cannot "
            "tell which scheduled run this is. Cloud Scheduler sends X-CloudScheduler-ScheduleTime "
            'only for unix-cron schedules: a job with an English-like schedule ("every 5 minutes") '
            "sends none, so the guard refuses every one of its deliveries. Give the job a "
            'unix-cron schedule ("*/5 * * * *") to guard it.'
        ),
        "errors": {
            "X-CloudScheduler-ScheduleTime": [
                "The run-once guard tells runs apart by this header; Cloud Scheduler sends "
                "X-CloudScheduler-JobName on every delivery and X-CloudScheduler-ScheduleTime "
                "for unix-cron schedules."
            ]
        },
    }


@dataclass
class Order:
    sku: str


class Service:
    """A service with three guarded timers, recording what its handlers received."""

    def __init__(self, guard: RunOnceGuard, *, install: bool = True) -> None:
        self.runs: list[tuple[str, Any]] = []
        self.fail = True
        self.router = router = guard.install(TimerRouter()) if install else TimerRouter()

        @router.timer("nightly")
        @guard.once
        def nightly() -> None:
            self.runs.append(("nightly", None))

        @router.timer("report")
        @guard.once
        def report(order: Order, request: TimerRequest) -> None:
            self.runs.append(("report", (order, request.schedule_time_header)))

        @router.timer("explode")
        @guard.once
        def explode() -> None:
            self.runs.append(("explode", None))
            if self.fail:
                raise RuntimeError("downstream unavailable")

        self.client = Client(router)

    def post(self, name: str, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
        """Deliver the timer ``name`` as Cloud Scheduler would."""
        return self.client.post(
            f"/_triggers/timer/{name}",
            headers=scheduler_headers(name) if headers is None else headers,
            **kwargs,
        )


def log_lines(caplog: pytest.LogCaptureFixture, logger: str, level: int) -> list[str]:
    """The messages ``logger`` logged at exactly ``level``."""
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno == level]


class TestTimerRouter:
    def test_first_delivery_answers_200_and_runs_the_handler(self, guard: RunOnceGuard) -> None:
        service = Service(guard)

        response = service.post("nightly")

        assert (response.status_code, response.data) == (200, b"")
        assert service.runs == [("nightly", None)]

    def test_duplicate_delivery_answers_200_without_running_the_handler(
        self, guard: RunOnceGuard, caplog: pytest.LogCaptureFixture
    ) -> None:
        service = Service(guard)
        service.post("nightly")
        caplog.set_level(logging.INFO)

        response = service.post("nightly")

        # told from a run that did the work (200, empty) by its line (trial 100)
        assert (response.status_code, response.data) == (200, DUPLICATE)
        assert response.content_type == "text/plain; charset=utf-8"
        assert service.runs == [("nightly", None)]
        assert log_lines(caplog, GUARD_LOGGER, logging.INFO) == [
            f"Job 'nightly' run {SCHEDULE_TIME} already completed; answered 200 without running "
            "it again (a duplicate delivery)."
        ]

    def test_delivery_of_a_run_in_progress_answers_409_problem_without_an_error_log(
        self, guard: RunOnceGuard, caplog: pytest.LogCaptureFixture
    ) -> None:
        service = Service(guard)
        guard.claim(scheduler_headers("nightly"))  # another instance is working on the run

        response = service.post("nightly")

        assert response.status_code == 409
        assert response.headers["Content-Type"] == "application/problem+json"
        assert response.json == CONFLICT
        assert service.runs == []
        [warning] = log_lines(caplog, GUARD_LOGGER, logging.WARNING)
        assert warning.startswith(f"Job 'nightly' run {SCHEDULE_TIME} is in progress in attempt")
        assert log_lines(caplog, ROUTER_LOGGER, logging.ERROR) == []

    def test_delivery_without_schedule_time_answers_400_problem_naming_the_header(
        self, guard: RunOnceGuard, caplog: pytest.LogCaptureFixture
    ) -> None:
        service = Service(guard)

        response = service.post("nightly", scheduler_headers("nightly", schedule_time=None))

        assert response.status_code == 400
        assert response.headers["Content-Type"] == "application/problem+json"
        assert response.json == missing_schedule_time_problem()
        assert service.runs == []
        [warning] = log_lines(caplog, GUARD_LOGGER, logging.WARNING)
        assert "X-CloudScheduler-ScheduleTime header is missing" in warning

    def test_raising_handler_answers_the_routers_500_problem_and_logs_it(
        self, guard: RunOnceGuard, store: RunStore, caplog: pytest.LogCaptureFixture
    ) -> None:
        service = Service(guard)

        response = service.post("explode")

        assert (response.status_code, response.data) == (500, PROBLEM_500)
        [error] = [r for r in caplog.records if r.name == ROUTER_LOGGER]
        assert (
            error.getMessage() == "TIMER /explode failed with 500: its handler raised RuntimeError."
        )
        assert error.exc_info is not None
        assert store.get(guard.run_for(scheduler_headers("explode")).key) is None

    def test_retry_after_a_raising_handler_runs_it_again(self, guard: RunOnceGuard) -> None:
        service = Service(guard)
        service.post("explode")
        service.fail = False

        response = service.post("explode")

        assert response.status_code == 200
        assert service.runs == [("explode", None), ("explode", None)]
        assert service.post("explode").status_code == 200
        assert len(service.runs) == 2

    def test_payload_and_timer_request_parameters_still_bind(self, guard: RunOnceGuard) -> None:
        service = Service(guard)

        response = service.post("report", data=json.dumps({"sku": "A-1"}))

        assert response.status_code == 200
        assert service.runs == [("report", (Order("A-1"), SCHEDULE_TIME))]

    def test_a_body_that_does_not_bind_answers_400_before_any_claim(
        self, guard: RunOnceGuard, store: RunStore
    ) -> None:
        service = Service(guard)

        response = service.post("report", data=b"not json")

        assert response.status_code == 400
        assert store.get(guard.run_for(scheduler_headers("report")).key) is None
        assert service.post("report", data=b'{"sku": "A-1"}').status_code == 200

    def test_the_router_sees_the_injected_timer_request_parameter(
        self, guard: RunOnceGuard
    ) -> None:
        service = Service(guard)

        nightly, report = service.router.timers["nightly"], service.router.timers["report"]

        assert (nightly.request_param, nightly.payload_param) == ("run_once_request", None)
        assert (report.request_param, report.payload_param) == ("request", "order")

    def test_refusals_do_not_propagate_when_the_caller_asks_for_exceptions(
        self, guard: RunOnceGuard
    ) -> None:
        service = Service(guard)
        guard.claim(scheduler_headers("nightly"))

        response = service.post("nightly", environ_overrides={PROPAGATE_EXCEPTIONS_KEY: True})

        assert response.status_code == 409

    def test_without_install_a_refusal_answers_500_and_says_to_install(
        self, guard: RunOnceGuard, caplog: pytest.LogCaptureFixture
    ) -> None:
        service = Service(guard, install=False)
        guard.claim(scheduler_headers("nightly"))

        response = service.post("nightly")

        assert (response.status_code, response.data) == (500, PROBLEM_500)
        [error] = [r for r in caplog.records if r.name == ROUTER_LOGGER]
        assert error.exc_info is not None
        refusal = error.exc_info[1]
        assert isinstance(refusal, RunInProgressError)
        assert refusal.__notes__ == [
            "Under a TimerRouter, call guard.install(router) once so that the router answers "
            "409 instead of 500."
        ]
        assert service.runs == []

    def test_a_handler_called_directly_raises_its_refusal_and_says_why(
        self, guard: RunOnceGuard
    ) -> None:
        """As ``function_testing`` calls it (no headers): installed, the note does not tell
        to install, but what sends the headers through the router."""
        service = Service(guard)
        with pytest.raises(MissingRunHeadersError) as raised:
            service.router.invoke("nightly")
        assert raised.value.__notes__ == [
            "The handler was invoked without a request (as function_testing invokes it), so the "
            "refusal is raised, not answered. A cloud_run_testing façade sends the request Cloud "
            "Scheduler sends, headers included."
        ]
        assert service.runs == []

    def test_installing_twice_or_from_two_guards_is_harmless(
        self, guard: RunOnceGuard, store: RunStore
    ) -> None:
        service = Service(guard)
        installed = service.router.dispatch

        RunOnceGuard(store).install(guard.install(service.router))

        assert service.router.dispatch is installed
        guard.claim(scheduler_headers("nightly"))
        assert service.post("nightly").status_code == 409

    def test_function_style_with_headers_runs_once(self, guard: RunOnceGuard) -> None:
        service = Service(guard)
        request = TimerRequest(headers=scheduler_headers("nightly"))

        service.router.invoke("nightly", request=request)
        service.router.invoke("nightly", request=request)

        assert service.runs == [("nightly", None)]

    def test_function_style_refusals_raise(self, guard: RunOnceGuard) -> None:
        service = Service(guard)
        guard.claim(scheduler_headers("report"))

        with pytest.raises(MissingRunHeadersError):
            service.router.invoke("nightly")
        with pytest.raises(RunInProgressError):
            service.router.invoke(
                "report", Order("A"), TimerRequest(headers=scheduler_headers("report"))
            )

    def test_functions_framework_handler_answers_the_guards_statuses(
        self, guard: RunOnceGuard
    ) -> None:
        service = Service(guard)
        app = functions_framework_app(service.router.functions_framework_handler())
        client = Client(app)
        url = "/_triggers/timer/nightly"

        statuses = [client.post(url, headers=scheduler_headers("nightly")).status_code]
        guard.claim(scheduler_headers("nightly", schedule_time="2026-09-25T02:00:00Z"))
        tomorrow = scheduler_headers("nightly", schedule_time="2026-09-25T02:00:00Z")
        statuses.append(client.post(url, headers=tomorrow).status_code)
        statuses.append(client.post(url, headers=scheduler_headers("nightly")).status_code)

        assert statuses == [200, 409, 200]
        assert service.runs == [("nightly", None)]

    def test_the_cloud_run_facade_sees_a_duplicate_as_acknowledged_and_409_as_not(
        self, guard: RunOnceGuard
    ) -> None:
        service = Service(guard)
        timers = CloudRunTimers(service.router)

        assert [timers.nightly(), timers.nightly()] == [200, 200]
        guard.claim(scheduler_headers("nightly", schedule_time="2026-09-25T02:00:00Z"))
        with pytest.raises(TimerNotAcknowledged) as refused:
            timers.fire("nightly", schedule_time="2026-09-25T02:00:00Z")

        assert refused.value.status == 409
        assert service.runs == [("nightly", None)]


class FlaskService:
    """A Flask app whose ``/jobs/nightly`` view is guarded; ``answer`` is what the view returns."""

    def __init__(self, guard: RunOnceGuard) -> None:
        self.calls = 0
        self.answer: Any = ("swept", 200)
        self.app = app = flask.Flask("service")

        @app.post("/jobs/<job>")
        @guard.view
        def nightly(job: str) -> Any:
            self.calls += 1
            if isinstance(self.answer, BaseException):
                raise self.answer
            return self.answer

        self.client = Client(app)

    def post(self, headers: dict[str, str] | None = None) -> Any:
        """Deliver ``nightly`` to the view."""
        return self.client.post("/jobs/nightly", headers=headers or scheduler_headers())


class TestFlaskView:
    def test_first_delivery_returns_the_views_answer(self, guard: RunOnceGuard) -> None:
        service = FlaskService(guard)

        response = service.post()

        assert (response.status_code, response.data, service.calls) == (200, b"swept", 1)

    def test_duplicate_delivery_answers_200_saying_so_without_calling_the_view(
        self, guard: RunOnceGuard
    ) -> None:
        service = FlaskService(guard)
        service.post()

        response = service.post()

        assert (response.status_code, response.data, service.calls) == (200, DUPLICATE, 1)

    def test_delivery_of_a_run_in_progress_answers_409(self, guard: RunOnceGuard) -> None:
        service = FlaskService(guard)
        guard.claim(scheduler_headers())

        response = service.post()

        assert (response.status_code, response.json, service.calls) == (409, CONFLICT, 0)

    def test_delivery_without_schedule_time_answers_400(self, guard: RunOnceGuard) -> None:
        service = FlaskService(guard)

        response = service.post(scheduler_headers(schedule_time=None))

        assert response.status_code == 400
        assert response.json == missing_schedule_time_problem()
        assert service.calls == 0

    def test_a_raising_view_answers_flasks_500_and_a_retry_runs(self, guard: RunOnceGuard) -> None:
        service = FlaskService(guard)
        service.answer = RuntimeError("downstream unavailable")

        failed = service.post()
        service.answer = "swept"
        retried = service.post()

        assert (failed.status_code, retried.status_code, service.calls) == (500, 200, 2)

    @pytest.mark.parametrize(
        ("answer", "status", "completed"),
        [
            pytest.param("swept", 200, True, id="str"),
            pytest.param({"swept": 3}, 200, True, id="dict"),
            pytest.param(("accepted", 202), 202, True, id="body-status"),
            pytest.param(("swept", {"X-Run": "1"}), 200, True, id="body-headers"),
            pytest.param(("gone", "404 NOT FOUND", {}), 404, False, id="body-status-headers"),
            pytest.param(("busy", 503), 503, False, id="503"),
            pytest.param(Response("later", status=500), 500, False, id="response-500"),
            pytest.param((Response("ok"), {"X-Run": "1"}), 200, True, id="response-headers"),
            pytest.param(("moved", 302), 302, False, id="302"),
        ],
    )
    def test_a_2xx_answer_completes_the_run_and_any_other_releases_it(
        self, guard: RunOnceGuard, answer: Any, status: int, completed: bool
    ) -> None:
        service = FlaskService(guard)
        service.answer = answer

        first = service.post()
        service.post()

        assert first.status_code == status
        assert service.calls == (1 if completed else 2)

    def test_a_functions_framework_function_gets_its_request_guarded(
        self, guard: RunOnceGuard
    ) -> None:
        seen: list[str | None] = []

        @guard.view
        def nightly(request: flask.Request) -> tuple[str, int]:
            seen.append(request.headers.get("X-CloudScheduler-ScheduleTime"))
            return "swept", 200

        client = Client(functions_framework_app(nightly))

        statuses = [client.post("/", headers=scheduler_headers()).status_code for _ in range(2)]

        assert (statuses, seen) == ([200, 200], [SCHEDULE_TIME])

    def test_an_asgi_route_is_refused_at_import_with_the_way_that_works(
        self, guard: RunOnceGuard
    ) -> None:
        """Trial 210: a FastAPI route under ``@guard.view`` imported, then answered 500."""

        async def charge() -> None: ...

        def report(request: starlette.requests.Request) -> None: ...

        for view, what in (
            (charge, "an async def function"),
            (report, "a Starlette or FastAPI route"),
        ):
            with pytest.raises(TypeError) as refused:
                guard.view(view)
            assert str(refused.value) == (
                "@guard.view wraps a sync Flask, Django or functions-framework view; "
                f"{__name__}.{view.__qualname__} is {what}. On an ASGI app, guard a timer "
                "router's handler instead: @router.timer(name) above @guard.once, with "
                "router.init_app(app)."
            )

    def test_a_view_called_without_a_request_says_what_it_needs(self, guard: RunOnceGuard) -> None:
        @guard.view
        def nightly() -> str:
            return "swept"

        with pytest.raises(TypeError, match="needs the request"):
            nightly()


def test_a_guarded_handler_runs_under_the_plugins_virtual_clock_before_the_real_date(
    store: RunStore,
) -> None:
    """A trial: under the ``cloud_scheduler`` fixture at its default start (a date before the
    real one) a Firestore-guarded handler never ran and its attempt ran into its deadline: grpc's
    call deadlines and google-api-core's retry deadlines read the frozen clock, so every call
    was past its deadline and was retried without end."""
    from datetime import UTC, datetime, timedelta

    from pytest_plugin import CloudScheduler

    service = Service(RunOnceGuard(store))  # the guard's own clock: what the handler reads
    scheduler = CloudScheduler(datetime(2026, 1, 1, tzinfo=UTC))
    try:
        scheduler.mount("http://orders.test", service.router)
        scheduler.create_job(
            name="nightly", schedule="0 2 * * *", attempt_deadline="15s",
            http_target={"uri": "http://orders.test/_triggers/timer/nightly"},
        )  # fmt: skip
        scheduler.advance(timedelta(hours=3))
        assert [a.code for a in scheduler.attempts("nightly")] == ["OK"]
        assert service.runs == [("nightly", None)]
    finally:
        scheduler.close()
