"""Many HTTP exchanges at once on one thread: libcurl's multi interface.

:class:`CurlLoop` is how the threaded driver sends ``http://`` attempts when ``pycurl`` is
installed. An attempt waiting on its target holds no thread: its transfer is one of the
loop's, and the loop's thread drives them all together. So 200 targets that drip their answers
a byte a second cost 200 sockets and a few hundred loop turns a second, not 200 threads, and
other jobs' attempts leave on time beside them::

    loop = CurlLoop(max_body_bytes=1 << 20)
    loop.submit(Hop("POST", "http://127.0.0.1:8000/run", {"X": "1"}, b""), 15.0, None, False, done)
    # done(status, location, None) or done(None, None, exc) is called on the loop's thread
    loop.close()

Each transfer is configured exactly as :class:`~scheduler_emulator.runtime._curl_exchange.
CurlExchange` configures its blocking one (:func:`~scheduler_emulator.runtime.
_curl_exchange.configure`) and its end read the same way (:func:`~scheduler_emulator.runtime.
_curl_exchange.ended`): the same wire, total deadline (libcurl's ``CURLOPT_TIMEOUT_MS``), body
cap and failure texts. Connections are kept alive in the multi handle's cache and shared by all
transfers; HTTP/2 transfers to one origin share a connection (multiplexed), as an HTTP/2 client
does.

How it is driven: each turn calls libcurl's ``perform`` once (every socket that is ready, every
timeout due) and then waits in ``select`` for the next event, at most libcurl's own timeout and
at most :data:`_TURN_SECONDS`; with nothing under way the thread sleeps until a submit. libcurl
releases the GIL in each of these calls, and getting it back can cost up to the interpreter's
switch interval (5 ms) while the engine's threads are busy recording a large minute, so two
such calls per turn — not one per socket, as libcurl's ``socket_action`` API would need — is
what keeps the loop's rate then. A socket ``select(2)`` cannot watch (a descriptor number of
1,024 or more) is still served every turn. Callbacks (done, the body writer) run on the loop's
thread and must be quick.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import pycurl

from ._curl_exchange import CurlDeadline, configure, ended, exchange_http2, prime

if TYPE_CHECKING:
    from ._redirects import Hop, ResponseSample

logger = logging.getLogger("scheduler_emulator")

#: Called once per transfer on the loop's thread: ``(status, location, None)`` when an answer
#: came (``location``: the absolute ``Location`` of a redirect, else ``None``), or
#: ``(None, None, exc)`` — :class:`~scheduler_emulator.runtime._curl_exchange.CurlDeadline`
#: when the deadline passed, an :class:`OSError` when the connection failed or the loop closed.
Done = Callable[[int | None, str | None, BaseException | None], None]

#: Idle easy handles kept for reuse (a handle is a few kB; more are closed).
_FREE_HANDLES = 256
#: Kept-alive connections at most in the multi handle's cache.
_MAX_CONNECTS = 512
#: Seconds the loop waits at most between turns while exchanges are under way: a new submit,
#: and a socket ``select(2)`` cannot watch (a descriptor number of 1,024 or more), are seen
#: within this.
_TURN_SECONDS = 0.005


class _Transfer(NamedTuple):
    hop: Hop
    timeout_seconds: float
    sample: ResponseSample | None
    http2: bool
    done: Done


class CurlLoop:
    """Runs HTTP exchanges concurrently on one thread of its own (started on first use);
    thread-safe.

    :param max_body_bytes: response body bytes read at most per exchange; past them the
        transfer is aborted and the status already received counts.
    :param http2: the default of :meth:`submit`'s ``http2``.
    :raises ValueError: with ``http2`` when this libcurl has no HTTP/2 (the message says so).
    """

    def __init__(self, max_body_bytes: int, *, http2: bool = False) -> None:
        self.max_body_bytes = max_body_bytes
        self.http2 = exchange_http2(http2, False)
        self._lock = threading.Lock()
        self._submitted: deque[_Transfer] = deque()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._work = threading.Condition(self._lock)  # a submit or close wakes an idle loop
        # Loop-thread state.
        self._multi = pycurl.CurlMulti()
        self._multi.setopt(pycurl.M_MAXCONNECTS, _MAX_CONNECTS)
        self._running: dict[pycurl.Curl, _Transfer] = {}
        self._free: list[pycurl.Curl] = []

    @property
    def in_flight(self) -> int:
        """Exchanges submitted whose ``done`` has not been called yet."""
        with self._lock:
            return len(self._submitted) + len(self._running)

    def submit(
        self,
        hop: Hop,
        timeout_seconds: float,
        sample: ResponseSample | None,
        http2: bool | None,
        done: Done,
    ) -> None:
        """Start one exchange (no redirect is followed); ``done`` is called once when it ends.

        :param hop: the request: method, an absolute ``http://`` URL, headers, body.
        :param timeout_seconds: the exchange ends within this many seconds.
        :param sample: where to keep the body's start and the ``Content-Type``.
        :param http2: ``True``: HTTP/2 with prior knowledge (h2c); ``False``: HTTP/1.1;
            ``None``: the loop's default.
        :raises RuntimeError: after :meth:`close`.
        :raises ValueError: for ``http2=True`` when this libcurl has no HTTP/2.
        """
        transfer = _Transfer(hop, timeout_seconds, sample, exchange_http2(http2, self.http2), done)
        with self._lock:
            if self._closed:
                raise RuntimeError("the HTTP client is closed")
            self._submitted.append(transfer)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="curl-loop", daemon=True)
                self._thread.start()
            self._work.notify()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the loop: exchanges still running end with an :class:`OSError` (their ``done``
        is called), connections are closed. Waits up to ``timeout`` seconds for the loop's
        thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._work.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        if thread is None:
            self._teardown()

    # ---------------------------------------------------------------- the loop's thread

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    while not self._running and not self._submitted and not self._closed:
                        self._work.wait()  # nothing under way: sleep until a submit
                    if self._closed:
                        return
                self._add_submitted()
                # One call for every socket ready and every timeout due, and one wait: libcurl
                # releases the GIL in each, and getting it back can cost up to the
                # interpreter's switch interval while other threads are busy, so the loop
                # makes two such calls per turn, however many exchanges are under way.
                self._multi.perform()
                self._collect()
                if self._running:
                    wanted = self._multi.timeout()  # ms; -1: libcurl has no timeout of its own
                    limit = _TURN_SECONDS if wanted < 0 else min(wanted / 1000, _TURN_SECONDS)
                    if limit > 0:
                        self._multi.select(limit)
        finally:
            self._teardown()

    def _add_submitted(self) -> None:
        with self._lock:
            batch, self._submitted = self._submitted, deque()
        for transfer in batch:
            handle = self._free.pop() if self._free else pycurl.Curl()
            prime(handle, transfer.http2)
            try:
                configure(
                    handle,
                    transfer.hop,
                    transfer.timeout_seconds,
                    transfer.sample,
                    self.max_body_bytes,
                )
                with self._lock:
                    self._running[handle] = transfer
                self._multi.add_handle(handle)
            except (pycurl.error, UnicodeEncodeError, ValueError) as exc:
                with self._lock:
                    self._running.pop(handle, None)
                self._recycle(handle)
                _call(transfer.done, None, None, OSError(f"the request could not be made: {exc}"))

    def _collect(self) -> None:
        """Call ``done`` for every transfer libcurl has finished."""
        while True:
            queued, succeeded, failed = self._multi.info_read()
            for handle in succeeded:
                self._finish(handle, None, "")
            for handle, code, message in failed:
                self._finish(handle, code, message)
            if not queued:
                return

    def _finish(self, handle: pycurl.Curl, code: int | None, message: str) -> None:
        self._multi.remove_handle(handle)
        with self._lock:
            transfer = self._running.pop(handle)
        try:
            status, location = ended(handle, code, message, transfer.sample)
        except (CurlDeadline, OSError) as exc:
            outcome: tuple[int | None, str | None, BaseException | None] = (None, None, exc)
        else:
            outcome = (status, location, None)
        self._recycle(handle)
        _call(transfer.done, *outcome)

    def _recycle(self, handle: pycurl.Curl) -> None:
        handle.reset()
        if len(self._free) < _FREE_HANDLES:
            self._free.append(handle)
        else:
            handle.close()

    def _teardown(self) -> None:
        """End what is still running (their ``done`` told the loop closed) and free it all."""
        with self._lock:
            running, self._running = self._running, {}
            submitted, self._submitted = self._submitted, deque()
        closed = "the HTTP client was closed before the target answered"
        for handle, transfer in running.items():
            with contextlib.suppress(pycurl.error):
                self._multi.remove_handle(handle)
            handle.close()
            _call(transfer.done, None, None, OSError(closed))
        for transfer in submitted:
            _call(transfer.done, None, None, OSError(closed))
        for handle in self._free:
            handle.close()
        self._free.clear()
        self._multi.close()


def _call(done: Done, status: int | None, location: str | None, exc: BaseException | None) -> None:
    """Call ``done``; an error in it is logged, not raised into the loop (which would stop
    every other exchange)."""
    try:
        done(status, location, exc)
    except Exception:
        logger.exception("an HTTP exchange's completion failed")
