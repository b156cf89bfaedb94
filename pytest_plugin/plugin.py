"""The ``pytest11`` plugin of cloud-scheduler-emulator: the fixtures ``cloud_scheduler``,
``cloud_scheduler_server``, ``cloud_run_testing`` and ``function_testing`` (each documented
below and in ``docs/testing.md``) and the markers their options come from
(:func:`pytest_configure`).
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from scheduler_emulator.domain.schedule import DEFAULT_DST_POLICY, DST_POLICIES
from scheduler_emulator.service import forget_in_memory_runs
from scheduler_emulator.wire import HEADER_CASES, NaiveDatetimeError, parse_timestamp

from .live import LiveScheduler
from .scheduler import CloudScheduler

if TYPE_CHECKING:
    from .facades import CloudRunTimers, FunctionTimers

#: Where the ``cloud_scheduler`` fixture's clock starts unless a marker says otherwise.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
#: The ini option that sets the ``cloud_scheduler`` fixture's header spelling for a whole suite.
HEADER_CASE_INI = "cloud_scheduler_header_case"
#: The ini option that fixes the ``cloud_scheduler_server`` daemon's port.
SERVER_PORT_INI = "cloud_scheduler_server_port"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the plugin's ini options (``cloud_scheduler_header_case``,
    ``cloud_scheduler_server_port``)."""
    parser.addini(
        HEADER_CASE_INI,
        "how the cloud_scheduler fixture's HTTP attempts spell header names: google "
        "(X-CloudScheduler-JobName), lower or canonical; a marker's header_case= wins",
        default="google",
    )
    parser.addini(
        SERVER_PORT_INI,
        "the cloud_scheduler_server daemon's port (default: a free one); under pytest-xdist "
        "worker gwN takes this port + N",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the plugin's markers."""
    for marker in (
        "cloud_scheduler(start=datetime|str, allow_network=False, publisher=None, topics=None, "
        "app_engine_urls=None, header_case=None, dst_policy='absolute'): start instant of the "
        "cloud_scheduler fixture's clock (an aware datetime or an RFC 3339 string); "
        "allow_network=True lets jobs reach unmounted, non-loopback origins; its Pub/Sub "
        "publisher, or the in-process one's only topics; App Engine URLs; header spelling "
        "(google, lower, canonical); how cron schedules meet daylight-saving changes (absolute, "
        "vixie)",
        "cloud_run_testing(schedule_time=str): default X-CloudScheduler-ScheduleTime of the "
        "timer façades",
    ):
        config.addinivalue_line("markers", marker)


_MARKER_OPTIONS = ("start", "allow_network", "publisher", "topics", "app_engine_urls",
                   "header_case", "dst_policy")  # fmt: skip


def scheduler_options(kwargs: Mapping[str, Any], header_case: str) -> dict[str, Any]:
    """Read a ``@pytest.mark.cloud_scheduler(...)`` marker's options.

    :param kwargs: the marker's keyword arguments.
    :param header_case: the :data:`HEADER_CASE_INI` option, unless the marker sets one.
    :raises ValueError: (naming the marker and the value) for a naive datetime, a string that
        is not RFC 3339 with an offset, a non-boolean ``allow_network`` or an unknown header
        case (:func:`_keywords` refuses an unknown option).
    :raises TypeError: for a ``start`` that is neither a datetime nor a string.
    :return: the keywords of :class:`CloudScheduler`, ``start`` aware.
    """
    start: Any = kwargs.get("start", DEFAULT_START)
    where = f"@pytest.mark.cloud_scheduler(start={start!r})"
    if isinstance(start, str):
        try:
            start = parse_timestamp(start)
        except ValueError as exc:  # (its example of the form, once)
            raise ValueError(f"{where}: not an RFC 3339 timestamp with an offset: {exc}") from None
    elif not isinstance(start, datetime):
        raise TypeError(
            f"{where}: start is a {type(start).__name__}; pass an aware datetime or an RFC 3339 "
            "string such as '2026-09-20T00:00:00Z'."
        )
    elif start.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{where}: the datetime is naive; pass an aware one, such as "
            "datetime(2026, 9, 20, tzinfo=UTC), or an RFC 3339 string such as "
            "'2026-09-20T00:00:00Z'."
        )
    allow_network = kwargs.get("allow_network", False)
    if not isinstance(allow_network, bool):
        raise ValueError(
            f"@pytest.mark.cloud_scheduler(allow_network={allow_network!r}): pass True or False."
        )
    if kwargs.get("dst_policy", DEFAULT_DST_POLICY) not in DST_POLICIES:
        raise ValueError(
            f"@pytest.mark.cloud_scheduler(dst_policy={kwargs['dst_policy']!r}): pass "
            f"{' or '.join(map(repr, DST_POLICIES))}."
        )
    header_case = kwargs.get("header_case") or header_case
    if header_case not in HEADER_CASES:
        raise ValueError(
            f"header_case={header_case!r} (the cloud_scheduler marker or the "
            f"{HEADER_CASE_INI} ini option): pass one of {', '.join(HEADER_CASES)}."
        )
    return {**kwargs, "start": start, "header_case": header_case}


@pytest.fixture
def cloud_scheduler(request: pytest.FixtureRequest) -> Iterator[CloudScheduler]:
    """An in-process Cloud Scheduler on a virtual clock, fresh for each test.

    The clock starts at 2026-01-01T00:00:00Z, or at ``start`` of a
    ``@pytest.mark.cloud_scheduler(start=<aware datetime or "RFC 3339">)`` marker.
    ``mount(base_url, app)`` routes that URL's requests to a WSGI or ASGI app in-process; other
    URLs go over real HTTP to loopback origins only (any other origin records a failed attempt
    naming it, with no network call) unless ``allow_network=True`` is set on the marker or the
    fixture (``cloud_scheduler.allow_network = True``);
    ``create_job(...)`` takes the REST JSON shape or keywords; ``advance(...)`` /
    ``move_to(...)`` deliver everything that falls due, retries included; ``attempts(job)``
    and ``assert_attempted(job, count=..., code=...)`` inspect what happened. Targets see
    ``datetime.now()`` and ``time.time()`` at the virtual instant while they handle a delivery;
    asyncio event loops keep real time, so async handlers and asyncio servers run normally.
    Like every fixture here, it first empties the in-memory run-once guard stores
    (:func:`~scheduler_emulator.service.forget_in_memory_runs`): a guard kept at module level
    starts each test afresh.

    Jobs with ``oidcToken`` send tokens signed by a key of this emulator:
    ``verify_oidc(token, audience)`` checks one on the virtual clock (raising ``TokenError``),
    ``certs_url`` serves the keys over HTTP for a mounted service that verifies tokens itself,
    ``tokeninfo(access_token)`` describes an ``oauthToken`` job's token.

    Pub/Sub jobs publish in-process: ``published(topic)`` lists the messages and
    ``push(topic, to=url)`` pushes each to a mounted app as a Pub/Sub push request. The marker
    also takes ``publisher=`` (another publisher) and ``app_engine_urls=`` (where App Engine
    targets go: ``"http://app.test"`` or ``{"worker": "http://worker.test"}``).
    """
    forget_in_memory_runs()
    try:
        marked = _keywords(request.node, "cloud_scheduler", _MARKER_OPTIONS)
        scheduler = CloudScheduler(
            **scheduler_options(marked, request.config.getini(HEADER_CASE_INI))
        )
    except (TypeError, ValueError) as exc:  # pytest.fail, unchained: the message shows once
        raise pytest.fail.Exception(str(exc), pytrace=False) from None
    yield scheduler
    scheduler.close()


def _keywords(node: pytest.Item, name: str, takes: Sequence[str]) -> Mapping[str, Any]:
    """The options of the test's ``name`` markers, which ``takes`` names: those of a module's
    ``pytestmark``, a class's and the test's own together, the closest winning an option set
    twice (trial 145: a module's was dropped when the test had its own). A positional argument
    (trial 97: a start given so was ignored) or an unknown option fails the test's setup,
    naming it (no traceback)."""
    options: dict[str, Any] = {}
    for marker in reversed(list(node.iter_markers(name))):  # the farthest first
        if marker.args:
            raise pytest.fail.Exception(
                f"@pytest.mark.{name} takes its options by keyword, not {marker.args[0]!r}: "
                f"write @pytest.mark.{name}({takes[0]}={marker.args[0]!r}).",
                pytrace=False,
            )
        if unknown := sorted(set(marker.kwargs) - set(takes)):
            near = difflib.get_close_matches(unknown[0], takes, 1)  # (trial 212: strat=)
            raise pytest.fail.Exception(
                f"@pytest.mark.{name} got unknown option(s) {', '.join(unknown)}; it takes "
                f"{', '.join(takes)}." + (f" Did you mean {near[0]}?" if near else ""),
                pytrace=False,
            )
        options.update(marker.kwargs)
    return options


@pytest.fixture(scope="session")
def _cloud_scheduler_daemon(pytestconfig: pytest.Config) -> Iterator[LiveScheduler]:
    """The session's live daemon (one per pytest process, hence one per xdist worker), on
    the ``cloud_scheduler_server_port`` ini option's port (+ N on xdist worker gwN)."""
    port = str(pytestconfig.getini(SERVER_PORT_INI)).strip()
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise pytest.fail.Exception(f"{SERVER_PORT_INI} = {port!r}: pass a port, 1-65535", False)
    worker = int(getattr(pytestconfig, "workerinput", {}).get("workerid", "gw0").removeprefix("gw"))
    fixed = ("--port", str(int(port) + worker)) if port else ()
    try:
        daemon = LiveScheduler(
            "--in-memory", "--clock", "manual", "--start", DEFAULT_START.isoformat(), *fixed
        )
    except RuntimeError as exc:  # (a port in use: its message names --port, not the option)
        if not port:
            raise
        raise pytest.fail.Exception(f"{SERVER_PORT_INI} = {port}: {exc}", False) from None
    yield daemon
    daemon.close()


@pytest.fixture
def cloud_scheduler_server(
    request: pytest.FixtureRequest, _cloud_scheduler_daemon: LiveScheduler
) -> LiveScheduler:
    """A live emulator daemon on a free port (the ``cloud_scheduler_server_port`` ini option
    fixes it), with no jobs and its clock at 2026-01-01, or at the ``start`` of a
    ``@pytest.mark.cloud_scheduler`` marker (the marker's other options are the in-process
    fixture's).

    One daemon serves the whole session (one per xdist worker); it is reset before each test
    (jobs, history and fault rules). ``.create_job(...)`` and ``.run_job(name)`` go through its
    REST API; ``.url`` is its base URL, ``.env`` the ``env-init`` variables (for gcloud
    subprocesses), ``.client()`` a REST ``CloudSchedulerClient`` (needs ``google-cloud-scheduler``);
    ``.advance(...)``, ``.move_to(...)`` and ``.attempts(...)`` drive its manual clock;
    ``.certs_url``, ``.verify_oidc(token, audience)`` (on the daemon's clock) and
    ``.tokeninfo(access_token)`` check the tokens it sends.
    """
    marked = _keywords(request.node, "cloud_scheduler", _MARKER_OPTIONS)
    try:
        start = scheduler_options(marked, request.config.getini(HEADER_CASE_INI))["start"]
    except (TypeError, ValueError) as exc:
        raise pytest.fail.Exception(str(exc), pytrace=False) from None
    unused = sorted(set(marked) - {"start"})
    # (trial 157: app_engine_urls= was ignored unsaid; pytest's summary shows the warn line)
    if unused and "cloud_scheduler" not in request.fixturenames:
        warnings.warn(
            f"@pytest.mark.cloud_scheduler({', '.join(f'{o}=…' for o in unused)}) applies to the "
            "in-process cloud_scheduler fixture, not to cloud_scheduler_server's daemon, which "
            "takes only its start: give the daemon its flags (--app-engine-url, --dst-policy…) "
            'with a LiveScheduler("--dst-policy", "vixie", …) of your own (docs/testing.md).',
            stacklevel=1,
        )
    _cloud_scheduler_daemon.reset(clock_time=start)  # (forgets in-memory guard runs)
    return _cloud_scheduler_daemon


@pytest.fixture
def cloud_run_testing(request: pytest.FixtureRequest) -> Iterator[Callable[..., CloudRunTimers]]:
    """Timer façades in Cloud Run style: each call is the request Cloud Scheduler sends.

    ``timers = cloud_run_testing(app)`` for a WSGI or ASGI app in-process, or
    ``cloud_run_testing(base_url="http://127.0.0.1:8000")`` for a live server. ``timers.nightly()``
    posts to ``/_triggers/timer/nightly`` with ``X-CloudScheduler: true``,
    ``X-CloudScheduler-JobName: nightly``, ``X-CloudScheduler-ScheduleTime`` (default
    ``2026-01-01T00:00:00.000Z``) and ``User-Agent: Google-Cloud-Scheduler``;
    ``timers.report(order)`` sends the message as the JSON body; ``timers.fire(name, payload)``
    works for any name. A non-2xx answer raises ``TimerNotAcknowledged``; in-process, the
    handler's own exception propagates.
    """
    from .facades import DEFAULT_SCHEDULE_TIME, CloudRunTimers

    forget_in_memory_runs()
    options = _keywords(request.node, "cloud_run_testing", ["schedule_time"])
    default = options.get("schedule_time", DEFAULT_SCHEDULE_TIME)
    made: list[CloudRunTimers] = []

    def make(app: Any = None, *, base_url: str | None = None, router: Any = None) -> CloudRunTimers:
        made.append(CloudRunTimers(app, base_url=base_url, router=router, schedule_time=default))
        return made[-1]

    yield make
    for timers in made:
        timers.close()


@pytest.fixture
def function_testing() -> Callable[..., FunctionTimers]:
    """Timer façades in function style: each call invokes the handler directly.

    ``timers = function_testing(app_or_router)``; ``timers.nightly()`` calls the handler with no
    headers and an empty body, ``timers.report(order)`` passes the message object itself; an
    ``async def`` handler is run to completion. The handler's exceptions propagate.
    """
    from .facades import FunctionTimers

    forget_in_memory_runs()
    return FunctionTimers
