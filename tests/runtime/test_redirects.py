"""One redirect loop above every way of sending: a redirected attempt's second hop is the
request the pinned rules make, whether the target is called in-process, over real HTTP (libcurl's
event loop with the ``curl`` extra, ``http.client`` without it) or by the daemon."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from scheduler_emulator.domain.redirects import TOO_MANY_REDIRECTS, Hop, next_hop
from scheduler_emulator.runtime import (
    DeliveryRequest,
    HttpTransport,
    Transport,
    WsgiTransport,
)
from tests.daemon import running_daemon, serving
from tests.support import Received, RecordingTarget, nightly_job, wait_for

STATUSES = [301, 302, 303, 307, 308]
METHODS = ["POST", "PUT", "PATCH", "GET", "DELETE", "HEAD", "OPTIONS"]
HEADERS = {"X-CloudScheduler": "true", "Content-Type": "text/plain", "Authorization": "Bearer t"}


class _Target:
    """``/old/<status>`` answers that redirect to ``/new/<status>``, ``/loop`` redirects to
    itself, anything else is recorded and answered 204."""

    def __init__(self) -> None:
        self.recorder = RecordingTarget(status=204)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ["PATH_INFO"]
        if path.startswith("/old/"):
            status = path.rsplit("/", 1)[1]
            start_response(f"{status} Moved", [("Location", f"/new/{status}")])
            return [b""]
        if path == "/loop":
            start_response("302 Found", [("Location", "/loop")])
            return [b""]
        return self.recorder(environ, start_response)

    def second_hop(self, status: int) -> tuple[str, bytes, str | None, str | None]:
        """The last request that reached ``/new/<status>``."""
        received = [r for r in self.recorder.requests if r.path == f"/new/{status}"][-1]
        return _hop_of(received)


def _hop_of(received: Received) -> tuple[str, bytes, str | None, str | None]:
    return (
        received.method,
        received.body,
        received.headers.get("Content-Type"),
        received.headers.get("Authorization"),
    )


@pytest.fixture(scope="module")
def target() -> _Target:
    """The redirecting target, shared by the module's tests."""
    return _Target()


@pytest.fixture(scope="module")
def base(target: _Target) -> Iterator[str]:
    """The target served over real HTTP on a free port."""
    with serving(target) as url:  # type: ignore[arg-type]
        yield url


@pytest.fixture(scope="module", params=["in-process", "real HTTP"])
def sender(request: pytest.FixtureRequest, target: _Target, base: str) -> Iterator[Transport]:
    """Each way of sending that remains: the target called in-process, and the HTTP client
    (libcurl's event loop when ``pycurl`` is installed, ``http.client`` otherwise)."""
    transport: Transport = (
        WsgiTransport(target) if request.param == "in-process" else HttpTransport()
    )
    yield transport
    transport.close()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("status", STATUSES)
def test_the_second_hop_is_the_one_the_pinned_rules_make(
    status: int, method: str, sender: Transport, target: _Target, base: str
) -> None:
    body = b"payload" if method in ("POST", "PUT", "PATCH") else b""
    request = DeliveryRequest(method, f"{base}/old/{status}", HEADERS, body)
    assert sender.send(request, 5).status == 204
    expected = next_hop(status, f"/new/{status}", Hop(method, request.url, HEADERS, body))
    assert expected is not None
    content_type = {k.lower(): v for k, v in expected.headers.items()}.get("content-type")
    wanted = (expected.method, expected.body, content_type, "Bearer t")
    assert target.second_hop(status) == wanted


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


def test_a_redirect_loop_fails_with_the_same_text(sender: Transport, base: str) -> None:
    result = sender.send(DeliveryRequest("GET", base + "/loop", {}), 5)
    assert (result.status, result.detail) == (None, TOO_MANY_REDIRECTS)


@pytest.mark.timeout(60)
def test_a_put_job_redirected_reaches_the_second_hop_alike_through_the_daemon(
    target: _Target, base: str
) -> None:
    with running_daemon("--in-memory", "--clock", "manual", "--start", START) as daemon:
        for status in STATUSES:
            job = nightly_job(
                name=f"{JOBS[4:]}/put-{status}",
                httpTarget={"uri": f"{base}/old/{status}", "httpMethod": "PUT", "body": "eA=="},
            )
            daemon.post(JOBS, job).raise_for_status()
        before = len(target.recorder.requests)
        daemon.advance(timedelta(minutes=1))
        assert wait_for(lambda: len(target.recorder.requests) >= before + len(STATUSES), 10)
    for status in STATUSES:
        hop = next_hop(status, "/new", Hop("PUT", "http://a.test/old", {}, b"x"))
        assert hop is not None
        assert target.second_hop(status)[:2] == (hop.method, hop.body)


START = "2026-01-01T01:59:30Z"
JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
