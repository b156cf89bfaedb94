"""HTTP/2 deliveries (``--http2``): an h2c target (hypercorn) receives the attempt over HTTP/2
with prior knowledge, with the same headers (lower-case names), body, deadline and outcome
rules as over HTTP/1.1; without an HTTP/2-capable client the flag is refused at start."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from scheduler_emulator import Attempt, Emulator, HttpTransport, ManualClock
from scheduler_emulator.domain.errors import InvalidArgument
from scheduler_emulator.runtime import http2_problem
from scheduler_emulator.runtime.delivery.transports import DeliveryRequest
from scheduler_emulator.wire import EMULATOR_HTTP2_HEADER
from tests.daemon import MANUAL, running_daemon
from tests.support import nightly_job, send_started, wait_for

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"
REASON = http2_problem()
needs_h2 = pytest.mark.skipif(REASON is not None, reason=f"no HTTP/2 client: {REASON}")


class H2Target:
    """An ASGI app served by hypercorn (h2c with prior knowledge, or HTTP/1.1), recording
    each request's HTTP version, raw header names and body; ``/slow`` answers after 1.5 s."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[str], bytes]] = []
        self.paths: list[str] = []  # the path of each request in ``seen``
        self.answered: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        names = [name.decode("latin-1") for name, _ in scope["headers"]]
        self.seen.append((scope["http_version"], names, body))
        self.paths.append(scope["path"])
        try:
            if scope["path"] == "/slow":
                await asyncio.sleep(1.5)
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
        finally:
            self.answered.append(scope["path"])


@pytest.fixture
def h2_target() -> Iterator[tuple[H2Target, str]]:
    """An :class:`H2Target` served by hypercorn on a free local port, and its base URL."""
    hypercorn = pytest.importorskip("hypercorn")
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    # at the end, a request its client gave up on (the deadline test's /slow: hypercorn never
    # sees that stream end) holds the shutdown this long before it is cancelled
    config.graceful_timeout = 0.5
    app = H2Target()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    thread = threading.Thread(
        target=loop.run_until_complete,
        args=(serve(app, config, shutdown_trigger=stop.wait),),  # type: ignore[arg-type]
        daemon=True,
    )
    thread.start()

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False

    assert wait_for(listening, 10), hypercorn
    try:
        yield app, f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def job_json(url: str, job_id: str = "nightly", **headers: str) -> dict[str, Any]:
    return nightly_job(
        name=f"{JOBS[4:]}/{job_id}",
        httpTarget={
            "uri": url,
            "httpMethod": "PUT",
            "headers": {"X-Shop-Tenant": "eu", "Content-Type": "application/json", **headers},
            "body": "eyJhIjogMX0=",  # {"a": 1}
        },
        retryConfig={},
    )


def h2_job(url: str, job_id: str, value: str = "true") -> dict[str, Any]:
    """A job carrying the emulator-only per-job HTTP/2 header."""
    job = job_json(url, job_id)
    job["httpTarget"]["headers"][EMULATOR_HTTP2_HEADER] = value
    return job


def attempt_of(job: dict[str, Any], *, http2: bool, deadline: float | None = None) -> Attempt:
    """Create ``job`` on an in-process emulator (``http2``: the daemon's ``--http2``), give it
    an attempt deadline of ``deadline`` seconds if asked (below the API's minimum of 15 s),
    move the clock past its 02:00 fire time and return its one attempt."""
    clock = ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))
    emulator = Emulator(clock, http2=http2)
    try:
        emulator.create_job(job)
        if deadline is not None:
            stored = emulator.get_job(job["name"].rpartition("/")[2])
            emulator.upsert_job(replace(stored, attempt_deadline=timedelta(seconds=deadline)))
        clock.advance(timedelta(minutes=1))
        [attempt] = emulator.attempts()
        return attempt
    finally:
        emulator.close()


@needs_h2
@pytest.mark.parametrize("http2", [True, False])
def test_an_h2c_target_gets_the_same_attempt_over_http2(
    h2_target: tuple[H2Target, str], http2: bool
) -> None:
    app, base = h2_target
    attempt = attempt_of(job_json(base + "/run"), http2=http2)
    [(version, names, body)] = app.seen
    assert version == ("2" if http2 else "1.1")
    assert body == b'{"a": 1}'
    assert (attempt.code, attempt.response_status) == ("OK", 200)
    wanted = {"x-shop-tenant", "content-type", "user-agent", "x-cloudscheduler"}
    assert wanted | {"x-cloudscheduler-jobname", "x-cloudscheduler-scheduletime"} <= set(names)
    if http2:
        assert all(name == name.lower() for name in names)


@needs_h2
def test_the_deadline_holds_over_http2(h2_target: tuple[H2Target, str]) -> None:
    app, base = h2_target
    attempt = attempt_of(job_json(base + "/slow"), http2=True, deadline=1)
    assert attempt.code == "DEADLINE_EXCEEDED"
    assert app.seen[0][0] == "2"


@needs_h2
@pytest.mark.timeout(60)
def test_the_daemon_delivers_over_http2(h2_target: tuple[H2Target, str]) -> None:
    app, base = h2_target
    with running_daemon("--in-memory", *MANUAL, "--http2") as daemon:
        daemon.post(JOBS, job_json(base + "/run")).raise_for_status()
        daemon.advance(timedelta(minutes=1))
        assert wait_for(lambda: len(app.seen) == 1, 10)
        [attempt] = daemon.attempts()
    assert app.seen[0][0] == "2" and attempt["code"] == "OK"


def test_without_an_http2_client_the_flag_is_refused_at_start(tmp_path: Path) -> None:
    (tmp_path / "pycurl.py").write_text("raise ImportError('hidden for this test')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    done = subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", "start", "--in-memory", "--http2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "--http2: HTTP/2 deliveries are not possible here: they need pycurl" in done.stderr
    assert "Traceback" not in done.stderr


@needs_h2
@pytest.mark.timeout(60)
def test_one_job_asks_for_http2_on_a_daemon_without_the_flag(
    h2_target: tuple[H2Target, str],
) -> None:
    app, base = h2_target
    with running_daemon("--in-memory", *MANUAL) as daemon:
        daemon.post(JOBS, h2_job(base + "/h2", "h2")).raise_for_status()
        daemon.post(JOBS, job_json(base + "/plain", "plain")).raise_for_status()
        shown = daemon.get(f"{JOBS}/h2")["httpTarget"]["headers"]
        daemon.advance(timedelta(minutes=1))
        assert wait_for(lambda: len(app.seen) == 2, 10)
        codes = {attempt["code"] for attempt in daemon.attempts()}
    assert shown[EMULATOR_HTTP2_HEADER] == "true"  # kept in the job, like any header
    seen = dict(zip(app.paths, app.seen, strict=True))
    (h2_version, h2_names, h2_body), (plain_version, plain_names, _) = seen["/h2"], seen["/plain"]
    assert (h2_version, plain_version) == ("2", "1.1")
    assert h2_body == b'{"a": 1}' and codes == {"OK"}
    assert all(name == name.lower() for name in h2_names)
    assert {"x-shop-tenant", "x-cloudscheduler-jobname"} <= set(h2_names) & set(plain_names)
    assert "x-emulator-http2" not in {n.lower() for n in h2_names + plain_names}


@needs_h2
def test_false_keeps_a_job_on_http1_under_the_daemon_flag(
    h2_target: tuple[H2Target, str],
) -> None:
    app, base = h2_target
    attempt = attempt_of(h2_job(base + "/h1", "h1", value="FALSE"), http2=True)
    [(version, names, _)] = app.seen
    assert (version, attempt.code) == ("1.1", "OK")
    assert "x-emulator-http2" not in {n.lower() for n in names}
    assert EMULATOR_HTTP2_HEADER not in attempt.request["headers"]


@pytest.mark.parametrize(
    ("job", "words"),
    [
        (h2_job("http://127.0.0.1:9/x", "yes", value="yes"), "must be true or false; got"),
        (h2_job("https://example.com/x", "tls"), "true needs an http:// uri"),
    ],
)
def test_a_bad_per_job_http2_header_is_refused_at_create(job: dict[str, Any], words: str) -> None:
    emulator = Emulator(ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC)))
    try:
        with pytest.raises(InvalidArgument, match=EMULATOR_HTTP2_HEADER) as refused:
            emulator.create_job(job)
        assert words in str(refused.value) and refused.value.field == "httpTarget.headers"
        assert emulator.list_jobs() == []
    finally:
        emulator.close()


def test_an_app_engine_job_cannot_carry_the_http2_header() -> None:
    emulator = Emulator(ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC)))
    job = nightly_job(
        name=f"{JOBS[4:]}/gae",
        appEngineHttpTarget={"relativeUri": "/run", "headers": {EMULATOR_HTTP2_HEADER: "true"}},
    )
    del job["httpTarget"]
    try:
        with pytest.raises(InvalidArgument, match="httpTarget jobs only"):
            emulator.create_job(job)
    finally:
        emulator.close()


@pytest.mark.timeout(60)
def test_without_an_http2_client_a_per_job_http2_is_400_at_create_and_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pycurl.py").write_text("raise ImportError('hidden for this test')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    with running_daemon("--in-memory") as daemon:
        refused = daemon.post(JOBS, h2_job("http://127.0.0.1:9/x", "h2"))
        daemon.post(JOBS, job_json("http://127.0.0.1:9/x", "plain")).raise_for_status()
        patched = requests.patch(
            f"{daemon.url}{JOBS}/plain?updateMask=httpTarget.headers",
            json={"httpTarget": {"headers": {EMULATOR_HTTP2_HEADER: "true"}}},
            timeout=30,
        )
        kept = daemon.get(f"{JOBS}/plain")["httpTarget"]["headers"]
    for response in (refused, patched):
        assert response.status_code == 400, response.text
        message = response.json()["error"]["message"]
        assert EMULATOR_HTTP2_HEADER in message and "they need pycurl" in message, message
    assert EMULATOR_HTTP2_HEADER not in kept


@needs_h2
def test_the_event_loop_sends_over_http2_as_the_threaded_driver_does(
    h2_target: tuple[H2Target, str],
) -> None:
    # A system-clock daemon sends through libcurl's event loop: the same h2c wire.
    app, base = h2_target
    transport = HttpTransport(http2=True)
    try:
        request = DeliveryRequest("POST", base + "/run", {"X-Shop-Tenant": "t"}, b"{}")
        result = send_started(transport, request, 5)
    finally:
        transport.close()
    [(version, names, body)] = app.seen
    assert (version, body, result.status) == ("2", b"{}", 200)
    assert "x-shop-tenant" in names
