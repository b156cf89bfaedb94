"""The one redirect loop of every transport: which answers are followed, how the next request
of an attempt is made from the last one, and the attempt's total deadline over all of them.

Google documents only that "for a redirected request, the response returned by the redirected
request is considered" (``HttpTarget``); how its fetcher rewrites the request is not said. The
emulator pins Go's ``net/http`` client rules (``redirectBehavior`` in ``net/http/client.go``),
which RFC 9110 section 15.4 allows:

- 301, 302 and 303 turn any method but ``GET`` and ``HEAD`` into ``GET``, without body (and
  without ``Content-Type``/``Content-Length``);
- 307 and 308 keep the method, the body and every header;
- a hop to another host drops ``Authorization`` (the token is for the job's own target);
- at most :data:`MAX_REDIRECTS` are followed; one more is a failure.

A way of sending sends exactly one request (a :data:`SendOne`: libcurl's event loop,
``http.client``, an in-process WSGI or ASGI app); :func:`follow`, above them all, sends an
attempt's first request through one, follows redirects with :func:`next_hop` and keeps every
hop inside the attempt's one deadline — so a job behaves the same whichever carries it::

    >>> hop = next_hop(302, "/new", Hop("PUT", "http://a.test/old", {"X": "1"}, b"x"))
    >>> (hop.method, hop.url, hop.body)
    ('GET', 'http://a.test/new', b'')
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from ..realtime import real_monotonic

#: Redirects followed at most within one attempt.
MAX_REDIRECTS = 10
#: The statuses that are followed when they carry a ``Location``.
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: The failure text of an attempt redirected more than :data:`MAX_REDIRECTS` times.
TOO_MANY_REDIRECTS = f"More than {MAX_REDIRECTS} redirects."
_BODY_HEADERS = frozenset({"content-type", "content-length"})
#: Seconds :func:`wait` waits past a request's deadline before it gives up on its sender (which
#: ends every request by its deadline: libcurl's total timeout, or the watchdog).
_GRACE_SECONDS = 5.0


class DeadlineExceeded(Exception):
    """The request did not complete (headers and body) within its deadline."""


@dataclass(frozen=True)
class Hop:
    """One request of an attempt: the first, or one a redirect asked for.

    :param method: HTTP method name.
    :param url: absolute URL.
    :param headers: header name → value, in sending order.
    :param body: raw body bytes.
    """

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes = b""


def next_hop(status: int, location: str | None, hop: Hop) -> Hop | None:
    """The request to send after ``hop`` was answered ``status`` with ``location``.

    :param status: the answer's HTTP status.
    :param location: its ``Location`` header (relative or absolute), or ``None``.
    :param hop: the request that was answered.
    :return: the next request, or ``None`` when the answer is final (not a followed redirect,
        or no ``Location``).
    """
    if status not in REDIRECT_STATUSES or not location:
        return None
    url = urljoin(hop.url, location)
    method, body, headers = hop.method, hop.body, hop.headers
    if status < 307 and method not in ("GET", "HEAD"):
        method, body = "GET", b""
        headers = {k: v for k, v in headers.items() if k.lower() not in _BODY_HEADERS}
    if urlsplit(url).netloc != urlsplit(hop.url).netloc:
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    return Hop(method, url, headers, body)


class ResponseSample:
    """The start of the final response's body and its ``Content-Type``, kept for the attempt
    record (each redirect hop overwrites the previous one's).

    :ivar body: at most ``limit`` bytes of the body.
    :ivar content_type: the ``Content-Type`` header, ``None`` without one.
    """

    __slots__ = ("body", "content_type", "exception", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.body = bytearray()
        self.content_type: str | None = None
        #: What an in-process app raised (the answer counts as a 500), else ``None``.
        self.exception: BaseException | None = None

    def restart(self, content_type: str | None) -> None:
        """A new response begins: forget the previous hop's."""
        self.body.clear()
        self.content_type = content_type
        self.exception = None

    def take(self, chunk: bytes) -> None:
        """Keep as much of ``chunk`` as fits under the limit."""
        room = self.limit - len(self.body)
        if room > 0:
            self.body += chunk[:room]


#: Called once when one request ends, on any thread: ``(status, location, None)`` when an
#: answer came (``location``: its ``Location`` header, relative or absolute, else ``None``), or
#: ``(None, None, exc)``: :class:`DeadlineExceeded` when the deadline passed first, an
#: :class:`OSError` (or ``http.client.HTTPException``) when the connection failed, a
#: :class:`ValueError` for a request that cannot be made.
Answered = Callable[[int | None, str | None, BaseException | None], None]
#: Sends exactly one request, never following a redirect: ``send_one(hop, deadline, sample,
#: answered)``, ``deadline`` in real monotonic seconds, the answer's body start and
#: ``Content-Type`` kept in ``sample`` (``None``: nothing kept).
SendOne = Callable[[Hop, float, "ResponseSample | None", Answered], None]
#: Called once when an attempt's request ends: ``(final status, None)`` or ``(None, exc)``.
Ended = Callable[[int | None, BaseException | None], None]


def follow(
    send_one: SendOne,
    first: Hop,
    deadline: float,
    sample: ResponseSample | None,
    ended: Ended,
) -> None:
    """Send ``first`` through ``send_one`` and follow redirects (:func:`next_hop`) until an
    answer is final — every hop within ``deadline`` — then call ``ended`` once: on this thread
    when ``send_one`` answers at once, else on the thread of its answer.

    :param deadline: real monotonic seconds by which the whole attempt ends.
    :param sample: where the final answer's body start and ``Content-Type`` are kept.
    :param ended: gets ``(status, None)``, or ``(None, exc)``: the failure of the last hop,
        :class:`DeadlineExceeded` when the deadline passed between hops, a :class:`ValueError`
        saying :data:`TOO_MANY_REDIRECTS`.
    """

    def send(hop: Hop, redirects_left: int) -> None:
        if real_monotonic() >= deadline:
            ended(None, DeadlineExceeded())
            return

        def answered(status: int | None, location: str | None, exc: BaseException | None) -> None:
            if status is None:
                ended(None, exc if exc is not None else DeadlineExceeded())
                return
            following = next_hop(status, location, hop)
            if following is None:
                ended(status, None)
            elif redirects_left == 0:
                ended(None, ValueError(TOO_MANY_REDIRECTS))
            else:
                send(following, redirects_left - 1)

        if sample is not None:
            sample.restart(None)  # the answer kept is the last hop's
        send_one(hop, deadline, sample, answered)

    send(first, MAX_REDIRECTS)


def wait(begin: Callable[[Ended], object], deadline: float) -> int:
    """Begin a request with ``begin(ended)`` and wait for its end: ``send`` is ``start`` and a
    wait.

    :param deadline: real monotonic seconds by which the request ends (its sender sees to it).
    :return: the final status.
    :raises BaseException: the failure the request ended with; :class:`DeadlineExceeded` if
        no end came within :data:`_GRACE_SECONDS` after ``deadline``.
    """
    came = threading.Event()
    outcome: list[tuple[int | None, BaseException | None]] = []

    def ended(status: int | None, exc: BaseException | None) -> None:
        outcome.append((status, exc))
        came.set()

    begin(ended)
    if not came.wait(max(0.0, deadline - real_monotonic()) + _GRACE_SECONDS):
        raise DeadlineExceeded()
    status, exc = outcome[0]
    if exc is not None:
        raise exc
    assert status is not None
    return status
