"""The timer router in front of real apps: WSGI middleware, Flask, a functions-framework function
(as :func:`tests.service.apps.functions_framework_app` serves it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import flask
import pytest
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.test import Client

import scheduler_emulator.service as target_package
from scheduler_emulator.service import (
    PROPAGATE_EXCEPTIONS_KEY,
    TimerMiddleware,
    TimerRouter,
    find_router,
)
from tests.service.apps import ALL_METHODS, Order, SeedTimers, functions_framework_app

PROBLEM_500 = (
    b'{"detail":"The server could not complete this request.",'
    b'"type":"urn:hardened:problem:internal-server-error",'
    b'"title":"Internal Server Error","status":500}'
)
FROM_NIGHTLY = {
    "User-Agent": "Google-Cloud-Scheduler",
    "X-CloudScheduler": "true",
    "X-CloudScheduler-JobName": "nightly",
    "X-CloudScheduler-ScheduleTime": "2026-09-24T02:00:00Z",
}


def web_routes(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Plain WSGI web routes: 200 ``web <path>``."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"web " + environ["PATH_INFO"].encode()]


def flask_app() -> flask.Flask:
    """A Flask service with one web route, ``GET /orders``."""
    app = flask.Flask("orders")

    @app.get("/orders")
    def list_orders() -> str:
        return "orders"

    return app


class TestWsgiMiddleware:
    def test_middleware_serves_timers_and_passes_every_other_path_to_the_app(self) -> None:
        orders = SeedTimers()
        client = Client(orders.router.wsgi(web_routes))

        timer = client.post("/_triggers/timer/nightly", headers=FROM_NIGHTLY)
        web = client.get("/orders/17")

        assert (timer.status_code, timer.data) == (200, b"")
        assert (web.status_code, web.data) == (200, b"web /orders/17")
        assert orders.seen == [("nightly", "2026-09-24T02:00:00Z")]

    def test_middleware_knows_its_router(self) -> None:
        router = TimerRouter()

        middleware = router.wsgi(web_routes)

        assert isinstance(middleware, TimerMiddleware)
        assert (middleware.timer_router, middleware.app) == (router, web_routes)

    def test_middleware_without_an_app_uses_the_constructors_app(self) -> None:
        router = TimerRouter(app=web_routes)

        assert Client(router.wsgi()).get("/x").data == b"web /x"
        assert Client(router).get("/x").data == b"web /x"

    def test_middleware_without_any_app_answers_404(self) -> None:
        response = Client(TimerRouter().wsgi()).get("/orders")

        assert (response.status_code, response.data) == (404, b"")

    def test_middleware_mounted_under_a_script_name_matches_the_path_below_it(self) -> None:
        orders = SeedTimers()
        client = Client(orders.router.wsgi(web_routes))

        response = client.post(
            "/_triggers/timer/nightly",
            headers=FROM_NIGHTLY,
            environ_overrides={"SCRIPT_NAME": "/svc"},
        )

        assert response.status_code == 200


class TestFlask:
    def test_init_app_serves_timers_in_front_of_the_flask_routes(self) -> None:
        orders, app = SeedTimers(), flask_app()
        orders.router.init_app(app)
        client = app.test_client()

        assert client.post("/_triggers/timer/nightly", headers=FROM_NIGHTLY).status_code == 200
        assert client.get("/orders").get_data() == b"orders"
        assert orders.seen == [("nightly", "2026-09-24T02:00:00Z")]

    def test_a_handler_reading_flask_request_is_told_to_take_a_timer_request(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A trial user's handler read ``flask.request``: 500, and only Flask's own words."""
        router, app = TimerRouter(), flask_app()

        @router.timer("nightly")
        def nightly() -> None:
            flask.request.headers.get("X-CloudScheduler-ScheduleTime")

        router.init_app(app)
        response = app.test_client().post("/_triggers/timer/nightly", headers=FROM_NIGHTLY)

        assert response.status_code == 500
        assert (
            "TIMER /nightly failed with 500: its handler raised RuntimeError. A timer run is "
            "answered in front of Flask, outside its request context: take a TimerRequest "
            "parameter for the run's headers and body (docs/testing.md)."
        ) in caplog.messages

    def test_other_paths_get_the_flask_apps_own_404(self) -> None:
        app = flask_app()
        SeedTimers().router.init_app(app)

        response = app.test_client().post("/_Triggers/timer/nightly")

        assert response.status_code == 404
        assert b"Not Found" in response.data

    @pytest.mark.parametrize(
        ("path", "body", "status", "answer"),
        [
            pytest.param("/_triggers/timer/report", b'{"sku":"A"}', 200, b"", id="payload"),
            pytest.param("/_triggers/timer/explode", b"", 500, PROBLEM_500, id="raised"),
            pytest.param("/_triggers/timer/weekly", b"", 500, b"", id="no-handler"),
        ],
    )
    def test_timer_answers_are_the_routers_not_flasks(
        self, path: str, body: bytes, status: int, answer: bytes
    ) -> None:
        app = flask_app()
        SeedTimers().router.init_app(app)

        response = app.test_client().post(path, data=body)

        assert (response.status_code, response.data) == (status, answer)

    def test_init_app_records_the_router_in_the_apps_extensions(self) -> None:
        router, app = TimerRouter(), flask_app()

        router.init_app(app)

        assert app.extensions["timer_router"] is router
        assert getattr(app.wsgi_app, "timer_router", None) is router
        assert find_router(app) is router

    def test_init_app_twice_with_one_router_wraps_once(self) -> None:
        router, app = TimerRouter(), flask_app()
        router.init_app(app)
        wrapped = app.wsgi_app

        router.init_app(app)

        assert app.wsgi_app is wrapped

    def test_init_app_with_a_second_router_raises_value_error(self) -> None:
        app = flask_app()
        TimerRouter().init_app(app)

        with pytest.raises(ValueError, match="already serves timers through"):
            TimerRouter("/jobs/").init_app(app)

    def test_flask_view_whose_route_carries_the_name_passes_it_explicitly(self) -> None:
        orders, app = SeedTimers(), flask_app()

        @app.route("/cron/<path:name>", methods=ALL_METHODS)
        def timers(name: str) -> Any:
            return orders.router.handle_flask(flask.request, name=name)

        client = app.test_client()

        assert client.post("/cron/nightly", headers=FROM_NIGHTLY).status_code == 200
        assert client.post("/cron/report", data=b'{"sku": "B"}').status_code == 200
        assert client.post("/cron/report", data=b"").status_code == 400
        assert orders.seen == [("nightly", "2026-09-24T02:00:00Z"), ("report", Order("B"))]


class TestFunctionsFramework:
    @pytest.fixture
    def orders(self) -> SeedTimers:
        """The example timers (nightly, report, explode)."""
        return SeedTimers()

    @pytest.fixture
    def client(self, orders: SeedTimers) -> Any:
        """A functions-framework-style app serving ``def timers(request)`` on every path."""

        def timers(request: flask.Request) -> Any:
            return orders.router.handle_flask(request)

        return functions_framework_app(timers).test_client()

    @pytest.mark.parametrize(
        ("path", "headers", "body", "status", "answer"),
        [
            pytest.param("/_triggers/timer/nightly", FROM_NIGHTLY, b"", 200, b"", id="returned"),
            pytest.param("/_triggers/timer/nightly/", FROM_NIGHTLY, b"", 200, b"", id="slash"),
            pytest.param("/_triggers/timer/explode", {}, b"", 500, PROBLEM_500, id="raised"),
            pytest.param(
                "/_triggers/timer/explode", FROM_NIGHTLY, b"", 500, b"", id="job-name-differs"
            ),
            pytest.param("/_triggers/timer/weekly", {}, b"", 500, b"", id="no-handler"),
            pytest.param("/_triggers/timer/report", {}, b"", 400, None, id="empty-payload"),
            pytest.param("/_triggers/timer/report", {}, b"{}", 400, None, id="payload-missing-sku"),
            pytest.param("/orders", {}, b"", 404, b"", id="not-a-timer-route"),
        ],
    )
    def test_function_answers_as_the_spec_table_says(
        self,
        client: Any,
        path: str,
        headers: dict[str, str],
        body: bytes,
        status: int,
        answer: bytes | None,
    ) -> None:
        response = client.post(path, headers=headers, data=body)

        assert response.status_code == status
        if answer is not None:
            assert response.data == answer
        if status == 400:
            assert response.headers["Content-Type"] == "application/problem+json"
            assert list(response.get_json()["errors"]) in (["order"], ["order.sku"])

    def test_function_passes_headers_and_body_to_the_handler(
        self, client: Any, orders: SeedTimers
    ) -> None:
        client.post("/_triggers/timer/nightly", headers=FROM_NIGHTLY)
        client.post(
            "/_triggers/timer/report",
            data=b'{"sku": "C"}',
            headers={"Content-Type": "application/octet-stream"},
        )

        assert orders.seen == [("nightly", "2026-09-24T02:00:00Z"), ("report", Order("C"))]

    def test_propagate_key_raises_the_handlers_own_exception_through_a_testing_flask_app(
        self, orders: SeedTimers
    ) -> None:
        app = functions_framework_app(orders.router.handle_flask)
        app.testing = True  # Flask re-raises a view's exception only when testing

        with pytest.raises(RuntimeError, match="disk full"):
            app.test_client().post(
                "/_triggers/timer/explode", environ_overrides={PROPAGATE_EXCEPTIONS_KEY: True}
            )

    def test_functions_framework_handler_is_such_a_function_and_knows_its_router(
        self, orders: SeedTimers
    ) -> None:
        handler = orders.router.functions_framework_handler()
        client = functions_framework_app(handler).test_client()

        response = client.get("/_triggers/timer/nightly", headers=FROM_NIGHTLY)

        assert response.status_code == 200
        assert find_router(handler) is orders.router


class TestFindRouter:
    @staticmethod
    def _flask_with(router: TimerRouter) -> flask.Flask:
        app = flask_app()
        router.init_app(app)
        return app

    @pytest.mark.parametrize(
        "wrap",
        [
            pytest.param(lambda router: router, id="router"),
            pytest.param(lambda router: router.wsgi(web_routes), id="middleware"),
            pytest.param(lambda router: TestFindRouter._flask_with(router), id="flask-app"),
            pytest.param(lambda router: router.functions_framework_handler(), id="ff-handler"),
            pytest.param(lambda router: ProxyFix(router.wsgi(web_routes)), id="wrapped-middleware"),
            pytest.param(
                lambda router: ProxyFix(TestFindRouter._flask_with(router)), id="wrapped-flask"
            ),
        ],
    )
    def test_router_is_found_from_the_app(self, wrap: Callable[[TimerRouter], Any]) -> None:
        router = TimerRouter()

        assert find_router(wrap(router)) is router

    def test_flask_app_with_only_the_extension_is_found(self) -> None:
        router, app = TimerRouter(), flask_app()
        app.extensions["timer_router"] = router

        assert find_router(app) is router

    @pytest.mark.parametrize(
        "app",
        [
            pytest.param(None, id="none"),
            pytest.param(web_routes, id="plain-wsgi-app"),
            pytest.param(flask.Flask("bare"), id="flask-without-router"),
            pytest.param(ProxyFix(web_routes), id="wrapped-plain-app"),
        ],
    )
    def test_app_without_a_router_gives_none(self, app: Any) -> None:
        assert find_router(app) is None


def test_target_package_imports_nothing_of_the_emulator_engine() -> None:
    """``scheduler_emulator.service`` needs only the two stdlib-only leaves of the package: the wire
    contract and the real-time helpers.

    The check loads ``target`` under a stand-in parent package, in a fresh interpreter, and
    lists every module it brought in.
    """
    package = Path(str(target_package.__file__)).parent.parent
    script = textwrap.dedent(
        f"""
        import sys, types
        parent = types.ModuleType("scheduler_emulator")
        parent.__path__ = [{str(package)!r}]
        sys.modules["scheduler_emulator"] = parent
        before = set(sys.modules)
        import scheduler_emulator.service
        print("\\n".join(sorted(set(sys.modules) - before)))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = result.stdout.split()

    ours = [m for m in loaded if m.startswith("scheduler_emulator")]
    assert "scheduler_emulator.service" in ours
    assert [m for m in ours if not m.startswith("scheduler_emulator.service")] == [
        "scheduler_emulator.realtime",
        "scheduler_emulator.wire",
    ]
    web = {"werkzeug", "flask", "requests", "httpx", "anyio", "starlette", "fastapi", "pydantic"}
    assert not [m for m in loaded if m.split(".")[0] in web]


def test_importing_target_through_the_real_package_loads_no_engine() -> None:
    """The parent package imports its engine lazily, so a service pays only for ``target``."""
    script = (
        "import sys, scheduler_emulator.service\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith('scheduler_emulator')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(result.stdout.split())
    assert not loaded & {
        "scheduler_emulator.runtime._engine",
        "scheduler_emulator.runtime._emulator",
        "scheduler_emulator.domain.schedule",
        "scheduler_emulator.runtime.storage.store",
        "scheduler_emulator.runtime.delivery.transports",
    }
