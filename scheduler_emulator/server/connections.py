"""One port for REST and gRPC, and what a connection may hold: the daemon's connection front.

The daemon's HTTP server hands every accepted connection to :class:`ConnectionRouter`, whose
one thread runs an asyncio event loop; no connection holds a thread while it is silent, idle
or sending slowly. The router reads a connection's first bytes:

- the HTTP/2 client preface ``PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n`` (every gRPC client sends
  it first) → gRPC: the connection is spliced, byte for byte in both directions, to the grpcio
  server of :class:`~scheduler_emulator.server.grpc_api.GrpcBackend` on a private Unix socket,
  which sends GOAWAY to a connection idle for :attr:`Limits.grpc_idle_timeout` (as Google's
  front ends close idle connections). At most :attr:`Limits.max_grpc_connections` are spliced
  at once; one more is answered in HTTP/2 (:func:`answer_http2`: a SETTINGS frame, its first
  call ended ``UNAVAILABLE`` with a message saying why, then GOAWAY), so a gRPC client reports
  ``UNAVAILABLE`` and retries. Without the ``[grpc]`` extra every call ends ``UNIMPLEMENTED``
  the same way, with a message naming the extra;
- a first byte ``0x16`` (a TLS ClientHello: a client that expects TLS) → one line in the
  daemon's log saying the emulator serves plaintext, and the connection is closed at once, so
  the client fails fast instead of retrying a garbled handshake;
- anything else → HTTP/1.1 (REST, gcloud, ``/_emulator/``). The router reads each request —
  headers and body — within :attr:`Limits.request_timeout` of its first byte (else ``408``),
  and only then hands it to one of :attr:`Limits.http_workers` worker threads (all busy: it
  waits up to :attr:`Limits.request_timeout`, while the requests waiting hold no more bytes than
  the workers may; else ``503``); the answered connection comes back to the loop and is kept
  alive until :attr:`Limits.http_idle_timeout` passes without a new request. At most
  :attr:`Limits.max_connections` HTTP/1.1 connections are open at once (one more: ``503``).

The HTTP/2 frames are written and read by the ``h2`` package (python-hyper). This is how
Google's gapic-showcase test server, etcd and fake-gcs-server put both protocols on one port;
the extra cost of a gRPC call is the splice (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from ..domain.errors import ApiError, DeadlineExceeded, Unavailable
from ..wire import host_port

if TYPE_CHECKING:
    from ..runtime._emulator import Emulator

__all__ = [
    "HTTP2_PREFACE",
    "NO_GRPC_MESSAGE",
    "ConnectionRouter",
    "Limits",
    "answer_http2",
    "error_bytes",
    "request_size",
]

logger = logging.getLogger("scheduler_emulator")

#: The HTTP/2 client connection preface (RFC 9113, section 3.4).
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#: The first byte of a TLS record carrying a handshake (a ClientHello).
TLS_HANDSHAKE = 0x16
#: Seconds between two log lines about TLS clients (the first is logged at once).
TLS_LOG_INTERVAL = 60.0
#: Where the plaintext and TLS recipes are explained.
DOCS_ANCHOR = "docs/api.md#grpc"
#: Longest request head (request line and headers) read before a worker sees it; a longer one
#: is handed over as it is, and the HTTP server refuses it (414 or 431).
MAX_HEAD_BYTES = 128 * 1024
#: Connections whose first bytes are still awaited; one more is closed at once.
MAX_UNSORTED = 1024
_CHUNK = 256 * 1024
_GRPC_UNIMPLEMENTED, _GRPC_UNAVAILABLE = 12, 14

NO_GRPC_MESSAGE = (
    "This scheduler-emulator has no gRPC support installed; install it where the daemon runs "
    "with pip install 'cloud-scheduler-emulator[grpc]' (in a clone: pip install -e '.[grpc]'), "
    "or use the REST transport (docs/api.md#grpc)."
)


@dataclass(frozen=True)
class Limits:
    """What the connections of the daemon's port may hold; the defaults are the daemon's
    (docs/api.md, "Limits"; ``scheduler-emulator start`` sets the first three with flags).

    :param max_connections: HTTP/1.1 connections open at once (idle, sending or answered).
    :param max_grpc_connections: gRPC (HTTP/2) connections open at once.
    :param grpc_idle_timeout: seconds a gRPC connection may stay without a call before the
        server sends it GOAWAY and closes it (the client reconnects for its next call).
    :param http_workers: HTTP/1.1 requests answered at once (threads).
    :param http_idle_timeout: seconds a connection may stay silent before its first request
        or between requests (keep-alive); then it is closed.
    :param request_timeout: seconds from a request's first byte by which all of it (headers
        and body) must have arrived; then it is answered 408 and closed.
    """

    max_connections: int = 256
    max_grpc_connections: int = 256
    grpc_idle_timeout: float = 300.0
    http_workers: int = 64
    http_idle_timeout: float = 15.0
    request_timeout: float = 10.0


def error_bytes(error: ApiError) -> bytes:
    """A whole HTTP/1.1 error response: the error's JSON envelope
    (:meth:`~scheduler_emulator.domain.errors.ApiError.to_envelope`, the one REST error shape),
    its HTTP status, ``Connection: close``."""
    body = json.dumps(error.to_envelope()).encode()
    code = error.http_status
    reason = HTTPStatus(code).phrase
    head = (
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json; charset=UTF-8\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def request_size(head: bytes) -> int | None:
    """How many bytes of body follow ``head`` (a request line and headers, up to the blank
    line) by its ``Content-Length``; ``None`` when the body's end cannot be known without
    reading it (chunked, ``Expect: 100-continue``, a malformed or repeated length)."""
    length: int | None = 0
    seen = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"transfer-encoding" or (
            name == b"expect" and value.strip().lower() == b"100-continue"
        ):
            return None
        if name == b"content-length":
            text = value.strip()
            if seen or not text.isdigit() or len(text) > 18:
                return None
            seen, length = True, int(text)
    return length


def _h2_connection() -> Any:
    from h2.config import H2Configuration
    from h2.connection import H2Connection

    connection = H2Connection(H2Configuration(client_side=False, header_encoding=None))
    connection.initiate_connection()
    return connection


def answer_http2(received: bytes, status: int, message: str) -> tuple[bytes, bool]:
    """What to send an HTTP/2 connection that will not be served, given what it ``received``
    so far: a SETTINGS frame; once a call has arrived, its end as a trailers-only gRPC
    response with ``grpc-status`` ``status`` and ``grpc-message`` ``message``, then GOAWAY.

    Pure: each call replays ``received`` through a fresh ``h2`` connection.

    :return: (the bytes to have sent in all, whether the answer is complete).
    :raises h2.exceptions.ProtocolError: for bytes that are not HTTP/2.
    """
    from h2.events import ConnectionTerminated, RequestReceived

    connection = _h2_connection()
    last = 0
    for event in connection.receive_data(received):
        if isinstance(event, RequestReceived) and event.stream_id > last:
            last = event.stream_id
            connection.send_headers(
                last,
                [
                    (b":status", b"200"),
                    (b"content-type", b"application/grpc"),
                    (b"grpc-status", str(status).encode()),
                    (b"grpc-message", _grpc_message(message).encode()),
                ],
                end_stream=True,
            )
        elif isinstance(event, ConnectionTerminated):
            return connection.data_to_send(), True
    if last:
        connection.close_connection(last_stream_id=last)
    return connection.data_to_send(), bool(last)


def _grpc_message(text: str) -> str:
    """Percent-encode a grpc-message value (gRPC over HTTP/2: bytes outside 0x20–0x7E, and %)."""
    return "".join(
        chr(b) if 0x20 <= b <= 0x7E and b != 0x25 else f"%{b:02X}" for b in text.encode()
    )


class ConnectionRouter:
    """The daemon port's connections, on one event-loop thread (see the module doc).

    :param emulator: the emulator the gRPC surface serves.
    :param limits: the bounds and timeouts.
    :param serve_http: answers one HTTP/1.1 request in a worker thread: called with the
        connection (blocking), the client address, the bytes of the request read so far and
        ``None`` when they are the whole request, else the monotonic deadline by which the
        rest must be read from the connection; returns whether the connection may be kept
        alive.
    :param max_body_bytes: the largest body read before a worker sees the request; a longer
        one is left for the app, which refuses it (400) without reading it.
    :param grpc: serve gRPC (needs the ``[grpc]`` extra); ``False`` answers HTTP/2 connections
        with ``UNIMPLEMENTED`` as if the extra were missing.
    """

    def __init__(
        self,
        emulator: Emulator,
        limits: Limits,
        serve_http: Callable[[socket.socket, Any, bytes, float | None], bool],
        *,
        max_body_bytes: int,
        grpc: bool = True,
    ) -> None:
        from .grpc_api import grpc_available

        self.emulator = emulator
        self.limits = limits
        self.serve_http = serve_http
        self.max_body_bytes = max_body_bytes
        #: Whether HTTP/2 connections reach a gRPC server (grpcio installed and not disabled).
        self.serves_grpc = grpc and grpc_available()
        self.backend: Any = None  # the GrpcBackend, started by the first HTTP/2 connection
        #: What a gRPC call is answered (UNIMPLEMENTED) when gRPC is not served.
        self.no_grpc_message = NO_GRPC_MESSAGE
        #: Connections open now, by kind: ``unsorted`` (first bytes awaited), ``http``, ``grpc``.
        self.open = {"unsorted": 0, "http": 0, "grpc": 0}
        self._busy: set[Future[bool]] = set()  # HTTP requests in a worker now
        self._slots = asyncio.Semaphore(limits.http_workers)  # (the loop's thread only)
        self._waiting = 0  # bytes of the requests read whole that wait for a worker
        self._lock = threading.Lock()
        self._closed = self._draining = False
        self._tls_logged_at: float | None = None
        self._sockets: set[socket.socket] = set()
        self._workers = ThreadPoolExecutor(limits.http_workers, thread_name_prefix="http")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="connections", daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------------ entry points

    def accept(self, sock: socket.socket, client_address: Any) -> None:
        """Take over a connection just accepted (from the server's accept thread)."""
        try:
            self._loop.call_soon_threadsafe(self._start, sock, client_address)
        except RuntimeError:  # closed
            sock.close()

    def grpc_backend(self) -> Any:
        """The gRPC server, started on first use (REST-only use never starts it); ``None``
        when gRPC is not served or the router is closed."""
        with self._lock:
            if self.backend is None and self.serves_grpc and not self._closed:
                try:
                    from .grpc_api import GrpcBackend

                    self.backend = GrpcBackend(
                        self.emulator, idle_timeout=self.limits.grpc_idle_timeout
                    )
                except ImportError as exc:  # installed, but broken
                    logger.warning("gRPC is not served: %s", exc)
                    self.serves_grpc = False
                    self.no_grpc_message = (
                        f"This scheduler-emulator's gRPC support failed to load ({exc}); "
                        "reinstall it where the daemon runs with pip install "
                        "'cloud-scheduler-emulator[grpc]', or use the REST transport."
                    )
            return self.backend

    def draining(self) -> None:
        """The daemon is stopping: new connections are closed at once; gRPC health checks
        answer NOT_SERVING while the connections open now are still served."""
        with self._lock:
            backend, self._draining = self.backend, True
        if backend is not None:
            backend.draining()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def finish(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the HTTP requests being answered now (a clock
        move the stop cut short answers once the engine has stopped)."""
        wait(set(self._busy), timeout)

    def close(self) -> None:
        """Close every connection, stop the loop and the gRPC server. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            backend, self.backend = self.backend, None

        async def stop() -> None:
            for sock in list(self._sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            tasks = [t for t in asyncio.all_tasks(self._loop) if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._loop.stop()

        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(stop(), self._loop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()
        for sock in list(self._sockets):
            sock.close()
        self._workers.shutdown(wait=False, cancel_futures=True)
        if backend is not None:
            backend.close()

    # ------------------------------------------------------------------ routing

    def _start(self, sock: socket.socket, client_address: Any) -> None:
        if self.open["unsorted"] >= MAX_UNSORTED or self._draining:
            sock.close()
            return
        sock.setblocking(False)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            # an answer is written in two sends (head, body); with Nagle's algorithm the
            # second waits for the client's delayed ACK of the first (40 ms) on a kept-alive
            # connection
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._loop.create_task(self._connection(sock, client_address))

    async def _connection(self, sock: socket.socket, client_address: Any) -> None:
        self._sockets.add(sock)
        try:
            buffer = bytearray()
            self.open["unsorted"] += 1
            try:
                kind = await self._sniff(sock, buffer)
            finally:
                self.open["unsorted"] -= 1
            if kind == "tls":
                self._log_tls(sock)
            elif kind == "h2":
                await self._http2(sock, buffer)
            elif kind == "http":
                await self._http1(sock, client_address, buffer)
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self._sockets.discard(sock)
            sock.close()

    async def _sniff(self, sock: socket.socket, buffer: bytearray) -> str:
        """Read a connection's first bytes into ``buffer``: ``"h2"``, ``"tls"``, ``"http"``,
        or ``""`` (closed or silent for the idle timeout)."""
        try:
            async with asyncio.timeout(self.limits.http_idle_timeout):
                while True:
                    chunk = await self._loop.sock_recv(sock, _CHUNK)
                    if not chunk:
                        return "http" if buffer else ""
                    buffer += chunk
                    if buffer[0] == TLS_HANDSHAKE:
                        return "tls"
                    if not HTTP2_PREFACE.startswith(bytes(buffer[: len(HTTP2_PREFACE)])):
                        return "http"
                    if len(buffer) >= len(HTTP2_PREFACE):
                        return "h2"
        except TimeoutError:
            return ""

    def _log_tls(self, sock: socket.socket) -> None:
        """Log the TLS line, at most once per :data:`TLS_LOG_INTERVAL` seconds (a TLS client
        on its default retry reconnects every few seconds)."""
        now = time.monotonic()
        last = self._tls_logged_at
        if last is not None and now - last < TLS_LOG_INTERVAL:
            return
        self._tls_logged_at = now
        logger.warning(
            "a TLS client connected to %s: the emulator serves plaintext (give a REST client an "
            "http:// URL, a gRPC client an insecure channel); see %s",
            host_port(*sock.getsockname()[:2]),
            DOCS_ANCHOR,
        )

    # ------------------------------------------------------------------ HTTP/2

    async def _http2(self, sock: socket.socket, buffer: bytearray) -> None:
        backend = await self._loop.run_in_executor(None, self.grpc_backend)
        if backend is None:
            await self._refuse_http2(sock, buffer, _GRPC_UNIMPLEMENTED, self.no_grpc_message)
            return
        limit = self.limits.max_grpc_connections
        if self.open["grpc"] >= limit:
            message = (
                f"The emulator has {limit} gRPC connections open, its limit "
                "(--max-grpc-connections); retry later, or share channels between clients."
            )
            await self._refuse_http2(sock, buffer, _GRPC_UNAVAILABLE, message)
            return
        self.open["grpc"] += 1
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.setblocking(False)
        self._sockets.add(upstream)
        try:
            await self._loop.sock_connect(upstream, backend.path)
            await self._loop.sock_sendall(upstream, bytes(buffer))
            await asyncio.gather(self._pump(sock, upstream), self._pump(upstream, sock))
        finally:
            self.open["grpc"] -= 1
            self._sockets.discard(upstream)
            upstream.close()

    async def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        """Copy bytes from ``source`` to ``sink`` until ``source`` ends; then end ``sink``'s
        sending side."""
        try:
            while data := await self._loop.sock_recv(source, _CHUNK):
                await self._loop.sock_sendall(sink, data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    async def _refuse_http2(
        self, sock: socket.socket, buffer: bytearray, status: int, message: str
    ) -> None:
        """Answer with :func:`answer_http2` as the client's frames arrive, then close."""
        from h2.exceptions import ProtocolError

        received, sent = bytes(buffer), 0
        try:
            async with asyncio.timeout(self.limits.http_idle_timeout):
                while True:
                    data, done = answer_http2(received, status, message)
                    await self._loop.sock_sendall(sock, data[sent:])
                    sent = len(data)
                    if done:
                        break
                    chunk = await self._loop.sock_recv(sock, _CHUNK)
                    if not chunk:
                        return
                    received += chunk
        except (TimeoutError, ProtocolError):
            return
        await self._close_gracefully(sock)

    async def _close_gracefully(self, sock: socket.socket) -> None:
        """End the sending side and read what the client still sends (up to a second), so
        closing does not reset the connection before the client has read the answer."""
        with contextlib.suppress(OSError, TimeoutError):
            sock.shutdown(socket.SHUT_WR)
            async with asyncio.timeout(1.0):
                while await self._loop.sock_recv(sock, _CHUNK):
                    pass

    # ------------------------------------------------------------------ HTTP/1.1

    async def _http1(self, sock: socket.socket, client_address: Any, buffer: bytearray) -> None:
        limits = self.limits
        if self.open["http"] >= limits.max_connections:
            message = (
                f"Too many connections: {limits.max_connections} are open (--max-connections)."
            )
            await self._answer_http1(sock, Unavailable(message))
            return
        self.open["http"] += 1
        try:
            while True:
                request = await self._read_request(sock, buffer)
                if request is None:
                    return
                data, deadline = request
                if data is None:
                    message = (
                        f"The request did not arrive within {limits.request_timeout:g} s "
                        "(headers and body)."
                    )
                    await self._answer_http1(sock, DeadlineExceeded(message, http_status=408))
                    return
                if not await self._worker_slot(len(data)):  # (trial 161: 99 of 200 creates 503)
                    message = (
                        f"Too many requests in progress: {limits.http_workers} at once, and "
                        f"more waiting for {limits.request_timeout:g} s or than the emulator holds."
                    )
                    await self._answer_http1(sock, Unavailable(message))
                    return
                sock.setblocking(True)
                work = self._workers.submit(self.serve_http, sock, client_address, data, deadline)
                self._busy.add(work)
                try:
                    keep = await asyncio.wrap_future(work)
                finally:
                    self._busy.discard(work)
                    self._slots.release()
                    sock.setblocking(False)
                if not keep:
                    return
        finally:
            self.open["http"] -= 1

    async def _worker_slot(self, size: int) -> bool:
        """Wait for one of the :attr:`Limits.http_workers` workers for a request of ``size``
        bytes read so far: ``False`` when it waited :attr:`Limits.request_timeout`, or when the
        requests waiting would hold more than all workers' requests at once may (their bodies
        are in memory)."""
        limits = self.limits
        if (
            self._slots.locked()
            and self._waiting + size > limits.http_workers * self.max_body_bytes
        ):
            return False
        self._waiting += size
        try:
            async with asyncio.timeout(limits.request_timeout):
                await self._slots.acquire()
            return True
        except TimeoutError:
            return False
        finally:
            self._waiting -= size

    async def _read_request(
        self, sock: socket.socket, buffer: bytearray
    ) -> tuple[bytes | None, float | None] | None:
        """Read one request from ``buffer`` and the connection.

        :return: (its bytes, ``None``) when it arrived whole; (its head, the monotonic
            deadline for the rest) when the body is left for the worker to read (chunked, too
            large, ``Expect``) or the head is too long to wait for; (``None``, ``None``) for a
            request that did not arrive in time; ``None`` when the connection closed or stayed
            idle.
        """
        limits = self.limits
        if not buffer:
            try:
                async with asyncio.timeout(limits.http_idle_timeout):
                    chunk = await self._loop.sock_recv(sock, _CHUNK)
            except TimeoutError:
                return None
            if not chunk:
                return None
            buffer += chunk
        deadline = self._loop.time() + limits.request_timeout
        try:
            async with asyncio.timeout_at(deadline):
                while True:
                    # empty lines before a request line are ignored, as RFC 9112 (2.2) asks
                    # (trial 181: a CRLF after a body lost the request pipelined after it)
                    del buffer[: len(buffer) - len(buffer.lstrip(b"\r\n"))]
                    if (end := buffer.find(b"\r\n\r\n")) >= 0:
                        break
                    # too long to wait for, or lines ended by a bare LF (which the worker's
                    # parser takes, as RFC 9112 allows; trial 177 waited for the timeout)
                    if len(buffer) > MAX_HEAD_BYTES or b"\n\n" in buffer:
                        return _take(buffer, len(buffer)), deadline
                    await self._more(sock, buffer)
                head_end = end + 4
                size = request_size(bytes(buffer[:head_end]))
                if size is None or size > self.max_body_bytes:  # the worker reads the rest: all
                    return _take(buffer, len(buffer)), deadline  # bytes come (a chunked body's)
                while len(buffer) < head_end + size:
                    await self._more(sock, buffer)
                return _take(buffer, head_end + size), None
        except TimeoutError:
            return None, None
        except ConnectionError:
            return None

    async def _more(self, sock: socket.socket, buffer: bytearray) -> None:
        chunk = await self._loop.sock_recv(sock, _CHUNK)
        if not chunk:
            raise ConnectionAbortedError
        buffer += chunk

    async def _answer_http1(self, sock: socket.socket, error: ApiError) -> None:
        """Answer with :func:`error_bytes`, then close."""
        with contextlib.suppress(OSError):
            await self._loop.sock_sendall(sock, error_bytes(error))
        await self._close_gracefully(sock)


def _take(buffer: bytearray, size: int) -> bytes:
    data = bytes(buffer[:size])
    del buffer[:size]
    return data
