"""The daemon port's connections (scheduler_emulator.server.connections), on real sockets:
HTTP/1.1 kept alive between requests with a bounded idle time, a preface sent a byte at a
time, a TLS ClientHello closed at once, a silent connection closed after the idle timeout,
gRPC connections bounded apart from HTTP/1.1 ones and refused in HTTP/2, idle gRPC
connections sent GOAWAY; and the HTTP/2 answer itself, read back with the h2 package."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from google.api_core.exceptions import MethodNotImplemented

from scheduler_emulator import Emulator
from scheduler_emulator.server import grpc_api
from scheduler_emulator.server.connections import (
    HTTP2_PREFACE,
    NO_GRPC_MESSAGE,
    Limits,
    answer_http2,
    request_size,
)
from scheduler_emulator.server.server import serve
from tests.support import grpc_client_own_connection, read_all, wait_for

HEALTH = "/_emulator/health"


class Served:
    """The daemon's server on a free port in this process, counting accepted connections."""

    def __init__(self, emulator: Emulator, limits: Limits, grpc: bool = True) -> None:
        self.server: Any = serve(emulator, "127.0.0.1", 0, limits=limits, grpc=grpc)
        self.accepted = 0
        accept = self.server.connection_router.accept

        def counting(sock: socket.socket, address: Any) -> None:
            self.accepted += 1
            accept(sock, address)

        self.server.connection_router.accept = counting
        self.address = ("127.0.0.1", self.server.server_port)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def open(self) -> dict[str, int]:
        return dict(self.server.connection_router.open)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serving(emulator: Emulator) -> Iterator[Any]:
    """Start the server with the given :class:`Limits` (keywords); closed after the test."""
    started: list[Served] = []

    def start(grpc: bool = True, **limits: Any) -> Served:
        started.append(Served(emulator, Limits(**limits), grpc=grpc))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture
def served(serving: Any) -> Served:
    """The server with the daemon's limits."""
    return serving()


@pytest.mark.timeout(60)
def test_requests_past_the_busy_workers_wait_for_one_within_a_bound_of_bytes(
    serving: Any,
) -> None:
    """Trial 161: 99 of 200 clients creating jobs at once were answered 503; they wait for a
    worker now, while the requests waiting hold no more bytes than the workers' may."""
    served = serving(http_workers=2)
    router = served.server.connection_router
    serve_http, go = router.serve_http, threading.Event()

    def held(*args: Any) -> bool:
        go.wait(30)
        return bool(serve_http(*args))

    router.serve_http = held
    answers: list[int] = []

    def call() -> None:
        answers.append(requests.get(served.url + HEALTH, timeout=30).status_code)

    callers = [threading.Thread(target=call) for _ in range(6)]
    for caller in callers[:3]:
        caller.start()
    wait_for(lambda: len(router._busy) == 2 and router._waiting > 0, 10)  # one of three waits
    size = router._waiting
    for waiting, caller in enumerate(callers[3:], 2):
        caller.start()
        wait_for(lambda: router._waiting == waiting * size, 10)  # noqa: B023 (called here)
    router.max_body_bytes = router._waiting // 2 // 2  # the four waiting are past the bound now
    assert requests.get(served.url + HEALTH, timeout=30).status_code == 503
    go.set()
    for caller in callers:
        caller.join(30)
    assert answers == [200] * 6


class TestKeepAlive:
    @pytest.mark.timeout(60)
    def test_100_calls_of_one_session_use_one_connection(self, served: Served) -> None:
        emulator_jobs = f"{served.url}/v1/projects/my-project/locations/us-central1/jobs"
        with requests.Session() as session:
            for i in range(100):
                answer = session.get(emulator_jobs if i % 2 else served.url + HEALTH, timeout=10)
                assert answer.status_code == 200
                assert "close" not in answer.headers.get("Connection", "")
        assert served.accepted == 1

    def test_two_requests_sent_at_once_are_both_answered(self, served: Served) -> None:
        with socket.create_connection(served.address, timeout=10) as sock:
            one = f"GET {HEALTH} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            sock.sendall((one + one.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")).encode())
            answer = read_all(sock)
        assert answer.count(b"HTTP/1.1 200") == 2

    def test_an_idle_connection_is_closed_after_the_idle_timeout(self, serving: Any) -> None:
        # 1 s, not less: the first request's bytes must be read within it too, and a busy
        # machine's suite once held this process's server loop 0.3 s (the connection closed)
        served = serving(http_idle_timeout=1.0)
        conn = http.client.HTTPConnection(*served.address, timeout=10)
        try:
            conn.request("GET", HEALTH)
            assert conn.getresponse().read().startswith(b'{"status": "ok"')
            assert conn.sock is not None
            started = time.monotonic()
            assert conn.sock.recv(10) == b""  # the server closed it
            assert 0.8 < time.monotonic() - started < 6
        finally:
            conn.close()

    def test_a_client_asking_to_close_is_closed(self, served: Served) -> None:
        with socket.create_connection(served.address, timeout=10) as sock:
            sock.sendall(f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            assert read_all(sock).startswith(b"HTTP/1.1 200")


class TestFirstBytes:
    def test_a_tls_hello_is_closed_at_once(self, served: Served) -> None:
        with socket.create_connection(served.address, timeout=5) as conn:
            conn.sendall(b"\x16\x03\x01\x00\x05hello")
            started = time.monotonic()
            assert conn.recv(100) == b""  # closed, nothing written
            assert time.monotonic() - started < 2

    def test_a_silent_connection_is_closed_after_the_idle_timeout(self, serving: Any) -> None:
        served = serving(http_idle_timeout=0.3)
        with socket.create_connection(served.address, timeout=10) as conn:
            started = time.monotonic()
            assert conn.recv(100) == b""
            assert time.monotonic() - started < 3

    def test_the_preface_a_byte_at_a_time_reaches_http2(self, serving: Any) -> None:
        served = serving(grpc=False)  # the UNIMPLEMENTED answer
        with socket.create_connection(served.address, timeout=10) as conn:
            for byte in HTTP2_PREFACE:
                conn.sendall(bytes([byte]))
                time.sleep(0.002)  # allowed: a slow sender, not waiting on the code
            assert frames(conn.recv(65536))[0] == "RemoteSettingsChanged"


class TestGrpcOnFirstUse:
    def test_a_server_serving_grpc_imports_no_grpc_module_until_a_grpc_connection(self) -> None:
        """The message types import google-cloud-scheduler's whole client (0.2 s of a start)."""
        code = (
            "import sys; from scheduler_emulator import Emulator; "
            "from scheduler_emulator.server.server import serve; "
            "s = serve(Emulator(), '127.0.0.1', 0); "
            "print(s.connection_router.serves_grpc, "
            "sorted(m for m in sys.modules if m.startswith(('grpc', 'google.cloud.'))))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
        )
        assert out.stdout.split(" ", 1) == ["True", "[]\n"], out

    def test_a_grpc_extra_that_fails_to_import_answers_unimplemented(
        self, serving: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        def broken(*args: Any, **kwargs: Any) -> None:
            raise ImportError("cannot import name 'cloudscheduler'")

        monkeypatch.setattr(grpc_api, "GrpcBackend", broken)
        served = serving()
        client = grpc_client_own_connection(f"127.0.0.1:{served.address[1]}")
        failed = r"gRPC support failed to load \(cannot import name 'cloudscheduler'\); reinstall"
        with pytest.raises(MethodNotImplemented, match=failed):
            client.get_job(name="projects/p/locations/l/jobs/j", timeout=10)
        assert "gRPC is not served: cannot import name 'cloudscheduler'" in caplog.text
        assert not served.server.connection_router.serves_grpc


def frames(data: bytes) -> list[str]:
    """The h2 events a client reads from ``data`` (the server's bytes)."""
    from h2.config import H2Configuration
    from h2.connection import H2Connection

    client = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
    client.initiate_connection()
    return [type(event).__name__ for event in client.receive_data(data)]


class TestAnswerHttp2:
    def call(self) -> bytes:
        from h2.config import H2Configuration
        from h2.connection import H2Connection

        client = H2Connection(H2Configuration(client_side=True))
        client.initiate_connection()
        client.send_headers(
            1,
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":authority", "x"),
                (":path", "/google.cloud.scheduler.v1.CloudScheduler/GetJob"),
                ("content-type", "application/grpc"),
            ],
        )
        return bytes(client.data_to_send())

    def test_settings_first_then_nothing_until_a_call_arrives(self) -> None:
        data, done = answer_http2(HTTP2_PREFACE, 14, "busy")
        assert not done
        assert frames(data) == ["RemoteSettingsChanged"]

    def test_the_call_ends_with_the_status_and_message_then_goaway(self) -> None:
        from h2.config import H2Configuration
        from h2.connection import H2Connection
        from h2.events import ConnectionTerminated, ResponseReceived

        data, done = answer_http2(self.call(), 12, NO_GRPC_MESSAGE)
        assert done
        client = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        client.initiate_connection()
        client.send_headers(
            1, [(":method", "POST"), (":scheme", "http"), (":authority", "x"), (":path", "/")]
        )
        events = client.receive_data(data)
        response = next(e for e in events if isinstance(e, ResponseReceived))
        headers = dict(response.headers)
        assert headers["grpc-status"] == "12"
        assert "cloud-scheduler-emulator[grpc]" in headers["grpc-message"]
        goaway = next(e for e in events if isinstance(e, ConnectionTerminated))
        assert goaway.last_stream_id == 1


@pytest.mark.parametrize(
    ("head", "size"),
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 0),
        (b"POST / HTTP/1.1\r\ncontent-length: 12\r\n\r\n", 12),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", None),
        (b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", None),
        (b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", None),
        (b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", None),
        (b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", None),
    ],
    ids=["none", "length", "chunked", "expect", "repeated", "negative", "5000 digits"],
)
def test_request_size(head: bytes, size: int | None) -> None:
    assert request_size(head) == size


grpc = pytest.importorskip("grpc")


def grpc_client(address: tuple[str, int]) -> Any:
    return grpc_client_own_connection(f"{address[0]}:{address[1]}")


JOB = "projects/my-project/locations/us-central1/jobs/none"


class TestGrpcConnections:
    @pytest.mark.timeout(60)
    def test_beyond_the_grpc_bound_a_client_gets_unavailable_and_http_is_served(
        self, serving: Any
    ) -> None:
        served = serving(max_grpc_connections=2, max_connections=2)
        from google.api_core import exceptions

        holders = [grpc_client(served.address) for _ in range(2)]
        try:
            for holder in holders:  # each connected: a call answered NOT_FOUND
                with pytest.raises(exceptions.NotFound):
                    holder.get_job(name=JOB, retry=None, timeout=10)
            wait_for(lambda: served.open["grpc"] == 2, 10, "two gRPC connections")
            third = grpc_client(served.address)
            with pytest.raises(exceptions.ServiceUnavailable) as refused:
                third.get_job(name=JOB, retry=None, timeout=10)
            assert "2 gRPC connections open" in refused.value.message
            third.transport.close()
            # HTTP/1.1 has its own bound: two gRPC connections take none of it
            assert requests.get(served.url + HEALTH, timeout=10).status_code == 200
        finally:
            for holder in holders:
                holder.transport.close()

    @pytest.mark.timeout(60)
    def test_beyond_the_http_bound_http_gets_the_json_503_and_grpc_is_served(
        self, serving: Any
    ) -> None:
        served = serving(max_connections=1)
        from google.api_core import exceptions

        with socket.create_connection(served.address, timeout=10) as holder:
            holder.sendall(b"GET /_emulator/health HTTP/1.1\r\n")  # half-sent: held
            wait_for(lambda: served.open["http"] == 1, 10, "the held connection")
            answer = requests.get(served.url + HEALTH, timeout=10)
            assert answer.status_code == 503
            assert answer.json()["error"]["status"] == "UNAVAILABLE"
            scheduler = grpc_client(served.address)
            with pytest.raises(exceptions.NotFound):
                scheduler.get_job(name=JOB, retry=None, timeout=10)
            scheduler.transport.close()

    @pytest.mark.timeout(60)
    def test_an_idle_grpc_connection_gets_goaway_and_the_channel_reconnects(
        self, serving: Any
    ) -> None:
        served = serving(grpc_idle_timeout=0.5)
        from google.api_core import exceptions

        scheduler = grpc_client(served.address)
        try:
            with pytest.raises(exceptions.NotFound):
                scheduler.get_job(name=JOB, retry=None, timeout=10)
            assert served.open["grpc"] == 1
            wait_for(lambda: served.open["grpc"] == 0, 10, "GOAWAY")  # then closed
            with pytest.raises(exceptions.NotFound):
                scheduler.get_job(name=JOB, retry=None, timeout=10)
            assert served.accepted == 2
        finally:
            scheduler.transport.close()
