"""The daemon's WSGI application and HTTP server.

:func:`create_app` builds one WSGI app for an :class:`~scheduler_emulator.runtime.emulator.Emulator`
serving the Cloud Scheduler v1 REST API (:mod:`~scheduler_emulator.server.api`) and the
``/_emulator/`` endpoints (:mod:`~scheduler_emulator.server.admin`). Errors are rendered as
Google's REST error envelope (spec §6.1); bad input never yields a 5xx (§6.4: gcloud retries
5xx and would repeat side effects).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.routing import Map
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

from ..domain.errors import ApiError
from ..runtime.emulator import Emulator
from . import admin, api

logger = logging.getLogger("scheduler_emulator")

_HTTP_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
}


def json_response(payload: Any, status: int = 200) -> Response:
    """Return ``payload`` as a JSON response (``application/json; charset=UTF-8``)."""
    return Response(
        json.dumps(payload), status=status, content_type="application/json; charset=UTF-8"
    )


def error_response(error: ApiError) -> Response:
    """Render ``error`` as Google's error envelope with its HTTP status (spec §6.1)."""
    return json_response(error.to_envelope(), error.http_status)


def _http_error(exc: HTTPException) -> Response:
    if isinstance(exc, MethodNotAllowed):  # Google's front end: no such method at that path
        exc = NotFound("Method not found: this path does not take that HTTP method.")
    code = exc.code or 500
    status = _HTTP_STATUS_NAMES.get(code, "INTERNAL" if code >= 500 else "INVALID_ARGUMENT")
    body = {"error": {"code": code, "message": exc.description or exc.name, "status": status}}
    return json_response(body, code)


class EmulatorApp:
    """WSGI app of the daemon: routes requests to handler objects by endpoint name.

    :param emulator: the emulator to serve.
    """

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator
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

    def dispatch(self, request: Request) -> Response:
        """Route ``request`` and turn the handler's result or error into a response."""
        adapter = self.url_map.bind_to_environ(request.environ)
        try:
            endpoint, values = adapter.match()
            result = self.handlers[str(endpoint)](request, **values)
        except ApiError as exc:
            return error_response(exc)
        except HTTPException as exc:
            return _http_error(exc)
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
        return self.dispatch(Request(environ))(environ, start_response)


def create_app(emulator: Emulator) -> EmulatorApp:
    """Return the daemon's WSGI application for ``emulator``."""
    return EmulatorApp(emulator)


def serve(emulator: Emulator, host: str, port: int) -> BaseWSGIServer:
    """Bind a threaded HTTP server for ``emulator`` (not yet serving; call ``serve_forever``).

    :param port: TCP port; 0 picks a free one (read ``server.server_port``).
    :raises OSError: if the address is in use.
    """
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    return make_server(host, port, create_app(emulator), threaded=True)
