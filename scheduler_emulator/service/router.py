"""The timer router: Cloud Scheduler job runs routed to Python handlers.

``@router.timer("nightly")`` makes a function the handler for the job ``nightly``; each run of the
job is one HTTP request to ``/_triggers/timer/nightly``, and the handler runs once for it. The
router is WSGI middleware in front of the service's own routes::

    router = TimerRouter()

    @router.timer("nightly")
    def sweep() -> None: ...

    application = router.wsgi(django_or_any_wsgi_app)   # or router.init_app(flask_app)
    application = router.asgi(any_asgi_app)             # or router.init_app(starlette_app)

Handlers may be ``async def``: under ASGI they are awaited on the server's event loop (a plain
``def`` handler runs in a worker thread, as Starlette runs sync endpoints); under WSGI an
``async def`` handler runs to completion with :func:`asyncio.run`.

Routing and answers, as a sketch (every row is a test in ``tests/service``)::

    path starts with the prefix (exact case), a name follows   → a timer run, any method
      X-CloudScheduler-JobName's last segment ≠ name          → 500, empty    (ERROR log)
      no handler registered under the name (exact case)       → 500, empty    (ERROR log)
      payload parameter, body empty / not JSON / not binding  → 400, problem  (WARNING log)
      the handler raised, or returned a coroutine unawaited   → 500, problem  (ERROR + traceback)
      the handler returned                                    → 200, empty
      the handler returned a response with a status           → that status and body
                                                                (non-2xx: WARNING log)
    any other path                                            → the wrapped app (404 without one)

Function style calls the handler with no HTTP at all::

    >>> router = TimerRouter()
    >>> @router.timer("report")
    ... def report(order: dict) -> int:
    ...     return len(order)
    >>> router.invoke("report", {"sku": "A-1"})
    1
    >>> router.timers["report"].payload_param
    'order'
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import difflib
import functools
import inspect
import json
import logging
import re
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

from ..wire import TIMER_PREFIX
from .binding import BindingError, bind_body, check_bindable, type_name
from .errors import TargetError
from .request import (
    EXCEPTION_ENVIRON_KEY,
    PROPAGATE_EXCEPTIONS_KEY,
    TimerRequest,
    TimerResponse,
    WsgiApp,
    is_async_handler,
    is_timer_request,
    returned_answer,
    returned_status,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; werkzeug is imported lazily
    from werkzeug.wrappers import Request as WerkzeugRequest
    from werkzeug.wrappers import Response as WerkzeugResponse

    from .asgi import AsgiApp, TimerAsgiMiddleware
    from .frameworks import TimerMiddleware

__all__ = [
    "DEFAULT_PREFIX",
    "EXCEPTION_ENVIRON_KEY",
    "INTERNAL_SERVER_ERROR_BODY",
    "PROBLEM_JSON",
    "PROPAGATE_EXCEPTIONS_KEY",
    "Timer",
    "TimerResponse",
    "TimerRouter",
    "UnknownTimerError",
    "VALIDATION_PROBLEM_TITLE",
    "VALIDATION_PROBLEM_TYPE",
    "WsgiApp",
    "check_handler_shape",
    "describe_handler",
    "find_router",
    "is_async_handler",
    "normalise_prefix",
    "run_awaitable",
    "unawaited",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The logger every routing outcome is logged on.
logger = logging.getLogger("scheduler_emulator.service")

#: The path a job's URI carries the timer's name under, unless the router sets another.
DEFAULT_PREFIX = TIMER_PREFIX
#: The exact body of the 500 answered when a handler raises.
INTERNAL_SERVER_ERROR_BODY = (
    b'{"detail":"The server could not complete this request.",'
    b'"type":"urn:hardened:problem:internal-server-error",'
    b'"title":"Internal Server Error","status":500}'
)
#: ``type`` of the 400 validation problem (the RFC 9110 section for 400 Bad Request).
VALIDATION_PROBLEM_TYPE = "https://tools.ietf.org/html/rfc9110#section-15.5.1"
#: ``title`` of the 400 validation problem.
VALIDATION_PROBLEM_TITLE = "One or more validation errors occurred."
PROBLEM_JSON = "application/problem+json"
#: Said after a handler's failure that read ``flask.request``, which timer runs do not set up.
FLASK_CONTEXT_HINT = (
    " A timer run is answered in front of Flask, outside its request context: take a "
    "TimerRequest parameter for the run's headers and body (docs/testing.md)."
)

_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,500}")
#: Each handler a router registered, by its timer name (held weakly): ``@guard.once`` stacked
#: above ``@router.timer`` would wrap a handler the router already calls unguarded.
_REGISTERED: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


class UnknownTimerError(TargetError, LookupError):
    """:meth:`TimerRouter.invoke` was given a name no handler is registered under.

    :param name: the name asked for.
    :param registered: the names that are registered.
    """

    def __init__(self, name: str, registered: Iterable[str]) -> None:
        self.name = name
        self.registered = sorted(registered)
        super().__init__(
            f"No handler is registered for the timer {name!r} (names match exactly, case "
            f"included). {_registered(name, self.registered)}"
        )


def _registered(name: str, registered: Iterable[str]) -> str:
    """``Registered timers: 'a', 'b'.``, with ``Did you mean 'b'?`` for a near miss (trial 100)."""
    names = sorted(registered)
    near = difflib.get_close_matches(name.lower(), names, n=1) or difflib.get_close_matches(
        name, names, n=1
    )
    listed = ", ".join(repr(n) for n in names) or "none"
    return f"Registered timers: {listed}." + (f" Did you mean {near[0]!r}?" if near else "")


@dataclass(frozen=True)
class Timer:
    """One registered timer: its name, its handler and how the handler takes its arguments.

    :param name: the timer's (and its Cloud Scheduler job's) name, ``[A-Za-z0-9_-]{1,500}``.
    :param handler: the decorated callable, unchanged.
    :param payload_param: the name of the parameter the JSON body binds to, or ``None`` when the
        handler ignores the body.
    :param payload_type: that parameter's resolved annotation (``typing.Any`` when it has none);
        ``None`` when there is no payload parameter.
    :param request_param: the name of the parameter annotated :class:`TimerRequest`, or ``None``.
    :param positional_only: which of those two parameters are positional-only, in signature
        order (they are passed positionally).
    """

    name: str
    handler: Callable[..., Any]
    payload_param: str | None = None
    payload_type: Any | None = None
    request_param: str | None = None
    positional_only: tuple[str, ...] = field(default=(), repr=False, compare=False)
    is_async: bool = field(default=False, compare=False)
    """Whether the handler is a coroutine function (``async def``): awaited under ASGI."""

    def call(self, payload: Any, request: TimerRequest) -> Any:
        """Call the handler with the arguments its signature asks for.

        :param payload: passed as the payload parameter, if the handler has one (else ignored).
        :param request: passed as the ``TimerRequest`` parameter, if the handler has one.
        :raises Exception: whatever the handler raises.
        :return: what the handler returned.
        """
        values = {
            param: value
            for param, value in ((self.payload_param, payload), (self.request_param, request))
            if param is not None
        }
        args = [values[param] for param in self.positional_only]
        kwargs = {p: v for p, v in values.items() if p not in self.positional_only}
        return self.handler(*args, **kwargs)


def _answer(
    status: int,
    body: bytes = b"",
    content_type: str | None = None,
    exception: Exception | None = None,
) -> TimerResponse:
    headers = [("Content-Type", content_type)] if content_type else []
    headers.append(("Content-Length", str(len(body))))
    return TimerResponse(status, tuple(headers), body, exception)


def normalise_prefix(prefix: str) -> str:
    """Give a prefix a leading and a trailing slash (``"jobs"`` → ``"/jobs/"``).

    :param prefix: the path under which job URIs carry timer names.
    :raises ValueError: when it holds a ``?`` or ``#`` (a path never does).
    :return: the normalised prefix; ``""`` and ``"/"`` give ``"/"``.
    """
    if not isinstance(prefix, str) or "?" in prefix or "#" in prefix:
        raise ValueError(f"Timer prefix {prefix!r} is not a URL path such as '/_triggers/timer/'.")
    return "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"


def _check_name(name: object) -> str:
    if callable(name):  # (trial 210: "Timer name <function nightly at 0x…> is not valid")
        meant = getattr(name, "__name__", "name")
        raise TypeError(
            f"@router.timer needs the timer's name: write @router.timer({meant!r}) above "
            f"{describe_handler(name)}, not @router.timer."
        )
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ValueError(
            f"Timer name {name!r} is not valid: a timer's name, like its Cloud Scheduler job's, "
            "holds 1 to 500 letters, digits, '-' and '_'."
        )
    return name


def registered_as(handler: Callable[..., Any]) -> str | None:
    """The timer name a :class:`TimerRouter` registered ``handler`` under, or ``None``."""
    try:
        return _REGISTERED.get(handler)
    except TypeError:
        return None


def describe_handler(handler: Callable[..., Any]) -> str:
    """Name a handler in an error message: ``module.qualname``."""
    module = getattr(handler, "__module__", None)
    qualname = getattr(handler, "__qualname__", None) or repr(handler)
    return f"{module}.{qualname}" if module else qualname


def _annotations(handler: Callable[..., Any], where: str) -> dict[str, Any]:
    target: Any = handler
    if not inspect.isroutine(handler) and not isinstance(handler, functools.partial):
        target = type(handler).__call__  # a callable object: its __call__'s annotations
    try:
        return get_type_hints(target)
    except NameError as exc:
        raise TypeError(f"{where}: the handler's annotations do not resolve ({exc}).") from None
    except TypeError:  # functools.partial and other callables without __annotations__
        signature = inspect.signature(handler, eval_str=True)
        return {
            name: param.annotation
            for name, param in signature.parameters.items()
            if param.annotation is not inspect.Parameter.empty
        }


def check_handler_shape(handler: Callable[..., Any], where: str) -> None:
    """Refuse what cannot be a timer handler: a class or a non-callable.

    Coroutine functions (``async def``) are handlers too: see :func:`is_async_handler`.

    :param where: how the error message names the registration (``@timer('x') on m.f``).
    :raises TypeError: naming ``where`` and what is wrong.
    """
    if not callable(handler) or isinstance(handler, type):
        raise TypeError(f"{where}: a timer handler is a function or method, not {handler!r}.")


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def run_awaitable(awaitable: Awaitable[Any]) -> Any:
    """Run an async handler's awaitable to completion from synchronous code (WSGI, function style).

    Uses :func:`asyncio.run` in this thread; when this thread already runs an event loop (a
    synchronous call made from async code), a fresh loop in a worker thread runs it instead. The
    caller's context variables are visible to the awaitable either way.

    :param awaitable: what calling an ``async def`` handler returned.
    :raises Exception: whatever the awaitable raises.
    :return: its result.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # (run outside this block: not chained to the handler's own error)
        pass
    else:
        context = contextvars.copy_context()
        with ThreadPoolExecutor(1, thread_name_prefix="timer-handler") as pool:
            return pool.submit(context.run, asyncio.run, _awaited(awaitable)).result()
    return asyncio.run(_awaited(awaitable))


def unawaited(returned: Any) -> TypeError | None:
    """The error of a handler that returned an awaitable it did not await (``return work()``
    in an ``async def``: nothing ran), or ``None``; a coroutine is closed (said here, not as
    Python's "never awaited" warning)."""
    if not inspect.isawaitable(returned):
        return None
    if inspect.iscoroutine(returned):
        returned.close()
    return TypeError(f"the handler returned {returned!r} without awaiting it: write return await …")


def _make_timer(name: str, handler: Callable[..., Any]) -> Timer:
    where = f"@timer({name!r}) on {describe_handler(handler)}"
    check_handler_shape(handler, where)
    hints = _annotations(handler, where)
    request_params: list[inspect.Parameter] = []
    payload_params: list[inspect.Parameter] = []
    signature = inspect.signature(handler)
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if is_timer_request(hints.get(param.name)):
            request_params.append(param)
        else:
            payload_params.append(param)
    if len(request_params) > 1 or len(payload_params) > 1:
        names = ", ".join(p.name for p in request_params + payload_params)
        raise TypeError(
            f"{where}: a timer handler takes at most one payload parameter and one "
            f"TimerRequest parameter; it takes {names}."
        )
    payload = payload_params[0] if payload_params else None
    payload_type: Any = None
    if payload is not None:
        payload_type = hints.get(payload.name, Any)
        try:
            check_bindable(payload_type)
        except TypeError as exc:
            raise TypeError(
                f"{where}: the payload parameter {payload.name!r} is annotated "
                f"{type_name(payload_type)}, which a JSON body cannot bind to: {exc}."
            ) from None
    request = request_params[0] if request_params else None
    filled = {p.name for p in (payload, request) if p is not None}
    positional_only = tuple(
        p.name
        for p in signature.parameters.values()
        if p.name in filled and p.kind is p.POSITIONAL_ONLY
    )
    return Timer(
        name=name,
        handler=handler,
        payload_param=payload.name if payload else None,
        payload_type=payload_type,
        request_param=request.name if request else None,
        positional_only=positional_only,
        is_async=is_async_handler(handler),
    )


class TimerRouter:
    """Routes Cloud Scheduler job runs to handlers registered with :meth:`timer`.

    :param prefix: the path job URIs carry timer names under; normalised to a leading and a
        trailing slash (``"jobs"`` → ``"/jobs/"``). Matched exactly, case included.
    :param app: the service's own routes (a WSGI app) for every other path; ``None`` answers those
        with an empty 404.
    :raises ValueError: for a prefix holding ``?`` or ``#``.
    """

    def __init__(self, prefix: str = DEFAULT_PREFIX, app: WsgiApp | None = None) -> None:
        self.prefix: str = normalise_prefix(prefix)
        self.app = app
        self._timers: dict[str, Timer] = {}
        self.timers: Mapping[str, Timer] = MappingProxyType(self._timers)
        """The registered timers by name (a read-only view)."""

    def __repr__(self) -> str:
        return f"TimerRouter(prefix={self.prefix!r}, timers={sorted(self._timers)!r})"

    # ------------------------------------------------------------------------- registration

    def timer(self, name: str) -> Callable[[F], F]:
        """Register the decorated function as the handler of the timer (and job) ``name``.

        The handler may take, in any order, one parameter annotated :class:`TimerRequest` and one
        payload parameter with any other annotation (see :mod:`.binding` for what binds); both
        are optional. Annotations are resolved with :func:`typing.get_type_hints`, so
        ``from __future__ import annotations`` works for types defined at module level.

        :param name: ``[A-Za-z0-9_-]{1,500}``, matched exactly (case included).
        :raises ValueError: at once, for an invalid name or one already registered.
        :raises TypeError: at once, for ``@router.timer`` written without its name; when
            decorating, for a handler that is not a plain callable (an
            ``async def`` function is one), takes more than one payload or ``TimerRequest``
            parameter, has annotations that do not resolve, or a payload type JSON cannot bind
            to.
        :return: a decorator that registers the function and returns it unchanged.
        """
        _check_name(name)
        self._check_free(name)

        def register(handler: F) -> F:
            self._check_free(name)
            self._timers[name] = _make_timer(name, handler)
            with contextlib.suppress(TypeError):  # (a handler that cannot be held weakly)
                _REGISTERED[handler] = name
            return handler

        return register

    def _check_free(self, name: str) -> None:
        if name in self._timers:
            existing = describe_handler(self._timers[name].handler)
            raise ValueError(
                f"Timer {name!r} is already registered (to {existing}); a timer has one handler."
            )

    # ----------------------------------------------------------------------------- the core

    def match(self, path: str) -> str | None:
        """Return the timer name a request path routes to, or ``None`` for the web routes.

        :param path: the request path without the query string (a query string, if left on, is
            cut off here).
        :return: the rest of the path after the prefix, one trailing slash dropped, when that is
            not empty; else ``None``.
        """
        path = path.split("?", 1)[0]
        if not path.startswith(self.prefix):
            return None
        name = path[len(self.prefix) :]
        if name.endswith("/"):
            name = name[:-1]
        return name or None

    def prepare(
        self, request: TimerRequest, name: str | None = None
    ) -> TimerResponse | tuple[str, Timer, Any] | None:
        """Route a run up to the handler call: the pure half of :meth:`dispatch`.

        Checks the job-name header, finds the timer and binds the payload, logging each refusal.
        Shared by the WSGI and the ASGI entry points, so they answer alike.

        :param request: the run's request.
        :param name: the timer's name, or ``None`` to take it from ``request.path``.
        :return: ``None`` when the path is not a timer route; the answer when the run is refused
            (500 for a name mismatch or an unknown timer, 400 when the body does not bind); else
            ``(name, timer, payload)`` for the caller to call the handler with.
        """
        if name is None:
            name = self.match(request.path)
            if name is None:
                return None
        job_name = request.job_name
        if job_name is not None and job_name != name:
            logger.error(
                "Cloud Scheduler job '%s' posted to the timer route '%s'. The name in the target "
                "URL and the job's own name have to agree.",
                job_name,
                name,
            )
            return _answer(500)
        timer = self._timers.get(name)
        if timer is None:
            logger.error(  # (the spec's words, then which names are: trial 210)
                "No handler is registered for TIMER /%s. An event source is wired to this "
                "function that no trigger attribute declared. %s",
                name,
                _registered(name, self._timers),
            )
            return _answer(500)
        payload: Any = None
        if timer.payload_param is not None:
            try:
                payload = bind_body(request.body, timer.payload_type, timer.payload_param)
            except BindingError as exc:
                hint = (  # (trial 162: a Django habit's `request`, hinted in the log only)
                    f"The body binds as JSON to the unannotated parameter '{timer.payload_param}'"
                    ": annotate it `: TimerRequest` to be given the request instead."
                    if timer.payload_type is Any
                    else ""
                )
                logger.warning(
                    "TIMER /%s refused with 400: %s (The body binds as JSON to the parameter "
                    "'%s': %s.%s)",
                    name,
                    exc.summary(),
                    timer.payload_param,
                    type_name(timer.payload_type),
                    " Annotate it `: TimerRequest` to be given the request instead."
                    if hint
                    else "",
                )
                problem = {
                    "type": VALIDATION_PROBLEM_TYPE,
                    "title": VALIDATION_PROBLEM_TITLE,
                    "status": 400,
                    "errors": exc.errors,
                    **({"detail": hint} if hint else {}),
                }
                body = json.dumps(problem, separators=(",", ":"), ensure_ascii=False).encode()
                return _answer(400, body, PROBLEM_JSON)
        return name, timer, payload

    @staticmethod
    def outcome(name: str, exception: Exception | None, returned: Any = None) -> TimerResponse:
        """The answer once the handler has run: the other pure half of :meth:`dispatch`.

        :param name: the timer's name.
        :param exception: what the handler raised, or ``None`` when it returned.
        :param returned: what it returned: a response with a status (a FastAPI, Starlette,
            Django, werkzeug or Flask response, a Flask ``(body, status)`` tuple:
            :func:`~scheduler_emulator.service.request.returned_status`) is answered with its
            status and body, a non-2xx one logged at WARNING; anything else is not sent.
        :return: 200 (empty), the returned response's status, or the 500 problem (logged at
            ERROR with the traceback); an awaitable returned unawaited is a 500 too.
        """
        forgot = exception is None and unawaited(returned)  # (trial 77: OK, and nothing ran)
        exception = forgot or exception
        if exception is None:
            status = returned_status(returned)
            if status is None:
                return _answer(200)
            if not 200 <= status <= 299:  # a trial's FastAPI handler returned its 503
                logger.warning(
                    "TIMER /%s answered %d: its handler returned that status; the attempt "
                    "fails and is retried under the job's retry config.",
                    name,
                    status,
                )
            answered = _answer(status, *returned_answer(returned))
            # (trial 128: a returned response's background task never ran)
            return replace(answered, background=getattr(returned, "background", None))
        flask = "outside of request context" in str(exception)  # flask.request read in it
        logger.error(
            "TIMER /%s failed with 500: its handler %s.%s",
            name,
            "returned an awaitable it did not await: write return await …"
            if forgot
            else f"raised {type(exception).__name__}",
            FLASK_CONTEXT_HINT if flask else "",
            exc_info=exception,
        )
        return _answer(500, INTERNAL_SERVER_ERROR_BODY, PROBLEM_JSON, exception)

    def dispatch(self, request: TimerRequest, name: str | None = None) -> TimerResponse | None:
        """Run the timer a request names and return the answer; the framework-neutral core.

        An ``async def`` handler runs to completion here (:func:`run_awaitable`).

        :param request: the run's request.
        :param name: the timer's name when the caller's own routing found it (a Flask route's
            ``<name>``); ``None`` takes it from ``request.path`` with :meth:`match`.
        :return: the answer (see the table in the module docstring), or ``None`` when ``name`` is
            ``None`` and the path is not a timer route.
        """
        prepared = self.prepare(request, name)
        if not isinstance(prepared, tuple):
            return prepared
        name, timer, payload = prepared
        try:
            result = timer.call(payload, request)
            if inspect.isawaitable(result):
                result = run_awaitable(result)
        except Exception as exc:
            return self.outcome(name, exc)
        return self.outcome(name, None, result)

    async def dispatch_async(
        self, request: TimerRequest, name: str | None = None
    ) -> TimerResponse | None:
        """:meth:`dispatch` for ASGI: the same routing, answers and log lines, awaited.

        An ``async def`` handler is awaited on the running loop; a plain ``def`` handler runs in
        a worker thread (:func:`asyncio.to_thread`, context variables included), so that it does
        not block the loop.

        :param request: the run's request.
        :param name: the timer's name, or ``None`` to take it from ``request.path``.
        :return: as :meth:`dispatch`.
        """
        prepared = self.prepare(request, name)
        if not isinstance(prepared, tuple):
            return prepared
        name, timer, payload = prepared
        try:
            if timer.is_async:
                result = timer.call(payload, request)
            else:
                result = await asyncio.to_thread(timer.call, payload, request)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            return self.outcome(name, exc)
        return self.outcome(name, None, result)

    def invoke(self, name: str, payload: Any = None, request: TimerRequest | None = None) -> Any:
        """Call a timer's handler directly, with no HTTP (the function style of testing).

        No routing rule applies: the job-name header is not compared and the payload is not
        serialised or bound.

        :param name: the registered timer's name (exact case).
        :param payload: passed as-is to the payload parameter; ignored by a handler without one.
        :param request: passed to the ``TimerRequest`` parameter; by default ``TimerRequest()``
            with no headers and an empty body, whose ``path`` is the timer route.
        :raises UnknownTimerError: (a ``LookupError``) for a name with no handler, listing the
            registered names.
        :raises Exception: whatever the handler raises, unchanged.
        :return: what the handler returned (for an ``async def`` handler, the coroutine: await
            it, or use :func:`run_awaitable`).
        """
        timer = self._timers.get(name)
        if timer is None:
            raise UnknownTimerError(name, self._timers)
        if request is None:
            request = TimerRequest(path=self.prefix + name)
        return timer.call(payload, request)

    # --------------------------------------------------------------------------------- WSGI

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        """Serve one request as a WSGI app; other paths go to the constructor's ``app``.

        :param environ: the WSGI environ; gets :data:`EXCEPTION_ENVIRON_KEY` when a handler raised.
        :param start_response: the WSGI ``start_response`` callable.
        :raises Exception: the handler's exception, when ``environ`` sets
            :data:`PROPAGATE_EXCEPTIONS_KEY`.
        :return: the body iterable.
        """
        from .frameworks import serve_wsgi

        return serve_wsgi(self, environ, start_response, self.app)

    def wsgi(self, app: WsgiApp | None = None) -> TimerMiddleware:
        """Return WSGI middleware serving the timer routes in front of ``app``.

        ``application = router.wsgi(get_wsgi_application())`` for Django; any WSGI app works.

        :param app: the service's routes; ``None`` uses the constructor's ``app`` (and, if that is
            ``None`` too, answers every other path with 404).
        :return: a WSGI app whose ``timer_router`` attribute is this router.
        """
        from .frameworks import TimerMiddleware

        return TimerMiddleware(self, app if app is not None else self.app)

    def asgi(self, app: AsgiApp | None = None) -> TimerAsgiMiddleware:
        """Return ASGI middleware serving the timer routes in front of ``app``.

        ``application = router.asgi(starlette_or_any_asgi_app)``; served by uvicorn, hypercorn
        (asyncio) or any ASGI 3 server. Answers, log lines and matching are those of
        :meth:`wsgi`. Loads no web framework.

        :param app: the service's routes (an ASGI 3 app); ``None`` answers every other path with
            an empty 404 (the constructor's ``app`` is a WSGI app, so it is not used here).
        :return: an ASGI app whose ``timer_router`` attribute is this router.
        """
        from .asgi import TimerAsgiMiddleware

        return TimerAsgiMiddleware(app, router=self)

    # ----------------------------------------------------------------- Flask and functions

    def init_app(self, flask_app: Any) -> None:
        """Serve the timer routes in front of a Flask, Starlette or FastAPI app
        (:func:`~scheduler_emulator.service.frameworks.init_app`).

        :param flask_app: a :class:`flask.Flask`, or a Starlette / FastAPI app.
        :raises ValueError: when another router is already installed on the app.
        """
        from .frameworks import init_app

        init_app(self, flask_app)

    def handle_flask(self, request: WerkzeugRequest, name: str | None = None) -> WerkzeugResponse:
        """Answer a Flask/werkzeug request: for a functions-framework function or a Flask view
        (:func:`~scheduler_emulator.service.frameworks.handle_flask`).

        :param request: the incoming request; its body is read (and cached on the request).
        :param name: the timer's name; ``None`` takes it from ``request.path`` with :meth:`match`.
        :raises Exception: the handler's exception, when ``request.environ`` sets
            :data:`PROPAGATE_EXCEPTIONS_KEY`.
        :return: the answer as a :class:`werkzeug.wrappers.Response`.
        """
        from .frameworks import handle_flask

        return handle_flask(self, request, name)

    def handle_django(self, request: Any, name: str | None = None) -> Any:
        """Answer a Django request from a view whose URL pattern carries the name
        (:func:`~scheduler_emulator.service.frameworks.handle_django`).

        :param request: a ``django.http.HttpRequest``.
        :param name: the timer's name; ``None`` takes it from ``request.path`` with :meth:`match`.
        :raises Exception: the handler's exception, when ``request.META`` sets
            :data:`PROPAGATE_EXCEPTIONS_KEY`.
        :return: a ``django.http.HttpResponse``.
        """
        from .frameworks import handle_django

        return handle_django(self, request, name)

    def functions_framework_handler(self) -> Callable[[WerkzeugRequest], WerkzeugResponse]:
        """Return a function for ``functions-framework``: ``request`` → :meth:`handle_flask`
        (:func:`~scheduler_emulator.service.frameworks.functions_framework_handler`).

        :return: ``handler(request) -> Response`` with a ``timer_router`` attribute.
        """
        from .frameworks import functions_framework_handler

        return functions_framework_handler(self)


def find_router(app: Any) -> TimerRouter | None:
    """Discover the timer router serving an app (for the pytest testing façades).

    Looks, in order, at: ``app`` itself, ``app.timer_router`` (what :meth:`TimerRouter.wsgi`,
    :meth:`TimerRouter.asgi` and :meth:`TimerRouter.functions_framework_handler` return),
    ``app.wsgi_app.timer_router``, ``app.extensions["timer_router"]`` (Flask after
    :meth:`TimerRouter.init_app`) and ``app.state.timer_router`` (Starlette and FastAPI after
    ``init_app``), then through wrapping middleware (``.wsgi_app`` and ``.app`` attributes, a
    few levels deep).

    :param app: a router, a WSGI app, a Flask app, a handler function...
    :return: the router, or ``None`` when none is found.
    """
    queue: list[tuple[Any, int]] = [(app, 0)]
    seen: set[int] = set()
    while queue:
        candidate, depth = queue.pop(0)
        if candidate is None or id(candidate) in seen:
            continue
        seen.add(id(candidate))
        found = [candidate, getattr(candidate, "timer_router", None)]
        found.append(getattr(getattr(candidate, "wsgi_app", None), "timer_router", None))
        extensions = getattr(candidate, "extensions", None)
        if isinstance(extensions, Mapping):
            found.append(extensions.get("timer_router"))
        state = getattr(candidate, "state", None)
        if state is not None:
            found.append(getattr(state, "timer_router", None))
        for router in found:
            if isinstance(router, TimerRouter):
                return router
        if depth < 4:
            queue.extend(
                (getattr(candidate, attr, None), depth + 1) for attr in ("wsgi_app", "app")
            )
    return None
