"""In-process transports: a job's request handed to a WSGI or ASGI app in this process.

- :class:`WsgiTransport` — calls a WSGI app in-process.
- :class:`AsgiTransport` — the same for an ASGI app (Starlette, FastAPI...), through httpx's
  ``ASGITransport`` on an event loop of the transport's own (the ``asgi`` extra).
- :class:`MountTransport` — routes URLs by prefix to in-process WSGI or ASGI apps (told apart by
  :func:`is_asgi_app`) and everything else to a fallback transport (real HTTP by default)::

      transport = MountTransport({"http://orders.test": orders_app})
      emulator = Emulator(transport=transport)
      ...
      transport.close()   # stops the event loops of mounted ASGI apps

An app's call is one request; redirects and the attempt deadline are followed above it by the
same loop as real HTTP's (:func:`~scheduler_emulator.runtime.delivery.transports.follow`).
"""

from __future__ import annotations

import _thread
import functools
import inspect
import io
import logging
import queue
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from ...domain.redirects import Answered, Hop, ResponseSample
from ...realtime import real_monotonic
from .transports import (
    DeliveryRequest,
    HttpTransport,
    OnResult,
    StartingTransport,
    Transport,
    TransportResult,
    follow,
    startable,
    waited_result,
)

logger = logging.getLogger("scheduler_emulator")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
#: An ASGI 3 application: ``await app(scope, receive, send)``.
AsgiApp = Callable[[Any, Any, Any], Awaitable[None]]
#: Seconds starting (or stopping) an ASGI app's event loop may take.
_LOOP_START_SECONDS = 30.0


@functools.lru_cache(maxsize=1024)
def _url_environ(url: str) -> Mapping[str, str]:
    """The environ entries a URL gives, parsed once per URL (a job's attempts share theirs)."""
    parts = urlsplit(url)
    scheme = parts.scheme or "http"
    return {
        "PATH_INFO": unquote(parts.path or "/", encoding="latin-1"),
        "QUERY_STRING": parts.query,
        "SERVER_NAME": parts.hostname or "localhost",
        "SERVER_PORT": str(parts.port or (443 if scheme == "https" else 80)),
        "HTTP_HOST": parts.netloc,
        "wsgi.url_scheme": scheme,
    }


@functools.lru_cache(maxsize=1024)
def _environ_key(name: str) -> str:
    """The environ key of request header ``name`` (``""``: not passed as a header)."""
    key = name.upper().replace("-", "_")
    if key == "CONTENT_TYPE":
        return key
    return "" if key in ("CONTENT_LENGTH", "HOST") else "HTTP_" + key


def build_environ(request: Hop) -> dict[str, Any]:
    """Return a fresh PEP 3333 environ for ``request`` (a :class:`DeliveryRequest` or a
    redirect's hop; what a WSGI server would build; its URL gives host, port, path and query)."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method,
        "SCRIPT_NAME": "",
        **_url_environ(request.url),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_LENGTH": str(len(request.body)),
        "wsgi.version": (1, 0),
        "wsgi.input": io.BytesIO(request.body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in request.headers.items():
        if key := _environ_key(name):
            environ[key] = value
    return environ


def call_wsgi(app: WsgiApp, request: Hop, sample: ResponseSample) -> tuple[int, Mapping[str, str]]:
    """Call ``app`` with ``request`` in-process and return ``(status, headers)``, header names
    lowercased; the body is read and its start kept in ``sample``.

    :raises BaseException: whatever the app raises.
    """
    captured: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        captured.update(status=status, headers=headers)
        return lambda data: None

    body_iter = app(build_environ(request), start_response)
    try:
        for chunk in body_iter:
            sample.take(chunk)
    finally:
        if (close := getattr(body_iter, "close", None)) is not None:
            close()
    status = int(captured["status"].split(" ", 1)[0])
    return status, {name.lower(): value for name, value in captured["headers"]}


class _WsgiThreads:
    """Runs in-process WSGI calls each on a thread of its own (reused: one per call under way),
    so that the caller stops waiting at the attempt deadline. A call cannot be interrupted: one
    past its deadline keeps its thread until it returns, as a real server's request would."""

    def __init__(self) -> None:
        self._idle: list[tuple[queue.SimpleQueue[Any], queue.SimpleQueue[Any]]] = []
        self._lock = threading.Lock()

    def call(self, work: Callable[[], Any], timeout: float) -> Any:
        """``work()``'s result (or exception) within ``timeout`` real seconds.

        :raises TimeoutError: when ``timeout`` passed first (``work`` goes on, unseen)."""
        with self._lock:
            pipes = self._idle.pop() if self._idle else None
        if pipes is None:  # (``_thread``: freezegun reads the real time for code that
            pipes = queue.SimpleQueue(), queue.SimpleQueue()  # ``threading`` calls)
            _thread.start_new_thread(_serve, pipes)
        pipes[0].put(work)
        try:
            failed, result = pipes[1].get(timeout=timeout)
        except queue.Empty:  # the thread is left to the call, and ends after it
            pipes[0].put(None)
            raise TimeoutError from None
        with self._lock:
            self._idle.append(pipes)
        if failed:
            raise result
        return result

    def close(self) -> None:
        """End the idle threads (a call under way ends its thread when it returns)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for inbox, _ in idle:
            inbox.put(None)


def _serve(inbox: queue.SimpleQueue[Any], outbox: queue.SimpleQueue[Any]) -> None:
    while (work := inbox.get()) is not None:
        try:
            outbox.put((False, work()))
        except BaseException as exc:  # the app's: the caller raises it
            outbox.put((True, exc))


def is_asgi_app(app: object) -> bool:
    """Whether ``app`` is an ASGI 3 app: a coroutine function ``async def app(scope, receive,
    send)`` or an object whose ``__call__`` is one (Starlette, FastAPI, ASGI middleware); a WSGI
    app's ``__call__`` is a plain function."""
    call = getattr(app, "__call__", None)  # noqa: B004 - the coroutine check needs __call__
    return inspect.iscoroutinefunction(app) or inspect.iscoroutinefunction(call)


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - the asgi extra is missing
        raise ImportError(
            "Calling an ASGI app in-process needs httpx: pip install "
            "'cloud-scheduler-emulator[asgi]'."
        ) from exc
    return httpx


async def _lifespan(app: AsgiApp, state: dict[str, Any], receive: Any, send: Any) -> None:
    """Run ``app``'s lifespan (the ASGI lifespan protocol, as uvicorn runs it); an app that
    raises on, or returns from, a lifespan scope is one without lifespan events."""
    scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": state}
    try:
        await app(scope, receive, send)
    except Exception as exc:  # (an app that takes HTTP scopes only)
        logger.debug("the ASGI app has no lifespan: %r", exc)
    await send({"type": "lifespan.unsupported"})


class AsgiCaller:
    """Calls one ASGI app in-process, from any thread, on an event loop of its own.

    Requests go through httpx's ``ASGITransport`` (no socket) on one anyio event loop that runs
    in a daemon thread for the caller's lifetime, as a server's loop would: objects the app binds
    to its loop stay valid from one request to the next. The app's lifespan runs as a server
    runs it (trial 109: a FastAPI ``lifespan=`` never ran): startup before the first request,
    its ``state`` copied into each request's scope, shutdown at :meth:`close`.

    :param app: the ASGI 3 app.
    :raises ImportError: when httpx (the ``asgi`` extra) is not installed.
    :raises RuntimeError: when the app's lifespan startup fails, naming its message.
    """

    def __init__(self, app: AsgiApp) -> None:
        httpx = _httpx()
        import anyio
        from anyio.from_thread import BlockingPortal

        state: dict[str, Any] = {}

        async def with_state(scope: Any, receive: Any, send: Any) -> None:
            await app({**scope, "state": dict(state)}, receive, send)

        self._client = httpx.AsyncClient(transport=httpx.ASGITransport(app=with_state))
        # send only the request's own headers, as Cloud Scheduler sets them
        self._client.headers.clear()
        self._portal: BlockingPortal | None = None
        self._abandoned = False  # a request left running past its deadline
        self._shutdown: Callable[[], Awaitable[None]]  # the lifespan's, set with the portal
        started, failed = threading.Event(), [""]

        async def serve() -> None:
            to_app, events = anyio.create_memory_object_stream[Any](2)
            replies, from_app = anyio.create_memory_object_stream[Any](4)
            async with to_app, events, replies, from_app, anyio.create_task_group() as lifespan:
                lifespan.start_soon(_lifespan, app, state, events.receive, replies.send)
                await to_app.send({"type": "lifespan.startup"})
                reply = await from_app.receive()
                if reply["type"] == "lifespan.startup.failed":  # (Starlette's: a traceback)
                    logger.error("the ASGI app's lifespan startup failed: %s", reply.get("message"))
                    said = str(reply.get("message") or "").strip() or "no message"
                    failed[0] = f"lifespan startup failed: {said.splitlines()[-1]}"
                else:

                    async def shutdown() -> None:
                        if reply["type"] == "lifespan.startup.complete":
                            await to_app.send({"type": "lifespan.shutdown"})
                            with anyio.move_on_after(_LOOP_START_SECONDS):
                                await from_app.receive()

                    async with BlockingPortal() as portal:
                        self._portal, self._shutdown = portal, shutdown
                        started.set()
                        await portal.sleep_until_stopped()
                lifespan.cancel_scope.cancel()
            started.set()

        self._thread = threading.Thread(
            target=anyio.run, args=[serve], name="asgi-app-loop", daemon=True
        )
        self._thread.start()
        if not started.wait(_LOOP_START_SECONDS) or failed[0]:
            raise RuntimeError(failed[0] or "an in-process ASGI app's lifespan startup hung")

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes = b"",
        timeout_seconds: float | None = None,
    ) -> Any:
        """Send one request to the app and return the ``httpx.Response`` (body read).

        :param timeout_seconds: real seconds after which the app's work is cancelled (work on
            a worker thread, a Starlette ``def`` endpoint's, cannot be: it goes on unseen, as a
            WSGI app's does; trial 111: it held the test past every deadline).
        :raises TimeoutError: when ``timeout_seconds`` passed first.
        :raises Exception: whatever the app raised (after any response it sent).
        """
        portal = self._portal
        if portal is None:
            raise RuntimeError("this ASGI caller is closed")
        call = functools.partial(self._client.request, headers=dict(headers), content=body)
        answer = portal.start_task_soon(call, method, url)
        try:
            return answer.result(timeout_seconds)  # None: no limit
        except TimeoutError:
            answer.cancel()
            self._abandoned = True
            raise

    def close(self) -> None:
        """Stop the event loop (idempotent), not waiting for work past its deadline."""
        portal, self._portal = self._portal, None
        if portal is None:
            return
        portal.call(self._client.aclose)
        portal.call(self._shutdown)  # now, beside any work left past its deadline (trial 113)
        portal.start_task_soon(portal.stop, True)  # cancel what is left
        self._thread.join(0 if self._abandoned else _LOOP_START_SECONDS)


class MountTransport:
    """Route requests to in-process WSGI or ASGI apps by URL prefix; others go to ``fallback``.

    :param mounts: URL prefix (``"http://orders.test"`` or ``"http://127.0.0.1:8000/api"``) →
        WSGI or ASGI app. The longest matching prefix wins.
    :param fallback: the transport for unmounted URLs; real HTTP by default.
    """

    def __init__(
        self,
        mounts: Mapping[str, WsgiApp | AsgiApp] | None = None,
        fallback: Transport | None = None,
    ) -> None:
        self._mounts: dict[str, Any] = {}
        # id(app) -> (app, its AsgiCaller; None for a WSGI app): is_asgi_app asked once per app
        self._callers: dict[int, tuple[object, AsgiCaller | None]] = {}
        self._callers_lock = threading.Lock()
        self._wsgi = _WsgiThreads()
        self.fallback: Transport = fallback if fallback is not None else HttpTransport()
        for prefix, app in (mounts or {}).items():
            self.mount(prefix, app)

    def mount(self, prefix: str, app: WsgiApp | AsgiApp) -> None:
        """Route URLs that start with ``prefix`` to ``app``, a WSGI or an ASGI app
        (:func:`is_asgi_app`; called through :class:`AsgiCaller`, started on first delivery).

        :raises ValueError: if ``prefix`` is not an absolute http(s) URL.
        :raises TypeError: if ``app`` is not callable (a WSGI or ASGI app is).
        :raises ImportError: for an ASGI app when httpx (the ``asgi`` extra) is not installed.
        """
        if not prefix.startswith(("http://", "https://")):
            raise ValueError(f"mount prefix must start with http:// or https://; got {prefix!r}.")
        if not callable(app):  # e.g. the "module:app" text a server takes
            raise TypeError(f"mount takes a WSGI or ASGI app, the object itself; got {app!r}.")
        if is_asgi_app(app):
            _httpx()  # fail now, not on the first delivery
        self._mounts[prefix.rstrip("/")] = app

    def close(self) -> None:
        """Stop the event loops of the ASGI apps delivered to and the idle threads of WSGI
        calls, and close the fallback transport's connections, if it keeps any."""
        self._wsgi.close()
        with self._callers_lock:
            callers, self._callers = list(self._callers.values()), {}
        for _, caller in callers:
            if caller is not None:
                caller.close()
        self.fallback.close()

    def asgi_caller(self, app: Any) -> AsgiCaller | None:
        """The :class:`AsgiCaller` of an ASGI ``app`` (started on first use, kept until
        :meth:`close`, so that other calls share the app's loop); ``None`` for a WSGI app."""
        with self._callers_lock:
            known = self._callers.get(id(app))
            if known is None or known[0] is not app:
                caller = AsgiCaller(app) if is_asgi_app(app) else None
                known = self._callers[id(app)] = (app, caller)
            return known[1]

    @property
    def mounted(self) -> list[str]:
        """The mounted URL prefixes."""
        return list(self._mounts)

    def find(self, url: str) -> Any:
        """The app (WSGI or ASGI) of the longest prefix ``url`` matches, or ``None``."""
        found = [p for p in self._mounts if url == p or url.startswith((p + "/", p + "?"))]
        return self._mounts[max(found, key=len)] if found else None

    def start(self, request: DeliveryRequest, timeout_seconds: float, done: OnResult) -> bool:
        """Begin an unmounted URL's delivery through the fallback transport when it can
        (:meth:`can_start`), holding no thread; else ``False``: use :meth:`send`."""
        starter = cast(StartingTransport, self.fallback)
        return self.can_start(request) and starter.start(request, timeout_seconds, done)

    def can_start(self, request: DeliveryRequest) -> bool:
        """Whether :meth:`start` can send ``request``: unmounted, and the fallback can."""
        return self.find(request.url) is None and startable(self.fallback, request)

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Deliver in-process when the URL is mounted, else through the fallback transport.

        At ``timeout_seconds`` of real time the attempt is a DEADLINE failure: a WSGI app's call
        (on a thread of its own, :class:`_WsgiThreads`) cannot be interrupted and goes on unseen;
        an ASGI app's work is cancelled. An exception raised by the app is kept in the
        result and the attempt counts as a 500. A redirect to an unmounted URL goes on through
        the fallback transport, within what is left of the deadline.
        """
        first_app = self.find(request.url)
        if first_app is None:
            return self.fallback.send(request, timeout_seconds)

        def send_one(hop: Hop, deadline: float, sample: ResponseSample, answered: Answered) -> None:
            app = first_app if hop is request else self.find(hop.url)
            if app is None:
                answered(None, None, _Unmounted(hop, deadline))
                return
            try:
                if (caller := self.asgi_caller(app)) is None:
                    left = max(0.001, deadline - real_monotonic())
                    work = functools.partial(call_wsgi, app, hop, sample)
                    status, headers = self._wsgi.call(work, left)
                else:
                    left = max(0.001, deadline - real_monotonic())
                    response = caller.request(hop.method, hop.url, hop.headers, hop.body, left)
                    sample.take(response.content)
                    status, headers = response.status_code, response.headers  # case-insensitive
            except TimeoutError:  # an ASGI app's work cancelled at the deadline, a WSGI call
                status, headers = None, {}  # still under way
            except Exception as exc:  # the target's own bug: a 500 to Cloud Scheduler
                logger.error("the app mounted for %s raised", hop.url, exc_info=exc)
                status, headers = 500, {}
                sample.exception = exc
            if status is None or real_monotonic() > deadline:
                answered(None, None, TimeoutError())
                return
            sample.content_type = headers.get("content-type")
            answered(status, headers.get("location"), None)

        try:
            return waited_result(functools.partial(follow, send_one, request), timeout_seconds)
        except _Unmounted as left:
            hop, deadline = left.args
            rest = DeliveryRequest(hop.method, hop.url, hop.headers, hop.body, request.http2)
            return self.fallback.send(rest, max(0.001, deadline - real_monotonic()))


class _Unmounted(Exception):
    """``(hop, deadline)``: a redirect led out of the mounted apps; the fallback sends the rest."""


class WsgiTransport(MountTransport):
    """Deliver every request to one in-process WSGI app, whatever the URL's host.

    :param app: the WSGI application (an ASGI app works too: see :class:`AsgiTransport`).
    """

    def __init__(self, app: WsgiApp | AsgiApp) -> None:
        super().__init__()
        self._app = app

    def find(self, url: str) -> Any:
        """Every URL goes to the app."""
        return self._app


class AsgiTransport(WsgiTransport):
    """Deliver every request to one in-process ASGI app, whatever the URL's host.

    Needs httpx (the ``asgi`` extra); call :meth:`close` when done, to stop the app's event loop.

    :param app: the ASGI 3 application.
    :raises TypeError: when ``app`` is not an ASGI app.
    """

    def __init__(self, app: AsgiApp) -> None:
        if not is_asgi_app(app):
            raise TypeError(f"{app!r} is not an ASGI app; use WsgiTransport for a WSGI app.")
        _httpx()
        super().__init__(app)
