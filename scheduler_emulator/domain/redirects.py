"""How one attempt's request is redirected: which answers are followed and how the next
request is made from the last one — pure rules, used by every transport's one redirect loop
(:func:`~scheduler_emulator.runtime.delivery.transports.follow`).

Google documents only that "for a redirected request, the response returned by the redirected
request is considered" (``HttpTarget``); how its fetcher rewrites the request is not said. The
emulator pins Go's ``net/http`` client rules (``redirectBehavior`` in ``net/http/client.go``),
which RFC 9110 section 15.4 allows:

- 301, 302 and 303 turn any method but ``GET`` and ``HEAD`` into ``GET``, without body (and
  without ``Content-Type``/``Content-Length``);
- 307 and 308 keep the method, the body and every header;
- a hop to another host drops ``Authorization`` (the token is for the job's own target);
- at most :data:`MAX_REDIRECTS` are followed; one more is a failure::

    >>> hop = next_hop(302, "/new", Hop("PUT", "http://a.test/old", {"X": "1"}, b"x"))
    >>> (hop.method, hop.url, hop.body)
    ('GET', 'http://a.test/new', b'')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

#: Redirects followed at most within one attempt.
MAX_REDIRECTS = 10
#: The statuses that are followed when they carry a ``Location``.
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: The failure text of an attempt redirected more than :data:`MAX_REDIRECTS` times.
TOO_MANY_REDIRECTS = f"More than {MAX_REDIRECTS} redirects."
_BODY_HEADERS = frozenset({"content-type", "content-length"})


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
    :ivar exception: what an in-process app raised (the answer counts as a 500), else ``None``.
    """

    __slots__ = ("body", "content_type", "exception", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.body = bytearray()
        self.content_type: str | None = None
        self.exception: BaseException | None = None

    def restart(self) -> None:
        """A new response begins: forget the previous hop's."""
        self.body.clear()
        self.content_type = None
        self.exception = None

    def take(self, chunk: bytes) -> None:
        """Keep as much of ``chunk`` as fits under the limit."""
        room = self.limit - len(self.body)
        if room > 0:
            self.body += chunk[:room]


#: Called once when one request ends, on any thread: ``(status, location, None)`` when an
#: answer came (``location``: its ``Location`` header, relative or absolute, else ``None``), or
#: ``(None, None, exc)``: :class:`TimeoutError` when the deadline passed first, an
#: :class:`OSError` (or ``http.client.HTTPException``) when the connection failed, a
#: :class:`ValueError` for a request that cannot be made.
Answered = Callable[[int | None, str | None, BaseException | None], None]
