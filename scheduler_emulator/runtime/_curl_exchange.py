"""One HTTP/1.1 request/response exchange through libcurl (the optional ``pycurl`` package).

:class:`~scheduler_emulator.runtime._http_client.HttpClient` sends plain ``http://`` attempts
this way when ``pycurl`` is installed (``pip install 'cloud-scheduler-emulator[curl]'``): the
whole exchange runs in C with the GIL released once, about half the CPU of ``http.client`` per
request, which is what lets the daemon deliver thousands of attempts a second on two cores
(docs/performance.md). ``https://`` keeps to ``http.client`` and Python's own TLS trust store.

The wire is the same as ``http.client``'s: the caller's headers plus ``Host``,
``Content-Length`` (``0`` for an empty POST, PUT or PATCH) and ``Accept-Encoding: identity``;
curl's own ``Accept``, ``Expect`` and form ``Content-Type`` are suppressed. libcurl's total
timeout (``CURLOPT_TIMEOUT_MS``) bounds connecting, sending and the whole response, however
slowly the target answers. Each thread has its own handle, whose connections are kept alive.
"""

from __future__ import annotations

import errno
import http.client
import os
import socket
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pycurl

if TYPE_CHECKING:
    from ._redirects import Hop, ResponseSample

#: Methods that carry a body (and ``Content-Length: 0`` when it is empty), as in http.client.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_H1 = pycurl.CURL_HTTP_VERSION_1_1
_H2 = pycurl.CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE


def http2_supported() -> bool:
    """Whether pycurl's libcurl can speak HTTP/2 (it was built with nghttp2)."""
    return bool(pycurl.version_info()[4] & pycurl.VERSION_HTTP2)


def exchange_http2(http2: bool | None, default: bool) -> bool:
    """Whether one exchange goes over HTTP/2: ``http2``, or ``default`` when it is ``None``.

    :raises ValueError: for ``http2=True`` when this libcurl has no HTTP/2.
    """
    if http2 is None:
        return default
    if http2 and not http2_supported():
        raise ValueError(f"pycurl's libcurl {pycurl.version_info()[1]} has no HTTP/2.")
    return http2


class CurlDeadline(Exception):
    """libcurl's total timeout passed before the exchange ended."""


class CurlExchange:
    """Sends one request per call on the calling thread's curl handle; thread-safe.

    :param max_body_bytes: response body bytes read at most; past them the transfer is
        aborted (and its connection closed), the status already received still counts.
    :param http2: send over HTTP/2 with prior knowledge (h2c: no upgrade, the connection
        starts with the HTTP/2 preface), as Cloud Run's end-to-end HTTP/2 does; header names
        then travel lower-case, as HTTP/2 requires. The default of every call; :meth:`once`
        can ask for either version per request.
    :raises ValueError: with ``http2`` when this libcurl was built without HTTP/2 (the
        message says so).
    """

    #: What :meth:`once` raises when the exchange ran out of time.
    Deadline = CurlDeadline

    def __init__(self, max_body_bytes: int, *, http2: bool = False) -> None:
        if http2 and not http2_supported():
            raise ValueError(
                f"--http2 needs a libcurl built with HTTP/2 (nghttp2); pycurl's libcurl "
                f"{pycurl.version_info()[1]} has none."
            )
        self.max_body_bytes = max_body_bytes
        self.http2 = http2
        self._local = threading.local()
        self._handles: list[pycurl.Curl] = []  # every thread's, for close()
        self._busy: set[pycurl.Curl] = set()  # in perform() now: closed by their thread after
        self._closing: set[pycurl.Curl] = set()
        self._lock = threading.Lock()
        self._versions: dict[pycurl.Curl, int] = {}  # each handle's HTTP version

    def once(
        self,
        hop: Hop,
        timeout_seconds: float,
        sample: ResponseSample | None = None,
        http2: bool | None = None,
    ) -> tuple[int, str | None]:
        """Send ``hop`` (method, URL, headers, body); return the status and, for a redirect,
        the absolute ``Location`` (no redirect is followed here).

        :param timeout_seconds: the exchange ends within this many seconds.
        :param sample: where to keep the body's start and the ``Content-Type``.
        :param http2: ``True``: HTTP/2 with prior knowledge (h2c); ``False``: HTTP/1.1;
            ``None``: the exchange's default. Each thread keeps one handle (and its kept-alive
            connections) per version, so a connection never serves the other version.
        :raises CurlDeadline: when that time passed first.
        :raises OSError: when the connection failed (its ``strerror`` says how).
        :raises ValueError: for ``http2=True`` when this libcurl has no HTTP/2.
        """
        http2 = exchange_http2(http2, self.http2)
        handle = self._handle(http2)
        configure(handle, hop, timeout_seconds, sample, self.max_body_bytes)
        try:
            handle.perform()
        except pycurl.error as exc:
            return ended(handle, exc.args[0], str(exc.args[-1]), sample)
        else:
            return ended(handle, None, "", sample)
        finally:
            self._release(handle)

    def close(self) -> None:
        """Close every thread's handle and its kept-alive connections (a handle in the middle
        of a request is closed by its thread when that request ends)."""
        with self._lock:
            handles, self._handles = self._handles, []
            self._versions = {handle: self._versions[handle] for handle in self._busy}
            self._local = threading.local()
            idle = [handle for handle in handles if handle not in self._busy]
            self._closing.update(handle for handle in handles if handle in self._busy)
        for handle in idle:
            handle.close()

    def _handle(self, http2: bool) -> pycurl.Curl:
        slot = "h2" if http2 else "h1"
        with self._lock:
            handle: pycurl.Curl | None = getattr(self._local, slot, None)
            if handle is None:
                handle = pycurl.Curl()
                self._handles.append(handle)
                self._versions[handle] = _H2 if http2 else _H1
                self._defaults(handle)
                setattr(self._local, slot, handle)
            self._busy.add(handle)
        return handle

    def _release(self, handle: pycurl.Curl) -> None:
        """The request on ``handle`` ended: options back to defaults (kept-alive connections
        stay), or the handle closed if :meth:`close` came meanwhile."""
        handle.reset()
        self._defaults(handle)
        with self._lock:
            self._busy.discard(handle)
            closing = handle in self._closing
            self._closing.discard(handle)
            if closing:
                self._versions.pop(handle, None)
        if closing:
            handle.close()

    def _defaults(self, handle: pycurl.Curl) -> None:
        prime(handle, self._versions[handle] == _H2)


def prime(handle: pycurl.Curl, http2: bool) -> None:
    """Give a new (or reset) handle the options every request shares: no signals (timeouts
    without SIGALRM: handles live in threads), plain HTTP only, and the HTTP version (HTTP/2
    with prior knowledge, or HTTP/1.1)."""
    handle.setopt(pycurl.NOSIGNAL, 1)
    handle.setopt(pycurl.HTTP_VERSION, _H2 if http2 else _H1)
    handle.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP)


def configure(
    handle: pycurl.Curl,
    hop: Hop,
    timeout_seconds: float,
    sample: ResponseSample | None,
    max_body_bytes: int,
) -> None:
    """Set ``handle`` up for one request (its HTTP version and defaults already set): the
    wire of the module docstring, the total timeout, and a body read up to ``max_body_bytes``
    (past them the transfer is aborted) whose start goes to ``sample``. Shared by
    :class:`CurlExchange` (one blocking request) and
    :class:`~scheduler_emulator.runtime._curl_loop.CurlLoop` (many at once)."""
    method, url, headers, body = hop.method, hop.url, hop.headers, hop.body
    handle.setopt(pycurl.URL, url)
    handle.setopt(pycurl.TIMEOUT_MS, max(1, int(timeout_seconds * 1000)))
    # Values may hold U+0080-U+00FF (validation allows obs-text): latin-1, as http.client.
    lines = [f"{name}: {value}".encode("latin-1") for name, value in headers.items()]
    names = {name.lower() for name in headers}
    if "accept-encoding" not in names:
        lines.append(b"Accept-Encoding: identity")
    lines += [b"Accept:", b"Expect:"]  # no header of curl's own
    if "content-type" not in names:
        lines.append(b"Content-Type:")
    handle.setopt(pycurl.HTTPHEADER, lines)
    if method == "GET" and not body:
        handle.setopt(pycurl.HTTPGET, 1)
    elif method == "HEAD" and not body:
        handle.setopt(pycurl.NOBODY, 1)
    else:
        if body or method in _BODY_METHODS:
            handle.setopt(pycurl.POSTFIELDSIZE, len(body))
            handle.setopt(pycurl.POSTFIELDS, body)
        else:
            handle.setopt(pycurl.HTTPGET, 1)
        if method != "POST":
            handle.setopt(pycurl.CUSTOMREQUEST, method)
    read = [0]
    if sample is not None:
        sample.restart(None)

    def drop(chunk: bytes) -> int | None:
        read[0] += len(chunk)
        if sample is not None:
            sample.take(chunk)
        return None if read[0] <= max_body_bytes else 0  # 0 aborts the transfer

    handle.setopt(pycurl.WRITEFUNCTION, drop)


def ended(
    handle: pycurl.Curl, code: int | None, message: str, sample: ResponseSample | None
) -> tuple[int, str | None]:
    """What the transfer on ``handle`` came to: the status and, for a redirect, the absolute
    ``Location``.

    :param code: libcurl's error code, ``None`` when the transfer succeeded.
    :param message: libcurl's error text.
    :raises CurlDeadline: when the total timeout passed first.
    :raises OSError: when the connection failed, as ``http.client`` raises it
        (:func:`_os_error`).
    """
    status = handle.getinfo(pycurl.RESPONSE_CODE)
    # The body cap (a write error after a status) still counts as the status's answer.
    if code is None or (code == pycurl.E_WRITE_ERROR and status):
        if sample is not None:
            sample.content_type = handle.getinfo(pycurl.CONTENT_TYPE)
        return status, handle.getinfo(pycurl.REDIRECT_URL)
    if code == pycurl.E_OPERATION_TIMEDOUT:
        raise CurlDeadline()
    raise _os_error(handle, code, message)


def _os_error(handle: pycurl.Curl, code: int, message: str) -> OSError:
    """The failure as the exception ``http.client`` raises for it, so that the attempt's debug
    text is the same either way: ``[Errno 111] Connection refused``, the resolver's own error,
    ``RemoteDisconnected`` for a connection closed without an answer."""
    number = handle.getinfo(pycurl.OS_ERRNO)
    if number and code in (pycurl.E_COULDNT_CONNECT, pycurl.E_RECV_ERROR, pycurl.E_SEND_ERROR):
        return OSError(number, os.strerror(number))
    if code == pycurl.E_GOT_NOTHING:
        return http.client.RemoteDisconnected("Remote end closed connection without response")
    if code == pycurl.E_COULDNT_RESOLVE_HOST:
        host = urlsplit(handle.getinfo(pycurl.EFFECTIVE_URL)).hostname or ""
        try:  # ask the resolver again, as http.client would have: its words, not curl's
            socket.getaddrinfo(host, None)
        except OSError as exc:
            return exc
    return OSError(errno.EIO, message)
