"""The attempt deadline bounds the whole attempt over real HTTP, whatever the target does; bodies
are read up to a cap; connections are kept alive."""

from __future__ import annotations

import socket
import threading

import pytest

from scheduler_emulator.domain.outcomes import Failure
from scheduler_emulator.realtime import real_monotonic
from scheduler_emulator.runtime.delivery.transports import DeliveryRequest, HttpTransport
from tests.drip import DripTarget, drip_server
from tests.support import case_table, wait_for

HEADERS = {"User-Agent": "Google-Cloud-Scheduler", "X-CloudScheduler": "true"}


class TestTotalDeadline:
    @case_table(__file__, "dripping_targets")
    def test_a_dripping_target_is_stopped_at_the_deadline(
        self, mode: str, http_transport: HttpTransport
    ) -> None:
        # Each byte comes well within the deadline, so a per-read timeout never fires; the
        # whole response would take 10,000 x 0.05 s.
        target = DripTarget(mode=mode, interval=0.05)
        with drip_server(target) as base:
            started = real_monotonic()
            result = http_transport.send(DeliveryRequest("POST", base + "/", HEADERS), 0.5)
            elapsed = real_monotonic() - started
        assert (result.status, result.failure) == (None, Failure.DEADLINE)
        assert result.detail == "No response within 0.5 s."
        assert 0.45 <= elapsed < 1.0

    def test_closing_the_transport_ends_the_requests_in_flight(
        self, http_transport: HttpTransport
    ) -> None:
        """What a stop relies on: a target that never answers does not hold the process up to
        the attempt's deadline (the daemon once took 13 s to exit, without pycurl)."""
        results, target = [], DripTarget(mode="hang")
        with drip_server(target) as base:
            sender = threading.Thread(
                target=lambda: results.append(
                    http_transport.send(DeliveryRequest("POST", base + "/", HEADERS), 60)
                )
            )
            sender.start()
            wait_for(lambda: target.requests, 10, "the request at the target")
            http_transport.close()
            sender.join(10)  # the deadline is 60 s: only the close can end it before
            assert not sender.is_alive(), "the request still waits on its target"
        assert results[0].status is None

    def test_many_dripping_requests_each_end_at_their_own_deadline(
        self, http_transport: HttpTransport
    ) -> None:
        target = DripTarget(mode="drip_body", interval=0.05)
        transport = http_transport
        elapsed: list[float] = []
        lock = threading.Lock()

        def one() -> None:
            started = real_monotonic()
            result = transport.send(DeliveryRequest("POST", base + "/", HEADERS), 0.5)
            assert result.failure == Failure.DEADLINE
            with lock:
                elapsed.append(real_monotonic() - started)

        with drip_server(target) as base:
            threads = [threading.Thread(target=one) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10)
        assert len(elapsed) == 8
        assert max(elapsed) < 1.5


class TestClose:
    def test_closing_while_a_request_is_in_flight_ends_it_by_its_deadline(
        self, http_transport: HttpTransport
    ) -> None:
        # http.client lets it run to its deadline; libcurl's event loop ends its transfers at
        # once, as a connection failure ("the HTTP client was closed...").
        hang = DripTarget(mode="hang", limit_seconds=10)
        ok = DripTarget(mode="ok")
        outcome: list[BaseException | int] = []

        def hung() -> None:
            try:
                outcome.append(http_transport.request("POST", hang_base + "/", HEADERS, b"", 0.5))
            except BaseException as exc:  # noqa: BLE001 - the test inspects it
                outcome.append(exc)

        with drip_server(hang) as hang_base, drip_server(ok) as ok_base:
            thread = threading.Thread(target=hung)
            thread.start()
            assert wait_for(lambda: hang.requests == 1, bound_seconds=5)
            http_transport.close()  # the emulator stops while the request hangs
            thread.join(5)
            # The client still works after close (the next emulator start).
            assert http_transport.request("POST", ok_base + "/", HEADERS, b"", 5) == 200
        assert [type(item) for item in outcome] == [
            OSError if http_transport.uses_curl else TimeoutError
        ]


class TestBodiesAndConnections:
    def test_a_small_answer_keeps_the_connection_for_the_next_attempt(
        self, http_transport: HttpTransport
    ) -> None:
        target = DripTarget(mode="ok")
        transport = http_transport
        with drip_server(target) as base:
            for _ in range(3):
                assert transport.send(DeliveryRequest("POST", base + "/", HEADERS), 5).status == 200
            transport.close()
        assert (target.requests, target.connections) == (3, 1)

    @pytest.mark.parametrize(
        ("body_bytes", "connections"),
        [
            # Over the 1 MiB cap: closed instead of read for 8 MiB, the next attempt connects.
            pytest.param(8 << 20, 2, id="over-the-cap-not-read-to-its-end"),
            # Under it: read to its end, and the connection kept for the next attempt.
            pytest.param(512 << 10, 1, id="under-the-cap-read-and-kept"),
        ],
    )
    def test_a_body_is_read_up_to_the_cap(
        self, http_transport: HttpTransport, body_bytes: int, connections: int
    ) -> None:
        target = DripTarget(mode="big_body", body_bytes=body_bytes)
        with drip_server(target) as base:
            assert http_transport.request("POST", base + "/", HEADERS, b"", 5) == 200
            assert http_transport.request("POST", base + "/", HEADERS, b"", 5) == 200
            http_transport.close()
        assert (target.requests, target.connections) == (2, connections)


def _parsed(raw: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    line, *fields = head.decode("latin-1").split("\r\n")
    headers = {}
    for field in fields:
        name, _, value = field.partition(":")
        headers[name.strip().lower()] = value.strip()
    return line, headers, body


#: Requests every way of sending must put on the wire alike: (method, headers, body).
WIRE_CASES = [
    ("POST", {"Content-Type": "application/json"}, b'{"a": 1}'),
    ("POST", {}, b""),
    ("PUT", {}, b""),
    ("PATCH", {"Content-Type": "text/plain", "X-Name": "caf\u00e9"}, b"x"),
    ("GET", {}, b""),
    ("DELETE", {}, b""),
    ("HEAD", {}, b""),
    ("OPTIONS", {"Accept-Encoding": "gzip"}, b""),
]


class TestSameWireBothWays:
    @pytest.mark.parametrize(("method", "headers", "body"), WIRE_CASES)
    def test_libcurl_sends_what_http_client_sends(
        self, method: str, headers: dict[str, str], body: bytes
    ) -> None:
        pytest.importorskip("pycurl")
        target = DripTarget(mode="ok")
        sent = {**HEADERS, "X-CloudScheduler-JobName": "nightly", **headers}
        with drip_server(target) as base:
            for curl in (False, True):
                client = HttpTransport(curl=curl)
                assert client.uses_curl is curl
                assert client.request(method, base + "/run?x=1", sent, body, 5) == 200
                client.close()
        stdlib, libcurl = (_parsed(raw) for raw in target.received)
        assert stdlib == libcurl
        line, received, got = stdlib
        assert line == f"{method} /run?x=1 HTTP/1.1"
        assert got == body
        assert received["x-cloudscheduler-jobname"] == "nightly"

    def test_failures_read_the_same_both_ways(self) -> None:
        pytest.importorskip("pycurl")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            refused = f"http://127.0.0.1:{sock.getsockname()[1]}/"
        details: dict[bool, list[str | None]] = {}
        with drip_server(DripTarget(mode="close")) as closing:
            for curl in (False, True):
                transport = HttpTransport(curl=curl)
                results = [
                    transport.send(DeliveryRequest("POST", url, HEADERS), 5)
                    for url in (refused, "http://no-such-host.invalid/", closing + "/")
                ]
                assert {r.failure for r in results} == {Failure.CONNECTION}
                details[curl] = [r.detail for r in results]
        assert details[True] == details[False]
        assert details[False][0] == "Connection refused."
        assert details[False][2] == "Remote end closed connection without response"
