"""The Orders example service, its jobs file, its own tests and the demo command."""

from __future__ import annotations

import io
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from scheduler_emulator import Emulator, ManualClock, MountTransport
from scheduler_emulator.domain.errors import ConfigurationError
from scheduler_emulator.domain.resources import Job
from scheduler_emulator.tools.demo import load_example, run_demo
from scheduler_emulator.tools.jobs_file import load_jobs_file

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "orders"
#: How many tests ``examples/orders/test_orders.py`` holds; update it with the file.
EXAMPLE_TEST_COUNT = 38


def example_job(job_id: str) -> Job:
    """The job ``job_id`` of the example's ``jobs.yaml``."""
    jobs = load_jobs_file(EXAMPLE / "jobs.yaml", project="my-project", location="us-central1")
    return next(job for job in jobs if job.job_id == job_id)


class TestJobsFile:
    def test_it_holds_the_seed_nightly_job(self) -> None:
        nightly = example_job("nightly")
        assert nightly.name == "projects/my-project/locations/us-central1/jobs/nightly"
        assert (nightly.schedule, nightly.time_zone) == ("0 2 * * *", "Etc/UTC")
        assert nightly.retry_config.retry_count == 3
        assert nightly.http_target is not None
        assert nightly.http_target.uri == "http://127.0.0.1:8000/_triggers/timer/nightly"
        assert nightly.http_target.oidc_token is not None
        assert nightly.http_target.oidc_token.audience == "https://orders-abc123-uc.a.run.app"

    def test_the_report_job_sends_an_order_as_its_json_body(self) -> None:
        module = load_example(EXAMPLE)
        report = example_job("report")
        assert report.http_target is not None
        assert report.http_target.uri == "http://127.0.0.1:8000/_triggers/timer/report"
        assert report.http_target.body == b'{"id": "A-1001", "total": 42.5}'
        assert module.Order(**json.loads(report.http_target.body)) == module.Order("A-1001", 42.5)


def test_a_simulated_week_gives_seven_sweeps_and_retried_reports() -> None:
    module = load_example(EXAMPLE)
    orders, store = module.OrderLog(), module.ReportStore()
    app = module.create_app(orders, reports=store)
    transport = MountTransport({"http://127.0.0.1:8000": app})
    emulator = Emulator(ManualClock(datetime(2026, 9, 24, tzinfo=UTC)), transport=transport)
    for job in load_jobs_file(EXAMPLE / "jobs.yaml", project="my-project", location="us-central1"):
        emulator.create_job(job)
    emulator.advance(timedelta(days=7))
    nightly = emulator.attempts("nightly")
    assert orders.sweeps == 7
    assert [a.code for a in nightly] == ["OK"] * 7
    assert [a.schedule_time for a in nightly] == [f"2026-09-{d}T02:00:00Z" for d in range(24, 31)]
    reports = emulator.attempts("report")
    assert [a.code for a in reports] == ["INTERNAL", "OK"] * 28  # the busy store, every run
    assert [a.attempt for a in reports[:2]] == [1, 2]
    assert reports[0].schedule_time == reports[1].schedule_time
    assert (reports[1].start_time - reports[0].end_time).total_seconds() == 10  # type: ignore[operator]
    assert store.saved == [module.Order("A-1001", 42.5)] * 28
    restocks = emulator.publisher.published("restock")  # type: ignore[attr-defined]
    assert [(m.data, m.attributes) for m in restocks] == [
        (b'{"sku": "SKU-7", "quantity": 12}', {"kind": "restock"})
    ] * 7
    emulator.close()


def test_the_sweeps_probe_reports_what_the_service_did() -> None:
    module = load_example(EXAMPLE)
    app = module.create_app(reports=module.ReportStore(busy_on_first_try=False))
    client = app.test_client()
    headers = {"X-CloudScheduler-JobName": "nightly"}
    assert client.post("/_triggers/timer/nightly", headers=headers).status_code == 200
    body = b'{"id": "B-7", "total": 3}'
    assert client.post("/_triggers/timer/report", data=body).status_code == 200
    assert client.get("/sweeps").get_json() == {
        "sweeps": 1,
        "reports": [{"id": "B-7", "total": 3}],
        "restocks": [],
    }


def test_the_examples_own_tests_pass_with_the_installed_plugin(pytester: pytest.Pytester) -> None:
    for name in ("app.py", "app_fastapi.py", "app_starlette.py", "test_orders.py"):
        (pytester.path / name).write_text((EXAMPLE / name).read_text(encoding="utf-8"))
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "error", "-q")
    result.assert_outcomes(passed=EXAMPLE_TEST_COUNT)


@contextmanager
def example_process(
    *args: str, script: str = "app.py"
) -> Iterator[tuple[subprocess.Popen[str], queue.Queue[str]]]:
    """Run ``python examples/orders/<script> *args``; yield it with a queue of its stderr lines."""
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE / script), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)
        lines.put("")

    pumping = threading.Thread(target=pump, daemon=True)
    pumping.start()
    try:
        yield process, lines
    finally:
        process.terminate()
        process.wait(timeout=30)
        pumping.join(timeout=30)
        assert process.stderr is not None
        process.stderr.close()


def wait_for_line(lines: queue.Queue[str], pattern: str, timeout: float = 30) -> re.Match[str]:
    """Return the match of the first line matching ``pattern`` within ``timeout`` seconds."""
    seen = []
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line matched {pattern!r} in {timeout} s: {seen}") from None
        assert line, f"the process ended; it printed: {''.join(seen)}"
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match


def test_running_the_example_file_serves_timers_and_the_probe() -> None:
    with example_process("0") as (_, lines):
        url = wait_for_line(lines, r"Running on (http://127\.0\.0\.1:\d+)").group(1)
        answer = requests.post(
            f"{url}/_triggers/timer/nightly",
            headers={
                "X-CloudScheduler": "true",
                "X-CloudScheduler-JobName": "nightly",
                "X-CloudScheduler-ScheduleTime": "2026-09-24T02:00:00Z",
                "User-Agent": "Google-Cloud-Scheduler",
            },
            timeout=30,
        )
        assert answer.status_code == 200
        wait_for_line(lines, r"orders: Sweep scheduled for 2026-09-24T02:00:00Z")
        assert requests.get(f"{url}/sweeps", timeout=30).json() == {
            "sweeps": 1,
            "reports": [],
            "restocks": [],
        }


@pytest.mark.parametrize("script", ["app_fastapi.py", "app_starlette.py"])
def test_running_an_asgi_variant_under_uvicorn_serves_timers_and_the_probe(script: str) -> None:
    with example_process("0", script=script) as (_, lines):
        url = wait_for_line(lines, r"Uvicorn running on (http://127\.0\.0\.1:\d+)").group(1)
        answer = requests.post(
            f"{url}/_triggers/timer/report",
            headers={"X-CloudScheduler-JobName": "report"},
            data=b'{"id": "B-7", "total": 3}',
            timeout=30,
        )
        assert answer.status_code == 500  # the flaky store: busy on the first try of a run
        assert answer.headers["Content-Type"] == "application/problem+json"
        assert answer.json()["title"] == "Internal Server Error"
        nightly = requests.post(f"{url}/_triggers/timer/nightly", timeout=30)
        assert nightly.status_code == 200
        wait_for_line(lines, r"orders: Sweep scheduled for \(no ScheduleTime")
        assert requests.get(f"{url}/sweeps", timeout=30).json() == {"sweeps": 1, "reports": []}
        assert requests.post(f"{url}/jobs/nightly", timeout=30).status_code == 404


def test_demo_runs_the_example_and_reports_each_attempt() -> None:
    out = io.StringIO()
    assert run_demo(days=1, speed=0, out=out) == 0
    text = out.getvalue()
    assert (
        "nightly  attempt 1  POST /_triggers/timer/nightly  "
        "ScheduleTime=2026-09-24T02:00:00Z  -> OK (HTTP 200)" in text
    )
    assert "      Sweep scheduled for 2026-09-24T02:00:00Z\n" in text
    assert "report   attempt 1  POST /_triggers/timer/report" in text
    assert "-> INTERNAL (HTTP 500)" in text
    assert "      TIMER /report failed with 500: its handler raised ReportStoreBusy.\n" in text
    assert "report   attempt 2" in text
    assert "Traceback" not in text
    assert "restock  attempt 1  PUBLISH projects/my-project/topics/restock  -> OK" in text
    assert "      Restock of SKU-7 x12 requested\n" in text
    assert "10 attempts (4 failed and retried)" in text
    assert "1 nightly sweep, 4 reports and 1 restock request in 1 day." in text


#: What the example service logs while it handles each kind of attempt of the demo's first day.
SERVICE_LINE_OF = {
    ("nightly", "1"): "      Sweep scheduled for 2026-09-24T02:00:00Z",
    ("report", "1"): "      TIMER /report failed with 500: its handler raised ReportStoreBusy.",
    ("report", "2"): "      Report saved for order A-1001 (total 42.50)",
    ("restock", "1"): "      Restock of SKU-7 x12 requested",
}


def assert_each_service_line_under_its_attempt(text: str) -> None:
    """Every attempt line is followed by the one line the service logged for that attempt."""
    lines = text.splitlines()
    attempts = [i for i, line in enumerate(lines) if line.startswith("  2026-")]
    assert len(attempts) == 10
    for i in attempts:
        match = re.match(r"  \S+  (\w+) +attempt (\d+) ", lines[i])
        assert match is not None, lines[i]
        assert lines[i + 1] == SERVICE_LINE_OF[match.groups()], (lines[i], lines[i + 1])
    assert sum(line.startswith("      ") for line in lines) == len(attempts)


def test_demo_prints_each_service_line_under_its_attempt_with_the_service_on_its_port() -> None:
    out = io.StringIO()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert run_demo(days=1, speed=0, out=out, port=port) == 0
    assert f"Orders example service on http://127.0.0.1:{port}" in out.getvalue()
    assert_each_service_line_under_its_attempt(out.getvalue())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        with pytest.raises(ConfigurationError, match=f"127.0.0.1:{busy}: Address already in use"):
            run_demo(days=1, speed=0, out=io.StringIO(), port=busy)


@pytest.mark.timeout(120)
def test_demo_redirected_to_a_file_keeps_the_same_order(tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    with output.open("w") as stdout:  # block-buffered, as `scheduler-emulator demo > out.txt`
        done = subprocess.run(
            [sys.executable, "-m", "scheduler_emulator", "demo", "--days", "1", "--speed", "0"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            cwd=EXAMPLE.parents[1],
            timeout=110,
        )
    assert done.returncode == 0, done.stderr
    assert_each_service_line_under_its_attempt(output.read_text())
