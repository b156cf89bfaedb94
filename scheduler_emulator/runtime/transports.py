"""Transports carry one attempt's HTTP request to its target and report what happened.

- :class:`HttpTransport` — real HTTP over kept-alive connections; the attempt deadline bounds
  the whole attempt (redirects followed, only the headers Cloud Scheduler sends: no ``Accept``
  or client User-Agent).
- :class:`WsgiTransport` — calls a WSGI app in-process (no socket), following redirects.
- :class:`MountTransport` — routes URLs by prefix to in-process WSGI apps and everything else to
  a fallback transport (real HTTP by default)::

      transport = MountTransport({"http://orders.test": orders_app})
      emulator = Emulator(transport=transport)

A transport never raises for a target's failure: it returns a :class:`TransportResult` with
either an HTTP status or a :class:`~scheduler_emulator.domain.outcomes.Failure`.
"""

from __future__ import annotations

import http.client
import io
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote, urljoin, urlsplit

from ..domain.outcomes import Failure
from ..realtime import real_monotonic
from .http_client import DeadlineExceeded, HttpClient

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
MAX_REDIRECTS = 10


@dataclass(frozen=True)
class DeliveryRequest:
    """The HTTP request of one attempt.

    :param method: HTTP method name (``"POST"``).
    :param url: absolute ``http(s)`` URL.
    :param headers: header name → value, in sending order.
    :param body: raw body bytes (empty for none).
    """

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes = b""


@dataclass
class TransportResult:
    """What a transport observed.

    :param status: final HTTP status after redirects, or ``None`` if no response came.
    :param failure: why no response came (``None`` when ``status`` is set).
    :param detail: human-readable detail for the attempt's debug text.
    :param exception: an exception a WSGI app raised in-process (the attempt counts as a 500).
    """

    status: int | None = None
    failure: Failure | None = None
    detail: str = ""
    exception: BaseException | None = field(default=None, repr=False)


class Transport(Protocol):
    """Sends a :class:`DeliveryRequest` and reports a :class:`TransportResult`."""

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Deliver ``request``, giving up after ``timeout_seconds`` (the attempt deadline)."""
        ...


class HttpTransport:
    """Real HTTP delivery over kept-alive connections (:mod:`~scheduler_emulator.runtime.
    http_client`): the attempt deadline bounds the whole attempt, and response bodies are read
    up to 1 MiB and discarded.

    :param client: the HTTP client (one is made if not given; it is thread-safe).
    """

    def __init__(self, client: HttpClient | None = None) -> None:
        self.client = client if client is not None else HttpClient()

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Send over the network; redirects are followed and the final response decides.

        ``timeout_seconds`` bounds the whole attempt: connecting, sending, redirects, the
        response headers and its body, however slowly the target answers.

        :return: the final status, or a CONNECTION / DEADLINE failure.
        """
        try:
            status = self.client.request(
                request.method, request.url, request.headers, request.body, timeout_seconds
            )
        except DeadlineExceeded:
            return TransportResult(
                failure=Failure.DEADLINE, detail=f"No response within {timeout_seconds:g} s."
            )
        except (OSError, http.client.HTTPException, ValueError) as exc:
            return TransportResult(failure=Failure.CONNECTION, detail=_reason(exc))
        return TransportResult(status=status)

    def close(self) -> None:
        """Close the kept-alive connections (the emulator is closing)."""
        self.client.close()


_ERRNO_TEXT = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


def _reason(exc: BaseException) -> str:
    """The root cause of a connection failure as one sentence ("Connection refused.")."""
    text = str(exc)
    match = _ERRNO_TEXT.search(text)
    if match:
        return match.group(1).strip().rstrip(".") + "."
    for marker in ("RemoteDisconnected", "ConnectionResetError", "SSLError", "NameResolution"):
        if marker in text:
            return f"{marker}."
    return _short(exc)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def build_environ(request: DeliveryRequest) -> dict[str, Any]:
    """Return the PEP 3333 environ for ``request`` (what a WSGI server would build).

    :param request: the attempt's request; its URL gives host, port, path and query.
    :return: a fresh environ dict.
    """
    parts = urlsplit(request.url)
    scheme = parts.scheme or "http"
    port = parts.port or (443 if scheme == "https" else 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote(parts.path or "/", encoding="latin-1"),
        "QUERY_STRING": parts.query,
        "SERVER_NAME": parts.hostname or "localhost",
        "SERVER_PORT": str(port),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": parts.netloc,
        "CONTENT_LENGTH": str(len(request.body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scheme,
        "wsgi.input": io.BytesIO(request.body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in request.headers.items():
        key = name.upper().replace("-", "_")
        if key == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = value
        elif key not in ("CONTENT_LENGTH", "HOST"):
            environ["HTTP_" + key] = value
    return environ


def call_wsgi(app: WsgiApp, request: DeliveryRequest) -> tuple[int, Mapping[str, str]]:
    """Call ``app`` with ``request`` in-process and return ``(status, headers)``.

    The response body is read and discarded (the service never shows it, §10.3).

    :raises BaseException: whatever the app raises.
    """
    captured: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        captured["status"] = status
        captured["headers"] = headers
        return lambda data: None

    body_iter = app(build_environ(request), start_response)
    try:
        for _chunk in body_iter:
            pass
    finally:
        close = getattr(body_iter, "close", None)
        if close is not None:
            close()
    return int(captured["status"].split(" ", 1)[0]), dict(captured.get("headers", []))


class MountTransport:
    """Route requests to in-process WSGI apps by URL prefix; others go to ``fallback``.

    :param mounts: URL prefix (``"http://orders.test"`` or ``"http://127.0.0.1:8000/api"``) →
        WSGI app. The longest matching prefix wins.
    :param fallback: the transport for unmounted URLs; real HTTP by default.
    """

    def __init__(
        self, mounts: Mapping[str, WsgiApp] | None = None, fallback: Transport | None = None
    ) -> None:
        self._mounts: dict[str, WsgiApp] = {}
        self.fallback: Transport = fallback if fallback is not None else HttpTransport()
        for prefix, app in (mounts or {}).items():
            self.mount(prefix, app)

    def mount(self, prefix: str, app: WsgiApp) -> None:
        """Route URLs that start with ``prefix`` to ``app``.

        :raises ValueError: if ``prefix`` is not an absolute http(s) URL.
        """
        if not prefix.startswith(("http://", "https://")):
            raise ValueError(f"mount prefix must start with http:// or https://; got {prefix!r}.")
        self._mounts[prefix.rstrip("/")] = app

    def close(self) -> None:
        """Close the fallback transport's connections, if it keeps any."""
        close = getattr(self.fallback, "close", None)
        if close is not None:
            close()

    @property
    def mounted(self) -> list[str]:
        """The mounted URL prefixes."""
        return list(self._mounts)

    def find(self, url: str) -> WsgiApp | None:
        """Return the app mounted for ``url``, or ``None``."""
        best: tuple[int, WsgiApp] | None = None
        for prefix, app in self._mounts.items():
            matches = url == prefix or url.startswith((prefix + "/", prefix + "?"))
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), app)
        return best[1] if best else None

    def send(self, request: DeliveryRequest, timeout_seconds: float) -> TransportResult:
        """Deliver in-process when the URL is mounted, else through the fallback transport.

        In-process calls cannot be interrupted: an app that returns after more than
        ``timeout_seconds`` of real time is reported as a DEADLINE failure. An exception raised by
        the app is kept in the result and the attempt counts as a 500.
        """
        app = self.find(request.url)
        if app is None:
            return self.fallback.send(request, timeout_seconds)
        started = real_monotonic()
        for _ in range(MAX_REDIRECTS + 1):
            try:
                status, headers = call_wsgi(app, request)
            except Exception as exc:  # the target's own bug: a 500 to Cloud Scheduler
                return TransportResult(status=500, detail=_short(exc), exception=exc)
            if real_monotonic() - started > timeout_seconds:
                return TransportResult(failure=Failure.DEADLINE, detail="in-process app was slow")
            location = headers.get("Location") or headers.get("location")
            if status not in (301, 302, 303, 307, 308) or not location:
                return TransportResult(status=status)
            method = request.method if status in (307, 308) else "GET"
            body = request.body if status in (307, 308) else b""
            request = DeliveryRequest(method, urljoin(request.url, location), request.headers, body)
            next_app = self.find(request.url)
            if next_app is None:
                return self.fallback.send(request, timeout_seconds)
            app = next_app
        return TransportResult(failure=Failure.CONNECTION, detail="too many redirects")


class WsgiTransport(MountTransport):
    """Deliver every request to one in-process WSGI app, whatever the URL's host.

    :param app: the WSGI application.
    """

    def __init__(self, app: WsgiApp) -> None:
        super().__init__()
        self._app = app

    def find(self, url: str) -> WsgiApp | None:
        """Every URL goes to the app."""
        return self._app
