"""The dashboard's attempt panel shows the Cloud Run execution a ``jobs/J:run`` attempt started,
in headless Chromium. The screenshot is saved under the test's tmp dir; the one looked at for
this release is kept beside this file (``cloud-run-execution.png``, and
``cloud-run-cancelled.png`` for a cancelled execution and ``cloud-run-cancelled-lane.png``
for its lane's mark, ``cloud-run-report-execution.png`` for
a replay report's)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import requests

from tests.browser import all_by_css, available, by_testid, chromium, wait_for
from tests.daemon import running_daemon
from tests.dashboard_scene import (
    PARENT,
    START,
    advance_one_day,
    choose,
    redrawn,
    timeline_ready,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not available(), reason="needs chromium, chromium-driver and selenium"),
]

TASK = (
    "import os, sys; "
    "i, a = os.environ['CLOUD_RUN_TASK_INDEX'], os.environ['CLOUD_RUN_TASK_ATTEMPT']; "
    "print('exported part', i, 'attempt', a); print('rows written'); "
    "sys.exit(1 if (i, a) == ('1', '0') else 0)"
)


def test_an_attempt_shows_the_cloud_run_execution_it_started(tmp_path: Path) -> None:
    jobs_file = tmp_path / "cloud-run-jobs.json"
    job = {
        "name": f"{PARENT}/jobs/export",
        "template": {
            "taskCount": 3,
            "parallelism": 2,
            "template": {
                "maxRetries": 1,
                "containers": [{"command": [sys.executable, "-c", TASK]}],
            },
        },
    }
    jobs_file.write_text(json.dumps([job]))
    args = (
        "--in-memory",
        "--clock",
        "manual",
        "--start",
        START,
        "--cloud-run-jobs",
        str(jobs_file),
    )
    with running_daemon(*args) as daemon, chromium() as driver:
        scheduler_job = {
            "name": f"{PARENT}/jobs/nightly-export",
            "schedule": "0 2 * * *",
            "httpTarget": {
                "uri": f"https://run.googleapis.com/v2/{PARENT}/jobs/export:run",
                "httpMethod": "POST",
                "oauthToken": {
                    "serviceAccountEmail": "scheduler@my-project.iam.gserviceaccount.com"
                },
            },
        }
        requests.post(
            f"{daemon.url}/v1/{PARENT}/jobs", json=scheduler_job, timeout=30
        ).raise_for_status()
        advance_one_day(driver, daemon.url)
        assert not all_by_css(driver, '[data-testid="execution-marker"]')  # it SUCCEEDED
        choose(driver, "timeline-filter-runs", "Cloud Run execution failed")  # (trial 225)
        wait_for(driver, lambda d: not all_by_css(d, '[data-testid^="runbar-"]'))
        choose(driver, "timeline-filter-runs", "all")
        wait_for(driver, lambda d: all_by_css(d, '[data-testid^="runbar-"]'))
        [segment] = all_by_css(driver, '[data-testid="lane-nightly-export"] .tl-attempt')
        segment.click()
        wait_for(driver, lambda d: "SUCCEEDED" in by_testid(d, "execution-state").text, 30)
        assert "3 of 3 tasks succeeded · 1 retried" in by_testid(driver, "execution-state").text
        # (trial 200: a FAILED execution read as plain as this)
        assert by_testid(driver, "execution-state").get_attribute("class") == "code-ok"
        rows = by_testid(driver, "execution-tasks").text.splitlines()
        assert len(rows) == 9  # the header and four task attempts, their output's two lines
        # (trial 119: an output's lines ran together)
        assert (
            "exported part 1 attempt 1\nrows written" in by_testid(driver, "execution-tasks").text
        )
        # (a trial followed the execution's name and got raw JSON: the link says it is that)
        assert by_testid(driver, "execution-json").text == "(JSON)"
        # its name as written, not in the heading's capitals (trial 163 could not copy it)
        [execution] = requests.get(f"{daemon.url}/_emulator/executions", timeout=30).json()[
            "executions"
        ]
        heading = all_by_css(driver, '[data-testid="detail-execution"] h3 code')[0].text
        assert heading == execution["name"].rsplit("/", 1)[-1]
        # the run's view says what its execution did too, as `runs` does (trial 163)
        by_testid(driver, "details-open-run").click()
        wait_for(
            driver, lambda d: d.find_element("id", "details").get_attribute("data-showing") == "run"
        )
        wait_for(driver, lambda d: "SUCCEEDED" in by_testid(d, "execution-state").text, 30)
        driver.save_screenshot(str(tmp_path / "cloud-run-run-view.png"))
        driver.save_screenshot(str(tmp_path / "cloud-run-execution.png"))


def test_a_cancelled_execution_tells_stopped_tasks_from_those_never_started(
    tmp_path: Path,
) -> None:
    """Trial 204: two tasks a cancel stopped read as three "never started"."""
    jobs_file = tmp_path / "cloud-run-jobs.json"
    task = {"command": [sys.executable, "-c", "import signal; signal.pause()"]}
    job = {
        "name": f"{PARENT}/jobs/export",
        "template": {"taskCount": 3, "parallelism": 2, "template": {"containers": [task]}},
    }
    jobs_file.write_text(json.dumps([job]))
    args = ("--in-memory", "--clock", "manual", "--start", START)
    with running_daemon(*args, "--cloud-run-jobs", str(jobs_file)) as daemon, chromium() as driver:
        scheduler_job = {
            "name": f"{PARENT}/jobs/nightly-export",
            "schedule": "0 2 1 1 *",
            "httpTarget": {
                "uri": f"https://run.googleapis.com/v2/{PARENT}/jobs/export:run",
                "oauthToken": {"serviceAccountEmail": "run@my-project.iam.gserviceaccount.com"},
            },
        }
        api = f"{daemon.url}/v1/{PARENT}/jobs"
        requests.post(api, json=scheduler_job, timeout=30).raise_for_status()
        requests.post(f"{api}/nightly-export:run", json={}, timeout=30).raise_for_status()
        executions = f"{daemon.url}/_emulator/executions"

        def running() -> dict[str, object] | None:
            listed = requests.get(executions, timeout=30).json()["executions"]
            return listed[0] if listed and listed[0]["runningCount"] == 2 else None

        name = str(wait_for(driver, lambda _: running(), 60)["name"])
        requests.post(f"{daemon.url}/v2/{name}:cancel", json={}, timeout=30).raise_for_status()

        def ended(_: object) -> bool:
            return (
                requests.get(executions, timeout=30).json()["executions"][0]["state"] != "RUNNING"
            )

        wait_for(driver, ended, 60)
        driver.get(daemon.url + "/")
        wait_for(driver, timeline_ready)
        # the lane says so without a click (trial 220: it read all green)
        lane = '[data-testid="lane-nightly-export"] '
        [marker] = all_by_css(driver, lane + '[data-testid="execution-marker"]')
        assert marker.get_attribute("data-state") == "CANCELLED"
        band = all_by_css(driver, lane + ".tl-run-hit")[0].find_element("tag name", "title")
        assert f"Cloud Run execution {name.rsplit('/', 1)[-1]}: CANCELLED" in (
            band.get_attribute("textContent")
        )
        driver.save_screenshot(str(tmp_path / "cloud-run-cancelled-lane.png"))
        [segment] = all_by_css(driver, lane + ".tl-attempt")
        segment.click()
        wait_for(driver, lambda d: "CANCELLED" in by_testid(d, "execution-state").text, 30)
        assert by_testid(driver, "execution-state").text == (
            "CANCELLED · 0 of 3 tasks succeeded · 2 stopped (cancelled) · "
            "1 never started (cancelled)"
        )
        driver.save_screenshot(str(tmp_path / "cloud-run-cancelled.png"))
        drawn = timeline_ready(driver)
        choose(driver, "timeline-filter-runs", "Cloud Run execution failed")  # (trial 225)
        wait_for(driver, lambda d: redrawn(d, drawn))
        assert all_by_css(driver, lane + '[data-testid^="runbar-"]')  # it stays


def test_the_replay_report_shows_the_execution_an_attempt_started(tmp_path: Path) -> None:
    """Trial 216: the report's attempt panel showed only the :run answer (a snapshot that read
    as still running), not what the execution's tasks did, which the dashboard shows."""
    from scheduler_emulator.tools.report import write_report
    from scheduler_emulator.tools.scenario import load_scenario, run_scenario
    from tests.tools.scenario.test_cloud_run_jobs import FAILING, write

    report = tmp_path / "report.html"
    write_report(run_scenario(load_scenario(write(tmp_path, FAILING))), report)
    with chromium() as driver:
        driver.get(report.as_uri())
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="lane-nightly"] .tl-attempt'))
        all_by_css(driver, '[data-testid="lane-nightly"] .tl-attempt')[0].click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="execution-state"]'), 10)
        state = by_testid(driver, "execution-state")
        assert state.text == "FAILED · 0 of 1 tasks succeeded"
        assert state.get_attribute("class") == "code-bad"
        assert "database locked" in by_testid(driver, "execution-tasks").text
        assert not all_by_css(driver, '[data-testid="execution-json"]')  # nothing to fetch
        driver.save_screenshot(str(tmp_path / "report-execution.png"))
