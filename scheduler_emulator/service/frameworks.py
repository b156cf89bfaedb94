"""The timer router in front of the web frameworks: WSGI serving, Flask, Starlette and FastAPI
(``init_app``), Flask views and functions-framework (``handle_flask``), Django views
(``handle_django``), and finding the router behind an app.

:class:`~scheduler_emulator.service.router.TimerRouter` owns the routing (names, matching,
binding, answers); its ``wsgi()``, ``init_app()``, ``handle_flask()`` and
``functions_framework_handler()`` methods call the functions here, which turn a framework's
request into a :class:`~scheduler_emulator.service.request.TimerRequest` and the router's
:class:`~scheduler_emulator.service.router.TimerResponse` back into the framework's answer.
The ASGI twin is :mod:`~scheduler_emulator.service.asgi`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from .request import (
    EXCEPTION_ENVIRON_KEY,
    PROPAGATE_EXCEPTIONS_KEY,
    CaseInsensitiveHeaders,
    Router,
    TimerRequest,
    TimerResponse,
    WsgiApp,
    refuse_behind_a_token_check,
)

if TYPE_CHECKING:  # werkzeug is imported when a Flask request is served
    from werkzeug import wrappers

__all__ = [
    "TimerMiddleware",
    "functions_framework_handler",
    "django_response",
    "handle_django",
    "handle_flask",
    "init_app",
    "serve_wsgi",
]


def _environ_headers(environ: Mapping[str, Any]) -> list[tuple[str, str]]:
    headers = [
        (key[5:].replace("_", "-").title(), str(value))
        for key, value in environ.items()
        if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", "Content-Type"), ("CONTENT_LENGTH", "Content-Length")):
        if environ.get(key):
            headers.append((name, str(environ[key])))
    return headers


def _read_body(environ: Mapping[str, Any]) -> bytes:
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    try:
        length = int(environ.get("CONTENT_LENGTH") or -1)
    except ValueError:
        length = -1
    if length >= 0:
        return bytes(stream.read(length)) if length else b""
    if environ.get("wsgi.input_terminated"):  # chunked body, server-terminated stream
        return bytes(stream.read())
    return b""


def _wsgi_path(environ: Mapping[str, Any]) -> str:
    raw = str(environ.get("PATH_INFO") or "/")
    try:  # PEP 3333: the path's bytes decoded as latin-1; re-read them as UTF-8
        return raw.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return raw


def _not_found(start_response: Callable[..., Any]) -> list[bytes]:
    start_response("404 Not Found", [("Content-Length", "0")])
    return [b""]


class TimerMiddleware:
    """The WSGI app :meth:`TimerRouter.wsgi` returns: timer routes first, then ``app``.

    :param router: the router serving the timer routes (also ``self.timer_router``).
    :param app: the wrapped app for every other path, or ``None`` to answer those with 404.
    """

    def __init__(self, router: Router, app: WsgiApp | None) -> None:
        refuse_behind_a_token_check(app)
        self.timer_router = router
        self.app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        """Serve one request as :meth:`TimerRouter.__call__` does, other paths going to this
        middleware's ``app``."""
        return serve_wsgi(self.timer_router, environ, start_response, self.app)

    def __repr__(self) -> str:
        return f"TimerMiddleware({self.timer_router!r}, app={self.app!r})"


def serve_wsgi(
    router: Router,
    environ: dict[str, Any],
    start_response: Callable[..., Any],
    app: WsgiApp | None,
) -> Iterable[bytes]:
    path = _wsgi_path(environ)
    name = router.match(path)
    if name is None:
        return _not_found(start_response) if app is None else app(environ, start_response)
    request = TimerRequest(
        headers=CaseInsensitiveHeaders(_environ_headers(environ)),
        body=_read_body(environ),
        method=str(environ.get("REQUEST_METHOD", "GET")).upper(),
        path=path,
    )
    response = _dispatch(router, request, name, environ)
    assert response is not None
    start_response(response.status_line, list(response.headers))
    return [response.body]


def _dispatch(
    router: Router,
    request: Any,
    name: str | None,
    environ: MutableMapping[str, Any],
    body: Any = None,
) -> TimerResponse | None:
    """Dispatch a timer run: ``request`` a :class:`TimerRequest`, or a framework's request
    (Flask's, Django's: ``headers``, ``method``, ``path``) whose ``body`` is given. A handler's
    exception is left in ``environ`` (a WSGI environ, Django's ``META``), and raised when
    ``environ`` sets :data:`PROPAGATE_EXCEPTIONS_KEY`."""
    if not isinstance(request, TimerRequest):
        headers = CaseInsensitiveHeaders(request.headers.items())
        request = TimerRequest(headers=headers, body=body, method=request.method, path=request.path)
    answer = router.dispatch(request, name)
    if answer is not None and answer.exception is not None:
        environ[EXCEPTION_ENVIRON_KEY] = answer.exception
        if environ.get(PROPAGATE_EXCEPTIONS_KEY):
            raise answer.exception
    return answer


def init_app(router: Router, flask_app: Any) -> None:
    """Serve the timer routes in front of a Flask, Starlette or FastAPI app.

    Flask: wraps ``flask_app.wsgi_app`` with :meth:`TimerRouter.wsgi` and sets
    ``flask_app.extensions["timer_router"]``. Starlette and FastAPI (an app with
    ``add_middleware`` and ``state``): adds :class:`~scheduler_emulator.service.asgi.
    TimerAsgiMiddleware` as middleware and sets ``app.state.timer_router``; call it before
    the app serves its first request. Calling it again with the same router does nothing.

    :param flask_app: a :class:`flask.Flask` (anything with ``wsgi_app`` and ``extensions``),
        or a ``starlette.applications.Starlette`` / ``fastapi.FastAPI``.
    :raises ValueError: when another router is already installed on the app, or a token
        check is (:func:`~scheduler_emulator.service.request.refuse_behind_a_token_check`).
    :raises TypeError: for another app (Django's, any WSGI or ASGI app), saying what to use.
    """
    if not hasattr(flask_app, "wsgi_app") and hasattr(flask_app, "add_middleware"):
        _init_starlette(router, flask_app)
        return
    if not isinstance(getattr(flask_app, "extensions", None), dict):  # a trial's Django app
        raise TypeError(
            f"init_app takes a Flask, Starlette or FastAPI app, not {flask_app!r}. Put the "
            "router in front of any other WSGI app with application = router.wsgi(app) "
            "(Django: router.wsgi(get_wsgi_application()) in wsgi.py), of an ASGI app with "
            "router.asgi(app); or route the timer path to a view (Django: "
            "router.handle_django(request, name))."
        )
    installed = flask_app.extensions.get("timer_router")
    if installed is router:
        return
    if installed is not None:
        raise ValueError(
            f"{flask_app!r} already serves timers through {installed!r}; register every "
            "timer on that one router."
        )
    flask_app.wsgi_app = router.wsgi(flask_app.wsgi_app)
    flask_app.extensions["timer_router"] = router


def _init_starlette(router: Router, app: Any) -> None:
    from .asgi import TimerAsgiMiddleware

    installed = getattr(app.state, "timer_router", None)
    if installed is router:
        return
    if installed is not None:
        raise ValueError(
            f"{app!r} already serves timers through {installed!r}; register every "
            "timer on that one router."
        )
    refuse_behind_a_token_check(app)  # (its middleware's instances come at the first request)
    app.add_middleware(TimerAsgiMiddleware, router=router)
    app.state.timer_router = router


def handle_flask(
    router: Router, request: wrappers.Request, name: str | None = None
) -> wrappers.Response:
    """Answer a Flask/werkzeug request: for a functions-framework function or a Flask view.

    A function deployed with functions-framework (Cloud Functions 2nd gen)::

        @functions_framework.http
        def timers(request):
            return router.handle_flask(request)

    or a Flask view whose route carries the name::

        @app.route("/_triggers/timer/<path:name>", methods=["GET", "POST", "PUT"])
        def timers(name):
            return router.handle_flask(flask.request, name=name)

    :param request: the incoming request; its body is read (and cached on the request).
    :param name: the timer's name; ``None`` takes it from ``request.path`` with
        :meth:`TimerRouter.match`.
    :return: the answer as a :class:`werkzeug.wrappers.Response`; an empty 404 when ``name``
        is ``None`` and the path is not a timer route. When the handler raised, the exception
        is also in ``request.environ[EXCEPTION_ENVIRON_KEY]``.
    :raises Exception: the handler's exception, when ``request.environ`` sets
        :data:`PROPAGATE_EXCEPTIONS_KEY`.
    """
    from werkzeug.wrappers import Response

    answer = _dispatch(router, request, name, request.environ, request.get_data(cache=True))
    if answer is None:
        return Response(b"", status=404)
    return Response(answer.body, status=answer.status, headers=list(answer.headers))


def handle_django(router: Router, request: Any, name: str | None = None) -> Any:
    """Answer a Django request from a view whose URL pattern carries the name, so that the run
    goes through Django (its middleware, ``ATOMIC_REQUESTS``, the request signals that close
    stale database connections) and through pytest-django's ``live_server``, which serves
    Django's own handler, not ``WSGI_APPLICATION``::

        @csrf_exempt
        def timers(request, name):
            return router.handle_django(request, name)

        urlpatterns = [path("_triggers/timer/<str:name>", timers)]

    :param request: the ``django.http.HttpRequest``.
    :param name: the timer's name; ``None`` takes it from ``request.path``.
    :return: a ``django.http.HttpResponse``; an empty 404 when ``name`` is ``None`` and the path
        is not a timer route.
    :raises Exception: the handler's exception, when ``request.META`` sets
        :data:`PROPAGATE_EXCEPTIONS_KEY`.
    """
    answer = _dispatch(router, request, name, request.META, request.body)
    return django_response(TimerResponse(404, (), b"") if answer is None else answer)


def django_response(answer: TimerResponse) -> Any:
    """``answer`` as a ``django.http.HttpResponse`` (its status, headers and body)."""
    from django.http import HttpResponse

    response = HttpResponse(answer.body, status=answer.status)
    for header, value in answer.headers:
        if header.lower() != "content-length":  # (Django sets it)
            response[header] = value
    return response


def functions_framework_handler(
    router: Router,
) -> Callable[[wrappers.Request], wrappers.Response]:
    """Return a function for ``functions-framework``: ``request`` → :meth:`handle_flask`.

    ``timers = router.functions_framework_handler()`` in ``main.py``, deployed with
    ``--entry-point timers``; the returned function has a ``timer_router`` attribute.

    :return: ``handler(request) -> Response``.
    """

    def handler(request: wrappers.Request) -> wrappers.Response:
        return handle_flask(router, request)

    handler.timer_router = router  # type: ignore[attr-defined]
    return handler
