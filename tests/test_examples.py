"""The Orders example service, its jobs file and the demo command."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scheduler_emulator.clock import ManualClock
from scheduler_emulator.demo import load_example, run_demo
from scheduler_emulator.emulator import Emulator
from scheduler_emulator.jobs_file import load_jobs_file
from scheduler_emulator.transports import MountTransport

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "orders"


def test_jobs_file_holds_the_seed_nightly_job() -> None:
    jobs = {
        job.job_id: job
        for job in load_jobs_file(
            EXAMPLE / "jobs.yaml", project="my-project", location="us-central1"
        )
    }
    nightly = jobs["nightly"]
    assert nightly.name == "projects/my-project/locations/us-central1/jobs/nightly"
    assert (nightly.schedule, nightly.time_zone) == ("0 2 * * *", "Etc/UTC")
    assert nightly.retry_config.retry_count == 3
    assert nightly.http_target is not None and nightly.http_target.oidc_token is not None
    assert nightly.http_target.oidc_token.audience == "https://orders-abc123-uc.a.run.app"


def test_a_simulated_week_gives_seven_sweeps_and_retried_reports() -> None:
    module = load_example(EXAMPLE)
    orders = module.OrderLog()
    transport = MountTransport({"http://127.0.0.1:8000": module.create_app(orders)})
    emulator = Emulator(ManualClock(datetime(2026, 9, 24, tzinfo=UTC)), transport=transport)
    for job in load_jobs_file(EXAMPLE / "jobs.yaml", project="my-project", location="us-central1"):
        emulator.create_job(job)
    emulator.advance(timedelta(days=7))
    nightly = [d for d in orders.deliveries if d["timer"] == "nightly"]
    assert orders.sweeps == 7
    assert [d["scheduleTime"] for d in nightly] == [f"2026-09-{d}T02:00:00Z" for d in range(24, 31)]
    reports = emulator.attempts("report")
    assert [a.code for a in reports[:2]] == ["INTERNAL", "OK"]
    assert (reports[1].start_time - reports[0].end_time).total_seconds() == 10  # type: ignore[operator]
    assert orders.reports == 7 * 4
    emulator.close()


def test_demo_runs_the_example_and_reports_each_attempt() -> None:
    out = io.StringIO()
    assert run_demo(days=1, speed=0, out=out) == 0
    text = out.getvalue()
    assert (
        "nightly  attempt 1  POST /_triggers/timer/nightly  "
        "ScheduleTime=2026-09-24T02:00:00Z  -> 200 OK" in text
    )
    assert "report   attempt 2" in text
    assert "1 nightly sweep and 4 reports in 1 day." in text
