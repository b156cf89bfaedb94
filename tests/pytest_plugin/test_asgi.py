"""ASGI services and async handlers under the plugin's fixtures, through ``pytester``.

``cloud_scheduler.mount`` and ``cloud_run_testing`` take ASGI apps; async handlers finish under
the virtual clock (asyncio keeps real time) while they see the virtual instant.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SERVICE = """
import asyncio
import datetime
import time

import pydantic
from fastapi import FastAPI

from scheduler_emulator.service import TimerRequest, TimerRouter


class Order(pydantic.BaseModel):
    id: str
    total: float = 0.0


class Log:
    def __init__(self):
        self.seen = []
        self.orders = []


def create_app():
    log = Log()
    router = TimerRouter()

    @router.timer("nightly")
    async def nightly(request: TimerRequest) -> None:
        await asyncio.sleep(0.05)  # the event loop's clock is real: this returns
        log.seen.append((
            request.schedule_time_header,
            datetime.datetime.now(datetime.timezone.utc),
            time.time(),
        ))

    @router.timer("report")
    async def report(order: Order) -> None:
        log.orders.append(order)

    @router.timer("explode")
    async def explode() -> None:
        raise LookupError("no such order")

    app = FastAPI()
    router.init_app(app)
    app.state.log = log
    return app
"""

#: The steps the child tests share, as the child module ``day``.
DAY = '''
import time
from datetime import timedelta


def run_a_day(cloud_scheduler, base, schedule, count):
    """Create job ``nightly`` on ``schedule`` posting to the nightly timer under ``base``,
    advance the virtual clock one day and assert ``count`` attempts answered OK. The day takes
    far below the 180 s attempt deadline of even one attempt in real time: nothing hung."""
    cloud_scheduler.create_job(
        name="nightly", schedule=schedule,
        http_target={"uri": base + "/_triggers/timer/nightly"},
    )
    started = time.perf_counter()
    cloud_scheduler.advance(timedelta(days=1))
    assert time.perf_counter() - started < 60
    cloud_scheduler.assert_attempted("nightly", count=count, code="OK")
'''


def run(pytester: pytest.Pytester, test_source: str, passed: int = 1) -> pytest.RunResult:
    pytester.makepyfile(service=SERVICE, day=DAY)
    pytester.makepyfile(test_source)
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=passed)
    return result


def test_a_mounted_fastapi_app_with_an_async_handler_runs_a_day_on_the_virtual_clock(
    pytester: pytest.Pytester,
) -> None:
    run(
        pytester,
        """
        from datetime import UTC, datetime

        import pytest
        from day import run_a_day
        from service import create_app


        @pytest.mark.cloud_scheduler(start="2026-09-24T00:00:00Z")
        def test_day(cloud_scheduler):
            app = create_app()
            cloud_scheduler.mount("https://orders-abc123-uc.a.run.app", app)
            run_a_day(cloud_scheduler, "https://orders-abc123-uc.a.run.app", "0 * * * *", 24)
            first = app.state.log.seen[0]
            assert first[0] == "2026-09-24T01:00:00Z"
            assert first[1] == datetime(2026, 9, 24, 1, tzinfo=UTC)
            assert first[2] == datetime(2026, 9, 24, 1, tzinfo=UTC).timestamp()
        """,
    )


def test_a_wsgi_handler_that_runs_asyncio_run_finishes_under_the_virtual_clock(
    pytester: pytest.Pytester,
) -> None:
    run(
        pytester,
        """
        import asyncio
        from datetime import UTC, datetime

        from day import run_a_day
        from flask import Flask
        from scheduler_emulator.service import TimerRouter


        def test_day(cloud_scheduler):
            router, seen = TimerRouter(), []

            @router.timer("nightly")
            def nightly() -> None:
                async def work():
                    await asyncio.sleep(0.02)
                    return datetime.now(UTC)
                seen.append(asyncio.run(work()))

            app = Flask("svc")
            router.init_app(app)
            cloud_scheduler.mount("http://orders.test", app)
            run_a_day(cloud_scheduler, "http://orders.test", "0 */6 * * *", 4)
            assert seen[0] == datetime(2026, 1, 1, 6, tzinfo=UTC)
        """,
    )


def test_an_async_handler_behind_uvicorn_on_a_real_port_finishes(
    pytester: pytest.Pytester,
) -> None:
    run(
        pytester,
        """
        import threading
        import time
        from datetime import UTC, datetime

        import uvicorn
        from day import run_a_day
        from service import create_app


        def serve(app):
            server = uvicorn.Server(
                uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
            )
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            deadline = time.monotonic() + 30
            while not server.started:  # poll with a bound
                assert time.monotonic() < deadline, "uvicorn did not start"
                thread.join(0.01)
            return server, thread


        def test_day(cloud_scheduler):
            app = create_app()
            server, thread = serve(app)
            port = server.servers[0].sockets[0].getsockname()[1]
            try:
                run_a_day(cloud_scheduler, f"http://127.0.0.1:{port}", "0 * * * *", 24)
            finally:
                server.should_exit = True
                thread.join(30)
            # a server in the test's process sees the virtual instant too
            assert app.state.log.seen[0][1] == datetime(2026, 1, 1, 1, tzinfo=UTC)
        """,
    )


def test_cloud_run_testing_and_function_testing_call_an_asgi_app(
    pytester: pytest.Pytester,
) -> None:
    run(
        pytester,
        """
        import pytest
        from pytest_plugin import TimerNotAcknowledged
        from service import Order, create_app


        def test_cloud_run_style(cloud_run_testing):
            app = create_app()
            timers = cloud_run_testing(app)
            assert timers.nightly(schedule_time="2026-09-24T02:00:00Z") == 200
            assert app.state.log.seen[0][0] == "2026-09-24T02:00:00Z"
            timers.report(Order(id="A-1", total=2.5))
            assert app.state.log.orders == [Order(id="A-1", total=2.5)]
            with pytest.raises(LookupError, match="no such order"):  # the handler's own
                timers.explode()
            with pytest.raises(TimerNotAcknowledged, match="answered 400. It said: {"):
                timers.fire("report")


        def test_function_style(function_testing):
            app = create_app()
            timers = function_testing(app)
            timers.nightly()
            assert app.state.log.seen[0][0] is None
            timers.report(Order(id="B"))
            assert app.state.log.orders == [Order(id="B")]
            with pytest.raises(LookupError):
                timers.explode()
        """,
        passed=2,
    )
