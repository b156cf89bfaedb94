"""An HTTP/1.1 client whose deadline bounds the whole request, whatever the server does.

``requests`` (and ``urllib3``, ``http.client``) apply their timeout to each socket operation, so a
target that sends one byte a second is never stopped. :class:`HttpClient` has one way of
sending: with ``pycurl`` installed (the ``curl`` extra), every request — ``http://`` and
``https://`` — is a transfer of libcurl's event loop
(:class:`~scheduler_emulator.runtime._curl_loop.CurlLoop`), whose total timeout bounds it; a
blocking request is one begun there and waited for. Without ``pycurl``, ``http.client`` in the
calling thread, with a :class:`Watchdog` armed for each request: at the deadline it shuts the
connection's socket down, which wakes the blocked ``connect``/``send``/``recv`` at once, and the
request ends with :class:`DeadlineExceeded`. Either way each hop sends exactly one request and
redirects are followed above it, by :func:`~scheduler_emulator.runtime._redirects.follow`:
connect, sending, the response headers, redirects and the body are all inside the one deadline.
Response bodies are read up to ``max_body_bytes`` and discarded; past the cap the connection is
closed instead of read further.

Connections are kept alive per origin and reused (a dropped idle connection is noticed before
reuse), so a fast local target costs one ``send`` and one ``recv`` per attempt::

    client = HttpClient()
    status = client.request("POST", "http://127.0.0.1:8000/run", {"X": "1"}, b"", 15.0)
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import ssl
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..domain.errors import ConfigurationError
from ..realtime import real_monotonic
from ._redirects import Answered, DeadlineExceeded, Ended, Hop, ResponseSample, follow, wait

if TYPE_CHECKING:
    from ._curl_loop import CurlLoop

#: Bytes of a response body read at most (then the connection is closed): Cloud Scheduler keeps
#: no response bodies, so none is worth more than this.
MAX_BODY_BYTES = 1 << 20
_CHUNK = 64 * 1024


class Watchdog:
    """One thread that shuts down the sockets of requests still running at their deadline.

    Only requests in flight are kept (a few per delivery thread), so each wake-up scans a small
    set. Use :meth:`arm` before a request and :meth:`disarm` after it.
    """

    def __init__(self) -> None:
        self._active: dict[int, tuple[float, _Guard]] = {}
        self._next_key = 0
        self._wake_at: float | None = None
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float) -> _Guard:
        """Watch a request that must end by ``deadline`` (real monotonic seconds).

        :return: the guard to attach the connection to and to :meth:`disarm`.
        """
        with self._cond:
            self._next_key += 1
            guard = _Guard(self._next_key)
            self._active[guard.key] = (deadline, guard)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="deadline-watchdog", daemon=True
                )
                self._thread.start()
            if self._wake_at is None or deadline < self._wake_at:
                self._cond.notify()
        return guard

    def disarm(self, guard: _Guard) -> bool:
        """Stop watching; return ``True`` if the deadline already fired for this request."""
        with self._cond:
            self._active.pop(guard.key, None)
            return guard.fired

    def _run(self) -> None:
        with self._cond:
            while True:
                now = real_monotonic()
                expired = [g for deadline, g in self._active.values() if deadline <= now]
                for guard in expired:
                    guard.fire()
                    del self._active[guard.key]
                pending = [deadline for deadline, _ in self._active.values()]
                self._wake_at = min(pending) if pending else None
                self._cond.wait(None if self._wake_at is None else self._wake_at - now)


class _Guard:
    """The watchdog's handle on one request: the connection to shut down, whether it fired."""

    __slots__ = ("key", "fired", "conn")

    def __init__(self, key: int) -> None:
        self.key = key
        self.fired = False
        self.conn: http.client.HTTPConnection | None = None

    def fire(self) -> None:
        self.fired = True
        sock = self.conn.sock if self.conn is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):  # not connected yet, or already closed
                sock.shutdown(socket.SHUT_RDWR)


class HttpClient:
    """Keep-alive HTTP/1.1 requests with a total deadline and a capped body read; thread-safe.

    With ``pycurl`` installed (the ``curl`` extra) every request goes through libcurl's event
    loop (:class:`~scheduler_emulator.runtime._curl_loop.CurlLoop`, its thread started on first
    use), with the same wire and the same rules as ``http.client``, which is used otherwise.

    :param max_body_bytes: response body bytes read at most; more closes the connection.
    :param watchdog: shared with other clients if given; a new one otherwise.
    :param curl: ``None`` (the default): libcurl if ``pycurl`` can be imported; ``False``:
        ``http.client`` only; ``True``: libcurl, or :class:`ImportError`.
    :param http2: send ``http://`` requests over HTTP/2 with prior knowledge (h2c), through
        libcurl; ``https://`` keeps to HTTP/1.1.
    :raises ImportError: with ``curl=True`` and no ``pycurl``.
    :raises ConfigurationError: with ``http2=True`` when no HTTP/2 client can be had (the
        message says why: :func:`http2_problem`).
    """

    def __init__(
        self,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        watchdog: Watchdog | None = None,
        curl: bool | None = None,
        http2: bool = False,
    ) -> None:
        self.max_body_bytes = max_body_bytes
        self.watchdog = watchdog if watchdog is not None else Watchdog()
        self.http2 = http2
        self._idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None
        self._loop: CurlLoop | None = None  # made on first use (again after close())
        self._curl = False
        if http2:
            reason = http2_problem() if curl is not False else "curl=False excludes libcurl"
            if reason is not None:
                raise ConfigurationError(f"HTTP/2 deliveries (--http2) are not possible: {reason}")
        if curl is not False:
            try:
                from . import _curl_loop  # noqa: F401 - is pycurl there?
            except ImportError:
                if curl:
                    raise
            else:
                self._curl = True

    @property
    def uses_curl(self) -> bool:
        """Whether requests go through libcurl."""
        return self._curl

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        deadline_seconds: float,
        sample: ResponseSample | None = None,
        http2: bool | None = None,
    ) -> int:
        """Send the request, follow redirects (:func:`~scheduler_emulator.runtime._redirects.
        follow`), and return the final status: :meth:`start` and a wait.

        :param method: HTTP method name.
        :param url: absolute ``http`` or ``https`` URL.
        :param headers: header name → value; ``Host`` and ``Content-Length`` are added.
        :param body: raw body bytes (sent for every method that has one).
        :param deadline_seconds: the whole request, redirects and body included, ends within
            this many seconds.
        :param sample: where to keep the start of the final response's body and its
            ``Content-Type`` (``None``: nothing is kept).
        :param http2: ``True``: every ``http://`` hop over HTTP/2 with prior knowledge (h2c,
            a job's emulator-only ``X-Emulator-Http2: true``); ``False``: HTTP/1.1; ``None``:
            this client's ``http2``. ``https://`` hops keep to HTTP/1.1 either way.
        :raises DeadlineExceeded: when the deadline passed first.
        :raises OSError: or :class:`http.client.HTTPException` when the connection failed.
        :raises ValueError: for a URL that is not http(s) or too many redirects, or for
            ``http2=True`` without an HTTP/2-capable libcurl (:func:`http2_problem`).
        """
        deadline = real_monotonic() + deadline_seconds
        hop = Hop(method, url, headers, body)
        return wait(lambda ended: self._follow(hop, deadline, sample, http2, ended), deadline)

    def start(
        self,
        hop: Hop,
        deadline_seconds: float,
        sample: ResponseSample | None,
        http2: bool | None,
        done: Ended,
    ) -> bool:
        """Begin the request of :meth:`request` (``hop``: its method, URL, headers and body)
        without holding the calling thread, when it can go that way (``pycurl`` installed: a
        transfer of libcurl's event loop, redirects followed there too).

        :param done: called once, on another thread, with ``(status, None)`` or
            ``(None, exc)``: the exceptions :meth:`request` raises.
        :return: ``True`` if it began (``done`` will be called), ``False`` if nothing was sent
            (call :meth:`request` instead).
        """
        if not self._curl:
            return False
        self._follow(hop, real_monotonic() + deadline_seconds, sample, http2, done)
        return True

    def _follow(
        self,
        hop: Hop,
        deadline: float,
        sample: ResponseSample | None,
        http2: bool | None,
        done: Ended,
    ) -> None:
        """The one way of sending: every hop through libcurl's event loop, or through
        ``http.client`` in this thread."""
        if not self._curl:
            if http2:
                done(None, ValueError(f"HTTP/2 deliveries are not possible: {http2_problem()}"))
            else:
                follow(self._send_one, hop, deadline, sample, done)
            return
        loop = self._loop
        if loop is None:
            with self._lock:
                if self._loop is None:
                    from ._curl_loop import CurlLoop

                    self._loop = CurlLoop(self.max_body_bytes, http2=self.http2)
                loop = self._loop

        def send_one(
            hop: Hop, deadline: float, sample: ResponseSample | None, answered: Answered
        ) -> None:
            try:
                loop.submit(hop, deadline, sample, http2, answered)
            except RuntimeError as exc:  # closed meanwhile
                answered(None, None, OSError(str(exc)))
            except ValueError as exc:  # HTTP/2 asked of a libcurl without it
                answered(None, None, exc)

        follow(send_one, hop, deadline, sample, done)

    def _send_one(
        self, hop: Hop, deadline: float, sample: ResponseSample | None, answered: Answered
    ) -> None:
        """One request through ``http.client`` in this thread, the watchdog armed for it."""
        guard = self.watchdog.arm(deadline)
        try:
            status, location = self._once(hop, deadline, guard, sample)
        except (OSError, http.client.HTTPException, ValueError, DeadlineExceeded) as exc:
            late = self.watchdog.disarm(guard) or real_monotonic() >= deadline
            failure = exc
            if late and isinstance(exc, (OSError, http.client.HTTPException)):
                failure = DeadlineExceeded()
            answered(None, None, failure)
            return
        if self.watchdog.disarm(guard):
            answered(None, None, DeadlineExceeded())
        else:
            answered(status, location, None)

    def close(self) -> None:
        """Close every idle connection, and libcurl's event loop: its requests still in flight
        end at once with an :class:`OSError` (``http.client`` ones run on to their deadline).
        The client can be used again after (a new loop is made)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.close()

    def _once(
        self, hop: Hop, deadline: float, guard: _Guard, sample: ResponseSample | None = None
    ) -> tuple[int, str | None]:
        method, headers, body = hop.method, hop.headers, hop.body
        parts = urlsplit(hop.url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {hop.url!r}")
        key = (parts.scheme, parts.hostname or "", parts.port or _default_port(parts.scheme))
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn, reused = self._checkout(key, deadline)
        guard.conn = conn
        if guard.fired:  # the deadline passed while we were getting here
            conn.close()
            raise DeadlineExceeded()
        try:
            try:
                response = self._exchange(conn, method, path, headers, body)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if not reused or guard.fired:
                    raise
                conn.close()  # the server closed a kept-alive connection: one fresh try
                conn = self._connect(key, deadline)
                guard.conn = conn
                response = self._exchange(conn, method, path, headers, body)
            status, location = response.status, response.getheader("Location")
            if sample is not None:
                sample.content_type = response.getheader("Content-Type")
            complete = self._drain(response, sample)
        except BaseException:
            conn.close()
            raise
        if complete and not response.will_close and not guard.fired:
            self._checkin(key, conn)
        else:
            conn.close()
        return status, location

    @staticmethod
    def _exchange(
        conn: http.client.HTTPConnection,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes,
    ) -> http.client.HTTPResponse:
        conn.request(method, path, body=body or None, headers=dict(headers))
        return conn.getresponse()

    def _drain(
        self, response: http.client.HTTPResponse, sample: ResponseSample | None = None
    ) -> bool:
        """Read the body up to the cap, keeping its start in ``sample``; ``True`` if it was
        read to its end."""
        left = self.max_body_bytes
        while True:
            chunk = response.read(min(_CHUNK, left + 1))
            if not chunk:
                return True
            if sample is not None:
                sample.take(chunk)
            left -= len(chunk)
            if left < 0:
                return False

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
        conn: http.client.HTTPConnection
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=self._ssl)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        return conn

    def _checkin(self, key: tuple[str, str, int], conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.setdefault(key, []).append(conn)


def http2_problem() -> str | None:
    """Why HTTP/2 (h2c) deliveries cannot be sent here, or ``None`` when they can: they need
    ``pycurl`` whose libcurl was built with HTTP/2 (nghttp2)."""
    try:
        from ._curl_loop import http2_supported
    except ImportError:
        return "they need pycurl (pip install 'cloud-scheduler-emulator[curl]')."
    if not http2_supported():
        return "pycurl's libcurl was built without HTTP/2 (nghttp2)."
    return None


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _dropped(sock: socket.socket) -> bool:
    """Whether an idle kept-alive connection was closed (or sent junk) by the server."""
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
