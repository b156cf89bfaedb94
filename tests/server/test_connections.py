"""Routing each connection of the daemon's port by its first bytes
(scheduler_emulator.server.connections), on real sockets: HTTP/1.1 untouched, the HTTP/2
preface even when it arrives a byte at a time, a TLS ClientHello closed at once, a silent
connection closed after the socket timeout; and the no-grpcio HTTP/2 answer."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from scheduler_emulator import Emulator
from scheduler_emulator.server.connections import (
    HTTP2_PREFACE,
    NO_GRPC_MESSAGE,
    sniff,
    unimplemented_headers,
)
from scheduler_emulator.server.server import serve


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


class TestSniff:
    def test_http_is_recognised_without_consuming_a_byte(self, pair: tuple) -> None:
        client, server = pair
        client.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert sniff(server, 1.0) == "http"
        assert server.recv(3) == b"GET"

    def test_the_preface_a_byte_at_a_time(self, pair: tuple) -> None:
        client, server = pair

        def dribble() -> None:
            for byte in HTTP2_PREFACE:
                client.sendall(bytes([byte]))
                time.sleep(0.002)  # allowed: simulating a slow sender, not waiting on the code

        thread = threading.Thread(target=dribble)
        thread.start()
        assert sniff(server, 5.0) == "h2"
        thread.join()
        assert server.recv(64) == HTTP2_PREFACE

    def test_tls(self, pair: tuple) -> None:
        client, server = pair
        client.sendall(b"\x16\x03\x01\x02\x00\x01")
        assert sniff(server, 1.0) == "tls"

    def test_a_silent_connection(self, pair: tuple) -> None:
        assert sniff(pair[1], 0.2) == "silent"

    def test_a_connection_closed_at_once_goes_to_http(self, pair: tuple) -> None:
        client, server = pair
        client.close()
        assert sniff(server, 1.0) == "http"


def test_the_unimplemented_headers_name_the_extra() -> None:
    block = unimplemented_headers(NO_GRPC_MESSAGE)
    assert block.startswith(b"\x88")
    assert b"grpc-status\x0212" in block
    assert b"cloud-scheduler-emulator[grpc]" in block


@pytest.fixture
def address(emulator: Emulator) -> Iterator[tuple[str, int]]:
    server = serve(emulator, "127.0.0.1", 0, socket_timeout=0.5)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield "127.0.0.1", server.server_port
    finally:
        server.shutdown()
        server.server_close()


def test_a_tls_hello_is_closed_at_once(address: tuple[str, int]) -> None:
    with socket.create_connection(address, timeout=5) as conn:
        conn.sendall(b"\x16\x03\x01\x00\x05hello")
        started = time.monotonic()
        assert conn.recv(100) == b""  # closed, nothing written
        assert time.monotonic() - started < 2


def test_a_silent_connection_is_closed_after_the_socket_timeout(address: tuple[str, int]) -> None:
    with socket.create_connection(address, timeout=10) as conn:
        started = time.monotonic()
        assert conn.recv(100) == b""
        assert time.monotonic() - started < 3


def test_http_keeps_working_through_the_router(address: tuple[str, int]) -> None:
    conn = http.client.HTTPConnection(*address, timeout=5)
    try:
        for _ in range(2):  # keep-alive: two requests on one connection
            conn.request("GET", "/_emulator/health")
            response = conn.getresponse()
            assert (response.status, response.read()) == (200, b'{"status": "ok"}')
    finally:
        conn.close()
