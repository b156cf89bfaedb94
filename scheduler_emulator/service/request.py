"""What a timer handler sees of the HTTP request that ran it.

A handler parameter annotated :class:`TimerRequest` receives the run's method, path (without the
query string), headers (looked up without regard to case) and raw body, plus the two headers
Cloud Scheduler sets that identify a run, already decoded::

    >>> request = TimerRequest(headers={
    ...     "X-CloudScheduler-JobName": "projects/p/locations/l/jobs/nightly",
    ...     "X-CloudScheduler-ScheduleTime": "2026-09-24T02:00:00Z",
    ... })
    >>> request.job_name, request.headers["x-cloudscheduler-jobname"].rsplit("/", 1)[1]
    ('nightly', 'nightly')
    >>> request.schedule_time
    datetime.datetime(2026, 9, 24, 2, 0, tzinfo=datetime.timezone.utc)

In function style (:meth:`TimerRouter.invoke <scheduler_emulator.service.TimerRouter.invoke>`
without a request) the handler gets ``TimerRequest()``: no headers, an empty body, so
``schedule_time`` is ``None``.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from http import HTTPStatus
from types import UnionType
from typing import Any, Protocol, Union, get_args, get_origin

from ..wire import JOB_NAME_HEADER, SCHEDULE_TIME_HEADER, parse_schedule_time

__all__ = [
    "CaseInsensitiveHeaders",
    "EXCEPTION_ENVIRON_KEY",
    "PROPAGATE_EXCEPTIONS_KEY",
    "Router",
    "TimerRequest",
    "TimerResponse",
    "WsgiApp",
    "is_timer_request",
    "returned_answer",
    "returned_status",
]

#: A WSGI application: ``app(environ, start_response) -> iterable of bytes``.
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
#: The environ key (and Flask ``request.environ`` key) holding the exception a handler raised,
#: so an in-process caller (the pytest plugin's Cloud Run style façade) can re-raise it.
EXCEPTION_ENVIRON_KEY = "scheduler_emulator.service.exception"
#: An environ key (also read from a Flask ``request.environ``): when its value is true, an
#: exception a handler raised propagates out of the WSGI call instead of answering 500 (after it
#: is logged), so an in-process test fails with the handler's own exception.
PROPAGATE_EXCEPTIONS_KEY = "scheduler_emulator.service.propagate_exceptions"


class CaseInsensitiveHeaders(Mapping[str, str]):
    """A read-only header mapping whose look-ups ignore the case of the header name.

    Iteration yields the names as they were given (the first spelling of each name); a name given
    twice in different cases keeps the last value. HTTP/2 front ends lower-case every header name,
    so a handler must not depend on the spelling.

    :param headers: a mapping, or an iterable of ``(name, value)`` pairs, of ``str`` to ``str``.
    """

    __slots__ = ("_items",)

    def __init__(self, headers: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        items: dict[str, tuple[str, str]] = {}
        for name, value in pairs:
            key = name.lower()
            original = items[key][0] if key in items else name
            items[key] = (original, value)
        self._items = items

    def __getitem__(self, name: str) -> str:
        """Return the value of header ``name``, whatever its case.

        :param name: a header name in any case.
        :raises KeyError: when the header is absent.
        :return: the header's value.
        """
        return self._items[name.lower()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return (original for original, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        mine = {key: value for key, (_, value) in self._items.items()}
        return mine == {str(name).lower(): value for name, value in other.items()}

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CaseInsensitiveHeaders({dict(self.items())!r})"


def _as_headers(value: Any) -> CaseInsensitiveHeaders:
    return value if isinstance(value, CaseInsensitiveHeaders) else CaseInsensitiveHeaders(value)


@dataclass(frozen=True)
class TimerRequest:
    """The request that ran a timer, as its handler sees it.

    A handler receives it through a parameter annotated ``TimerRequest``. Construct one yourself
    to call :meth:`~scheduler_emulator.service.TimerRouter.invoke` with headers.

    :param headers: the request's headers; a mapping or ``(name, value)`` pairs, stored as a
        :class:`CaseInsensitiveHeaders` (``request.headers["x-cloudscheduler"]`` finds
        ``X-CloudScheduler``). Empty by default, as in function style.
    :param body: the raw body as it arrived (``b""`` for none).
    :param method: the HTTP method, upper case (``"POST"`` by default).
    :param path: the request path without the query string (``""`` when there was no HTTP
        request).
    """

    headers: Mapping[str, str] = field(default_factory=CaseInsensitiveHeaders)
    body: bytes = b""
    method: str = "POST"
    path: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", _as_headers(self.headers))

    @property
    def job_name(self) -> str | None:
        """The job's short name: the last ``/``-segment of ``X-CloudScheduler-JobName``.

        :return: ``"nightly"`` for ``projects/p/locations/l/jobs/nightly`` or ``nightly``;
            ``None`` when the header is absent (a request sent by hand, or function style).
        """
        value = self.headers.get(JOB_NAME_HEADER)
        return None if value is None else value.rsplit("/", 1)[-1]

    @property
    def schedule_time_header(self) -> str | None:
        """The raw ``X-CloudScheduler-ScheduleTime`` value, or ``None`` when absent.

        Cloud Scheduler sends it only for jobs with a unix-cron schedule; it is the same on every
        retry of one run.
        """
        return self.headers.get(SCHEDULE_TIME_HEADER)

    @property
    def schedule_time(self) -> datetime | None:
        """The run's scheduled instant, parsed from ``X-CloudScheduler-ScheduleTime``.

        :raises ValueError: when the header is present but not an RFC 3339 timestamp with an
            offset (Cloud Scheduler never sends that; a hand-made request may).
        :return: a timezone-aware datetime, or ``None`` when the header is absent.
        """
        value = self.schedule_time_header
        return None if value is None else parse_schedule_time(value)


@dataclass(frozen=True)
class TimerResponse:
    """What the router answers to one timer run, independent of any web framework.

    :param status: the HTTP status code (200, 400 or 500).
    :param headers: ``(name, value)`` pairs, ``Content-Type`` and ``Content-Length`` included.
    :param body: the body bytes (empty for 200 and for the empty 500s).
    :param exception: the exception the handler raised, for an in-process caller to re-raise.
    :param background: a returned Starlette or FastAPI response's ``background`` task(s), which
        the ASGI adapter awaits once the answer is sent, as Starlette does.
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""
    exception: Exception | None = None
    background: Any = None

    @property
    def status_line(self) -> str:
        """The WSGI status line, e.g. ``"500 Internal Server Error"`` (``"599 Unknown"`` for a
        status without a name)."""
        known = self.status in HTTPStatus._value2member_map_
        return f"{self.status} {HTTPStatus(self.status).phrase if known else 'Unknown'}"


def returned_status(value: Any) -> int | None:
    """The HTTP status a handler's return value sets, read as Flask reads a view's: a response
    object's ``status_code`` (werkzeug and Flask, Starlette and FastAPI), a ``(body, status[,
    headers])`` tuple's (``404``, ``HTTPStatus.NOT_FOUND`` or ``"404 NOT FOUND"``).

    :param value: what the handler returned.
    :return: the status, or ``None`` when it sets none (a body, ``None``, ``(body, headers)``,
        a tuple that is not a response, such as ``(3, "swept")``).
    """
    if isinstance(value, tuple):
        if len(value) in (2, 3):
            if isinstance(value[1], int) and not isinstance(value[1], bool):
                return int(value[1]) if 100 <= value[1] <= 599 else None
            if isinstance(value[1], str) and re.match(r"[1-5]\d\d(?: |$)", value[1]):
                return int(value[1][:3])
        return returned_status(value[0]) if len(value) == 2 else None
    status = getattr(value, "status_code", None)
    return status if isinstance(status, int) else None


def returned_answer(value: Any) -> tuple[bytes, str | None]:
    """The body and ``Content-Type`` of a response a handler returned (see
    :func:`returned_status`): a Starlette response's ``body``, a Django one's ``content``, a
    werkzeug response's data, a tuple's ``str`` or ``bytes`` body; ``b""`` for another body (a
    dict to be made JSON)."""
    value = value[0] if isinstance(value, tuple) and value else value
    body = getattr(value, "body", None)
    body = body if isinstance(body, bytes) else getattr(value, "content", None)
    if not isinstance(body, bytes):
        get_data = getattr(value, "get_data", None)
        body = get_data() if callable(get_data) else value
    body = body.encode() if isinstance(body, str) else body if isinstance(body, bytes) else b""
    get = getattr(getattr(value, "headers", None), "get", None)  # werkzeug's, Starlette's
    return body, get("content-type") if callable(get) else None


class Router(Protocol):
    """What the framework adapters (:mod:`~scheduler_emulator.service.frameworks`,
    :mod:`~scheduler_emulator.service.asgi`) use of a
    :class:`~scheduler_emulator.service.router.TimerRouter`, which they sit under."""

    def match(self, path: str) -> str | None: ...

    def dispatch(self, request: TimerRequest, name: str | None = None) -> TimerResponse | None: ...

    async def dispatch_async(
        self, request: TimerRequest, name: str | None = None
    ) -> TimerResponse | None: ...

    def wsgi(self, app: WsgiApp | None = None) -> Any: ...

    def handle_flask(self, request: Any, name: str | None = None) -> Any: ...


def is_timer_request(annotation: Any) -> bool:
    """Whether a parameter's annotation is ``TimerRequest`` or ``TimerRequest | None``: the one
    rule by which the router passes the request to a handler and the run-once guard finds it.

    :param annotation: the resolved annotation, or its text when it did not resolve.
    """
    if isinstance(annotation, str):  # an annotation that did not resolve (yet)
        text = annotation.replace(" ", "").removeprefix("Optional[").removesuffix("]")
        return text.removesuffix("|None").rsplit(".", 1)[-1] == "TimerRequest"
    if annotation is TimerRequest:
        return True
    if get_origin(annotation) in (Union, UnionType):
        return [a for a in get_args(annotation) if a is not type(None)] == [TimerRequest]
    return False


def is_async_handler(handler: Callable[..., Any]) -> bool:
    """Whether a handler is a coroutine function, or a callable object whose ``__call__`` is one.

    :param handler: a registered (or to be registered) handler.
    :return: ``True`` for ``async def`` handlers (and ``functools.partial`` of them).
    """
    target = handler.func if isinstance(handler, functools.partial) else handler
    call = getattr(target, "__call__", None)  # noqa: B004 - the coroutine check needs __call__
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(call)


def refuse_behind_a_token_check(app: Any) -> None:
    """Refuse to serve the timer routes in front of ``app`` when it checks tokens
    (``SchedulerTokenMiddleware``, its ASGI twin), or what it wraps does as far as can be seen:
    the WSGI or ASGI middleware it holds as ``.app``, a Flask app's ``wsgi_app``, a Starlette
    app's middleware (trials 188, 194: the routes were answered unchecked). A wrapper of the
    user's own, or an app mounted inside another, is not looked into.

    :raises ValueError: saying to add the token check after the router.
    """
    for _ in range(100):  # (a chain of middleware, each holding the next)
        layers = [app, *(getattr(m, "cls", None) for m in getattr(app, "user_middleware", []))]
        if any(getattr(layer, "checks_tokens", False) is True for layer in layers):  # (a mock's
            raise ValueError(  # attribute is not True)
                "the app already checks tokens: call router.init_app(app) (or router.wsgi / "
                "router.asgi) first, then add the token middleware around it, so that it runs "
                "before the timer routes (else they would be answered unchecked)."
            )
        if (app := getattr(app, "app", None) or getattr(app, "wsgi_app", None)) is None:
            return
