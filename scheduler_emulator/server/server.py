"""The daemon's WSGI application and HTTP server.

:func:`create_app` builds one WSGI app for an :class:`~scheduler_emulator.Emulator`
serving the Cloud Scheduler v1 REST API (:mod:`~scheduler_emulator.server.api`) and the
``/_emulator/`` endpoints (:mod:`~scheduler_emulator.server.admin`). Errors are rendered as
Google's REST error envelope; bad input never yields a 5xx (gcloud retries
5xx and would repeat side effects).

Nobody but the user drives the daemon (docs/api.md, "Security checks"): every request's ``Host``
must name a loopback address, the bound one or an allowed name, on any port (no DNS
rebinding); every state-changing request's ``Origin`` must be absent, a loopback origin or an
allowed name's (no cross-site request from a browser); bodies are parsed only with a JSON
content type (:mod:`~scheduler_emulator.server.request_body`); with an admin token,
``/_emulator/*`` needs ``Authorization: Bearer <token>``. The HTTP server (:func:`serve`)
bounds what one client can hold: request bodies
(:data:`~scheduler_emulator.api.v1.MAX_REQUEST_BYTES`, 400 before reading), and through its
connection front
(:class:`~scheduler_emulator.server.connections.ConnectionRouter`) connections, worker
threads and the time to send a request (:class:`~scheduler_emulator.server.connections.Limits`).
"""

from __future__ import annotations

import contextlib
import hmac
import io
import ipaddress
import json
import logging
import re
import socket
import socketserver
import time
from collections.abc import Callable, Collection, Iterable
from typing import Any
from urllib.parse import urlsplit

from werkzeug.exceptions import (
    BadRequest,
    HTTPException,
    MethodNotAllowed,
    NotFound,
    RequestEntityTooLarge,
)
from werkzeug.routing import Map, RequestRedirect
from werkzeug.serving import DechunkedInput, ThreadedWSGIServer, WSGIRequestHandler
from werkzeug.wrappers import Request, Response

from ..api.v1 import MAX_REQUEST_BYTES
from ..domain.errors import (
    ApiError,
    DeadlineExceeded,
    Internal,
    InvalidArgument,
    PermissionDenied,
    Unauthenticated,
    Unimplemented,
    show_value,
)
from ..runtime._emulator import Emulator
from ..runtime.cloud_run.admin_api import PATH_PREFIXES as CLOUD_RUN_PATHS
from ..wire import is_loopback
from . import admin, api
from .connections import ConnectionRouter, Limits, error_bytes
from .partial_response import OVERRIDABLE_METHODS, rest_field_mask, select_fields

__all__ = [
    "BoundedWSGIServer",
    "EmulatorApp",
    "OPEN_ADMIN_PATHS",
    "REPEATED_HEADERS_KEY",
    "SINGLE_HEADERS",
    "create_app",
    "error_response",
    "json_response",
    "override_method",
    "serve",
]

logger = logging.getLogger("scheduler_emulator")

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
#: Headers a request may carry at most once: a second ``Origin``, ``Content-Type`` or
#: ``Content-Length`` would let a check (or a proxy in front) read one value while something else
#: reads the other, so a repeat is refused (trial 176: two lengths, and the last one won).
SINGLE_HEADERS = ("Origin", "Content-Type", "Content-Length")
#: The WSGI environ key under which the server lists the :data:`SINGLE_HEADERS` a request
#: repeated.
REPEATED_HEADERS_KEY = "scheduler_emulator.repeated_headers"


class _LimitedRequest(Request):
    # The largest request body, room for the JSON of the largest job: werkzeug refuses a longer
    # body (413, answered 400 as Google does: _http_error) and never reads past the limit.
    max_content_length = MAX_REQUEST_BYTES


def _is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("", "0.0.0.0", "::")


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _refused(error: type[ApiError], message: str, reason: str) -> Response:
    return error_response(error(message, reason=reason))


def json_response(payload: Any, status: int = 200) -> Response:
    """Return ``payload`` as a JSON response (``application/json; charset=UTF-8``)."""
    return Response(
        json.dumps(payload), status=status, content_type="application/json; charset=UTF-8"
    )


def error_response(error: ApiError) -> Response:
    """Render ``error`` as Google's error envelope with its HTTP status: every error answer of
    the app goes through here."""
    return json_response(error.to_envelope(), error.http_status)


def _http_error(exc: HTTPException, request: Request) -> Response:
    path = request.path
    if isinstance(exc, MethodNotAllowed) and path.startswith("/_emulator/"):
        allow = sorted(exc.valid_methods or [])  # the emulator's own endpoints: a plain 405
        message = f"{path} takes {' or '.join(allow)}, not {request.method}."
        response = error_response(Unimplemented(message, http_status=405))
        response.headers["Allow"] = ", ".join(allow)
        return response
    if isinstance(exc, RequestEntityTooLarge):  # Google's front end: 400, naming the limit
        length, job = request.content_length, path.startswith("/v1/")  # a job's size, or not
        notes = [f"this request's body is {length} bytes"] if length else []
        notes += ["a job is at most 1 MB"] if job else []
        message = f"Request payload size exceeds the limit: {MAX_REQUEST_BYTES} bytes"
        message += f" ({'; '.join(notes)})." if notes else "."
        return error_response(InvalidArgument(message, field="job" if job else None))
    if isinstance(exc, MethodNotAllowed):  # Google's front end: no such method at that path
        last, allowed = path.rsplit("/", 1)[-1], exc.valid_methods or ()
        exc = NotFound(api.method_not_found(last, request.method, allowed))
    elif isinstance(exc, NotFound) and exc.description == NotFound.description:  # name the path
        shown = show_value(path, 200)[1:-1]  # (a 60 KB path is not sent back whole)
        exc = NotFound(f"The requested URL {shown} was not found on this server.")
    return error_response(ApiError.for_http(exc.code or 500, exc.description or exc.name))


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
    :param admin_token: when set, ``/_emulator/*`` (but :data:`OPEN_ADMIN_PATHS`) needs
        ``Authorization: Bearer <admin_token>``.
    :param allowed_hosts: more names a ``Host`` header or an ``Origin`` may name (any case).

    The ``Host`` header's port is not checked: a browser sends the port it connected to, and a
    container's mapped port or a proxy sends another (trial 111).
    """

    def __init__(
        self,
        emulator: Emulator,
        *,
        host: str | None = None,
        admin_token: str | None = None,
        allowed_hosts: Collection[str] = (),
    ) -> None:
        self.emulator = emulator
        self.host = host
        self.allowed_hosts = {name.lower() for name in allowed_hosts}
        self.admin_token = admin_token or None
        rules = [*admin.RULES, *api.RULES]
        # (trials 146, 161: GET …/jobs/ listed the jobs and …/jobs// answered an error of code
        # 308; /_emulator/ui is redirected to /_emulator/ui/)
        self.url_map = Map([rule.empty() for rule in rules], merge_slashes=False)
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
            name = (urlsplit("//" + header).hostname or "").rstrip(".")  # (a full name's dot)
        except ValueError:
            return False
        if is_loopback(name) or name in self.allowed_hosts:
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
                PermissionDenied,
                f"Host {json.dumps(host)} is not this emulator: requests must name a loopback "
                f"address or the address it listens on (DNS rebinding protection); start it "
                f"with --allowed-host NAME to take another name, such as a container's.",
                "FOREIGN_HOST",
            )
        repeated = request.environ.get(REPEATED_HEADERS_KEY)
        if repeated:
            return _refused(
                PermissionDenied if "Origin" in repeated else InvalidArgument,
                f"The request repeats the {' and '.join(repeated)} header; send each at most once.",
                "REPEATED_HEADER",
            )
        length = request.headers.get("Content-Length")
        # (trial 176: "abc" read as none; trial 181: 4,301 digits, past int()'s limit, too)
        if length is not None and not re.fullmatch(r"[0-9]{1,18}", length.strip()):
            return _refused(
                InvalidArgument,
                "Content-Length must be a whole number of bytes (at most 18 digits); got "
                f"{show_value(length)}.",
                "BAD_CONTENT_LENGTH",
            )
        coding = request.headers.get("Transfer-Encoding")
        if length is not None and coding is not None:  # (trial 177)
            return _refused(
                InvalidArgument,
                "The request gives both Content-Length and Transfer-Encoding; send one.",
                "BAD_CONTENT_LENGTH",
            )
        if coding is not None and coding.strip().lower() != "chunked":  # (trial 181: gzip)
            return _refused(  # (RFC 9112, 6.1: an unknown transfer coding is a 501)
                Unimplemented,
                f"Transfer-Encoding {show_value(coding)} is not supported: send the body "
                "chunked alone, or with Content-Length.",
                "UNSUPPORTED_TRANSFER_CODING",
            )
        origin = request.headers.get("Origin")
        if request.method not in _SAFE_METHODS and origin is not None:
            # the page's host: loopback, an allowed name, or the (checked) Host this request
            # names, a page of the daemon's own under that name (trial 113: its LAN address)
            try:
                origin_host = urlsplit(origin).hostname or ""
                same = origin_host == urlsplit("//" + (host or "")).hostname
            except ValueError:
                origin_host, same = "", False
            if not (same or is_loopback(origin_host) or origin_host in self.allowed_hosts):
                return _refused(
                    PermissionDenied,
                    f"Origin {json.dumps(origin)} may not change the emulator: only requests "
                    "without an Origin (gcloud, client libraries, curl), from a loopback origin, "
                    "from an --allowed-host name or from the page's own host are accepted "
                    "(cross-site request protection).",
                    "FOREIGN_ORIGIN",
                )
        if (
            self.admin_token is not None
            and request.path.startswith("/_emulator/")
            and not request.path.startswith(OPEN_ADMIN_PATHS)
        ):
            given = request.headers.get("Authorization", "")
            scheme, _, token = given.partition(" ")  # (the scheme in any case: RFC 9110 11.1)
            right = hmac.compare_digest(token.encode(), self.admin_token.encode())
            if scheme.lower() != "bearer" or not right:
                return _refused(
                    Unauthenticated,
                    ("The admin token given was refused: " if given else "")
                    + "the /_emulator/ endpoints need Authorization: Bearer <admin token> "
                    "(the daemon was started with --admin-token or "
                    "SCHEDULER_EMULATOR_ADMIN_TOKEN; the views take --admin-token too).",
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
            try:  # (trial 96: a 20 MB jobs/J:run body was read whole and run)
                body = request.get_data()  # the limit of every body, refused unread
            except RequestEntityTooLarge as exc:
                return _http_error(exc, request)
            request.environ["wsgi.input"] = io.BytesIO(body)  # (read: the app reads it again)
            request.environ["CONTENT_LENGTH"] = str(len(body))
            return Response.from_app(self.emulator.cloud_run_api, request.environ)
        try:
            override_method(request)
            adapter = self.url_map.bind_to_environ(request.environ)
            endpoint, values = adapter.match()
            v1 = request.path.startswith("/v1/")  # the mask is read before anything changes
            if v1:
                api.check_parameters(request, str(endpoint))
            mask = rest_field_mask(request) if v1 else None
            result = self.handlers[str(endpoint)](request, **values)
            if mask is not None:
                result = select_fields(result, mask)
        except ApiError as exc:
            return error_response(exc)
        except RequestRedirect as exc:
            return exc.get_response()
        except HTTPException as exc:
            return _http_error(exc, request)  # a body not read: werkzeug closes the connection
        except TimeoutError:  # the client stopped sending the body
            message = (
                "The request did not arrive within the request timeout "
                "(headers and body; docs/api.md#connections)."
            )
            response = error_response(DeadlineExceeded(message, http_status=408))
            response.headers["Connection"] = "close"
            return response
        except Exception:  # a bug of ours: never let it look like a network failure
            logger.exception("internal error serving %s %s", request.method, request.path)
            return error_response(Internal("Internal error."))
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
    admin_token: str | None = None,
    allowed_hosts: Collection[str] = (),
) -> EmulatorApp:
    """Return the daemon's WSGI application for ``emulator`` (parameters: :class:`EmulatorApp`)."""
    return EmulatorApp(emulator, host=host, admin_token=admin_token, allowed_hosts=allowed_hosts)


class _RequestStream(io.RawIOBase):
    """What a worker reads of a request the connection front did not read whole: the bytes it
    read, then the connection, until the request's deadline (then :class:`TimeoutError`)."""

    def __init__(self, data: bytes, sock: socket.socket, deadline: float, timeout: float) -> None:
        self.data, self.sock, self.deadline, self.timeout = data, sock, deadline, timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.data:
            size = min(len(buffer), len(self.data))
            buffer[:size], self.data = self.data[:size], self.data[size:]
            return size
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.sock.settimeout(left)
        try:
            return self.sock.recv_into(buffer)
        finally:
            self.sock.settimeout(self.timeout)


class _Dechunked(DechunkedInput):
    """werkzeug's reader of a chunked body, which ignores a chunk's extensions (``2;a=b``, as
    RFC 9112 7.1.1 asks) and refuses a chunk size that is not hexadecimal, or larger than a
    request may be, naming it at once (trial 181: refused with a vague 400, and an
    ``FFFFFFFF`` waited for its bytes until the timeout)."""

    def read_chunk_len(self) -> int:
        line = self._rfile.readline(100).decode("latin-1")
        size = line.partition(";")[0].strip(" \t\r\n")
        if not re.fullmatch(r"[0-9A-Fa-f]{1,8}", size):
            raise BadRequest(f"Invalid chunk size line {show_value(line)}")
        if int(size, 16) > MAX_REQUEST_BYTES:
            raise RequestEntityTooLarge()
        return int(size, 16)


def _head_problem(method: str, version: str, headers: Any) -> str | None:
    """Why a request head http.server took is malformed all the same (answered 400), or
    ``None``: a header line that is not a name directly followed by a colon (``Host : x``:
    http.client ends the headers there, the lines after it dropped unseen; RFC 9112, 5.1), a
    method not in upper case (methods are case-sensitive; ``get`` was served as GET), an
    HTTP/0.9 request line, an HTTP/1.1 request without ``Host`` (RFC 9112, 3.2) or a NUL in a
    header value (5.5) — trials 177 and 181."""
    if headers.defects:
        line = str(headers.get_payload()).partition("\r\n")[0]
        return f"Malformed header line {show_value(line)}: want 'Name: value'"
    if not method.isupper():
        return f"Unsupported method {show_value(method)}: methods are upper case"
    if version == "HTTP/0.9":
        return "An HTTP/0.9 request line (no version); send HTTP/1.1"
    if version == "HTTP/1.1" and "Host" not in headers:
        return "An HTTP/1.1 request needs a Host header"
    if any("\0" in value for value in headers.values()):
        return "A header value holds a NUL character"
    return None


class _RequestHandler(WSGIRequestHandler):
    """Answers one request the connection front read (werkzeug's handler, one request per
    instance): ``data`` is the request, or its start when ``deadline`` is set (the rest is
    read from the connection by then, and the connection is closed afterwards).
    :attr:`keep_alive` tells the front whether the connection may carry another request.
    """

    def __init__(
        self,
        request: socket.socket,
        client_address: Any,
        server: BoundedWSGIServer,
        data: bytes = b"",
        deadline: float | None = None,
    ) -> None:
        self.data, self.deadline = data, deadline
        self.send_timeout = server.limits.http_idle_timeout  # bounds sending the answer
        self.keep_alive = False
        self.close_connection = True
        super().__init__(request, client_address, server)

    def setup(self) -> None:
        self.connection = self.request
        self.connection.settimeout(self.send_timeout)
        if self.deadline is None:
            self.rfile: Any = io.BytesIO(self.data)
        else:
            stream = _RequestStream(self.data, self.connection, self.deadline, self.send_timeout)
            self.rfile = io.BufferedReader(stream)
        self.wfile = socketserver._SocketWriter(self.connection)  # type: ignore[attr-defined]

    def handle(self) -> None:
        try:
            self.handle_one_request()
        except (ConnectionError, TimeoutError) as exc:
            self.connection_dropped(exc)
            return
        self.keep_alive = self.deadline is None and not self.close_connection

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        problem = _head_problem(self.command, self.request_version, self.headers)
        if problem is not None:
            self.send_error(400, problem)
        return problem is None

    def send_header(self, keyword: str, value: str) -> None:
        # werkzeug closes every connection (it cannot tell whether the app read the whole
        # body); a request the front read whole leaves nothing unread, so it is kept alive
        # unless the client asked otherwise (parse_request has set close_connection then).
        if (
            self.deadline is None
            and not self.close_connection
            and keyword.lower() == "connection"
            and value.lower() == "close"
        ):
            return
        super().send_header(keyword, value)

    def make_environ(self) -> Any:
        # WSGI keeps one value per header: werkzeug joins repeated headers with "," (and keeps
        # the last Content-Type), so a repeat is only visible here. check_caller refuses it.
        environ = super().make_environ()
        if isinstance(environ["wsgi.input"], DechunkedInput):
            environ["wsgi.input"] = _Dechunked(self.rfile)
        repeated = [name for name in SINGLE_HEADERS if len(self.headers.get_all(name) or ()) > 1]
        if repeated:
            environ[REPEATED_HEADERS_KEY] = repeated
        return environ

    def handle_expect_100(self) -> bool:
        # One "100 Continue" (werkzeug's run_wsgi writes it; http.server's would be a second),
        # and none for a body declared past the limit: the app refuses it unread.
        length = self.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > MAX_REQUEST_BYTES:
            del self.headers["Expect"]
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # What http.server answers before the app sees the request (414 for a request line
        # over 64 KiB, 431 for too many headers, 400 for a malformed request line or an HTTP
        # version past 1.1, which it answers 505: trial 176): Google's JSON error envelope, not
        # http.server's HTML page.
        self.close_connection = True
        text = message or self.responses.get(code, ("Error",))[0]
        code = 400 if code == 505 else code  # "HTTP/2.0" in a request line is the client's slip
        data = error_bytes(ApiError.for_http(code, f"{text}."))
        if self.command == "HEAD" or code < 200 or code in (204, 304):
            data = data.partition(b"\r\n\r\n")[0] + b"\r\n\r\n"
        with contextlib.suppress(OSError):
            self.wfile.write(data)


#: How long closing the server waits for the answers of requests in progress (longer than the
#: daemon's stop grace, after which a clock move the stop cut short answers).
ANSWER_GRACE_SECONDS = 3.0
#: How often the serving loop looks up from its sockets: for its :attr:`watch`, and how soon a
#: shutdown (SIGTERM, Ctrl-C) takes effect (0.5 s, socketserver's default, made each stop last
#: about half a second).
SERVE_POLL_SECONDS = 0.1


class BoundedWSGIServer(ThreadedWSGIServer):
    """werkzeug's threaded server whose connections are held by a
    :class:`~scheduler_emulator.server.connections.ConnectionRouter` (set by :func:`serve`):
    it accepts them, and answers in worker threads the requests the router has read.

    :param host: address to bind.
    :param port: port to bind; 0 picks a free one.
    :param app: the WSGI application.
    :param limits: the bounds and timeouts of connections.
    """

    def __init__(self, host: str, port: int, app: Any, *, limits: Limits) -> None:
        super().__init__(host, port, app, handler=_RequestHandler)
        self.limits = limits
        #: Holds every connection (gRPC and TLS on the same port too).
        self.connection_router: Any = None
        #: Called every :data:`SERVE_POLL_SECONDS` or so while serving (the daemon's watch on
        #: its engine).
        self.watch: Callable[[], None] = lambda: None

    def service_actions(self) -> None:
        self.watch()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connection_router.accept(request, client_address)

    def serve_one(
        self, sock: socket.socket, client_address: Any, data: bytes, deadline: float | None
    ) -> bool:
        """Answer one request in this (worker) thread; return whether the connection may be
        kept alive (see :class:`~scheduler_emulator.server.connections.ConnectionRouter`)."""
        return _RequestHandler(sock, client_address, self, data, deadline).keep_alive

    def log(self, type: str, message: str, *args: Any) -> None:
        """werkzeug's log, without the errors of answers whose connection the stop closed (a
        clock move cut short answers after :meth:`server_close`)."""
        if type != "error" or self.connection_router is None or not self.connection_router.closed:
            super().log(type, message, *args)

    def server_close(self) -> None:
        if self.connection_router is not None:  # a clock move a stop cut short still answers
            self.connection_router.finish(ANSWER_GRACE_SECONDS)
        super().server_close()
        if self.connection_router is not None:
            self.connection_router.close()


def serve(
    emulator: Emulator,
    host: str,
    port: int,
    *,
    admin_token: str | None = None,
    allowed_hosts: Collection[str] = (),
    limits: Limits | None = None,
    grpc: bool = True,
) -> BoundedWSGIServer:
    """Bind a threaded HTTP server for ``emulator`` (not yet serving; call ``serve_forever``).

    The same port serves the v1 API over gRPC (:mod:`~scheduler_emulator.server.connections`);
    ``server_close`` stops that too. The app accepts ``Host`` headers naming a loopback address
    or ``host``; see :class:`EmulatorApp` for the other checks.

    :param host: address to bind (``127.0.0.1``, ``::1``, ``0.0.0.0``…).
    :param port: TCP port; 0 picks a free one (read ``server.server_port``).
    :param admin_token: see :class:`EmulatorApp`.
    :param allowed_hosts: see :class:`EmulatorApp`.
    :param limits: connection bounds and timeouts (default: the daemon's,
        :class:`~scheduler_emulator.server.connections.Limits`).
    :param grpc: serve gRPC when the ``[grpc]`` extra is installed; ``False`` (or without the
        extra) answers gRPC calls ``UNIMPLEMENTED`` naming the extra.
    :raises OSError: if the address is in use.
    """
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    limits = limits or Limits()
    app = create_app(emulator, host=host, admin_token=admin_token, allowed_hosts=allowed_hosts)
    server = BoundedWSGIServer(host, port, app, limits=limits)
    server.connection_router = ConnectionRouter(
        emulator, limits, server.serve_one, max_body_bytes=MAX_REQUEST_BYTES, grpc=grpc
    )
    return server
