"""The attempt deadline bounds the whole attempt over real HTTP, whatever the target does; bodies
are read up to a cap; connections are kept alive."""

from __future__ import annotations

import threading

import pytest
from drip import DripTarget, drip_server

from scheduler_emulator.domain.outcomes import Failure
from scheduler_emulator.realtime import real_monotonic
from scheduler_emulator.runtime.http_client import HttpClient
from scheduler_emulator.runtime.transports import DeliveryRequest, HttpTransport

HEADERS = {"User-Agent": "Google-Cloud-Scheduler", "X-CloudScheduler": "true"}


class TestTotalDeadline:
    @pytest.mark.parametrize(
        "mode",
        [
            pytest.param("drip_headers", id="status-line-one-byte-at-a-time"),
            pytest.param("drip_body", id="body-one-byte-at-a-time"),
            pytest.param("hang", id="never-answers"),
        ],
    )
    def test_a_dripping_target_is_stopped_at_the_deadline(self, mode: str) -> None:
        # Each byte comes well within the deadline, so a per-read timeout never fires; the
        # whole response would take 10,000 x 0.05 s.
        target = DripTarget(mode=mode, interval=0.05)
        with drip_server(target) as base:
            started = real_monotonic()
            result = HttpTransport().send(DeliveryRequest("POST", base + "/", HEADERS), 0.5)
            elapsed = real_monotonic() - started
        assert (result.status, result.failure) == (None, Failure.DEADLINE)
        assert result.detail == "No response within 0.5 s."
        assert 0.45 <= elapsed < 1.0

    def test_many_dripping_requests_each_end_at_their_own_deadline(self) -> None:
        target = DripTarget(mode="drip_body", interval=0.05)
        transport = HttpTransport()
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


class TestBodiesAndConnections:
    def test_a_small_answer_keeps_the_connection_for_the_next_attempt(self) -> None:
        target = DripTarget(mode="ok")
        transport = HttpTransport()
        with drip_server(target) as base:
            for _ in range(3):
                assert transport.send(DeliveryRequest("POST", base + "/", HEADERS), 5).status == 200
            transport.close()
        assert (target.requests, target.connections) == (3, 1)

    def test_a_body_over_the_cap_is_not_read_to_its_end(self) -> None:
        target = DripTarget(mode="big_body", body_bytes=8 << 20)
        client = HttpClient(max_body_bytes=1 << 20)
        with drip_server(target) as base:
            assert client.request("POST", base + "/", HEADERS, b"", 5) == 200
            assert client.request("POST", base + "/", HEADERS, b"", 5) == 200
            client.close()
        # The connection was closed after 1 MiB instead of read for 8: the second attempt
        # needed a new one.
        assert (target.requests, target.connections) == (2, 2)

    def test_a_body_under_the_cap_is_read_and_the_connection_kept(self) -> None:
        target = DripTarget(mode="big_body", body_bytes=512 << 10)
        client = HttpClient(max_body_bytes=1 << 20)
        with drip_server(target) as base:
            assert client.request("POST", base + "/", HEADERS, b"", 5) == 200
            assert client.request("POST", base + "/", HEADERS, b"", 5) == 200
            client.close()
        assert (target.requests, target.connections) == (2, 1)
