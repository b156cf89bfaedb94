"""SIGTERM while a manual-clock daemon advances a year: the advance ends at the due instant it
reached with what ran there recorded, the daemon exits within 3 s without a traceback and says
how many attempts were in flight, the advance is answered 503 naming where the clock stopped
(it got an empty reply), and a restart marks nothing that had ended as restarted."""

from __future__ import annotations

import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from werkzeug.serving import make_server

from tests.daemon import running_daemon, serving, serving_in_thread
from tests.support import RecordingTarget, nightly_job, wait_for

JOBS = "/v1/projects/my-project/locations/us-central1/jobs"


@pytest.mark.timeout(120)
def test_sigterm_during_a_year_long_advance(tmp_path: Path) -> None:
    target = RecordingTarget()
    data = ("--data-dir", str(tmp_path), "--clock", "manual")
    answers: list[object] = []
    with serving(target) as base:
        with running_daemon(
            *data, "--start", "2026-03-02T14:00:00Z", "--log-file", "/dev/null"
        ) as daemon:
            job = nightly_job(
                name=f"{JOBS[4:]}/minutely", schedule="* * * * *", httpTarget={"uri": base}
            )
            daemon.post(JOBS, job).raise_for_status()

            def advance() -> None:
                try:
                    answers.append(
                        daemon.post("/_emulator/clock:advance", {"seconds": 365 * 86400})
                    )
                except requests.RequestException as exc:
                    answers.append(exc)

            mover = threading.Thread(target=advance, daemon=True)
            mover.start()
            assert wait_for(lambda: len(target.requests) >= 20, 30)
            began = time.monotonic()
            daemon.process.send_signal(signal.SIGTERM)
            code = daemon.process.wait(timeout=10)
            took = time.monotonic() - began
            assert daemon.process.stderr is not None
            stderr = daemon.process.stderr.read()
            mover.join(10)
        delivered = len(target.requests)
        assert code == 0 and took < 3.0, (code, took, stderr)
        assert "Traceback" not in stderr and "Error" not in stderr, stderr
        match = re.search(r"stopping: (\d+) attempt\(s\) in flight", stderr)
        assert match is not None, stderr
        in_flight = int(match.group(1))
        assert in_flight in (0, 1)
        with running_daemon(*data) as daemon:
            attempts = daemon.attempts()
            now = daemon.get("/_emulator/clock")["now"]
    restarted = [a for a in attempts if "Emulator restarted" in (a.debug_info or "")]
    assert restarted == []
    ok = [a for a in attempts if a.code == "OK"]
    assert len(ok) >= delivered - in_flight
    # The clock resumes at the instant the advance reached: the last attempt's minute.
    assert now == attempts[-1].schedule_time
    [answer] = answers
    assert isinstance(answer, requests.Response) and answer.status_code == 503, answer
    assert answer.json()["error"]["message"].startswith(
        f"The emulator is stopping: the clock stopped at {now}, before 2027-03-02T14:00:00Z;"
    )


@pytest.mark.timeout(60)
def test_an_advance_held_by_a_target_at_sigterm_is_answered_503() -> None:
    """A trial: the request in flight held the advance past the stop's grace, the server closed
    its connection first, and the caller got an empty reply; the stop lines counted only the
    attempt cut short, not the one queued behind it and recorded as not sent."""
    arrived, release = threading.Event(), threading.Event()

    def hanging(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        arrived.set()
        release.wait(30)
        start_response("200 OK", [])
        return [b""]

    answers: list[object] = []
    server = make_server("127.0.0.1", 0, hanging, threaded=True)
    with (
        serving_in_thread(server) as base,
        running_daemon(
            "--in-memory", "--clock", "manual", "--start", "2026-03-02T14:00:30Z"
        ) as daemon,
    ):
        try:
            for name in ("held", "behind"):  # one is sent and held, the other waits behind it
                job = nightly_job(name=f"{JOBS[4:]}/{name}", schedule="* * * * *")
                daemon.post(JOBS, job | {"httpTarget": {"uri": base}}).raise_for_status()
            mover = threading.Thread(
                target=lambda: answers.append(
                    daemon.post("/_emulator/clock:advance", {"seconds": 120})
                ),
                daemon=True,
            )
            mover.start()
            assert arrived.wait(30)
            daemon.process.send_signal(signal.SIGTERM)
            mover.join(15)
            daemon.process.wait(15)
            assert daemon.process.stderr is not None
            stderr = daemon.process.stderr.read()
        finally:
            release.set()
    # Both counted (a trial read 1 of 3: the one cut short, not those that waited behind it).
    assert "scheduler-emulator stopping: 2 attempt(s) in flight or queued" in stderr
    assert "scheduler-emulator: 2 attempt(s) recorded as interrupted or not sent" in stderr
    [answer] = answers
    assert isinstance(answer, requests.Response) and answer.status_code == 503, answer
    assert answer.json()["error"]["message"] == (
        "The emulator is stopping: the clock stopped at 2026-03-02T14:01:00Z, before "
        "2026-03-02T14:02:30Z; what was due up to then was sent or recorded as not sent."
    )
