"""Header spelling modes (``--header-case google|lower|canonical``): a raw-socket target that
records header names exactly as they arrive sees each mode's spelling, for the scheduler's
headers and the job's own, through the daemon and through the Python API; an in-process ASGI
app always sees lower-case names in its scope (the ASGI spec's rule)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_emulator import AsgiTransport, Emulator, EmulatorOptions, HttpTransport, ManualClock
from tests.daemon import running_daemon
from tests.support import nightly_job, wait_for

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
USER = {"X-Shop-Tenant": "eu", "Content-Type": "application/json"}
#: What each mode sends for the scheduler's headers and the job's own.
EXPECTED = {
    "google": [
        "X-Shop-Tenant",
        "Content-Type",
        "User-Agent",
        "X-CloudScheduler",
        "X-CloudScheduler-JobName",
        "X-CloudScheduler-ScheduleTime",
    ],
    "lower": [
        "x-shop-tenant",
        "content-type",
        "user-agent",
        "x-cloudscheduler",
        "x-cloudscheduler-jobname",
        "x-cloudscheduler-scheduletime",
    ],
    "canonical": [
        "X-Shop-Tenant",
        "Content-Type",
        "User-Agent",
        "X-Cloudscheduler",
        "X-Cloudscheduler-Jobname",
        "X-Cloudscheduler-Scheduletime",
    ],
}
#: Names the HTTP client adds itself (not the job's or the scheduler's).
CLIENT_HEADERS = {"host", "content-length", "accept-encoding", "connection"}


class RawTarget:
    """An HTTP/1.1 server on a raw socket: records each request's header names byte for byte
    and answers 200 (connections kept alive)."""

    def __init__(self) -> None:
        self.names: list[list[str]] = []
        self.arrived = threading.Condition()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in buffer:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")[1:]
                names = [line.partition(":")[0] for line in lines]
                length = next(
                    (
                        int(line.partition(":")[2])
                        for line in lines
                        if line.lower().startswith("content-length:")
                    ),
                    0,
                )
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                with self.arrived:
                    self.names.append(names)
                    self.arrived.notify_all()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self._sock.close()


@contextmanager
def raw_target() -> Iterator[RawTarget]:
    target = RawTarget()
    try:
        yield target
    finally:
        target.close()


def job_names(names: list[str]) -> list[str]:
    return [name for name in names if name.lower() not in CLIENT_HEADERS]


def job_json(url: str) -> dict[str, Any]:
    return nightly_job(
        name=f"{JOBS[4:]}/nightly",
        httpTarget={"uri": url, "httpMethod": "POST", "headers": USER, "body": "e30="},
    )


@pytest.mark.parametrize("case", ["google", "lower", "canonical"])
def test_the_python_api_sends_each_spelling(case: str) -> None:
    with raw_target() as target:
        clock = ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))
        transport = HttpTransport()
        emulator = Emulator(clock, transport=transport, options=EmulatorOptions(header_case=case))
        try:
            emulator.create_job(job_json(target.url + "/run"))
            clock.advance(timedelta(minutes=1))
            [attempt] = emulator.attempts()
        finally:
            emulator.close()
        [names] = target.names
    assert job_names(names) == EXPECTED[case]
    assert list(attempt.request["headers"]) == EXPECTED[case]  # the record shows what was sent


@pytest.mark.timeout(90)
def test_the_daemon_sends_each_spelling() -> None:
    seen: dict[str, list[str]] = {}
    with raw_target() as target:
        for case in EXPECTED:
            start = ("--clock", "manual", "--start", "2026-09-24T01:59:00Z")
            with running_daemon("--in-memory", *start, "--header-case", case) as daemon:
                daemon.post(JOBS, job_json(target.url + "/run")).raise_for_status()
                daemon.advance(timedelta(minutes=1))
                count = len(seen) + 1
                assert wait_for(lambda: len(target.names) == count, 10)  # noqa: B023
            seen[case] = job_names(target.names[-1])
    assert seen == EXPECTED


def test_an_unknown_spelling_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="header_case must be one of google, lower, canonical"):
        EmulatorOptions(header_case="Upper")


def test_an_in_process_asgi_app_sees_lower_case_names_in_any_mode() -> None:
    pytest.importorskip("httpx")
    scopes: list[list[bytes]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scopes.append([name for name, _ in scope["headers"]])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    for case in EXPECTED:
        clock = ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))
        transport = AsgiTransport(app)
        emulator = Emulator(clock, transport=transport, options=EmulatorOptions(header_case=case))
        emulator.create_job(job_json("http://app.test/run"))
        clock.advance(timedelta(minutes=1))
        emulator.close()
        transport.close()
    assert len(scopes) == 3
    for names in scopes:
        assert all(name == name.lower() for name in names)
        assert b"x-cloudscheduler-jobname" in names


def test_a_scenario_file_sets_the_spelling(tmp_path: Path) -> None:
    from scheduler_emulator.domain.errors import ConfigurationError
    from scheduler_emulator.tools.scenario import load_scenario

    path = tmp_path / "scenario.yaml"
    jobs = "jobs: [{name: j, schedule: '* * * * *', httpTarget: {uri: 'http://a/'}}]\n"
    path.write_text("header_case: lower\n" + jobs)
    assert load_scenario(path).header_case == "lower"
    path.write_text("header_case: Upper\n" + jobs)
    with pytest.raises(ConfigurationError, match="header_case: one of google, lower, canonical"):
        load_scenario(path)
