"""The dashboard in headless Chromium (Debian's chromium and chromium-driver, driven by
selenium): the Orders example's day on a manual clock, seen and acted on from the page.

Screenshots of each view are saved under the test's tmp dir (``pytest --basetemp=DIR`` keeps
them where you want them).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.browser import all_by_css, available, by_testid, chromium, wait_for
from tests.daemon import running_daemon
from tests.dashboard_scene import PARENT, advance_one_day, orders_daemon, redrawn, timeline_ready
from tests.drip import DripTarget, drip_server
from tests.server.dashboard.test_runs_browser import open_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not available(), reason="needs chromium, chromium-driver and selenium"),
]
ROOT = Path(__file__).resolve().parents[3]


def runs_in_lane(driver: object, job: str) -> list[object]:
    return all_by_css(driver, f'[data-testid="lane-{job}"] [data-testid^="run-"]')


def test_a_day_of_the_orders_jobs_seen_and_acted_on_from_the_page(tmp_path: Path) -> None:
    with orders_daemon() as daemon, chromium() as driver:
        restock = {"name": f"{PARENT}/jobs/restock", "schedule": "0 6 * * *", "pubsubTarget": {
            "topicName": "projects/my-project/topics/restock", "data": "e30="}}  # fmt: skip
        daemon.post(f"/v1/{PARENT}/jobs", restock).raise_for_status()
        advance_one_day(driver, daemon.url)
        # 1 nightly run and 4 report runs; each report run: a failed attempt and its retry
        assert len(runs_in_lane(driver, "nightly")) == 1
        report_runs = runs_in_lane(driver, "report")
        assert len(report_runs) == 4
        first = report_runs[0]
        segments = first.find_elements("css selector", ".tl-attempt")  # type: ignore[attr-defined]
        assert [s.get_attribute("data-outcome") for s in segments] == ["http", "ok"]
        assert by_testid(driver, "now-line") is not None
        # the first label of the axis and the first of each new day carry the date (trial 163)
        labels = [t.text for t in all_by_css(driver, ".tl-axis") if t.text != "UTC"]
        dates = [label.split()[0] for label in labels if " " in label]
        assert labels[0].startswith("03-01 ") and dates == sorted(set(dates)), labels
        driver.save_screenshot(str(tmp_path / "timeline.png"))

        segments[0].click()  # the failed attempt: its details, response excerpt included
        wait_for(driver, lambda d: "report" in by_testid(d, "attempt-details").text)
        wait_for(driver, lambda d: "Internal Server Error" in by_testid(d, "detail-response").text)
        assert by_testid(driver, "detail-status").text == "500"
        assert "2026-03-01 05:00:00 UTC" in by_testid(driver, "detail-schedule-time").text
        assert by_testid(driver, "detail-why").text.lower() == "why"
        driver.save_screenshot(str(tmp_path / "attempt-details.png"))
        segments[1].click()  # its retry, answered 200: no "why" over Google's status text
        wait_for(driver, lambda d: by_testid(d, "detail-status").text == "200")
        assert by_testid(driver, "detail-why").text.lower() == "status detail"
        restock = all_by_css(driver, '[data-testid="lane-restock"] .tl-attempt')
        restock[0].click()  # a publish: no header, no response body (trial 125)
        wait_for(driver, lambda d: "PUBLISH" in by_testid(d, "detail-request").text)
        panel = by_testid(driver, "attempt-details").text.lower()  # (headings are upper case)
        assert not [
            s for s in ("scheduletime header", "http status", "response body") if s in panel
        ]
        driver.save_screenshot(str(tmp_path / "publish-details.png"))
        open_run(driver, "restock")  # its run: no header either (trial 186)
        panel = by_testid(driver, "attempt-details").text.lower()
        assert "scheduletime header" not in panel and "attempts" in panel
        driver.save_screenshot(str(tmp_path / "publish-run.png"))
        open_run(driver, "nightly")  # an HTTP job's run names the header it sent
        assert "2026-03-01T02:00:00Z" in by_testid(driver, "run-schedule-time-header").text

        by_testid(driver, "tab-jobs").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-row-nightly"]'))
        assert "at 02:00, every day" in by_testid(driver, "job-row-nightly").text
        report = by_testid(driver, "job-row-report").find_element("css selector", "td")
        assert report.get_attribute("title") == "Six-hourly order report"  # (trial 141)
        by_testid(driver, "job-pause-nightly").click()
        wait_for(driver, lambda d: by_testid(d, "job-state-nightly").text == "PAUSED")
        job = requests.get(f"{daemon.url}/v1/{PARENT}/jobs/nightly", timeout=30).json()
        assert job["state"] == "PAUSED"
        driver.save_screenshot(str(tmp_path / "jobs.png"))
        by_testid(driver, "job-resume-nightly").click()
        wait_for(driver, lambda d: by_testid(d, "job-state-nightly").text == "ENABLED")
        # what comes next, as the CLI's resume says (trial 103: "Resumed nightly" only)
        wait_for(driver, lambda d: by_testid(d, "status").text.startswith("Resumed nightly; "))
        assert by_testid(driver, "status").text.startswith("Resumed nightly; next run at 2026-")
        from selenium.webdriver.support.ui import Select

        Select(by_testid(driver, "jobs-filter-state")).select_by_value("failed")  # (trial 172)
        wait_for(driver, lambda d: not all_by_css(d, '[data-testid="job-row-nightly"]'))
        failing = {r.get_attribute("data-testid") for r in all_by_css(driver, "#jobs-body tr")}
        assert "job-row-hourly-ping" in failing, failing  # (its every attempt failed)
        driver.save_screenshot(str(tmp_path / "jobs-failed.png"))
        Select(by_testid(driver, "jobs-filter-state")).select_by_value("")

        by_testid(driver, "tab-faults").click()
        wait_for(driver, lambda d: "No fault rules" in by_testid(d, "faults").text)
        rule = {"action": "lost_ack", "job": "nightly", "run": 2, "attempt": 1}
        requests.post(f"{daemon.url}/_emulator/faults", json=rule, timeout=30).raise_for_status()
        wait_for(driver, lambda d: "lost_ack" in by_testid(d, "faults-table").text)  # polled
        assert by_testid(driver, "faults-table").text.endswith("fired for 0 attempts")  # (225)
        driver.save_screenshot(str(tmp_path / "faults.png"))

        mark = timeline_ready(driver)
        by_testid(driver, "tab-timeline").click()  # a job whose name is not its timer route
        wait_for(driver, lambda d: redrawn(d, mark))  # showing a view always draws it anew
        ping = all_by_css(driver, '[data-testid="lane-hourly-ping"] .tl-attempt')
        assert ping and all(s.get_attribute("data-outcome") == "http" for s in ping)
        ping[0].click()
        wait_for(driver, lambda d: "hourly-ping" in by_testid(d, "attempt-details").text)
        wait_for(driver, lambda d: "cleanup" in by_testid(d, "attempt-details").text)
        panel = by_testid(driver, "attempt-details").text  # (trial 126: the hint said twice)
        assert panel.count("timer route 'cleanup' is not the job's name") == 1, panel


def test_the_timeline_shows_each_jobs_next_scheduled_runs_in_its_window(tmp_path: Path) -> None:
    """Trial 80: lanes were empty to the right of "now", one minute before a run was due; the
    next runs were only in the Jobs tab."""
    with orders_daemon() as daemon, chromium() as driver:
        moved = daemon.post("/_emulator/clock:advance", {"seconds": 55 * 60})  # 00:55Z
        assert moved.status_code == 200, moved.text
        driver.get(daemon.url + "/")
        wait_for(driver, timeline_ready)
        marks = {
            job: [m.get_attribute("data-time") for m in all_by_css(
                driver, f'[data-testid="lane-{job}"] [data-testid="next-run"]')]
            for job in ("hourly-ping", "nightly", "report")
        }  # fmt: skip
        fires = {j["id"]: j["nextFireTimes"] for j in daemon.get("/_emulator/jobs")["jobs"]}
        # and the next run after the window, at its edge (trial 225: lanes said nothing of it)
        assert marks == {"hourly-ping": fires["hourly-ping"][:2], "nightly": fires["nightly"][:1],
                         "report": fires["report"][:1]}  # fmt: skip
        assert fires["hourly-ping"][0] == "2026-03-01T01:00:00Z"  # in the window, after now
        later = all_by_css(driver, '[data-testid="next-run"].later')
        assert sorted(m.get_attribute("data-time") for m in later) == sorted(
            [fires["hourly-ping"][1], fires["nightly"][0], fires["report"][0]]
        )
        driver.save_screenshot(str(tmp_path / "next-runs.png"))


def test_the_page_asks_for_the_admin_token_and_sends_it(tmp_path: Path) -> None:
    with orders_daemon("--admin-token", "s3cret") as daemon, chromium() as driver:
        driver.get(daemon.url + "/")
        wait_for(driver, lambda d: by_testid(d, "token-dialog").is_displayed())
        assert not by_testid(driver, "token-refused").is_displayed()  # none was sent yet
        by_testid(driver, "token-input").send_keys("wrong")
        by_testid(driver, "token-submit").click()
        # Trial 80: a wrong token got the same dialog again, without a word.
        wait_for(driver, lambda d: by_testid(d, "token-refused").is_displayed())
        driver.save_screenshot(str(tmp_path / "token-refused.png"))
        by_testid(driver, "token-input").clear()
        by_testid(driver, "token-input").send_keys("s3cret")
        by_testid(driver, "token-submit").click()
        wait_for(driver, timeline_ready)
        assert len(runs_in_lane(driver, "nightly")) == 0  # drawn: the lanes are there
        assert all_by_css(driver, '[data-testid="lane-nightly"]')
        assert by_testid(driver, "timeline-span").get_attribute("value") == "21600"  # (manual)
        # Trial 80: the 401 stayed in the status line while the page worked.
        assert "error" not in by_testid(driver, "status").get_attribute("class")
        driver.save_screenshot(str(tmp_path / "token.png"))


def test_the_page_says_when_the_daemon_stops_answering_and_when_it_answers_again(
    tmp_path: Path,
) -> None:
    """Trial 130: a stopped daemon showed only the browser's "Failed to fetch"."""
    with running_daemon("--in-memory") as daemon, chromium() as driver:
        driver.get(daemon.url + "/")
        wait_for(driver, timeline_ready)
        # trials 209, 209b: a live daemon's few minutes were squeezed into 6 hours
        assert by_testid(driver, "timeline-span").get_attribute("value") == "3600"
        daemon.kill()
        said = wait_for(driver, lambda d: "does not answer" in by_testid(d, "status").text)
        text = by_testid(driver, "status").text
        assert said and "error" in by_testid(driver, "status").get_attribute("class")
        assert text.startswith(f"The daemon at {daemon.url.removeprefix('http://')} does not")
        driver.save_screenshot(str(tmp_path / "daemon-down.png"))
        port = daemon.url.rsplit(":", 1)[1]
        with running_daemon("--in-memory", "--port", port):
            wait_for(driver, lambda d: by_testid(d, "status").text == "The daemon answers again.")


def test_the_replay_report_opens_without_a_network(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    scenario = ROOT / "examples" / "orders" / "scenarios" / "duplicates.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", "replay", str(scenario), "--report",
         str(report)],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # the scenario's expectation is unmet
    with chromium() as driver:
        driver.get(report.as_uri())
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="lane-nightly"]'))
        assert len(runs_in_lane(driver, "nightly")) == 2
        injected = all_by_css(driver, '[data-testid^="attempt-"][data-injected="true"]')
        outcomes = {a.get_attribute("data-outcome") for a in injected}
        assert outcomes and outcomes <= {"ok", "http", "deadline", "connection"}  # the real one
        assert all_by_css(driver, '[data-testid="duplicate-marker"]')
        # trial 206: the legend's ◇ was never drawn; the next nightly run is after the window
        (following,) = all_by_css(driver, '[data-testid="lane-nightly"] [data-testid="next-run"]')
        assert following.get_attribute("data-time") == "2026-09-26T02:00:00Z"
        assert following.get_attribute("class") == "tl-next later"
        assert "unmet" in by_testid(driver, "expectations").text.lower()
        # trial 148: no verdict in the title, and nothing explained the retries' times
        assert driver.title.endswith("duplicates.yaml: 1 unmet")
        assert "nightly: 0 2 * * * (Etc/UTC); retry count" in by_testid(driver, "scenario").text
        for when in all_by_css(driver, '[data-testid="attempt-table"] td.when'):  # (trial 132)
            date, time_ = when.find_elements("css selector", "span")
            assert box(date)["y"] == box(time_)["y"], "an instant broke at a 1400 px window"
        driver.save_screenshot(str(tmp_path / "report.png"))
    # Trial 103: at 800 px the timeline scrolled its lane names away, and the attempts' DETAIL
    # column was squeezed to a few words a line; the timeline fits, the table scrolls instead.
    with chromium(800, 900) as driver:
        driver.get(report.as_uri())
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="lane-nightly"]'))
        page = driver.execute_script("return document.documentElement.clientWidth")
        assert (
            box(by_testid(driver, "timeline").find_element("css selector", "svg"))["width"] <= page
        )
        detail = all_by_css(driver, '[data-testid="attempt-table"] td.detail')[0]
        assert box(detail)["width"] >= 200 and box(detail)["x"] + box(detail)["width"] <= page
        driver.save_screenshot(str(tmp_path / "report-800.png"))
        driver.execute_script("arguments[0].scrollIntoView()", detail)
        driver.save_screenshot(str(tmp_path / "report-800-attempts.png"))


def box(element: object) -> dict[str, float]:
    return element.rect  # type: ignore[attr-defined,no-any-return]


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def test_injected_faults_keep_the_outcome_and_the_page_fits_1024_px(tmp_path: Path) -> None:
    with orders_daemon() as daemon, chromium(1024, 768) as driver:
        for rule in (
            {"action": "duplicate", "job": "nightly", "count": 1},
            {"action": "delay", "job": "report", "seconds": 2},
        ):
            answer = requests.post(f"{daemon.url}/_emulator/faults", json=rule, timeout=30)
            answer.raise_for_status()
        advance_one_day(driver, daemon.url)
        assert by_testid(driver, "status").text.startswith("Advanced 1 day to 2026-03-02 00:00:00")
        nightly = all_by_css(driver, '[data-testid="lane-nightly"] .tl-attempt')
        assert [(a.get_attribute("data-outcome"), a.get_attribute("data-injected"))
                for a in nightly] == [("ok", "false"), ("ok", "true")]  # fmt: skip
        marker = '[data-testid="lane-nightly"] [data-testid="duplicate-marker"]'
        assert len(all_by_css(driver, marker)) == 1
        report = all_by_css(driver, '[data-testid="lane-report"] .tl-attempt')
        assert {a.get_attribute("data-outcome") for a in report} == {"http", "ok"}
        assert all(a.get_attribute("data-injected") == "true" for a in report)
        assert "Injected fault" in by_testid(driver, "legend-injected").text
        now_label = box(by_testid(driver, "now-label"))
        assert not any(overlaps(now_label, box(t)) for t in all_by_css(driver, ".tl-axis"))
        driver.save_screenshot(str(tmp_path / "timeline-1024.png"))

        nightly[1].click()  # the details panel leaves the clock controls usable
        wait_for(driver, lambda d: "nightly" in by_testid(d, "attempt-details").text)
        advance = by_testid(driver, "clock-advance")
        at_advance = driver.execute_script(  # type: ignore[attr-defined]
            "var r = arguments[0].getBoundingClientRect();"
            "return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);",
            advance,
        )
        assert at_advance == advance
        assert "/jobs/" in by_testid(driver, "detail-job").text
        # trial 80: only the run view and the terminal views named a duplicate
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="detail-duplicate"]'))
        assert by_testid(driver, "detail-duplicate").text == (
            "Duplicate delivery: the target had already answered 2xx to attempt 1 of this run."
        )
        driver.save_screenshot(str(tmp_path / "details-1024.png"))
        by_testid(driver, "attempt-details-close").click()

        by_testid(driver, "tab-jobs").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-row-hourly-ping"]'))
        width = driver.execute_script("return document.documentElement.clientWidth")  # type: ignore[attr-defined]
        delete = box(by_testid(driver, "job-delete-hourly-ping"))
        assert delete["x"] + delete["width"] <= width
        by_testid(driver, "job-pause-nightly").click()
        wait_for(driver, lambda d: by_testid(d, "status").text == "Paused nightly")
        driver.save_screenshot(str(tmp_path / "jobs-1024.png"))
        # The notice stays for 5 s of the page's time (NOTICE_MS), then a poll (every 2 s)
        # shows "Refreshed at …" again: the page's clock is moved past the notice instead of
        # waiting for it in real time.
        driver.execute_script(  # type: ignore[attr-defined]
            "var now = Date.now; Date.now = function () { return now.call(Date) + 5000; };"
        )
        wait_for(driver, lambda d: by_testid(d, "status").text.startswith("Refreshed at "), 20)
        assert by_testid(driver, "status").text.endswith(" UTC (real time)")

        # A trial's timeline kept the width it was drawn at when the window grew.
        by_testid(driver, "tab-timeline").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="lane-nightly"]'))
        # A poll that finds something changed draws the timeline afresh, so an element found
        # may be replaced before it is measured: wait_for reads it again.
        drawn = wait_for(driver, lambda d: box(all_by_css(d, "#timeline svg")[0])["width"])
        driver.set_window_size(1400, 900)  # type: ignore[attr-defined]
        wait_for(driver, lambda d: box(all_by_css(d, "#timeline svg")[0])["width"] > drawn + 300)
        driver.save_screenshot(str(tmp_path / "timeline-resized-1400.png"))


def test_the_page_fits_an_800_px_window(tmp_path: Path) -> None:
    """A trial's 800 px window cut off "Move to" and the Jobs tab's actions: nothing is wider
    than the window, and the last action of a row is in view (a later trial's, with a long
    job ID, an English-like schedule and a scroll bar, cut off the next fire times too)."""
    with orders_daemon() as daemon, chromium(800, 600) as driver:
        job = {"name": f"{PARENT}/jobs/paused-halfhourly", "timeZone": "America/Los_Angeles",
               "schedule": "every monday,wednesday 08:30",
               "httpTarget": {"uri": "http://127.0.0.1:9/ok/nightly-reconciliation"}}  # fmt: skip
        daemon.post(f"/v1/{PARENT}/jobs", job).raise_for_status()
        failing = {"name": f"{PARENT}/jobs/la-failing", "schedule": "0 */4 * * *",
                   "httpTarget": {"uri": "http://127.0.0.1:9/fail/la"},
                   "retryConfig": {"retryCount": 3, "minBackoffDuration": "30s"}}  # fmt: skip
        daemon.post(f"/v1/{PARENT}/jobs", failing).raise_for_status()
        restock = {"name": f"{PARENT}/jobs/restock", "schedule": "0 6 * * *",  # (trial 80: its
                   "pubsubTarget": {"topicName": "projects/my-project/topics/restock",  # reason
                                    "data": "e30="}}  # fmt: skip  # pushed the actions out)
        daemon.post(f"/v1/{PARENT}/jobs", restock).raise_for_status()
        long_id = "bulk-000-a-rather-long-name-for-the-nightly-reconciliation-of-orders"  # trial 65
        job = {"name": f"{PARENT}/jobs/{long_id}", "schedule": "0 3 * * *",
               "httpTarget": {"uri": "http://127.0.0.1:9/ok/bulk"}}  # fmt: skip
        daemon.post(f"/v1/{PARENT}/jobs", job).raise_for_status()
        advance_one_day(driver, daemon.url)
        wide = "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        assert driver.execute_script(wide) == 0  # type: ignore[attr-defined]
        driver.save_screenshot(str(tmp_path / "timeline-800.png"))
        daemon.post(f"/v1/{PARENT}/jobs/la-failing:run").raise_for_status()  # a retry pending
        by_testid(driver, "tab-jobs").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-pending-la-failing"]'))
        # (trial 55: the pending retry's line kept to one line and ran 200 px past the window)
        assert driver.execute_script(wide) == 0  # type: ignore[attr-defined]
        for job_id in ("hourly-ping", long_id, "restock"):
            delete = box(by_testid(driver, f"job-delete-{job_id}"))
            assert delete["x"] + delete["width"] <= 800
        driver.save_screenshot(str(tmp_path / "jobs-800.png"))
        restock_row = by_testid(driver, "job-row-restock")  # (below the sticky header)
        driver.execute_script(  # type: ignore[attr-defined]
            "window.scrollBy(0, arguments[0].getBoundingClientRect().top - 170)", restock_row
        )
        driver.save_screenshot(str(tmp_path / "jobs-800-restock.png"))
        pending = by_testid(driver, "job-pending-la-failing")
        driver.execute_script("arguments[0].scrollIntoView()", pending)  # type: ignore[attr-defined]
        driver.save_screenshot(str(tmp_path / "jobs-800-pending-retry.png"))
        driver.execute_script("window.scrollTo(0, 0)")  # type: ignore[attr-defined]
        by_testid(driver, "tab-timeline").click()  # the refused attempt's panel: its text once
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="lane-la-failing"] .tl-attempt'))
        driver.execute_script(  # found and clicked in one turn of the page: the timeline may
            "const bars = document.querySelectorAll("  # redraw between a find and a click
            "'[data-testid=\"lane-la-failing\"] .tl-attempt');"
            "bars[bars.length - 1].dispatchEvent(new MouseEvent('click', {bubbles: true}));"
        )  # type: ignore[attr-defined]
        wait_for(driver, lambda d: "la-failing" in by_testid(d, "attempt-details").text)
        debug = by_testid(driver, "detail-debug").text
        assert "Connection refused" in debug
        assert by_testid(driver, "attempt-details").text.count(debug) == 1  # (trial 55: twice)
        hint = by_testid(driver, "detail-hint").text  # where nothing listens (trial 182)
        assert hint.startswith("Emulator's hint") and "nothing listens at 127.0.0.1:" in hint
        driver.save_screenshot(str(tmp_path / "attempt-800-refused.png"))


def test_a_job_whose_attempt_awaits_its_target_reads_in_flight(tmp_path: Path) -> None:
    hang = DripTarget(mode="hang", limit_seconds=60)
    with drip_server(hang) as base, running_daemon("--in-memory") as daemon, chromium() as driver:
        job = {"name": f"{PARENT}/jobs/hangs", "schedule": "0 0 1 1 *"}
        job["httpTarget"] = {"uri": base + "/run"}
        daemon.post(f"/v1/{PARENT}/jobs", job).raise_for_status()
        daemon.post(f"/v1/{PARENT}/jobs/hangs:run").raise_for_status()
        driver.get(daemon.url + "/")
        by_testid(driver, "tab-jobs").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-row-hangs"]'))
        row = by_testid(driver, "job-row-hangs")
        assert "in flight" in row.text
        assert "None" not in row.text and "null" not in row.text
        assert row.find_elements("css selector", ".code-pending")
        driver.save_screenshot(str(tmp_path / "jobs-in-flight.png"))
