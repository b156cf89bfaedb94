"""One redirect policy for every transport: in-process, real HTTP through http.client and
through libcurl, and the daemon, the second hop of a redirected attempt is the same request."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import pytest

from scheduler_emulator.runtime._http_client import HttpClient
from scheduler_emulator.runtime._redirects import TOO_MANY_REDIRECTS, Hop, next_hop
from scheduler_emulator.runtime._transports import (
    DeliveryRequest,
    HttpTransport,
    TransportResult,
    WsgiTransport,
)
from tests.daemon import running_daemon, serving
from tests.support import Received, RecordingTarget, nightly_job, send_started, wait_for

STATUSES = [301, 302, 303, 307, 308]
METHODS = ["POST", "PUT", "PATCH", "GET", "DELETE", "HEAD", "OPTIONS"]
HEADERS = {"X-CloudScheduler": "true", "Content-Type": "text/plain", "Authorization": "Bearer t"}


class _Target:
    """A WSGI callable around :func:`redirecting` (instances are called, not their class)."""

    def __init__(self, status: int) -> None:
        self.recorder = RecordingTarget(status=204)
        self.status = status

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ["PATH_INFO"] == "/old":
            start_response(f"{self.status} Moved", [("Location", "/new")])
            return [b""]
        return self.recorder(environ, start_response)


def second_hop(received: Received) -> tuple[str, bytes, str | None, str | None]:
    return (
        received.method,
        received.body,
        received.headers.get("Content-Type"),
        received.headers.get("Authorization"),
    )


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("status", STATUSES)
def test_every_transport_makes_the_same_second_hop(status: int, method: str) -> None:
    body = b"payload" if method in ("POST", "PUT", "PATCH") else b""
    hops: dict[str, tuple[str, bytes, str | None, str | None]] = {}
    results: dict[str, TransportResult] = {}
    target = _Target(status)
    request = DeliveryRequest(method, "http://app.test/old", HEADERS, body)
    results["in-process"] = WsgiTransport(target).send(request, 5)
    hops["in-process"] = second_hop(target.recorder.requests[-1])
    ways = [("http.client", False)]
    try:
        import pycurl  # noqa: F401

        ways.append(("libcurl", True))
    except ImportError:
        pass
    with serving(target) as base:  # type: ignore[arg-type]
        real = DeliveryRequest(method, base + "/old", HEADERS, body)
        for name, curl in ways:
            transport = HttpTransport(HttpClient(curl=curl))
            results[name] = transport.send(real, 5)
            hops[name] = second_hop(target.recorder.requests[-1])
            if curl:  # and as the threaded driver sends: libcurl's event loop
                results["event loop"] = send_started(transport, real, 5)
                hops["event loop"] = second_hop(target.recorder.requests[-1])
            transport.close()
    assert {r.status for r in results.values()} == {204}
    assert len(set(hops.values())) == 1, hops
    expected = next_hop(status, "/new", Hop(method, "http://a.test/old", HEADERS, body))
    assert expected is not None
    assert hops["in-process"][0] == expected.method
    assert hops["in-process"][1] == expected.body


def test_the_pinned_rules() -> None:
    put = Hop("PUT", "http://a.test/old", {"Content-Type": "x", "Authorization": "t"}, b"b")
    for status in (301, 302, 303):
        hop = next_hop(status, "/new", put)
        assert hop is not None
        assert (hop.method, hop.body, dict(hop.headers)) == ("GET", b"", {"Authorization": "t"})
        head = next_hop(status, "/new", Hop("HEAD", "http://a.test/", {}))
        assert head is not None and head.method == "HEAD"
    for status in (307, 308):
        hop = next_hop(status, "http://a.test/new", put)
        assert hop is not None
        assert (hop.method, hop.body, hop.headers) == ("PUT", b"b", put.headers)
    elsewhere = next_hop(307, "http://b.test/new", put)
    assert elsewhere is not None and "Authorization" not in elsewhere.headers
    assert next_hop(302, None, put) is None
    assert next_hop(200, "/new", put) is None


def test_a_redirect_loop_fails_with_the_same_text_everywhere() -> None:
    def loop(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        start_response("302 Found", [("Location", "/again")])
        return [b""]

    in_process = WsgiTransport(loop).send(DeliveryRequest("GET", "http://a.test/", {}), 5)
    with serving(loop) as base:  # type: ignore[arg-type]
        real = HttpTransport(HttpClient(curl=False)).send(DeliveryRequest("GET", base, {}), 5)
        if HttpClient().uses_curl:  # the threaded driver's way: libcurl's event loop
            started = send_started(HttpTransport(), DeliveryRequest("GET", base, {}), 5)
            assert (started.failure, started.detail) == (real.failure, real.detail)
    assert (in_process.failure, in_process.detail) == (real.failure, real.detail)
    assert real.detail == TOO_MANY_REDIRECTS


@pytest.mark.timeout(60)
def test_a_put_job_redirected_reaches_the_second_hop_alike_through_the_daemon() -> None:
    targets = {status: _Target(status) for status in STATUSES}
    in_process: dict[int, tuple[str, bytes]] = {}
    for status in STATUSES:
        local = _Target(status)
        request = DeliveryRequest("PUT", "http://a.test/old", {"Content-Type": "x"}, b"x")
        assert WsgiTransport(local).send(request, 5).status == 204
        in_process[status] = second_hop(local.recorder.requests[-1])[:2]
    with ExitStack() as stack:
        daemon = stack.enter_context(
            running_daemon("--in-memory", "--clock", "manual", "--start", START)
        )
        for status, target in targets.items():
            base = stack.enter_context(serving(target))  # type: ignore[arg-type]
            job = nightly_job(
                name=f"{JOBS[4:]}/put-{status}",
                httpTarget={"uri": base + "/old", "httpMethod": "PUT", "body": "eA=="},
            )
            daemon.post(JOBS, job).raise_for_status()
        daemon.advance(timedelta(minutes=1))
        assert wait_for(lambda: all(t.recorder.requests for t in targets.values()), 10)
    through_daemon = {s: second_hop(t.recorder.requests[-1])[:2] for s, t in targets.items()}
    assert through_daemon == in_process
    assert through_daemon[302] == ("GET", b"") and through_daemon[307] == ("PUT", b"x")


START = "2026-01-01T01:59:30Z"
JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
