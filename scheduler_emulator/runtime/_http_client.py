"""An HTTP/1.1 client whose deadline bounds the whole request, whatever the server does.

``requests`` (and ``urllib3``, ``http.client``) apply their timeout to each socket operation, so a
target that sends one byte a second is never stopped. With ``pycurl`` installed, plain
``http://`` requests go through libcurl (:mod:`~scheduler_emulator.runtime._curl_exchange`),
whose total timeout bounds the whole exchange. Otherwise (and for ``https://``)
:class:`HttpClient` arms a :class:`Watchdog` for each request: at the deadline it shuts the
connection's socket down,
which wakes the blocked ``connect``/``send``/``recv`` at once, and the request ends with
:class:`DeadlineExceeded`. Connect, sending, the response headers, redirects and the body are
all inside the one deadline. Response bodies are read up to ``max_body_bytes`` and discarded;
past the cap the connection is closed instead of read further.

Connections are kept alive per ``(scheme, host, port)`` and reused (a dropped idle connection is
noticed before reuse), so a fast local target costs one ``send`` and one ``recv`` per attempt::

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
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..domain.errors import ConfigurationError
from ..realtime import real_monotonic
from ._redirects import MAX_REDIRECTS, TOO_MANY_REDIRECTS, Hop, ResponseSample, next_hop

if TYPE_CHECKING:
    from ._curl_exchange import CurlExchange
    from ._curl_loop import CurlLoop

#: Called once when a request begun by :meth:`HttpClient.start` ends: ``(status, None)``, or
#: ``(None, exc)`` with an exception :meth:`HttpClient.request` would raise.
Ended = Callable[[int | None, BaseException | None], None]
#: Bytes of a response body read at most (then the connection is closed): Cloud Scheduler keeps
#: no response bodies, so none is worth more than this.
MAX_BODY_BYTES = 1 << 20
_CHUNK = 64 * 1024


class DeadlineExceeded(Exception):
    """The request did not complete (headers and body) within its deadline."""


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

    Plain ``http://`` requests go through libcurl when ``pycurl`` is installed (the ``curl``
    extra; :mod:`~scheduler_emulator.runtime._curl_exchange`), with the same wire and the same
    rules; everything else through ``http.client``.

    :param max_body_bytes: response body bytes read at most; more closes the connection.
    :param watchdog: shared with other clients if given; a new one otherwise.
    :param curl: ``None`` (the default): libcurl if ``pycurl`` can be imported; ``False``:
        ``http.client`` only; ``True``: libcurl, or :class:`ImportError`.
    :param http2: send ``http://`` requests over HTTP/2 with prior knowledge (h2c), through
        libcurl; ``https://`` keeps to ``http.client`` (HTTP/1.1).
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
        self._idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None
        self._curl: CurlExchange | None = None
        self._loop: CurlLoop | None = None  # made on first start()
        if http2:
            reason = http2_problem() if curl is not False else "curl=False excludes libcurl"
            if reason is not None:
                raise ConfigurationError(f"HTTP/2 deliveries (--http2) are not possible: {reason}")
        if curl is not False:
            try:
                from ._curl_exchange import CurlExchange
            except ImportError:
                if curl:
                    raise
            else:
                self._curl = CurlExchange(max_body_bytes, http2=http2)

    @property
    def uses_curl(self) -> bool:
        """Whether plain ``http://`` requests go through libcurl."""
        return self._curl is not None

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
        """Send the request, follow redirects (:mod:`~scheduler_emulator.runtime._redirects`),
        and return the final status.

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
        if http2 and self._curl is None:
            raise ValueError(f"HTTP/2 deliveries are not possible: {http2_problem()}")
        deadline = real_monotonic() + deadline_seconds
        return self._hops(Hop(method, url, headers, body), deadline, sample, http2, MAX_REDIRECTS)

    def can_start(self, url: str) -> bool:
        """Whether :meth:`start` can send to ``url``: ``http://`` with ``pycurl`` installed."""
        return self._curl is not None and _plain_http(url)

    def start(
        self,
        hop: Hop,
        deadline_seconds: float,
        sample: ResponseSample | None,
        http2: bool | None,
        done: Ended,
    ) -> bool:
        """Begin the request of :meth:`request` (``hop``: its method, URL, headers and body)
        without holding the calling thread, when it can go that way: an ``http://`` URL and
        ``pycurl`` installed (the exchange is one of
        :class:`~scheduler_emulator.runtime._curl_loop.CurlLoop`'s, whose thread is started
        on first use). Redirects are followed as :meth:`request` follows them; one to an
        ``https://`` URL finishes on a thread of its own (``http.client``).

        :param done: called once, on another thread, with ``(status, None)`` or
            ``(None, exc)``: the exceptions :meth:`request` raises.
        :return: ``True`` if it began (``done`` will be called), ``False`` if nothing was sent
            (call :meth:`request` instead).
        """
        if not self.can_start(hop.url):
            return False
        assert self._curl is not None
        with self._lock:
            if self._loop is None:
                from ._curl_loop import CurlLoop

                self._loop = CurlLoop(self.max_body_bytes, http2=self._curl.http2)
            loop = self._loop
        deadline = real_monotonic() + deadline_seconds
        self._start_hop(loop, hop, deadline, sample, http2, done)
        return True

    def _start_hop(
        self,
        loop: CurlLoop,
        hop: Hop,
        deadline: float,
        sample: ResponseSample | None,
        http2: bool | None,
        done: Ended,
        redirects_left: int = MAX_REDIRECTS,
    ) -> None:
        curl = self._curl
        assert curl is not None
        left = deadline - real_monotonic()
        if left <= 0:
            done(None, DeadlineExceeded())
            return
        if not _plain_http(hop.url):  # redirected to https://: http.client, on a thread

            def rest() -> None:
                try:
                    status = self._hops(hop, deadline, sample, http2, redirects_left)
                except (OSError, http.client.HTTPException, ValueError, DeadlineExceeded) as exc:
                    done(None, exc)
                else:
                    done(status, None)

            threading.Thread(target=rest, name="https-redirect", daemon=True).start()
            return

        def hop_done(status: int | None, location: str | None, exc: BaseException | None) -> None:
            if exc is not None or status is None:
                done(None, DeadlineExceeded() if isinstance(exc, curl.Deadline) else exc)
                return
            following = next_hop(status, location, hop)
            if following is None:
                done(status, None)
            elif redirects_left == 0:
                done(None, ValueError(TOO_MANY_REDIRECTS))
            else:
                self._start_hop(loop, following, deadline, sample, http2, done, redirects_left - 1)

        try:
            loop.submit(hop, left, sample, http2, hop_done)
        except (RuntimeError, ValueError) as exc:  # closed meanwhile; no HTTP/2 in libcurl
            done(None, OSError(str(exc)) if isinstance(exc, RuntimeError) else exc)

    def _hops(
        self,
        first: Hop,
        deadline: float,
        sample: ResponseSample | None,
        http2: bool | None,
        redirects: int,
    ) -> int:
        """Send ``first`` and follow up to ``redirects`` redirects by ``deadline`` (real
        monotonic seconds); return the final status (see :meth:`request`)."""
        guard: _Guard | None = None  # armed for the first hop through http.client
        hop: Hop | None = first
        try:
            for _ in range(redirects + 1):
                assert hop is not None
                if self._curl is not None and _plain_http(hop.url):
                    status, location = self._curl_once(hop, deadline, sample, http2)
                else:
                    if guard is None:
                        guard = self.watchdog.arm(deadline)
                    status, location = self._once(hop, deadline, guard, sample)
                hop = next_hop(status, location, hop)
                if hop is None:
                    return status
            raise ValueError(TOO_MANY_REDIRECTS)
        except (OSError, http.client.HTTPException):
            if (guard is not None and guard.fired) or real_monotonic() >= deadline:
                raise DeadlineExceeded() from None
            raise
        finally:
            if guard is not None and self.watchdog.disarm(guard):
                raise DeadlineExceeded()

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()
        if self._curl is not None:
            self._curl.close()
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.close()

    def _curl_once(
        self, hop: Hop, deadline: float, sample: ResponseSample | None, http2: bool | None
    ) -> tuple[int, str | None]:
        left = deadline - real_monotonic()
        if left <= 0:
            raise DeadlineExceeded()
        curl = self._curl
        assert curl is not None
        try:
            return curl.once(hop, left, sample, http2)
        except curl.Deadline:
            raise DeadlineExceeded() from None

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
                sample.restart(response.getheader("Content-Type"))
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
        from ._curl_exchange import http2_supported
    except ImportError:
        return "they need pycurl (pip install 'cloud-scheduler-emulator[curl]')."
    if not http2_supported():
        return "pycurl's libcurl was built without HTTP/2 (nghttp2)."
    return None


def _plain_http(url: str) -> bool:
    """Whether ``url`` is ``http://`` (what libcurl sends here; ``https://`` keeps to
    ``http.client``)."""
    return url[:7].lower() == "http://"


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
