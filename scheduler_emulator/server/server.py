"""The daemon's WSGI application and HTTP server.

:func:`create_app` builds one WSGI app for an :class:`~scheduler_emulator.Emulator`
serving the Cloud Scheduler v1 REST API (:mod:`~scheduler_emulator.server.api`) and the
``/_emulator/`` endpoints (:mod:`~scheduler_emulator.server.admin`). Errors are rendered as
Google's REST error envelope; bad input never yields a 5xx (gcloud retries
5xx and would repeat side effects).

Nobody but the user drives the daemon (docs/api.md, "Security checks"): every request's ``Host``
must name a loopback address or the bound one, with the bound port (no DNS rebinding); every
state-changing request's ``Origin`` must be absent or a loopback origin (no cross-site request
from a browser); bodies are parsed only with a JSON content type
(:mod:`~scheduler_emulator.server.request_body`); with an admin token, ``/_emulator/*`` needs
``Authorization: Bearer <token>``. The HTTP server (:func:`serve`) bounds what one client can
hold: request bodies (:data:`MAX_BODY_BYTES`, 413 before reading), connection threads
(:data:`MAX_CONNECTIONS`), and time to send a request (:data:`SOCKET_TIMEOUT_SECONDS`).
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.routing import Map
from werkzeug.serving import BaseWSGIServer, ThreadedWSGIServer, WSGIRequestHandler
from werkzeug.wrappers import Request, Response

from ..domain.errors import ApiError, InvalidArgument
from ..runtime._cloud_run_api import PATH_PREFIXES as CLOUD_RUN_PATHS
from ..runtime._emulator import Emulator
from ..wire import is_loopback
from . import admin, api
from .connections import ConnectionRouter
from .partial_response import OVERRIDABLE_METHODS, select_fields

__all__ = [
    "BoundedWSGIServer",
    "EmulatorApp",
    "MAX_BODY_BYTES",
    "MAX_CONNECTIONS",
    "OPEN_ADMIN_PATHS",
    "REPEATED_HEADERS_KEY",
    "SINGLE_HEADERS",
    "SOCKET_TIMEOUT_SECONDS",
    "create_app",
    "error_response",
    "json_response",
    "override_method",
    "serve",
]

logger = logging.getLogger("scheduler_emulator")

_HTTP_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    414: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    431: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
}

#: Largest request body, in bytes (1 MiB: a job is at most 1 MB, Google's limit, plus JSON's
#: base64 and escaping overhead would not fit much more). Larger bodies get 413 before a byte
#: of them is read.
MAX_BODY_BYTES = 1024 * 1024
#: Most connections served at once; one more is answered 503 and closed.
MAX_CONNECTIONS = 64
#: Seconds a connection may stay silent while a request is being read, or idle between
#: requests (keep-alive); then it is closed. Handling the request (a long clock move) is not
#: bounded.
SOCKET_TIMEOUT_SECONDS = 5.0
#: Paths under ``/_emulator/`` that stay open with an admin token: liveness, the public keys
#: and token description a target service fetches to verify the tokens jobs send, and the
#: dashboard's static files (the page asks for the token and sends it with its requests).
OPEN_ADMIN_PATHS = (
    "/_emulator/health",
    "/_emulator/oidc/",
    "/_emulator/oauth2/",
    "/_emulator/ui/",
)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Headers a request may carry at most once: a second ``Origin`` or ``Content-Type`` would let
#: a check read one value while something else reads the other, so a repeat is refused.
SINGLE_HEADERS = ("Origin", "Content-Type")
#: The WSGI environ key under which the server lists the :data:`SINGLE_HEADERS` a request
#: repeated.
REPEATED_HEADERS_KEY = "scheduler_emulator.repeated_headers"


class _LimitedRequest(Request):
    # werkzeug refuses a longer body with 413 and never reads past the limit (chunked too).
    max_content_length = MAX_BODY_BYTES


def _is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("", "0.0.0.0", "::")


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _refused(status: int, message: str, reason: str) -> Response:
    body = {
        "error": {
            "code": status,
            "message": message,
            "status": _HTTP_STATUS_NAMES[status],
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": reason,
                    "domain": "scheduler-emulator",
                }
            ],
        }
    }
    return json_response(body, status)


def json_response(payload: Any, status: int = 200) -> Response:
    """Return ``payload`` as a JSON response (``application/json; charset=UTF-8``)."""
    return Response(
        json.dumps(payload), status=status, content_type="application/json; charset=UTF-8"
    )


def error_response(error: ApiError) -> Response:
    """Render ``error`` as Google's error envelope with its HTTP status."""
    return json_response(error.to_envelope(), error.http_status)


def _http_error(exc: HTTPException, request: Request) -> Response:
    path = request.path
    allow: list[str] = []
    if isinstance(exc, MethodNotAllowed):
        if path.startswith("/_emulator/"):  # the emulator's own endpoints: a plain 405
            allow = sorted(exc.valid_methods or [])
            exc.description = f"{path} takes {' or '.join(allow)}, not {request.method}."
        else:  # Google's front end: no such method at that path
            exc = NotFound("Method not found: this path does not take that HTTP method.")
    code = exc.code or 500
    status = _HTTP_STATUS_NAMES.get(code, "INTERNAL" if code >= 500 else "INVALID_ARGUMENT")
    body = {"error": {"code": code, "message": exc.description or exc.name, "status": status}}
    response = json_response(body, code)
    if allow:
        response.headers["Allow"] = ", ".join(allow)
    return response


def override_method(request: Request) -> None:
    """Apply ``X-HTTP-Method-Override`` to a POST (Google's front end does: a client that can
    only POST sends ``PATCH`` or ``GET`` this way).

    :raises InvalidArgument: for an override that is not an HTTP method of the API.
    """
    override = request.headers.get("X-HTTP-Method-Override")
    if override is None or request.method != "POST":
        return
    method = override.strip().upper()
    if method not in OVERRIDABLE_METHODS:
        raise InvalidArgument(
            f"X-HTTP-Method-Override {json.dumps(override)} is not one of "
            f"{', '.join(sorted(OVERRIDABLE_METHODS))}.",
            field="X-HTTP-Method-Override",
        )
    request.environ["REQUEST_METHOD"] = method
    request.method = method


class EmulatorApp:
    """WSGI app of the daemon: checks who is asking, then routes requests to handler objects by
    endpoint name.

    :param emulator: the emulator to serve.
    :param host: the address the server is bound to (``--host``); a ``Host`` header may name
        it besides the loopback names. ``None``: loopback names only.
    :param port: the bound port; a ``Host`` header with another port is refused. ``None``
        (in-process, e.g. werkzeug's test client): any port.
    :param admin_token: when set, ``/_emulator/*`` (but :data:`OPEN_ADMIN_PATHS`) needs
        ``Authorization: Bearer <admin_token>``.
    """

    def __init__(
        self,
        emulator: Emulator,
        *,
        host: str | None = None,
        port: int | None = None,
        admin_token: str | None = None,
    ) -> None:
        self.emulator = emulator
        self.host = host
        self.port = port
        self.admin_token = admin_token or None
        rules = [*admin.RULES, *api.RULES]
        self.url_map = Map([rule.empty() for rule in rules], strict_slashes=False)
        self.handlers: dict[str, Callable[..., Any]] = {}
        self.add_handlers(admin.Admin(emulator))
        self.add_handlers(api.Api(emulator))

    def add_handlers(self, obj: object) -> None:
        """Register every public method of ``obj`` named like an endpoint of the URL map."""
        for rule in self.url_map.iter_rules():
            method = getattr(obj, str(rule.endpoint), None)
            if method is not None:
                self.handlers[str(rule.endpoint)] = method

    def _host_allowed(self, header: str) -> bool:
        try:
            parts = urlsplit("//" + header)
            name, port = parts.hostname or "", parts.port
        except ValueError:
            return False
        if self.port is not None and port not in (None, self.port):
            return False
        if is_loopback(name):
            return True
        bound = (self.host or "").strip("[]").lower()
        if bound and name == bound:
            return True
        if bound and _is_wildcard(bound):  # every address of the machine: IPs, its own name
            return _is_ip_literal(name) or name in (
                socket.gethostname().lower(),
                socket.getfqdn().lower(),
            )
        return False

    def check_caller(self, request: Request) -> Response | None:
        """Refuse a request that does not come from the user: a foreign ``Host`` (DNS
        rebinding; reading the public keys and health under :data:`OPEN_ADMIN_PATHS` is allowed
        under any name, so a target service can fetch them by a container name), a foreign
        ``Origin`` on a state-changing request (a web page posting
        cross-site), a repeated ``Origin`` or ``Content-Type`` (:data:`SINGLE_HEADERS`), or a
        missing admin token.

        :return: the 403 / 401 / 400 response in Google's envelope, or ``None`` to go on.
        """
        host = request.headers.get("Host")
        public = request.method in _SAFE_METHODS and request.path.startswith(OPEN_ADMIN_PATHS)
        if host is not None and not public and not self._host_allowed(host):
            return _refused(
                403,
                f"Host {json.dumps(host)} is not this emulator: requests must name a loopback "
                f"address or the address it listens on (DNS rebinding protection).",
                "FOREIGN_HOST",
            )
        repeated = request.environ.get(REPEATED_HEADERS_KEY)
        if repeated:
            return _refused(
                403 if "Origin" in repeated else 400,
                f"The request repeats the {' and '.join(repeated)} header; send each at most once.",
                "REPEATED_HEADER",
            )
        origin = request.headers.get("Origin")
        if request.method not in _SAFE_METHODS and origin is not None:
            try:
                origin_host = urlsplit(origin).hostname or ""
            except ValueError:
                origin_host = ""
            if not is_loopback(origin_host):
                return _refused(
                    403,
                    f"Origin {json.dumps(origin)} may not change the emulator: only requests "
                    "without an Origin (gcloud, client libraries, curl) or from a loopback "
                    "origin are accepted (cross-site request protection).",
                    "FOREIGN_ORIGIN",
                )
        if (
            self.admin_token is not None
            and request.path.startswith("/_emulator/")
            and not request.path.startswith(OPEN_ADMIN_PATHS)
        ):
            given = request.headers.get("Authorization", "")
            expected = f"Bearer {self.admin_token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                return _refused(
                    401,
                    "The /_emulator/ endpoints need Authorization: Bearer <admin token> "
                    "(the daemon was started with --admin-token or "
                    "SCHEDULER_EMULATOR_ADMIN_TOKEN).",
                    "ADMIN_TOKEN_REQUIRED",
                )
        return None

    def dispatch(self, request: Request) -> Response:
        """Check the caller, route ``request`` and turn the handler's result or error into a
        response."""
        refused = self.check_caller(request)
        if refused is not None:
            return refused
        if request.path.startswith(CLOUD_RUN_PATHS):  # the Cloud Run Admin API's jobs
            return Response.from_app(self.emulator.cloud_run_api, request.environ)
        try:
            override_method(request)
            adapter = self.url_map.bind_to_environ(request.environ)
            endpoint, values = adapter.match()
            result = self.handlers[str(endpoint)](request, **values)
            if request.path.startswith("/v1/") and "fields" in request.args:
                result = select_fields(result, request.args["fields"])
        except ApiError as exc:
            return error_response(exc)
        except HTTPException as exc:
            response = _http_error(exc, request)
            if exc.code == 413:  # the body was not read: the connection cannot be reused
                response.headers["Connection"] = "close"
            return response
        except TimeoutError:  # the client stopped sending the body
            body = {
                "error": {
                    "code": 408,
                    "message": f"The request body did not arrive within "
                    f"{SOCKET_TIMEOUT_SECONDS:g} s.",
                    "status": "DEADLINE_EXCEEDED",
                }
            }
            response = json_response(body, 408)
            response.headers["Connection"] = "close"
            return response
        except Exception:  # a bug of ours: never let it look like a network failure
            logger.exception("internal error serving %s %s", request.method, request.path)
            body = {"error": {"code": 500, "message": "Internal error.", "status": "INTERNAL"}}
            return json_response(body, 500)
        if isinstance(result, Response):
            return result
        return json_response(result)

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        return self.dispatch(_LimitedRequest(environ))(environ, start_response)


def create_app(
    emulator: Emulator,
    *,
    host: str | None = None,
    port: int | None = None,
    admin_token: str | None = None,
) -> EmulatorApp:
    """Return the daemon's WSGI application for ``emulator`` (parameters: :class:`EmulatorApp`)."""
    return EmulatorApp(emulator, host=host, port=port, admin_token=admin_token)


class _RequestHandler(WSGIRequestHandler):
    # socketserver applies it to the connection: a silent or half-sent request, or an idle
    # keep-alive connection, is closed after this many seconds instead of holding its thread.
    timeout = SOCKET_TIMEOUT_SECONDS

    def make_environ(self) -> Any:
        # WSGI keeps one value per header: werkzeug joins repeated headers with "," (and keeps
        # the last Content-Type), so a repeat is only visible here. check_caller refuses it.
        environ = super().make_environ()
        repeated = [name for name in SINGLE_HEADERS if len(self.headers.get_all(name) or ()) > 1]
        if repeated:
            environ[REPEATED_HEADERS_KEY] = repeated
        return environ

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # What http.server answers before the app sees the request (414 for a request line
        # over 64 KiB, 431 for too many headers, 400 for a malformed request line): Google's
        # JSON error envelope, not http.server's HTML page.
        text = message or self.responses.get(code, ("Error",))[0]
        status = _HTTP_STATUS_NAMES.get(code, "INTERNAL" if code >= 500 else "INVALID_ARGUMENT")
        body = json.dumps({"error": {"code": code, "message": f"{text}.", "status": status}})
        data = body.encode()
        with contextlib.suppress(OSError):
            self.send_response(code, message)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Connection", "close")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD" and code >= 200 and code not in (204, 304):
                self.wfile.write(data)
        self.close_connection = True


class BoundedWSGIServer(ThreadedWSGIServer):
    """werkzeug's threaded server with at most :data:`MAX_CONNECTIONS` connection threads; a
    connection beyond that is answered ``503`` and closed at once.

    :param host: address to bind.
    :param port: port to bind; 0 picks a free one.
    :param app: the WSGI application.
    :param max_connections: the bound on concurrent connections.
    :param socket_timeout: seconds a connection may stay silent while a request is read or
        between requests.
    """

    def __init__(
        self,
        host: str,
        port: int,
        app: Any,
        *,
        max_connections: int = MAX_CONNECTIONS,
        socket_timeout: float = SOCKET_TIMEOUT_SECONDS,
    ) -> None:
        handler = type("RequestHandler", (_RequestHandler,), {"timeout": socket_timeout})
        super().__init__(host, port, app, handler=handler)
        self._slots = threading.BoundedSemaphore(max_connections)
        #: Sees each connection first, in its thread (gRPC and TLS on the same port:
        #: :class:`~scheduler_emulator.server.connections.ConnectionRouter`); returns ``True``
        #: when it handled the connection. ``None``: HTTP only.
        self.connection_router: Any = None

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            body = _TOO_MANY.encode()
            head = (
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
            )
            with contextlib.suppress(OSError):
                request.sendall(head.encode() + body)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            router = self.connection_router
            if router is not None and router(request, client_address):
                self.shutdown_request(request)
            else:
                super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def server_close(self) -> None:
        super().server_close()
        if self.connection_router is not None:
            self.connection_router.close()


_TOO_MANY = json.dumps(
    {"error": {"code": 503, "message": "Too many connections.", "status": "UNAVAILABLE"}}
)


def serve(
    emulator: Emulator,
    host: str,
    port: int,
    *,
    admin_token: str | None = None,
    max_connections: int = MAX_CONNECTIONS,
    socket_timeout: float = SOCKET_TIMEOUT_SECONDS,
    grpc: bool = True,
) -> BaseWSGIServer:
    """Bind a threaded HTTP server for ``emulator`` (not yet serving; call ``serve_forever``).

    The same port serves the v1 API over gRPC (:mod:`~scheduler_emulator.server.connections`);
    ``server_close`` stops that too. The app accepts ``Host`` headers naming a loopback address
    or ``host``, with the bound port; see :class:`EmulatorApp` and :class:`BoundedWSGIServer`
    for the other limits.

    :param host: address to bind (``127.0.0.1``, ``::1``, ``0.0.0.0``…).
    :param port: TCP port; 0 picks a free one (read ``server.server_port``).
    :param admin_token: see :class:`EmulatorApp`.
    :param max_connections: see :class:`BoundedWSGIServer`.
    :param socket_timeout: see :class:`BoundedWSGIServer`.
    :param grpc: serve gRPC when the ``[grpc]`` extra is installed; ``False`` (or without the
        extra) answers gRPC calls ``UNIMPLEMENTED`` naming the extra.
    :raises OSError: if the address is in use.
    """
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app = create_app(emulator, host=host, admin_token=admin_token)
    server = BoundedWSGIServer(
        host, port, app, max_connections=max_connections, socket_timeout=socket_timeout
    )
    app.port = server.server_port
    server.connection_router = ConnectionRouter(emulator, grpc=grpc, sniff_timeout=socket_timeout)
    return server
