"""``CurlLoop`` and ``HttpTransport.start``: many exchanges on one thread of libcurl's event loop,
with the wire, deadline, body cap, redirects and failure texts of the blocking ways."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from scheduler_emulator.domain.outcomes import Failure
from scheduler_emulator.realtime import real_monotonic
from scheduler_emulator.runtime.delivery.transports import (
    DeliveryRequest,
    HttpTransport,
    TransportResult,
)
from tests.drip import DripTarget, drip_server
from tests.runtime.test_http_client import HEADERS, WIRE_CASES, _parsed
from tests.support import send_started, wait_for

pytest.importorskip("pycurl")


@pytest.fixture
def transport() -> Iterator[HttpTransport]:
    transport = HttpTransport(curl=True)
    yield transport
    transport.close()


@pytest.mark.parametrize("mode", ["drip_headers", "drip_body", "hang"])
def test_a_dripping_target_is_stopped_at_the_deadline(mode: str, transport: HttpTransport) -> None:
    with drip_server(DripTarget(mode=mode, interval=0.05)) as base:
        started = real_monotonic()
        result = send_started(transport, DeliveryRequest("POST", base + "/", HEADERS), 0.5)
        elapsed = real_monotonic() - started
    assert (result.status, result.failure) == (None, Failure.DEADLINE)
    assert result.detail == "No response within 0.5 s."
    assert 0.45 <= elapsed < 1.0


def test_a_hundred_dripping_exchanges_hold_no_thread_and_each_end_at_their_deadline(
    transport: HttpTransport,
) -> None:
    target = DripTarget(mode="drip_body", interval=0.05, limit_seconds=10)
    results: list[tuple[float, TransportResult]] = []
    lock = threading.Lock()
    with drip_server(target) as base:
        threads_before = threading.active_count()
        started = real_monotonic()

        def done(result: TransportResult) -> None:
            with lock:
                results.append((real_monotonic() - started, result))

        for _ in range(100):
            request = DeliveryRequest("POST", base + "/", HEADERS)
            assert transport.start(request, 1.0, done)
        # All 100 are under way at once, on the loop's one thread (the drip server's own
        # threads are the target's, not ours).
        assert wait_for(lambda: target.requests == 100, bound_seconds=5)
        ours = threading.active_count() - threads_before - target.requests
        assert ours <= 1, ours
        assert wait_for(lambda: len(results) == 100, bound_seconds=10)
    assert {r.failure for _, r in results} == {Failure.DEADLINE}
    assert all(0.95 <= took < 1.6 for took, _ in results), sorted(t for t, _ in results)[-3:]


@pytest.mark.parametrize(("method", "headers", "body"), WIRE_CASES)
def test_it_sends_what_the_blocking_ways_send(
    method: str, headers: dict[str, str], body: bytes
) -> None:
    target = DripTarget(mode="ok")
    sent = {**HEADERS, "X-CloudScheduler-JobName": "nightly", **headers}
    with drip_server(target) as base:
        request = DeliveryRequest(method, base + "/run?x=1", sent, body)
        for curl in (False, True):
            blocking = HttpTransport(curl=curl)
            assert blocking.send(request, 5).status == 200
            blocking.close()
        loop = HttpTransport(curl=True)
        assert send_started(loop, request, 5).status == 200
        loop.close()
    stdlib, libcurl, event_loop = (_parsed(raw) for raw in target.received)
    assert stdlib == libcurl == event_loop
    assert event_loop[0] == f"{method} /run?x=1 HTTP/1.1"


def test_failures_read_as_the_blocking_ways_read_them(transport: HttpTransport) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    with drip_server(DripTarget(mode="close")) as closing:
        urls = (refused, "http://no-such-host.invalid/", closing + "/")
        blocking = HttpTransport(curl=False)
        expected = [blocking.send(DeliveryRequest("POST", url, HEADERS), 5) for url in urls]
        got = [send_started(transport, DeliveryRequest("POST", url, HEADERS), 5) for url in urls]
    assert [(r.failure, r.detail) for r in got] == [(r.failure, r.detail) for r in expected]
    assert got[0].detail == "Connection refused."


def test_the_body_cap_and_the_excerpt_are_the_blocking_ways(transport: HttpTransport) -> None:
    with drip_server(DripTarget(mode="big_body", body_bytes=8 << 20)) as base:
        result = send_started(transport, DeliveryRequest("POST", base + "/", HEADERS), 5)
        blocking = HttpTransport(curl=True).send(DeliveryRequest("POST", base + "/", HEADERS), 5)
    assert result.status == 200
    assert (result.excerpt, result.content_type) == (blocking.excerpt, blocking.content_type)


def test_closing_ends_the_exchanges_in_flight_with_a_connection_failure(
    transport: HttpTransport,
) -> None:
    results: list[TransportResult] = []
    hang = DripTarget(mode="hang", limit_seconds=10)
    with drip_server(hang) as base:
        assert transport.start(DeliveryRequest("POST", base + "/", HEADERS), 30, results.append)
        assert wait_for(lambda: hang.requests == 1, bound_seconds=5)
        transport.close()
        assert wait_for(lambda: results, bound_seconds=5)
    assert results[0].failure == Failure.CONNECTION
    assert "closed" in results[0].detail


def test_without_pycurl_nothing_is_started_and_the_blocking_way_sends() -> None:
    transport = HttpTransport(curl=False)
    called: list[TransportResult] = []
    request = DeliveryRequest("POST", "http://127.0.0.1:9/", HEADERS)
    assert not transport.start(request, 5, called.append)
    assert called == []
    transport.close()


def test_https_goes_through_the_same_loop(transport: HttpTransport) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        refused = f"https://127.0.0.1:{sock.getsockname()[1]}/"
    result = send_started(transport, DeliveryRequest("POST", refused, HEADERS), 5)
    assert (result.failure, result.detail) == (Failure.CONNECTION, "Connection refused.")


def test_exchanges_submitted_from_many_threads_as_others_end_all_end(
    transport: HttpTransport,
) -> None:
    # Eight threads, each submitting its next exchange as soon as its previous one ended: the
    # loop's wake-up must never be lost between a submit and the loop taking its batch.
    rounds, senders = 150, 8
    ended = threading.Semaphore(0)
    statuses: list[int | None] = []

    def sender(base: str) -> None:
        came = threading.Event()

        def done(result: TransportResult) -> None:
            statuses.append(result.status)
            came.set()
            ended.release()

        for _ in range(rounds):
            came.clear()
            assert transport.start(DeliveryRequest("POST", base + "/", HEADERS), 5, done)
            assert came.wait(5), "an exchange never ended"

    with drip_server(DripTarget(mode="ok")) as base:
        threads = [threading.Thread(target=sender, args=(base,)) for _ in range(senders)]
        for thread in threads:
            thread.start()
        for _ in range(rounds * senders):
            assert ended.acquire(timeout=10), f"{len(statuses)} of {rounds * senders} ended"
        for thread in threads:
            thread.join(5)
    assert statuses == [200] * (rounds * senders)
