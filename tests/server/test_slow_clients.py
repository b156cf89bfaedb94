"""Clients that send slowly hold no worker and lock nobody out: 64 connections dripping their
headers or bodies at one byte per second while REST, health and new gRPC clients are served,
and a request that does not arrive whole within the request timeout is answered 408 however
short each silence is."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from scheduler_emulator import Emulator
from scheduler_emulator.server.connections import Limits
from scheduler_emulator.server.server import serve
from tests.daemon import serving_in_thread
from tests.support import grpc_client_own_connection, read_all

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
BODY = b'{"schedule": "0 2 * * *", "httpTarget": {"uri": "http://127.0.0.1:9/x"}}'


@pytest.fixture
def address(emulator: Emulator) -> Iterator[tuple[str, int]]:
    emulator.create_job(name="nightly", schedule="0 2 * * *", http_target={"uri": "http://x/"})
    with serving_in_thread(
        serve(emulator, "127.0.0.1", 0, limits=Limits(request_timeout=2.0))
    ) as url:
        yield "127.0.0.1", int(url.rsplit(":", 1)[1])


class Drippers:
    """``count`` connections sending a request one byte per ``interval`` seconds, from one
    thread: the even ones drip their headers, the odd ones send headers at once and drip
    their body."""

    def __init__(self, address: tuple[str, int], count: int, interval: float) -> None:
        head = f"POST {JOBS}?jobId=j HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
        head += f"\r\nContent-Length: {len(BODY)}\r\n\r\n"
        self.sockets = [socket.create_connection(address, timeout=10) for _ in range(count)]
        self.pending = []
        for i, sock in enumerate(self.sockets):
            if i % 2:
                sock.sendall(head.encode())
                self.pending.append(BODY)
            else:
                self.pending.append(head.encode() + BODY)
        self.interval = interval
        self.stop = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self.drip, daemon=True)
        self.thread.start()

    def drip(self) -> None:
        while not self.stop.wait(self.interval):
            for i, sock in enumerate(self.sockets):
                if self.pending[i]:
                    sock.sendall(self.pending[i][:1])
                    self.pending[i] = self.pending[i][1:]
            self.sent += 1

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for sock in self.sockets:
            sock.close()


@pytest.mark.timeout(120)
def test_64_slow_clients_do_not_keep_rest_health_or_grpc_out(address: tuple[str, int]) -> None:
    pytest.importorskip("grpc")
    from google.api_core import exceptions

    url = f"http://{address[0]}:{address[1]}"
    drippers = Drippers(address, 64, interval=1.0)
    try:
        deadline = time.monotonic() + 1.8  # within the request timeout: all still dripping
        rounds = 0
        while time.monotonic() < deadline or rounds < 2:
            assert requests.get(url + "/_emulator/health", timeout=5).status_code == 200
            assert (
                requests.get(url + JOBS + "/nightly", timeout=5).json()["name"].endswith("/nightly")
            )
            scheduler = grpc_client_own_connection(f"{address[0]}:{address[1]}")
            try:
                with pytest.raises(exceptions.NotFound):
                    scheduler.get_job(name=JOBS[4:] + "/none", retry=None, timeout=5)
            finally:
                scheduler.transport.close()
            rounds += 1
        assert drippers.sent >= 1 and all(drippers.pending)  # still sending
    finally:
        drippers.close()


@pytest.mark.timeout(60)
def test_a_request_dripped_past_the_request_timeout_gets_408(address: tuple[str, int]) -> None:
    drippers = Drippers(address, 2, interval=0.2)  # never silent for long, 5 bytes a second
    try:
        started = time.monotonic()
        for sock in drippers.sockets:
            answer = read_all(sock)
            assert answer.startswith(b"HTTP/1.1 408"), answer
            assert b"within 2 s" in answer
        assert time.monotonic() - started < 6
    finally:
        drippers.close()
