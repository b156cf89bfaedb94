"""Real HTTP and in-process delivery: the request sent, redirects followed, and only a final
2xx answer is a success."""

from __future__ import annotations

import gc
import os
import socket
import threading
from collections.abc import Callable
from contextlib import asynccontextmanager
from types import FunctionType
from typing import Any

from fastapi import FastAPI, Request

from scheduler_emulator.domain.outcomes import Failure
from scheduler_emulator.domain.redirects import Answered, Hop, ResponseSample
from scheduler_emulator.realtime import real_monotonic
from scheduler_emulator.runtime import DeliveryRequest, HttpTransport, MountTransport, WsgiTransport
from scheduler_emulator.runtime.delivery.in_process import AsgiTransport, build_environ
from scheduler_emulator.runtime.delivery.transports import follow
from tests.daemon import serving
from tests.support import RecordingTarget, wait_for

HEADERS = {
    "User-Agent": "Google-Cloud-Scheduler",
    "X-CloudScheduler": "true",
    "X-CloudScheduler-JobName": "nightly",
}


class TestHttpTransport:
    def test_sends_only_the_scheduler_headers(self, http_transport: HttpTransport) -> None:
        target = RecordingTarget()
        with serving(target) as base:
            result = http_transport.send(DeliveryRequest("POST", base + "/run?x=1", HEADERS), 5)
        assert result.status == 200
        [request] = target.requests
        assert (request.method, request.path, request.query) == ("POST", "/run", "x=1")
        sent = {k.lower() for k in request.headers}
        assert sent <= {
            "user-agent",
            "x-cloudscheduler",
            "x-cloudscheduler-jobname",
            "host",
            "accept-encoding",
            "connection",
            "content-length",
        }
        assert request.headers["User-Agent"] == "Google-Cloud-Scheduler"

    def test_redirects_are_followed_and_the_final_status_decides(
        self, http_transport: HttpTransport
    ) -> None:
        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            if environ["PATH_INFO"] == "/old":
                start_response("307 Moved", [("Location", "/new")])
            else:
                start_response("204 No Content", [])
            return [b""]

        with serving(app) as base:  # type: ignore[arg-type]
            result = http_transport.send(DeliveryRequest("POST", base + "/old", HEADERS), 5)
        assert result.status == 204

    def test_connection_refused_is_a_connection_failure(
        self, http_transport: HttpTransport
    ) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        result = http_transport.send(DeliveryRequest("POST", f"http://127.0.0.1:{port}/", {}), 5)
        assert (result.status, result.failure) == (None, Failure.CONNECTION)
        assert result.detail == "Connection refused."

    def test_a_target_slower_than_the_deadline_is_a_deadline_failure(
        self, http_transport: HttpTransport
    ) -> None:
        release = threading.Event()

        def slow(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            release.wait(10)
            start_response("200 OK", [])
            return [b""]

        with serving(slow) as base:  # type: ignore[arg-type]
            result = http_transport.send(DeliveryRequest("GET", base + "/", HEADERS), 0.2)
            release.set()
        assert result.failure == Failure.DEADLINE
        assert result.detail == "No response within 0.2 s."


class TestInProcess:
    def test_a_wsgi_app_that_never_answers_is_a_deadline_failure_at_the_deadline(self) -> None:
        """A trial's in-process handler that never returned hung ``advance()`` for good."""
        release, called = threading.Event(), threading.Event()

        def hangs(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            called.set()
            release.wait(60)  # (released when the test ends)
            start_response("200 OK", [])
            return [b""]

        transport = WsgiTransport(hangs)
        try:
            began = real_monotonic()
            result = transport.send(DeliveryRequest("POST", "http://app.test/", HEADERS), 0.3)
            waited = real_monotonic() - began
        finally:
            release.set()
        assert called.is_set() and (result.status, result.failure) == (None, Failure.DEADLINE)
        assert result.detail == "No response within 0.3 s."
        assert waited < 30  # at the deadline, not when the app returns (60 s)
        quick = WsgiTransport(RecordingTarget(status=201))  # and a call that answers, as before
        assert quick.send(DeliveryRequest("POST", "http://app.test/", HEADERS), 5).status == 201

    def test_a_starlette_def_endpoint_that_never_answers_is_a_deadline_failure(self) -> None:
        """Trial 111: a FastAPI ``def`` endpoint runs on a worker thread, which cancelling
        cannot stop: the attempt waited for it past its deadline, and the test hung."""
        release, called, shut = threading.Event(), threading.Event(), threading.Event()

        @asynccontextmanager
        async def lifespan(app: FastAPI) -> Any:
            yield
            shut.set()  # (trial 113: not until the endpoint returned, in a later test or never)

        app = FastAPI(lifespan=lifespan)

        @app.post("/")
        def hangs() -> str:
            called.set()
            release.wait(60)  # (released when the test ends)
            return "late"

        transport = AsgiTransport(app)
        try:
            began = real_monotonic()
            result = transport.send(DeliveryRequest("POST", "http://app.test/", HEADERS), 0.3)
            waited = real_monotonic() - began
            transport.close()  # not waiting for the endpoint either
            closed = real_monotonic() - began
            shut_at_close = shut.is_set()
        finally:
            release.set()
        assert called.is_set() and (result.status, result.failure) == (None, Failure.DEADLINE)
        assert waited < 30 and closed < 30  # at the deadline, not when the app returns (60 s)
        assert shut_at_close

    def test_closed_transports_leave_no_thread_behind(self) -> None:
        def threads() -> int:
            return len(os.listdir(f"/proc/{os.getpid()}/task"))

        before = threads()
        for _ in range(20):
            transport = WsgiTransport(RecordingTarget(status=200))
            assert transport.send(DeliveryRequest("POST", "http://a.test/", HEADERS), 5).status
            transport.close()
        wait_for(lambda: threads() <= before, 10, "the WSGI call threads to end")

    def test_mounted_prefix_goes_in_process(self) -> None:
        target = RecordingTarget(status=201)
        transport = MountTransport({"http://orders.test": target})
        request = DeliveryRequest("PUT", "http://orders.test/a%20b?q=1", HEADERS, b"body")
        assert transport.send(request, 5).status == 201
        [received] = target.requests
        assert (received.path, received.query, received.body) == ("/a b", "q=1", b"body")
        assert received.headers["X-Cloudscheduler-Jobname"] == "nightly"

    def test_unmounted_url_uses_the_fallback(self) -> None:
        inner = RecordingTarget(status=202)
        transport = MountTransport(
            {"http://orders.test": RecordingTarget()}, fallback=WsgiTransport(inner)
        )
        assert (
            transport.send(DeliveryRequest("GET", "http://other.test/", HEADERS), 5).status == 202
        )

    def test_an_exception_in_the_app_is_a_500_that_names_it(self) -> None:
        def broken(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            raise RuntimeError("handler bug")

        result = WsgiTransport(broken).send(DeliveryRequest("POST", "http://x.test/", HEADERS), 5)
        assert result.status == 500
        assert result.detail == "The app raised RuntimeError: handler bug"

    def test_in_process_redirects_are_followed(self) -> None:
        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            if environ["PATH_INFO"] == "/old":
                start_response("302 Found", [("Location", "http://x.test/new")])
            else:
                start_response("200 OK", [])
            return [environ["REQUEST_METHOD"].encode()]

        result = WsgiTransport(app).send(DeliveryRequest("POST", "http://x.test/old", HEADERS), 5)
        assert result.status == 200


class TestAsgiLifespan:
    """Trial 109: a FastAPI app's ``lifespan=`` never ran in-process, so its handlers failed."""

    def test_startup_runs_before_the_first_request_its_state_reaches_it_shutdown_at_close(
        self,
    ) -> None:
        events: list[object] = []

        @asynccontextmanager
        async def lifespan(app: FastAPI) -> Any:
            events.append("startup")
            yield {"pool": "connected"}
            events.append("shutdown")

        app = FastAPI(lifespan=lifespan)

        @app.post("/")
        async def handler(request: Request) -> str:
            events.append(request.state.pool)
            return "ok"

        transport = AsgiTransport(app)
        for _ in range(2):
            assert transport.send(DeliveryRequest("POST", "http://x.test/", HEADERS), 5).status
        assert events == ["startup", "connected", "connected"]
        transport.close()
        assert events[-1] == "shutdown"

    def test_a_failed_startup_fails_the_attempt_with_its_error(self) -> None:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            assert scope["type"] == "lifespan" and (await receive())["type"] == "lifespan.startup"
            await send({"type": "lifespan.startup.failed", "message": "Traceback…\nOSError: no db"})

        transport = AsgiTransport(app)
        result = transport.send(DeliveryRequest("POST", "http://x.test/", HEADERS), 5)
        transport.close()
        assert result.status == 500
        assert (
            result.detail == "The app raised RuntimeError: lifespan startup failed: OSError: no db"
        )

    def test_an_app_without_lifespan_is_served(self) -> None:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            assert scope["type"] == "http"  # raises on a lifespan scope, as many apps do
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        transport = AsgiTransport(app)
        assert transport.send(DeliveryRequest("POST", "http://x.test/", HEADERS), 5).status == 202
        transport.close()


class TestBuildEnviron:
    def test_the_url_and_headers_give_the_environ_of_every_request(self) -> None:
        headers = {
            "X-Custom": "1",
            "content-type": "text/plain",
            "Host": "x",
            "Content-Length": "9",
        }
        for _ in range(2):  # the second request's values come from the parse of the first
            environ = build_environ(
                DeliveryRequest("PUT", "https://svc.test:8443/a%20b/c?x=1&y=2", headers, b"hi")
            )
            assert environ["REQUEST_METHOD"] == "PUT"
            assert environ["PATH_INFO"] == "/a b/c"
            assert environ["QUERY_STRING"] == "x=1&y=2"
            assert (environ["SERVER_NAME"], environ["SERVER_PORT"]) == ("svc.test", "8443")
            assert environ["HTTP_HOST"] == "svc.test:8443"
            assert environ["wsgi.url_scheme"] == "https"
            assert (environ["CONTENT_TYPE"], environ["CONTENT_LENGTH"]) == ("text/plain", "2")
            assert environ["HTTP_X_CUSTOM"] == "1"
            assert "HTTP_CONTENT_LENGTH" not in environ and "HTTP_CONTENT_TYPE" not in environ
            assert environ["wsgi.input"].read() == b"hi"
        bare = build_environ(DeliveryRequest("POST", "http://svc.test", {}))
        assert (bare["PATH_INFO"], bare["SERVER_PORT"], bare["QUERY_STRING"]) == ("/", "80", "")


def test_an_attempt_followed_through_a_redirect_leaves_no_reference_cycle() -> None:
    """Its objects are freed when it ends, not left for the cyclic garbage collector (a burst
    of thousands of attempts would otherwise keep them all until a collection)."""

    def send_one(hop: Hop, deadline: float, sample: Any, answered: Answered) -> None:
        if hop.url.endswith("/first"):
            answered(307, "http://target.test/second", None)
        else:
            answered(200, None, None)

    ended: list[int | None] = []
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        first = Hop("POST", "http://target.test/first", {}, b"")
        follow(
            send_one, first, real_monotonic() + 5, ResponseSample(64), lambda s, e: ended.append(s)
        )
        gc.collect()
        # Only this attempt's objects: other tests' server threads may leave garbage meanwhile.
        cycles = [o for o in gc.garbage if isinstance(o, (Hop, ResponseSample, FunctionType))]
        cycles = [o for o in cycles if getattr(o, "__module__", None) in _OURS]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert ended == [200]
    assert cycles == []


_OURS = {follow.__module__, __name__, Hop.__module__}
