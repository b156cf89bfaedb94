"""Many HTTP exchanges at once on one thread: libcurl's multi interface (the ``curl`` extra).

:class:`CurlLoop` is how :class:`~scheduler_emulator.runtime.delivery.transports.HttpTransport`
sends every request when ``pycurl`` is installed: a blocking request waits for its end, a
started one holds no thread. The loop's thread drives every transfer together, so 200 targets
that drip their answers a byte a second cost 200 sockets, not 200 threads, and other jobs'
attempts leave on time::

    loop = CurlLoop(max_body_bytes=1 << 20)
    hop = Hop("POST", "http://127.0.0.1:8000/run", {"X": "1"}, b"")
    loop.submit(hop, real_monotonic() + 15.0, ResponseSample(1024), done)  # on the loop's thread
    loop.close()

Each transfer sends exactly one request (redirects are followed above it,
:func:`~scheduler_emulator.runtime.delivery.transports.follow`). The wire is ``http.client``'s: the
caller's headers plus ``Host``, ``Content-Length`` (``0`` for an empty POST, PUT or PATCH) and
``Accept-Encoding: identity``; curl's own ``Accept``, ``Expect`` and form ``Content-Type`` are
suppressed. libcurl's total timeout (``CURLOPT_TIMEOUT_MS``) bounds connecting, sending and the
whole response, however slowly the target answers; bodies are read up to a cap; failures read
as ``http.client``'s do. ``https://`` trusts what Python's ``ssl`` trusts (its default CA
file, ``SSL_CERT_FILE``) and keeps to HTTP/1.1. Connections are kept alive in the multi
handle's cache and shared by all transfers; HTTP/2 transfers to one origin share a connection.

Each turn calls libcurl's ``perform`` once (every socket ready, every timeout due), then waits
in ``select`` for the next event, at most libcurl's own timeout and :data:`_TURN_SECONDS`;
with nothing under way the thread sleeps until a submit. libcurl releases the GIL in each
call, and getting it back can cost up to the interpreter's switch interval (5 ms) while the
engine's threads record a large minute: two such calls per turn, not one per socket (as
``socket_action`` would need), keep the loop's rate then. A socket ``select(2)`` cannot watch
(fd >= 1,024) is still served every turn. Callbacks run on the loop's thread: be quick.
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import logging
import os
import socket
import ssl
import threading
from collections import deque
from typing import NamedTuple
from urllib.parse import urlsplit

import pycurl

from ...domain.redirects import Answered, Hop, ResponseSample
from ...realtime import real_monotonic
from . import CONNECTIONS

logger = logging.getLogger("scheduler_emulator")

#: Idle easy handles kept for reuse (a handle is a few kB; more are closed).
_FREE_HANDLES = 256
#: Seconds the loop waits at most between turns while exchanges are under way (a new submit,
#: and a socket ``select(2)`` cannot watch, are seen within this).
_TURN_SECONDS = 0.005
#: Methods that carry a body (and ``Content-Length: 0`` when it is empty), as in http.client.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_H1 = pycurl.CURL_HTTP_VERSION_1_1
_H2 = pycurl.CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
#: Python's own trust store, for ``https://`` (``SSL_CERT_FILE`` wins, as in ``ssl``).
_CA_FILE = os.environ.get("SSL_CERT_FILE") or ssl.get_default_verify_paths().cafile


class _Transfer(NamedTuple):
    hop: Hop
    deadline: float
    sample: ResponseSample
    http2: bool
    done: Answered


class CurlLoop:
    """Runs HTTP exchanges concurrently on one thread of its own (started on first use).

    :param max_body_bytes: response body bytes read at most per exchange; past them the
        transfer is aborted and the status already received counts.
    """

    def __init__(self, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes
        self._lock = threading.Lock()
        self._submitted: deque[_Transfer] = deque()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._work = threading.Condition(self._lock)  # a submit or close wakes an idle loop
        self._idle = False  # the loop's thread waits on _work (a busy one sees a submit anyway)
        # Loop-thread state.
        self._multi = pycurl.CurlMulti()
        self._multi.setopt(pycurl.M_MAXCONNECTS, CONNECTIONS)
        self._running: dict[pycurl.Curl, _Transfer] = {}
        self._free: list[pycurl.Curl] = []

    def submit(
        self,
        hop: Hop,
        deadline: float,
        sample: ResponseSample,
        done: Answered,
        *,
        http2: bool = False,
    ) -> None:
        """Start one exchange (no redirect is followed); ``done`` is called once when it ends
        (a :data:`~scheduler_emulator.domain.redirects.Answered`: a redirect's ``location``
        is absolute; an :class:`OSError` after :meth:`close`).

        :param hop: the request, its URL an absolute ``http://`` or ``https://`` one.
        :param deadline: real monotonic seconds by which the exchange ends.
        :param sample: where to keep the body's start and the ``Content-Type``.
        :param http2: ``True``: HTTP/2 with prior knowledge (h2c; ``https://`` keeps to
            HTTP/1.1), which this libcurl must have (:func:`.transports.http2_problem`).
        """
        with self._lock:
            if not self._closed:
                self._submitted.append(_Transfer(hop, deadline, sample, http2, done))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="curl-loop", daemon=True)
                    self._thread.start()
                if self._idle:
                    self._work.notify()
                return
        done(None, None, OSError("the HTTP client is closed"))

    def close(self) -> None:
        """Stop the loop: exchanges still running end with an :class:`OSError` (their ``done``
        is called), connections close. Waits up to 5 s for its thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._work.notify()
        if thread is None:
            self._teardown()
        elif thread is not threading.current_thread():
            thread.join(5.0)

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    while not self._running and not self._submitted and not self._closed:
                        self._idle = True
                        self._work.wait()  # nothing under way: sleep until a submit
                        self._idle = False
                    if self._closed:
                        return
                    batch, self._submitted = self._submitted, deque()
                for transfer in batch:
                    self._add(transfer)
                self._multi.perform()  # two GIL releases per turn: see the module docstring
                queued = True
                while queued:  # done for every transfer libcurl has finished
                    queued, succeeded, failed = self._multi.info_read()
                    for handle in succeeded:
                        self._finish(handle, None, "")
                    for handle, code, message in failed:
                        self._finish(handle, code, message)
                if self._running:
                    wanted = self._multi.timeout()  # ms; -1: libcurl has no timeout of its own
                    limit = _TURN_SECONDS if wanted < 0 else min(wanted / 1000, _TURN_SECONDS)
                    if limit > 0:
                        self._multi.select(limit)
        finally:
            self._teardown()

    def _add(self, transfer: _Transfer) -> None:
        handle = self._free.pop() if self._free else pycurl.Curl()
        try:
            configure(handle, transfer, self.max_body_bytes)
            self._running[handle] = transfer
            self._multi.add_handle(handle)
        except (pycurl.error, UnicodeEncodeError, ValueError) as exc:
            self._running.pop(handle, None)
            self._recycle(handle)
            _call(transfer.done, None, None, OSError(f"the request could not be made: {exc}"))

    def _finish(self, handle: pycurl.Curl, code: int | None, message: str) -> None:
        """Answer the transfer: its status and absolute ``Location``, or its error's failure."""
        self._multi.remove_handle(handle)
        transfer = self._running.pop(handle)
        status, location, error = handle.getinfo(pycurl.RESPONSE_CODE), None, None
        # The body cap (a write error after a status) still counts as the status's answer.
        if code is None or (code == pycurl.E_WRITE_ERROR and status):
            transfer.sample.content_type = handle.getinfo(pycurl.CONTENT_TYPE)
            location = handle.getinfo(pycurl.REDIRECT_URL)
        else:
            timed_out = code == pycurl.E_OPERATION_TIMEDOUT
            status, error = None, TimeoutError() if timed_out else _os_error(handle, code, message)
        self._recycle(handle)
        _call(transfer.done, status, location, error)

    def _recycle(self, handle: pycurl.Curl) -> None:
        handle.reset()
        if len(self._free) < _FREE_HANDLES:
            self._free.append(handle)
        else:
            handle.close()

    def _teardown(self) -> None:
        """End what is still running (``done`` with an OSError) and free it all."""
        with self._lock:
            running, self._running = self._running, {}
            submitted, self._submitted = self._submitted, deque()
        for handle in running:
            with contextlib.suppress(pycurl.error):
                self._multi.remove_handle(handle)
        for handle in [*running, *self._free]:
            handle.close()
        self._free.clear()
        self._multi.close()
        closed = "the HTTP client was closed before the target answered"
        for transfer in [*running.values(), *submitted]:
            _call(transfer.done, None, None, OSError(closed))


def configure(handle: pycurl.Curl, transfer: _Transfer, max_body_bytes: int) -> None:
    """Set a new (or reset) ``handle`` up for ``transfer``: no signals (timeouts without
    SIGALRM), HTTP(S) only, the wire of the module docstring, the total timeout, and a body read
    up to ``max_body_bytes`` (then the transfer is aborted), its start kept in the sample."""
    hop, sample = transfer.hop, transfer.sample
    method, url, headers, body = hop.method, hop.url, hop.headers, hop.body
    plain = url[:7].lower() == "http://"
    handle.setopt(pycurl.NOSIGNAL, 1)
    handle.setopt(pycurl.HTTP_VERSION, _H2 if transfer.http2 and plain else _H1)
    handle.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
    if not plain and _CA_FILE:
        handle.setopt(pycurl.CAINFO, _CA_FILE)
    handle.setopt(pycurl.URL, url)
    handle.setopt(pycurl.TIMEOUT_MS, max(1, int((transfer.deadline - real_monotonic()) * 1000)))
    # Values may hold U+0080-U+00FF (validation allows obs-text): latin-1, as http.client.
    lines = [f"{name}: {value}".encode("latin-1") for name, value in headers.items()]
    names = {name.lower() for name in headers}
    if "accept-encoding" not in names:
        lines.append(b"Accept-Encoding: identity")
    lines += [b"Accept:", b"Expect:"]  # no header of curl's own
    if "content-type" not in names:
        lines.append(b"Content-Type:")
    handle.setopt(pycurl.HTTPHEADER, lines)
    if method == "HEAD" and not body:
        handle.setopt(pycurl.NOBODY, 1)
    elif body or method in _BODY_METHODS:
        handle.setopt(pycurl.POSTFIELDSIZE, len(body))
        handle.setopt(pycurl.POSTFIELDS, body)
    else:
        handle.setopt(pycurl.HTTPGET, 1)
    if method != "POST" and (body or method not in ("GET", "HEAD")):
        handle.setopt(pycurl.CUSTOMREQUEST, method)
    room = max_body_bytes

    def drop(chunk: bytes) -> int | None:
        nonlocal room
        room -= len(chunk)
        sample.take(chunk)
        return None if room >= 0 else 0  # 0 aborts the transfer

    handle.setopt(pycurl.WRITEFUNCTION, drop)


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


def _call(
    done: Answered, status: int | None, location: str | None, exc: BaseException | None
) -> None:
    """Call ``done``, logging an error in it: raised into the loop, it would stop every
    other exchange."""
    try:
        done(status, location, exc)
    except Exception:
        logger.exception("an HTTP exchange's completion failed")
