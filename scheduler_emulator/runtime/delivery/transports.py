"""Transports carry one attempt's HTTP request to its target and report what happened.

A transport sends a :class:`DeliveryRequest` and returns a :class:`TransportResult` with
either an HTTP status or a :class:`~scheduler_emulator.domain.outcomes.Failure`; it never
raises for a target's failure. Here: that contract, the one redirect loop of every transport
(:func:`follow`, with the rules of :mod:`~scheduler_emulator.domain.redirects`) and
:class:`HttpTransport`, real HTTP; the in-process ones are in :mod:`.in_process`.

``requests`` (and ``urllib3``, ``http.client``) time each socket operation, so a target that
sends one byte a second is never stopped. With ``pycurl`` (the ``curl`` extra), every
:class:`HttpTransport` request is a transfer of libcurl's event loop (:mod:`.curl_loop`),
bounded by its total timeout; a blocking request is one begun there and waited for. Without,
``http.client`` in the calling thread, with a :class:`Watchdog` that shuts the socket down at
the deadline, waking a blocked ``connect``/``send``/``recv`` at once. Either way each hop is
one request and :func:`follow` keeps every hop, body included, inside the attempt's one
deadline. Bodies are read up to ``max_body_bytes``, then the connection is closed; only the
headers Cloud Scheduler sends go out (no ``Accept`` or client ``User-Agent``); connections are
kept alive per origin::

    transport = HttpTransport()
    result = transport.send(DeliveryRequest("POST", "http://127.0.0.1:8000/run", {}), 15.0)
    transport.close()
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import itertools
import re
import select
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast
from urllib.parse import urlsplit

from ...domain.attempts import APP_RAISED, RESPONSE_EXCERPT_BYTES, excerpt_text
from ...domain.errors import ConfigurationError
from ...domain.outcomes import Failure, Outcome
from ...domain.redirects import (
    MAX_REDIRECTS,
    TOO_MANY_REDIRECTS,
    Answered,
    Hop,
    ResponseSample,
    next_hop,
)
from ...realtime import real_monotonic

if TYPE_CHECKING:
    from .curl_loop import CurlLoop

#: Bytes of a response body read at most (then the connection is closed): Cloud Scheduler keeps
#: no response bodies, so none is worth more than this.
MAX_BODY_BYTES = 1 << 20
_CHUNK = 64 * 1024
#: Seconds :func:`wait` waits past a request's deadline before it gives up on its sender (which
#: ends every request by its deadline: libcurl's total timeout, or the watchdog).
_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class DeliveryRequest(Hop):
    """The HTTP request of one attempt: its first :class:`~scheduler_emulator.domain.redirects.Hop`.

    :param method: HTTP method name (``"POST"``).
    :param url: absolute ``http(s)`` URL.
    :param headers: header name → value, in sending order.
    :param body: raw body bytes (empty for none).
    :param http2: ``True``: an ``http://`` URL goes over HTTP/2 with prior knowledge (h2c),
        ``False``: over HTTP/1.1, whatever the daemon's ``--http2``; ``None``: the HTTP
        client's own choice. Set by the job's emulator-only ``X-Emulator-Http2``
        (:data:`~scheduler_emulator.wire.EMULATOR_HTTP2_HEADER`); in-process transports
        ignore it.
    """

    http2: bool | None = None


@dataclass
class TransportResult:
    """What a transport observed.

    :param status: final HTTP status after redirects, or ``None`` if no response came.
    :param failure: why no response came (``None`` when ``status`` is set).
    :param detail: human-readable detail for the attempt's debug text (with a status: the
        exception an in-process app raised, which made it a 500).
    :param outcome: the attempt's outcome when the target kind classifies it itself (a Pub/Sub
        publish has no HTTP status); ``None`` lets ``status``/``failure`` decide (a 2xx succeeds).
    :param excerpt: the start of the final response's body as text
        (:func:`~scheduler_emulator.domain.attempts.excerpt_text`), ``""`` for none.
    :param content_type: the final response's ``Content-Type``, ``None`` without one.
    """

    status: int | None = None
    failure: Failure | None = None
    detail: str = ""
    outcome: Outcome | None = None
    excerpt: str = ""
    content_type: str | None = None


#: Called once, on any thread, with the result of a delivery begun by ``start``.
OnResult = Callable[[TransportResult], None]


class Transport(Protocol):
    """Sends a :class:`DeliveryRequest` and reports a :class:`TransportResult`; the engine
    closes it when it stops."""

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Deliver ``request``, giving up after ``timeout_seconds`` (the attempt deadline)."""

    def close(self) -> None:
        """Release what the transport holds (kept-alive connections, event loops); called
        once the engine has stopped, and may be called again (idempotent)."""


class StartingTransport(Transport, Protocol):
    """A transport that can also begin a delivery without holding the calling thread (the
    threaded driver sends through :meth:`start` when a transport has it, so that an attempt
    waiting on a slow target holds no thread)."""

    def start(self, request: DeliveryRequest, timeout_seconds: float, done: OnResult) -> bool:
        """Begin delivering ``request`` without blocking; call ``done`` once, on any thread,
        with the result :meth:`Transport.send` would return. Return ``False`` (and call
        nothing) when :meth:`can_start` is false: the caller then uses :meth:`Transport.send`."""

    def can_start(self, request: DeliveryRequest) -> bool:
        """Whether :meth:`start` can send ``request``."""


def startable(transport: Transport, request: DeliveryRequest) -> bool:
    """Whether ``transport`` is a :class:`StartingTransport` that can start ``request``."""
    can_start = getattr(transport, "can_start", None)
    return can_start is not None and bool(can_start(request))


#: Sends one request, following no redirect: ``send_one(hop, deadline, sample, answered)``, by
#: ``deadline`` (real monotonic seconds); ``sample`` keeps the answer's body start and type.
SendOne = Callable[[Hop, float, ResponseSample, Answered], None]
#: Called once when an attempt's request ends: ``(final status, None)`` or ``(None, exc)``.
Ended = Callable[[int | None, BaseException | None], None]


def follow(
    send_one: SendOne,
    hop: Hop,
    deadline: float,
    sample: ResponseSample,
    ended: Ended,
    redirects_left: int = MAX_REDIRECTS,
) -> None:
    """Send ``hop`` through ``send_one`` and follow redirects
    (:func:`~scheduler_emulator.domain.redirects.next_hop`) until an answer is final — every hop
    within ``deadline`` — then call ``ended`` once: on this thread when ``send_one`` answers at
    once, else on the thread of its answer. Each hop's callback calls this function again, not
    a closure of itself: no reference cycle, so an attempt's delivery, record and callbacks are
    freed as it ends, not at the cyclic collector's next pass.

    :param deadline: real monotonic seconds by which the whole attempt ends.
    :param sample: where the final answer's body start and ``Content-Type`` are kept.
    :param ended: gets ``(status, None)``, or ``(None, exc)``: the failure of the last hop,
        :class:`TimeoutError` when the deadline passed between hops, a :class:`ValueError`
        saying :data:`~scheduler_emulator.domain.redirects.TOO_MANY_REDIRECTS`.
    :param redirects_left: redirects still allowed after ``hop``.
    """
    if real_monotonic() >= deadline:
        ended(None, TimeoutError())
        return

    def answered(status: int | None, location: str | None, exc: BaseException | None) -> None:
        if status is None:
            ended(None, exc if exc is not None else TimeoutError())
            return
        following = next_hop(status, location, hop)
        if following is None:
            ended(status, None)
        elif redirects_left == 0:
            ended(None, ValueError(TOO_MANY_REDIRECTS))
        else:
            follow(send_one, following, deadline, sample, ended, redirects_left - 1)

    sample.restart()  # the answer kept is the last hop's
    send_one(hop, deadline, sample, answered)


#: Begins a request: ``begin(deadline, sample, ended)``, as :func:`follow` takes them.
Begin = Callable[[float, ResponseSample, Ended], object]


def wait(begin: Begin, timeout_seconds: float, sample: ResponseSample) -> int:
    """Begin a request that ends within ``timeout_seconds`` (its sender sees to it); return its
    status or raise its failure (:class:`TimeoutError` if none came :data:`_GRACE_SECONDS` on)."""
    deadline = real_monotonic() + timeout_seconds
    answer: Future[int] = Future()

    def ended(status: int | None, exc: BaseException | None) -> None:
        if exc is None:
            answer.set_result(cast(int, status))
        else:
            answer.set_exception(exc)

    begin(deadline, sample, ended)
    return answer.result(max(0.0, deadline - real_monotonic()) + _GRACE_SECONDS)


def waited_result(begin: Begin, timeout_seconds: float) -> TransportResult:
    """:func:`wait` for a request; its end as :func:`http_result` reads it."""
    sample = ResponseSample(RESPONSE_EXCERPT_BYTES)
    try:
        return http_result(wait(begin, timeout_seconds, sample), None, timeout_seconds, sample)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return http_result(None, exc, timeout_seconds, sample)


class HttpTransport:
    """Real HTTP delivery over kept-alive connections, with a total deadline and a capped body
    read, through libcurl's event loop or ``http.client`` (the module docstring); thread-safe.

    :param max_body_bytes: response body bytes read at most; more closes the connection.
    :param curl: ``None`` (the default): libcurl if ``pycurl`` can be imported; ``False``:
        ``http.client`` only; ``True``: libcurl, or :class:`ImportError`.
    :param http2: send ``http://`` requests over HTTP/2 with prior knowledge (h2c), through
        libcurl; ``https://`` keeps to HTTP/1.1.
    :raises ImportError: with ``curl=True`` and no ``pycurl``.
    :raises ConfigurationError: with ``http2=True`` when no HTTP/2 client can be had (the
        message says why: :func:`http2_problem`).
    :ivar uses_curl: whether requests go through libcurl.
    """

    def __init__(
        self, *, max_body_bytes: int = MAX_BODY_BYTES, curl: bool | None = None, http2: bool = False
    ) -> None:
        self.max_body_bytes = max_body_bytes
        self.http2 = http2
        self._watchdog = Watchdog()
        self._idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None
        self._loop: CurlLoop | None = None  # made on first use (again after close())
        reason = http2_problem() if curl is not False else "curl=False excludes libcurl"
        if http2 and reason is not None:
            raise ConfigurationError(f"HTTP/2 deliveries (--http2) are not possible: {reason}")
        self.uses_curl = curl is not False
        if self.uses_curl:
            try:
                from . import curl_loop  # noqa: F401 - is pycurl there?
            except ImportError:
                if curl:
                    raise
                self.uses_curl = False

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Send over the network, following redirects, all within ``timeout_seconds``; the
        result is the final status, or a CONNECTION / DEADLINE failure."""
        return waited_result(functools.partial(self._follow, request), timeout_seconds)

    def start(self, request: DeliveryRequest, timeout_seconds: float, done: OnResult) -> bool:
        """Begin :meth:`send` as a transfer of libcurl's event loop, holding no thread; ``done``
        gets the result :meth:`send` would return, on another thread. Return ``False`` when
        nothing was sent, without ``pycurl`` (use :meth:`send`)."""
        if not self.uses_curl:
            return False
        sample = ResponseSample(RESPONSE_EXCERPT_BYTES)

        def ended(status: int | None, exc: BaseException | None) -> None:
            done(http_result(status, exc, timeout_seconds, sample))

        self._follow(request, real_monotonic() + timeout_seconds, sample, ended)
        return True

    def can_start(self, request: DeliveryRequest) -> bool:
        """Whether :meth:`start` can send ``request``: with ``pycurl`` installed."""
        return self.uses_curl

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        deadline_seconds: float,
        sample: ResponseSample | None = None,
    ) -> int:
        """Send one request, follow redirects, and return the final status (what :meth:`send`
        does, raising instead of classifying; the Firebase bridge's own calls use it).
        ``method``, ``url``, ``headers`` and ``body`` are as :class:`DeliveryRequest`'s
        (``Host`` and ``Content-Length`` are added; the body is sent for every method that has
        one).

        :param deadline_seconds: the whole request, redirects and body included, ends within
            this many seconds.
        :param sample: where to keep the start of the final response's body and its
            ``Content-Type`` (``None``: nothing is kept).
        :raises TimeoutError: when the deadline passed first.
        :raises OSError: or :class:`http.client.HTTPException` when the connection failed.
        :raises ValueError: for a URL that is not http(s) or too many redirects.
        """
        sample = sample if sample is not None else ResponseSample(0)  # keeps nothing
        begin = functools.partial(self._follow, DeliveryRequest(method, url, headers, body))
        return wait(begin, deadline_seconds, sample)

    def close(self) -> None:
        """Close every idle connection and libcurl's event loop: requests in flight end at once
        (libcurl's with an :class:`OSError`, ``http.client``'s as at their deadline). The
        transport can be used again after (a new loop is made). Idempotent."""
        self._watchdog.end_all()
        with self._lock:
            idle, self._idle = self._idle, {}
            loop, self._loop = self._loop, None
        for conn in itertools.chain.from_iterable(idle.values()):
            conn.close()
        if loop is not None:
            loop.close()

    def _follow(
        self, request: DeliveryRequest, deadline: float, sample: ResponseSample, done: Ended
    ) -> None:
        """Every hop through libcurl's event loop, or through ``http.client`` in this thread."""
        http2 = self.http2 if request.http2 is None else request.http2
        if problem := http2 and http2_problem():
            done(None, ValueError(f"HTTP/2 deliveries are not possible: {problem}"))
            return
        if not self.uses_curl:
            follow(self._send_one, request, deadline, sample, done)
            return
        with self._lock:
            if self._loop is None:
                from .curl_loop import CurlLoop

                self._loop = CurlLoop(self.max_body_bytes)
            loop = self._loop
        follow(functools.partial(loop.submit, http2=http2), request, deadline, sample, done)

    def _send_one(
        self, hop: Hop, deadline: float, sample: ResponseSample, answered: Answered
    ) -> None:
        """One request through ``http.client`` in this thread, the watchdog armed for it."""
        guard = self._watchdog.arm(deadline)
        try:
            status, location = self._once(hop, deadline, guard, sample)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            late = self._watchdog.disarm(guard) or real_monotonic() >= deadline
            timed_out = late and not isinstance(exc, ValueError)  # a bad URL stays itself
            answered(None, None, TimeoutError() if timed_out else exc)
            return
        if self._watchdog.disarm(guard):
            answered(None, None, TimeoutError())
        else:
            answered(status, location, None)

    def _once(
        self, hop: Hop, deadline: float, guard: _Guard, sample: ResponseSample
    ) -> tuple[int, str | None]:
        parts = urlsplit(hop.url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {hop.url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        key = (parts.scheme, parts.hostname or "", port)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn, reused = self._checkout(key, deadline)
        guard.conn = conn
        if guard.fired:  # the deadline passed while we were getting here
            conn.close()
            raise TimeoutError()
        try:
            try:
                conn.request(hop.method, path, body=hop.body or None, headers=dict(hop.headers))
                response = conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if not reused or guard.fired:
                    raise
                conn.close()  # the server closed a kept-alive connection: one fresh try
                conn = guard.conn = self._connect(key, deadline)
                conn.request(hop.method, path, body=hop.body or None, headers=dict(hop.headers))
                response = conn.getresponse()
            status, location = response.status, response.getheader("Location")
            sample.content_type = response.getheader("Content-Type")
            left = self.max_body_bytes  # past it, the connection is closed
            while chunk := response.read(min(_CHUNK, left + 1)):
                sample.take(chunk)
                left -= len(chunk)
                if left < 0:
                    break
        except BaseException:
            conn.close()
            raise
        if left >= 0 and not response.will_close and not guard.fired:
            with self._lock:
                self._idle.setdefault(key, []).append(conn)
        else:
            conn.close()
        return status, location

    def _checkout(
        self, key: tuple[str, str, int], deadline: float
    ) -> tuple[http.client.HTTPConnection, bool]:
        while True:
            with self._lock:
                idle = self._idle.get(key)
                conn = idle.pop() if idle else None
            if conn is None:
                return self._connect(key, deadline), False
            if conn.sock is not None and not _dropped(conn.sock):
                conn.sock.settimeout(max(0.001, deadline - real_monotonic()))
                return conn, True
            conn.close()

    def _connect(self, key: tuple[str, str, int], deadline: float) -> http.client.HTTPConnection:
        scheme, host, port = key
        timeout = max(0.001, deadline - real_monotonic())
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=self._ssl)
        return http.client.HTTPConnection(host, port, timeout=timeout)


def http_result(
    status: int | None, exc: BaseException | None, timeout_seconds: float, sample: ResponseSample
) -> TransportResult:
    """What an HTTP exchange came to: its final status, or the failure ``exc`` stands for."""
    if status is not None:
        error = sample.exception  # an in-process app's own bug: a 500 to Cloud Scheduler
        detail = "" if error is None else f"{APP_RAISED}{type(error).__name__}: {_short(error)}"
        excerpt = excerpt_text(sample.body)
        return TransportResult(
            status, detail=detail, excerpt=excerpt, content_type=sample.content_type
        )
    if isinstance(exc, TimeoutError):
        return TransportResult(
            failure=Failure.DEADLINE, detail=f"No response within {timeout_seconds:g} s."
        )
    return TransportResult(failure=Failure.CONNECTION, detail=_reason(cast(BaseException, exc)))


_ERRNO_TEXT = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


def _reason(exc: BaseException) -> str:
    """The root cause of a connection failure as one sentence ("Connection refused.")."""
    text = str(exc)
    if match := _ERRNO_TEXT.search(text):
        return match.group(1).strip().rstrip(".") + "."
    for marker in ("RemoteDisconnected", "ConnectionResetError", "SSLError", "NameResolution"):
        if marker in text:
            return f"{marker}."
    return _short(exc)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


class Watchdog:
    """One thread that shuts down the sockets of requests still running at their deadline:
    :meth:`arm` before a request, :meth:`disarm` after it. Only requests in flight are kept (a
    few per delivery thread), so each wake-up scans a small set."""

    def __init__(self) -> None:
        self._active: dict[_Guard, float] = {}  # guard -> its deadline
        self._wake_at: float | None = None
        self._cond = threading.Condition()
        self._started = False

    def arm(self, deadline: float) -> _Guard:
        """Watch a request that must end by ``deadline`` (real monotonic seconds); return the
        guard to attach the connection to and to :meth:`disarm`."""
        with self._cond:
            guard = _Guard()
            self._active[guard] = deadline
            if not self._started:
                self._started = True
                threading.Thread(target=self._run, name="deadline-watchdog", daemon=True).start()
            if self._wake_at is None or deadline < self._wake_at:
                self._cond.notify()
        return guard

    def end_all(self) -> None:
        """End every request watched now, as their deadlines would (the transport closes)."""
        with self._cond:
            for guard in self._active:
                guard.fire()
            self._active.clear()

    def disarm(self, guard: _Guard) -> bool:
        """Stop watching; return ``True`` if the deadline already fired for this request."""
        with self._cond:
            self._active.pop(guard, None)
            return guard.fired

    def _run(self) -> None:
        with self._cond:
            while True:
                now = real_monotonic()
                expired = [guard for guard, deadline in self._active.items() if deadline <= now]
                for guard in expired:
                    guard.fire()
                    del self._active[guard]
                self._wake_at = min(self._active.values(), default=None)
                self._cond.wait(None if self._wake_at is None else self._wake_at - now)


@dataclass(eq=False, slots=True)
class _Guard:
    """The watchdog's handle on one request: the connection to shut down, whether it fired."""

    fired: bool = False
    conn: http.client.HTTPConnection | None = None

    def fire(self) -> None:
        self.fired = True
        sock = self.conn.sock if self.conn is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):  # not connected yet, or already closed
                sock.shutdown(socket.SHUT_RDWR)


@functools.cache
def http2_problem() -> str | None:
    """Why HTTP/2 (h2c) deliveries cannot be sent here, or ``None`` when they can: they need
    ``pycurl`` whose libcurl was built with HTTP/2 (nghttp2). Asked once."""
    try:
        import pycurl
    except ImportError:
        return "they need pycurl (pip install 'cloud-scheduler-emulator[curl]')."
    if pycurl.version_info()[4] & pycurl.VERSION_HTTP2:
        return None
    return "pycurl's libcurl was built without HTTP/2 (nghttp2)."


def _dropped(sock: socket.socket) -> bool:
    """Whether an idle kept-alive connection was closed (or sent junk) by the server."""
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
