"""Timer façades: call a service's timers the way Cloud Scheduler would, or directly.

:class:`CloudRunTimers` sends Cloud Scheduler's request (``POST /_triggers/timer/<name>`` with
its headers) in-process through werkzeug's test client (a WSGI app) or httpx's
``ASGITransport`` (an ASGI app), or over HTTP to a live server. :class:`FunctionTimers` invokes
the handler directly (no headers, no body; an ``async def`` one is run to completion). Both have
one attribute per timer of the app's :class:`~scheduler_emulator.service.TimerRouter`
(``timers.nightly()``, ``timers.report(order)``) and ``fire(name, payload)`` for any name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, MutableMapping
from datetime import datetime
from typing import Any

import requests
from werkzeug.test import Client

from scheduler_emulator.domain.attempts import answer_text, excerpt_text
from scheduler_emulator.runtime import AsgiApp, AsgiCaller, is_asgi_app
from scheduler_emulator.service import (
    PROPAGATE_EXCEPTIONS_KEY,
    TimerRouter,
    UnknownTimerError,
    find_router,
)
from scheduler_emulator.service.binding import encode_payload
from scheduler_emulator.service.request import returned_answer, returned_status
from scheduler_emulator.service.router import run_awaitable, unawaited
from scheduler_emulator.wire import (
    DEFAULT_CONTENT_TYPE,
    TIMER_PREFIX,
    format_schedule_time,
    scheduler_headers,
)

__all__ = ["DEFAULT_SCHEDULE_TIME", "CloudRunTimers", "FunctionTimers", "TimerNotAcknowledged"]

#: The ``X-CloudScheduler-ScheduleTime`` a Cloud Run-style façade sends unless told otherwise.
DEFAULT_SCHEDULE_TIME = "2026-01-01T00:00:00.000Z"


def _schedule_header(value: str | datetime) -> str:
    """The ``X-CloudScheduler-ScheduleTime`` a façade sends for ``value``."""
    return value if isinstance(value, str) else format_schedule_time(value)


_NO_PAYLOAD: Any = object()


class TimerNotAcknowledged(AssertionError):
    """The service answered a Cloud Run-style timer call with a non-2xx status.

    :param name: the timer's name.
    :param status: the HTTP status.
    :param body: the response body as text (the message quotes an HTML page's text).
    """

    def __init__(self, name: str, status: int, body: str, note: str = "") -> None:
        self.name, self.status, self.body = name, status, body
        text = answer_text(excerpt_text(body.encode())) if body.lstrip().startswith("<") else body
        said = f". It said: {text}" if body else " with an empty body."
        super().__init__(
            f"Cloud Scheduler would not read the answer to TIMER /{name} as an acknowledgement: "
            f"the service answered {status}{said}{note}"
        )


class _Timers:
    """Attribute access per registered timer; subclasses implement :meth:`fire`."""

    _router: TimerRouter | None
    fire: Callable[..., Any]  # fire(name, payload=…, **options), defined by each style

    def __getattr__(self, name: str) -> Callable[..., Any]:
        router = self.__dict__.get("_router")
        if router is None:
            raise AttributeError(
                f"no timer named {name!r}: this façade knows no TimerRouter (a live server, "
                "or an app the router was not found on); use fire(name, payload) or pass "
                "router=…"
            )
        if name not in router.timers and name.replace("_", "-") in router.timers:
            name = name.replace("_", "-")  # timers.daily_digest() for the job daily-digest
        if name.startswith("_") or name not in router.timers:
            said = UnknownTimerError(name, router.timers)  # (with the router's "Did you mean")
            raise AttributeError(
                f"{said} Use fire(name, payload) for a name that is not a Python identifier."
            )

        def call(payload: Any = _NO_PAYLOAD, **options: Any) -> Any:
            return self.fire(name, payload, **options)

        call.__name__ = name
        return call

    def __dir__(self) -> list[str]:
        router = self.__dict__.get("_router")
        return [*super().__dir__(), *(router.timers if router is not None else ())]


def _propagating(app: AsgiApp) -> AsgiApp:
    """Wrap an ASGI app so that the timer router re-raises a handler's exception, so that
    the test fails with the handler's own error rather than a 500."""

    async def propagating(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        scope[PROPAGATE_EXCEPTIONS_KEY] = True
        await app(scope, receive, send)

    return propagating


def _functions_framework_app(handler: Callable[[Any], Any]) -> Any:
    """``handler(request) -> response`` served as functions-framework serves it: a Flask app
    (functions-framework's own dependency) sending every path and method to it, whose return
    value becomes a response as a Flask view's does — a ``str``, a ``(body, status[,
    headers])`` tuple, a ``dict`` as JSON (trial 191: werkzeug's wrapper took only a response
    object). In testing mode: the handler's exception reaches the test."""
    import flask

    app = flask.Flask(getattr(handler, "__name__", "handler"))
    app.testing = True
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]
    for rule in ("/", "/<path:path>"):
        app.add_url_rule(rule, rule, lambda path="": handler(flask.request), methods=methods)
    return app


class CloudRunTimers(_Timers):
    """Cloud Run-style façade: each call is the request Cloud Scheduler sends.

    An ASGI app is served on an event loop of the façade's own (httpx's ``ASGITransport``, the
    ``asgi`` extra); :meth:`close` stops it (the ``cloud_run_testing`` fixture does at teardown).

    :param app: a WSGI or ASGI app to call in-process (its router is found with
        ``find_router``), or a functions-framework handler (``handler(request) -> response``,
        such as :meth:`TimerRouter.functions_framework_handler
        <scheduler_emulator.service.TimerRouter.functions_framework_handler>`'s).
    :param base_url: instead of ``app``, a live server's base URL.
    :param router: the app's router, when ``find_router`` cannot find it.
    :param schedule_time: the default ``X-CloudScheduler-ScheduleTime`` (see :meth:`fire`).
    :raises TypeError: unless exactly one of ``app`` and ``base_url`` is given.
    :raises NaiveDatetimeError: for a naive ``schedule_time``.
    """

    def __init__(
        self,
        app: Any = None,
        *,
        base_url: str | None = None,
        router: TimerRouter | None = None,
        schedule_time: str | datetime = DEFAULT_SCHEDULE_TIME,
    ) -> None:
        if (app is None) == (base_url is None):
            raise TypeError(
                "cloud_run_testing takes a WSGI or ASGI app, or base_url=…, not both or none."
            )
        self._router = router or (find_router(app) if app is not None else None)
        if inspect.isfunction(app) and len(inspect.signature(app).parameters) == 1:
            app = _functions_framework_app(app)
        self._asgi = AsgiCaller(_propagating(app)) if is_asgi_app(app) else None
        self._client = Client(app) if app is not None and self._asgi is None else None
        self._base_url = base_url.rstrip("/") if base_url else None
        self._schedule_time = _schedule_header(schedule_time)

    def headers(self, name: str, schedule_time: str | datetime | None = None) -> dict[str, str]:
        """The headers of a timer call: exactly what Cloud Scheduler sets (``X-CloudScheduler``,
        ``X-CloudScheduler-JobName``, ``X-CloudScheduler-ScheduleTime``, ``User-Agent``)."""
        header = self._schedule_time if schedule_time is None else _schedule_header(schedule_time)
        return scheduler_headers(name, header)

    def fire(
        self,
        name: str,
        payload: Any = _NO_PAYLOAD,
        *,
        schedule_time: str | datetime | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> int:
        """Post the timer request for ``name``; return the 2xx status.

        :param payload: a message to send as the body, encoded by
            :func:`~scheduler_emulator.service.encode_payload` (compact JSON of plain values,
            dataclasses, pydantic models, enums, dates; ``bytes`` as they are), with
            ``Content-Type: application/octet-stream`` as Cloud Scheduler sends a job's body
            when the job sets no Content-Type; omit for no body (and no Content-Type).
        :param schedule_time: overrides the ``X-CloudScheduler-ScheduleTime`` header: an aware
            datetime is written as Cloud Scheduler writes it (``2026-09-24T02:00:00Z``, or with
            the instant's own offset); text is sent as it is (to test a malformed header).
        :param headers: more request headers, sent with Cloud Scheduler's: e.g. the token a
            handler checks, ``{"Authorization": "Bearer " +
            cloud_scheduler.tokens.id_token(email, audience, at=datetime.now(UTC))}`` (the call
            runs in real time).
        :raises TypeError: for a payload that has no JSON form.
        :raises ValueError: for a NaN or infinite number (JSON has none).
        :raises TimerNotAcknowledged: for a non-2xx answer.
        :raises NaiveDatetimeError: for a naive ``schedule_time``.
        :raises Exception: in-process, whatever the handler raised.
        """
        __tracebackhide__ = True  # a refusal shows its message, not this function's source
        path = TIMER_PREFIX + name  # the default prefix, whatever the app's router serves
        headers = {**self.headers(name, schedule_time), **(headers or {})}
        body = b"" if payload is _NO_PAYLOAD else encode_payload(payload)
        if body:  # as a job with a body and no Content-Type header of its own is sent
            headers["Content-Type"] = DEFAULT_CONTENT_TYPE
        answer: Any  # each has .status_code and .text
        if self._asgi is not None:
            answer = self._asgi.request("POST", "http://testserver" + path, headers, body)
        elif self._client is not None:
            environ = {PROPAGATE_EXCEPTIONS_KEY: True}
            answer = self._client.post(path, headers=headers, data=body, environ_overrides=environ)
        else:
            assert self._base_url is not None
            answer = requests.post(self._base_url + path, headers=headers, data=body, timeout=60)
        if not 200 <= answer.status_code <= 299:
            timers = [] if self._router is None else sorted(self._router.timers)
            unknown = bool(timers) and name not in timers
            note = f" {UnknownTimerError(name, timers)}" if unknown else ""
            prefix = TIMER_PREFIX if self._router is None else self._router.prefix
            if prefix != TIMER_PREFIX and answer.status_code == 404:
                note += (
                    f" The façade posted to {path}; the app's router serves {prefix}, and the "
                    "façade always posts under the default prefix: test this app with the "
                    "cloud_scheduler fixture, whose jobs post to any URI (or with "
                    "function_testing, whose direct calls carry no run headers for a guard)."
                )
            raise TimerNotAcknowledged(name, answer.status_code, answer.text, note)
        return int(answer.status_code)

    def close(self) -> None:
        """Stop the ASGI app's event loop, if there is one (idempotent)."""
        if self._asgi is not None:
            self._asgi.close()


class FunctionTimers(_Timers):
    """Function-style façade: each call invokes the handler directly (no headers, no body).

    :param app: a :class:`TimerRouter`, or an app whose router ``find_router`` finds.
    :raises TypeError: if no router can be found.
    """

    def __init__(self, app: Any) -> None:
        router = app if isinstance(app, TimerRouter) else find_router(app)
        if router is None:
            raise TypeError(
                f"function_testing needs a TimerRouter or an app wrapped by one; got {app!r}."
            )
        self._router = router

    def fire(self, name: str, payload: Any = _NO_PAYLOAD) -> Any:
        """Call the handler of ``name`` with ``payload`` (as is); return what it returns.

        An ``async def`` handler is run to completion (``asyncio.run``, or a fresh loop in a
        worker thread when called from async code) and its result returned.

        :raises LookupError: if no handler is registered for ``name``.
        :raises TimerNotAcknowledged: when it returns a response with a non-2xx status (the
            router would answer that status, failing the run), as the Cloud Run style does.
        :raises TypeError: when an ``async def`` handler returned an awaitable it did not await.
        :raises Exception: whatever the handler raised.
        """
        assert self._router is not None
        result = self._router.invoke(name, None if payload is _NO_PAYLOAD else payload)
        result = run_awaitable(result) if inspect.isawaitable(result) else result
        if forgot := unawaited(result):  # as the router answers 500 (a trial's test passed)
            raise forgot
        status = returned_status(result)
        if status is not None and not 200 <= status <= 299:  # a trial's ("", 401) passed
            body = returned_answer(result)[0].decode("utf-8", "replace")
            raise TimerNotAcknowledged(name, status, body)
        return result
