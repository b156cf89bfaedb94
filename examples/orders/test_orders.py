"""Tests of the Orders service, written the way a user of the pytest plugin writes them.

Run them with ``pytest examples/orders`` once ``cloud-scheduler-emulator`` (which registers the
fixtures) and Flask are installed. The fixtures:

- ``cloud_run_testing(app)`` sends each timer call as the request Cloud Scheduler sends;
- ``function_testing(app)`` calls the handler directly, with no headers and no body;
- ``cloud_scheduler`` runs the jobs themselves on a virtual clock.

Every test but the token ones runs on the three variants of the service: the Flask app
(``app.py``), the FastAPI app with ``async def`` handlers and a pydantic ``Order``
(``app_fastapi.py``) and the plain Starlette app behind ``router.asgi`` (``app_starlette.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from types import ModuleType
from typing import Any

import app as flask_orders
import app_fastapi
import app_starlette
import pytest
from app import (
    AUDIENCE,
    INVOKER,
    OrderLog,
    ReportStore,
    ReportStoreBusy,
    RestockLog,
    create_app,
)
from fastapi import FastAPI
from flask import Flask
from starlette.applications import Starlette

from pytest_plugin.facades import CloudRunTimers, FunctionTimers, TimerNotAcknowledged
from pytest_plugin.scheduler import CloudScheduler
from scheduler_emulator.service import TimerRouter

STYLES = ["cloud_run_testing", "function_testing"]
Timers = CloudRunTimers | FunctionTimers
#: The service's variants: each module has ``create_app(log, reports=...)`` and ``Order``.
VARIANTS = {"flask": flask_orders, "fastapi": app_fastapi, "starlette": app_starlette}
#: How each framework serves a bare router (for the prefix test).
SERVE_ROUTER: dict[str, Callable[[TimerRouter], Any]] = {
    "flask": lambda router: (app := Flask("ticker"), router.init_app(app))[0],
    "fastapi": lambda router: (app := FastAPI(), router.init_app(app))[0],
    "starlette": lambda router: router.asgi(Starlette()),
}


@pytest.fixture(params=list(VARIANTS))
def orders(request: pytest.FixtureRequest) -> ModuleType:
    """The Orders service module of each variant in turn: ``orders.create_app()``."""
    return VARIANTS[request.param]


@pytest.fixture
def order(orders: ModuleType) -> Any:
    """The ``report`` job's order, as the variant's ``Order`` (dataclass or pydantic model)."""
    return orders.Order(id="A-1001", total=42.5)


@pytest.fixture(params=STYLES)
def timers_for(request: pytest.FixtureRequest) -> Callable[[Any], Timers]:
    """The façade factory of each style in turn: ``timers_for(app).nightly()``."""
    factory: Callable[[Any], Timers] = request.getfixturevalue(request.param)
    return factory


def sweep_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The ``Sweep scheduled for …`` lines the service logged."""
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Sweep scheduled")]


class TestNightly:
    def test_one_call_sweeps_once_in_either_style(
        self,
        orders: ModuleType,
        timers_for: Callable[[Any], Timers],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        log = OrderLog()
        caplog.set_level(logging.INFO, logger="orders")
        timers_for(orders.create_app(log)).nightly()
        assert log.sweeps == 1
        assert len(sweep_lines(caplog)) == 1

    def test_the_handler_logs_the_schedule_time_cloud_scheduler_sent(
        self,
        orders: ModuleType,
        cloud_run_testing: Callable[..., CloudRunTimers],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        caplog.set_level(logging.INFO, logger="orders")
        cloud_run_testing(orders.create_app()).nightly(schedule_time="2026-09-24T02:00:00Z")
        assert sweep_lines(caplog) == ["Sweep scheduled for 2026-09-24T02:00:00Z"]

    def test_a_function_style_call_has_no_schedule_time_and_still_sweeps(
        self,
        orders: ModuleType,
        function_testing: Callable[..., FunctionTimers],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        log = OrderLog()
        caplog.set_level(logging.INFO, logger="orders")
        function_testing(orders.create_app(log)).nightly()
        assert log.sweeps == 1
        assert sweep_lines(caplog) == ["Sweep scheduled for (no ScheduleTime: not a scheduled run)"]


class TestReport:
    def test_an_order_is_saved_in_either_style(
        self, orders: ModuleType, order: Any, timers_for: Callable[[Any], Timers]
    ) -> None:
        store = ReportStore(busy_on_first_try=False)
        timers_for(orders.create_app(reports=store)).report(order)
        assert store.saved == [order]
        assert type(store.saved[0]) is orders.Order  # bound to the variant's own type

    def test_a_run_without_a_body_is_refused_with_400(
        self,
        orders: ModuleType,
        cloud_run_testing: Callable[..., CloudRunTimers],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        store = ReportStore(busy_on_first_try=False)
        with pytest.raises(TimerNotAcknowledged) as refused:
            cloud_run_testing(orders.create_app(reports=store)).fire("report")
        assert refused.value.status == 400
        assert any(
            r.getMessage().startswith(
                "TIMER /report refused with 400: The input does not contain any JSON tokens."
            )
            for r in caplog.records
        )
        assert store.saved == []

    def test_the_busy_store_fails_the_first_try_and_the_retry_of_the_run_saves(
        self, orders: ModuleType, order: Any, cloud_run_testing: Callable[..., CloudRunTimers]
    ) -> None:
        store = ReportStore()  # busy on the first try of each run, as in production here
        timers = cloud_run_testing(orders.create_app(reports=store))
        with pytest.raises(ReportStoreBusy):  # in-process, the handler's own exception
            timers.report(order, schedule_time="2026-09-24T04:00:00Z")
        timers.report(order, schedule_time="2026-09-24T04:00:00Z")  # the retry: same run
        assert store.saved == [order]


@pytest.mark.parametrize("framework", list(SERVE_ROUTER))
def test_timers_under_another_prefix_are_not_where_cloud_run_testing_posts(
    framework: str,
    cloud_run_testing: Callable[..., CloudRunTimers],
    function_testing: Callable[..., FunctionTimers],
) -> None:
    router = TimerRouter(prefix="/jobs/")
    ticks: list[int] = []

    @router.timer("tick")
    async def tick() -> None:
        ticks.append(1)

    app = SERVE_ROUTER[framework](router)
    with pytest.raises(TimerNotAcknowledged) as refused:
        cloud_run_testing(app).tick()
    assert str(refused.value).startswith(
        "Cloud Scheduler would not read the answer to TIMER /tick as an acknowledgement: "
        "the service answered 404. It said:"
    )
    function_testing(app).tick()  # function style calls the handler, whatever the prefix
    assert ticks == [1]


class TestOnTheSchedule:
    """The seed's nightly job, run by the in-process emulator on a virtual clock."""

    BASE_URL = "http://orders.test"
    SEED_NIGHTLY_JOB = {
        "name": "nightly",
        "schedule": "0 2 * * *",
        "timeZone": "Etc/UTC",
        "httpTarget": {"uri": f"{BASE_URL}/_triggers/timer/nightly", "httpMethod": "POST"},
        "retryConfig": {"retryCount": 3},
    }

    @pytest.mark.cloud_scheduler(start=datetime(2026, 9, 24, tzinfo=UTC))
    def test_a_week_runs_the_sweep_once_a_day_at_two(
        self,
        orders: ModuleType,
        cloud_scheduler: CloudScheduler,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        log = OrderLog()
        caplog.set_level(logging.INFO, logger="orders")
        cloud_scheduler.mount(self.BASE_URL, orders.create_app(log))
        cloud_scheduler.create_job(self.SEED_NIGHTLY_JOB)
        cloud_scheduler.advance(timedelta(days=7))
        attempts = cloud_scheduler.assert_attempted("nightly", count=7, code="OK")
        days = [f"2026-09-{day}T02:00:00Z" for day in range(24, 31)]
        assert [a.schedule_time for a in attempts] == days
        assert sweep_lines(caplog) == [f"Sweep scheduled for {day}" for day in days]
        assert log.sweeps == 7

    @pytest.mark.cloud_scheduler(start="2026-09-24T00:00:00Z")
    def test_a_failing_first_day_is_retried_with_backoff_and_the_week_goes_on(
        self, orders: ModuleType, cloud_scheduler: CloudScheduler
    ) -> None:
        class DatabaseDownOnTheFirstDay(OrderLog):
            def sweep(self) -> int:
                # A mounted app sees the virtual instant of the delivery.
                if datetime.now(UTC).date() == date(2026, 9, 24):
                    raise ConnectionError("orders database unreachable")
                return super().sweep()

        log = DatabaseDownOnTheFirstDay()
        cloud_scheduler.mount(self.BASE_URL, orders.create_app(log))
        cloud_scheduler.create_job(self.SEED_NIGHTLY_JOB)
        cloud_scheduler.advance(timedelta(days=7))
        failed = cloud_scheduler.assert_attempted("nightly", count=4, code="INTERNAL")
        # retryCount 3 with the default backoff: 5 s, then doubling (10 s, 20 s)
        assert [a.start_time.strftime("%d %H:%M:%S") for a in failed] == [
            "24 02:00:00",
            "24 02:00:05",
            "24 02:00:15",
            "24 02:00:35",
        ]
        assert {a.schedule_time for a in failed} == {"2026-09-24T02:00:00Z"}
        assert [a.response_status for a in failed] == [500] * 4
        ok = cloud_scheduler.assert_attempted("nightly", count=6, code="OK")
        assert [a.schedule_time for a in ok] == [f"2026-09-{d}T02:00:00Z" for d in range(25, 31)]
        assert log.sweeps == 6


class TestCloudRunConfiguration:
    """With ``certs_url`` the timers need a valid Cloud Scheduler token, as on Cloud Run."""

    BASE_URL = "http://orders.test"

    def nightly(self, **oidc: str) -> dict[str, object]:
        return {
            "name": "nightly",
            "schedule": "0 2 * * *",
            "httpTarget": {
                "uri": f"{self.BASE_URL}/_triggers/timer/nightly",
                "oidcToken": {"serviceAccountEmail": INVOKER, **oidc},
            },
        }

    @pytest.mark.cloud_scheduler(start=datetime(2026, 9, 24, tzinfo=UTC))
    def test_the_seed_job_token_for_the_service_url_is_accepted(
        self, cloud_scheduler: CloudScheduler
    ) -> None:
        log = OrderLog()
        cloud_scheduler.mount(self.BASE_URL, create_app(log, certs_url=cloud_scheduler.certs_url))
        cloud_scheduler.create_job(self.nightly(audience=AUDIENCE))
        cloud_scheduler.advance(timedelta(days=1))
        cloud_scheduler.assert_attempted("nightly", count=1, code="OK")
        assert log.sweeps == 1

    @pytest.mark.cloud_scheduler(start=datetime(2026, 9, 24, tzinfo=UTC))
    def test_a_token_for_another_audience_is_refused_with_401(
        self, cloud_scheduler: CloudScheduler
    ) -> None:
        log = OrderLog()
        cloud_scheduler.mount(self.BASE_URL, create_app(log, certs_url=cloud_scheduler.certs_url))
        cloud_scheduler.create_job(self.nightly())  # aud: the job's URI, not the service URL
        cloud_scheduler.advance(timedelta(days=1))
        [attempt] = cloud_scheduler.assert_attempted("nightly", count=1, code="UNAUTHENTICATED")
        assert attempt.response_status == 401
        assert log.sweeps == 0

    def test_a_request_without_token_is_refused(
        self, cloud_run_testing: Callable[..., CloudRunTimers], cloud_scheduler: CloudScheduler
    ) -> None:
        app = create_app(certs_url=cloud_scheduler.certs_url)
        with pytest.raises(TimerNotAcknowledged, match="answered 401"):
            cloud_run_testing(app).nightly()


class TestTheRestockSubscriber:
    """The ``restock`` Pub/Sub job and the service's push subscriber, on a virtual clock.

    The in-process publisher records each message (``cloud_scheduler.published``) and, once
    ``cloud_scheduler.push`` subscribed the endpoint, POSTs it there as a Pub/Sub push request.
    """

    BASE_URL = "http://orders.test"
    RESTOCK_JOB = {
        "name": "restock",
        "schedule": "0 6 * * *",
        "pubsubTarget": {
            "topicName": "projects/my-project/topics/restock",
            "data": "eyJza3UiOiAiU0tVLTciLCAicXVhbnRpdHkiOiAxMn0=",  # {"sku": "SKU-7", ...}
            "attributes": {"kind": "restock"},
        },
    }

    @pytest.mark.cloud_scheduler(start=datetime(2026, 9, 24, tzinfo=UTC))
    def test_a_week_pushes_seven_restock_requests(self, cloud_scheduler: CloudScheduler) -> None:
        restocks = RestockLog()
        cloud_scheduler.mount(self.BASE_URL, create_app(restocks=restocks))
        cloud_scheduler.push("restock", to=f"{self.BASE_URL}/_pubsub/restock")
        cloud_scheduler.create_job(self.RESTOCK_JOB)
        cloud_scheduler.advance(timedelta(days=7))
        cloud_scheduler.assert_attempted("restock", count=7, code="OK")
        days = [f"2026-09-{day}T06:00:00Z" for day in range(24, 31)]
        assert restocks.received == [
            {"sku": "SKU-7", "quantity": 12, "messageId": str(n), "publishTime": day}
            for n, day in enumerate(days, start=1)
        ]
        published = cloud_scheduler.published("restock")
        assert [m.attributes for m in published] == [{"kind": "restock"}] * 7
        assert all(push.acknowledged for m in published for push in m.pushes)

    def test_a_message_that_is_not_a_restock_is_refused(self) -> None:
        client = create_app().test_client()
        response = client.post("/_pubsub/restock", json={"message": {"data": "bm90IGpzb24="}})
        assert response.status_code == 400
