"""The ``pytest11`` plugin of cloud-scheduler-emulator: fixtures and markers.

Fixtures (each documented below and in ``docs/testing.md``):

- ``cloud_scheduler`` — an in-process emulator on a virtual clock, fresh for each test.
- ``cloud_scheduler_server`` — a live daemon on a free port (one per pytest process, so one per
  xdist worker), reset before each test.
- ``cloud_run_testing`` / ``function_testing`` — timer façades that send exactly the request
  Cloud Scheduler would send, or call the handler directly.

Markers: ``@pytest.mark.cloud_scheduler(start=datetime)`` sets the virtual clock's start;
``@pytest.mark.cloud_run_testing(schedule_time="…")`` sets the façades' default
``X-CloudScheduler-ScheduleTime``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from .live import LiveScheduler
from .scheduler import CloudScheduler

if TYPE_CHECKING:
    from .facades import CloudRunTimers, FunctionTimers

#: Where the ``cloud_scheduler`` fixture's clock starts unless a marker says otherwise.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)


def pytest_configure(config: pytest.Config) -> None:
    """Register the plugin's markers."""
    config.addinivalue_line(
        "markers",
        "cloud_scheduler(start=datetime, publisher=None, app_engine_urls=None): start instant "
        "of the cloud_scheduler fixture's clock, its Pub/Sub publisher, App Engine URLs",
    )
    config.addinivalue_line(
        "markers",
        "cloud_run_testing(schedule_time=str): default X-CloudScheduler-ScheduleTime of the "
        "timer façades",
    )


@pytest.fixture
def cloud_scheduler(request: pytest.FixtureRequest) -> Iterator[CloudScheduler]:
    """An in-process Cloud Scheduler on a virtual clock, fresh for each test.

    The clock starts at 2026-01-01T00:00:00Z, or at ``start`` of a
    ``@pytest.mark.cloud_scheduler(start=<aware datetime>)`` marker. ``mount(base_url, app)``
    routes that URL's requests to a WSGI app in-process (other URLs go over real HTTP);
    ``create_job(...)`` takes the REST JSON shape or keywords; ``advance(...)`` /
    ``move_to(...)`` deliver everything that falls due, retries included; ``attempts(job)``
    and ``assert_attempted(job, count=..., code=...)`` inspect what happened. Mounted apps see
    ``datetime.now()`` at the virtual instant while they handle a delivery.

    Jobs with ``oidcToken`` send tokens signed by a key of this emulator:
    ``verify_oidc(token, audience)`` checks one on the virtual clock (raising ``TokenError``),
    ``certs_url`` serves the keys over HTTP for a mounted service that verifies tokens itself,
    ``tokeninfo(access_token)`` describes an ``oauthToken`` job's token.

    Pub/Sub jobs publish in-process: ``published(topic)`` lists the messages and
    ``push(topic, to=url)`` pushes each to a mounted app as a Pub/Sub push request. The marker
    also takes ``publisher=`` (another publisher) and ``app_engine_urls=`` (where App Engine
    targets go: ``"http://app.test"`` or ``{"worker": "http://worker.test"}``).
    """
    marker = request.node.get_closest_marker("cloud_scheduler")
    options = dict(marker.kwargs) if marker else {}
    scheduler = CloudScheduler(
        options.get("start", DEFAULT_START),
        publisher=options.get("publisher"),
        app_engine_urls=options.get("app_engine_urls"),
    )
    yield scheduler
    scheduler.close()


@pytest.fixture(scope="session")
def _cloud_scheduler_daemon() -> Iterator[LiveScheduler]:
    """The session's live daemon (one per pytest process, hence one per xdist worker)."""
    daemon = LiveScheduler("--in-memory", "--clock", "manual", "--start", DEFAULT_START.isoformat())
    yield daemon
    daemon.close()


@pytest.fixture
def cloud_scheduler_server(_cloud_scheduler_daemon: LiveScheduler) -> LiveScheduler:
    """A live emulator daemon on a free port, with no jobs and its clock at 2026-01-01.

    One daemon serves the whole session (one per xdist worker); it is reset before each test.
    ``.url`` is its base URL, ``.env`` the ``env-init`` variables (for gcloud subprocesses),
    ``.client()`` a REST ``CloudSchedulerClient`` (needs ``google-cloud-scheduler``);
    ``.advance(...)``, ``.move_to(...)`` and ``.attempts(...)`` drive its manual clock;
    ``.certs_url``, ``.verify_oidc(token, audience)`` (on the daemon's clock) and
    ``.tokeninfo(access_token)`` check the tokens it sends.
    """
    _cloud_scheduler_daemon.reset(clock_time=DEFAULT_START)
    return _cloud_scheduler_daemon


def _schedule_time(request: pytest.FixtureRequest) -> str:
    from .facades import DEFAULT_SCHEDULE_TIME

    marker = request.node.get_closest_marker("cloud_run_testing")
    if marker is None:
        return DEFAULT_SCHEDULE_TIME
    return str(marker.kwargs.get("schedule_time", DEFAULT_SCHEDULE_TIME))


@pytest.fixture
def cloud_run_testing(request: pytest.FixtureRequest) -> Callable[..., CloudRunTimers]:
    """Timer façades in Cloud Run style: each call is the request Cloud Scheduler sends.

    ``timers = cloud_run_testing(app)`` for a WSGI app in-process, or
    ``cloud_run_testing(base_url="http://127.0.0.1:8000")`` for a live server. ``timers.nightly()``
    posts to ``/_triggers/timer/nightly`` with ``X-CloudScheduler: true``,
    ``X-CloudScheduler-JobName: nightly``, ``X-CloudScheduler-ScheduleTime`` (default
    ``2026-01-01T00:00:00.000Z``) and ``User-Agent: Google-Cloud-Scheduler``;
    ``timers.report(order)`` sends the message as the JSON body; ``timers.fire(name, payload)``
    works for any name. A non-2xx answer raises ``TimerNotAcknowledged``; in-process, the
    handler's own exception propagates.
    """
    from .facades import CloudRunTimers

    default = _schedule_time(request)

    def make(app: Any = None, *, base_url: str | None = None, router: Any = None) -> CloudRunTimers:
        return CloudRunTimers(app, base_url=base_url, router=router, schedule_time=default)

    return make


@pytest.fixture
def function_testing() -> Callable[..., FunctionTimers]:
    """Timer façades in function style: each call invokes the handler directly.

    ``timers = function_testing(app_or_router)``; ``timers.nightly()`` calls the handler with no
    headers and an empty body, ``timers.report(order)`` passes the message object itself. The
    handler's exceptions propagate.
    """

    from .facades import FunctionTimers

    def make(app: Any) -> FunctionTimers:
        return FunctionTimers(app)

    return make
