"""Runs in view, in headless Chromium: a job with ``retryCount: 3`` that fails twice then
succeeds and one that always fails, on a manual clock; the run view, the pending retry on the
timeline and in the Jobs tab, the failed-run counts, the panel closed by Esc and ✕ (in the
dashboard and in a replay report), the zone toggle, "Move to" with a plain date-time, a decoded
OIDC token and "Run as if scheduled at…".

The expected instants are worked out here from the jobs' retry config (waits of 60 s, doubling
after each failure), not read from the emulator. Screenshots are saved under the test's tmp dir
(``pytest --basetemp=DIR`` keeps them where you want them).
"""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.browser import all_by_css, available, by_testid, chromium, wait_for
from tests.dashboard_scene import (
    PARENT,
    RETRY,
    RUNS_START,
    choose,
    drawn_at,
    redrawn,
    runs_daemon,
    timeline_ready,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not available(), reason="needs chromium, chromium-driver and selenium"),
]
ROOT = Path(__file__).resolve().parents[3]
MIDNIGHT = datetime.fromisoformat(RUNS_START) + timedelta(minutes=1)  # both jobs' run
MIN_BACKOFF = int(RETRY["minBackoffDuration"].rstrip("s"))  # type: ignore[union-attr]


def wait_after(failures: int) -> timedelta:
    """The wait before the next attempt after a run's ``failures``-th failure (from the
    retry config: the minimum, doubling)."""
    return timedelta(seconds=MIN_BACKOFF * 2 ** (failures - 1))


def text(instant: datetime, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return instant.strftime(fmt)


def move_from_page(driver: Any, when: str) -> None:
    """Type ``when`` into "Move to" and press it; wait until the timeline is drawn there."""
    field = by_testid(driver, "clock-moveto-input")
    field.clear()
    field.send_keys(when)
    by_testid(driver, "clock-moveto").click()


def click_run_bar(driver: Any, bar: Any) -> None:
    """Click a run's bar just above its attempts' segments (which open an attempt)."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).move_to_element_with_offset(bar, 0, -11).click().perform()


def open_run(driver: Any, job: str) -> None:
    [bar] = all_by_css(driver, f'[data-testid="lane-{job}"] [data-testid^="runbar-"]')
    click_run_bar(driver, bar)
    wait_for(driver, lambda d: f"{job} · run" in by_testid(d, "details-title").text)


def panel_hidden(driver: Any) -> bool:
    return not by_testid(driver, "attempt-details").is_displayed()


def press_escape(driver: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(driver).send_keys(Keys.ESCAPE).perform()


def clickable(driver: Any, element: Any) -> bool:
    """Whether a click at the element's centre lands on it (nothing covers it)."""
    return bool(
        driver.execute_script(
            "var r = arguments[0].getBoundingClientRect();"
            "return document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)"
            " === arguments[0];",
            element,
        )
    )


def test_the_jobs_tab_shows_the_retry_due_first_and_pause_tells_the_runs_apart(
    tmp_path: Path,
) -> None:
    """Trial 170: with a scheduled run and a forced run of one job retrying, the Jobs tab showed
    the scheduled run's retry though the forced run's came first; and pause said a pending
    retry was dropped when only a forced run's (which goes on) was pending."""
    second_failure = MIDNIGHT + wait_after(1)
    forced_retry = second_failure + wait_after(1)  # before the scheduled run's third attempt
    with runs_daemon() as (daemon, _), chromium() as driver:
        daemon.post("/_emulator/clock:moveTo", {"time": second_failure.isoformat()})
        daemon.post(f"/v1/{PARENT}/jobs/doomed:run").raise_for_status()
        daemon.post("/_emulator/clock:advance", {"seconds": 0}).raise_for_status()  # sends it
        driver.get(daemon.url + "/")
        wait_for(driver, timeline_ready)
        by_testid(driver, "tab-jobs").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-pending-doomed"]'))
        retry = by_testid(driver, "job-pending-doomed").text
        assert retry == f"retry: attempt 2 of 4 (forced run) at {text(forced_retry)}", retry
        driver.save_screenshot(str(tmp_path / "jobs-forced-retry.png"))
        for said in (" (its pending retry is dropped: the run gave up)", ""):
            by_testid(driver, "job-pause-doomed").click()  # the scheduled run's, then none
            wait_for(driver, lambda d: by_testid(d, "job-state-doomed").text == "PAUSED")
            assert by_testid(driver, "status").text == "Paused doomed" + said
            by_testid(driver, "job-resume-doomed").click()  # (the row drawn anew, then:)
            wait_for(driver, lambda d: by_testid(d, "job-state-doomed").text == "ENABLED")


def test_two_runs_of_one_instant_are_drawn_side_by_side(tmp_path: Path) -> None:
    """Trial 225: a forced run and the scheduled one of the same instant hid each other."""
    with runs_daemon() as (daemon, _), chromium() as driver:
        daemon.post("/_emulator/clock:moveTo", {"time": "2026-09-24T23:59:00Z"})
        for _ in range(2):  # forced at 23:59, twice: both sent at once
            daemon.post(f"/v1/{PARENT}/jobs/acked:run").raise_for_status()
        daemon.post("/_emulator/clock:advance", {"seconds": 0}).raise_for_status()
        driver.get(daemon.url + "/")
        wait_for(driver, timeline_ready)
        box = "const r = arguments[0].getBoundingClientRect(); return [r.left, r.right];"
        first, second = (
            driver.execute_script(box, segment)
            for segment in all_by_css(driver, '[data-testid="lane-acked"] .tl-attempt')[-2:]
        )
        assert second[0] >= first[1], (first, second)
        driver.save_screenshot(str(tmp_path / "side-by-side.png"))


def test_a_runs_next_attempt_how_it_gave_up_and_the_failed_count(tmp_path: Path) -> None:
    second_failure = MIDNIGHT + wait_after(1)  # attempt 2 of both jobs, failed
    next_attempt = second_failure + wait_after(2)
    fourth = next_attempt + wait_after(3)  # the always-failing job's last attempt
    with runs_daemon() as (daemon, _), chromium() as driver:
        driver.get(daemon.url + "/")
        wait_for(driver, timeline_ready)
        move_from_page(driver, text(second_failure, "%Y-%m-%d %H:%M"))  # a plain UTC date-time
        wait_for(driver, lambda d: drawn_at(d) == text(second_failure, "%Y-%m-%dT%H:%M:%SZ"))

        marker = '[data-testid="lane-flaky"] [data-testid="pending-marker"]'
        wait_for(driver, lambda d: all_by_css(d, marker))
        [pending] = all_by_css(driver, marker)
        assert pending.get_attribute("data-time") == text(next_attempt, "%Y-%m-%dT%H:%M:%SZ")
        driver.save_screenshot(str(tmp_path / "pending-retry.png"))

        bars = all_by_css(driver, '[data-testid="lane-flaky"] .tl-run')
        style = "return getComputedStyle(arguments[0]).pointerEvents"
        assert bars and all(driver.execute_script(style, bar) == "none" for bar in bars)
        open_run(driver, "flaky")  # clicking the run's bar (its band: the bar lets it through)
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="run-attempt-2"]'))
        state = by_testid(driver, "run-state").text
        assert state == f"next attempt at {text(next_attempt)} UTC"
        # in the zone chosen, UTC, once (a trial read it twice: "… Etc/UTC · … UTC")
        assert by_testid(driver, "run-next-attempt").text == (
            f"retry: attempt 3 of 4 at {text(next_attempt)} UTC"
        )
        assert by_testid(driver, "run-attempt-pending").is_displayed()
        # every column in view, the reason on a row of its own (a trial found it off-panel)
        right = "return arguments[0].getBoundingClientRect().right"
        table, aside = by_testid(driver, "run-attempts"), by_testid(driver, "attempt-details")
        assert driver.execute_script(right, table) <= driver.execute_script(right, aside)
        assert by_testid(driver, "run-attempt-reason-1").text == "ok"  # the target's answer
        close = by_testid(driver, "attempt-details-close")
        assert clickable(driver, close)
        driver.save_screenshot(str(tmp_path / "run-view-retrying.png"))
        press_escape(driver)
        wait_for(driver, panel_hidden)

        by_testid(driver, "tab-jobs").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-pending-flaky"]'))
        retry = by_testid(driver, "job-pending-flaky").text
        # the next thing to happen, first, with its date (a trial read it after the times)
        assert retry == f"retry: attempt 3 of 4 at {text(next_attempt, '%Y-%m-%d %H:%M:%S')}"
        times = by_testid(driver, "job-times-flaky").text
        assert times.startswith(retry), times
        # why the last attempt failed, under its code (a trial found it only on hover): the
        # service's answer, as the run panel and `attempts` give it (trials 126, 130: it was
        # Google's status text), and the whole of it in the tooltip, as three lines show at
        # most (trial 163: the tooltip was the status text)
        wait_for(driver, lambda d: by_testid(d, "job-reason-doomed").text == "ok")
        assert by_testid(driver, "job-reason-doomed").get_attribute("title") == "ok"
        assert not all_by_css(driver, '[data-testid="job-reason-acked"]')  # OK: no reason
        driver.save_screenshot(str(tmp_path / "jobs-pending-retry.png"))

        by_testid(driver, "tab-timeline").click()
        wait_for(driver, timeline_ready)
        move_from_page(driver, text(fourth, "%Y-%m-%dT%H:%M:%SZ"))
        wait_for(driver, lambda d: drawn_at(d) == text(fourth, "%Y-%m-%dT%H:%M:%SZ"))
        open_run(driver, "doomed")
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="run-attempt-4"]'))
        assert by_testid(driver, "run-state").text == "gave up (retry count)"
        assert not all_by_css(driver, '[data-testid="run-attempt-pending"]')
        driver.save_screenshot(str(tmp_path / "run-view-gave-up.png"))
        by_testid(driver, "attempt-details-close").click()
        wait_for(driver, panel_hidden)

        doomed = by_testid(driver, "failed-count-doomed")
        flaky = by_testid(driver, "failed-count-flaky")
        assert (doomed.get_attribute("data-failed"), doomed.get_attribute("data-gave-up")) == (
            "1",
            "1",
        )
        assert (flaky.get_attribute("data-failed"), flaky.get_attribute("data-gave-up")) == (
            "1",
            "0",
        )
        assert (doomed.text, flaky.text) == ("1 gave up", "1 retried") and not all_by_css(
            driver, '[data-testid="failed-count-acked"]'
        )
        from selenium.webdriver.support.ui import Select

        Select(by_testid(driver, "timeline-filter-runs")).select_by_visible_text("gave up")
        wait_for(
            driver,
            lambda d: not all_by_css(d, '[data-testid="lane-flaky"] [data-testid^="runbar-"]'),
        )
        assert len(all_by_css(driver, '[data-testid="lane-doomed"] [data-testid^="runbar-"]')) == 1
        # trial 65: the filter kept every lane, and a gave-up run's red bar hid under its attempts
        lanes = [lane.get_attribute("data-testid") for lane in all_by_css(driver, ".tl-lane-group")]
        assert lanes == ["lane-doomed"]
        assert by_testid(driver, "timeline-page").text.endswith("(1 shown: the Runs filter)")
        right = "return arguments[0].getBoundingClientRect().right"
        [gave_up] = all_by_css(driver, '[data-testid="lane-doomed"] .tl-run.gave-up')
        last = all_by_css(driver, '[data-testid="lane-doomed"] .tl-attempt')[-1]
        assert driver.execute_script(right, gave_up) >= driver.execute_script(right, last) + 5
        driver.save_screenshot(str(tmp_path / "filter-gave-up.png"))
        # a week's window draws the run's four attempts (a minute apart) near their time, not
        # 24 px on, after "now" (trial 225: retries past were drawn in the future)
        drawn = timeline_ready(driver)
        choose(driver, "timeline-span", "7 days")
        wait_for(driver, lambda d: redrawn(d, drawn))
        last = all_by_css(driver, '[data-testid="lane-doomed"] .tl-attempt')[-1]
        now_line = by_testid(driver, "now-line")
        assert driver.execute_script(right, last) <= driver.execute_script(right, now_line) + 8
        driver.save_screenshot(str(tmp_path / "week.png"))  # kept: week-window.png, beside this


def test_an_open_run_view_follows_a_clock_move_and_a_zone_change(tmp_path: Path) -> None:
    """Trial 80: a run view left open read "next attempt at …" after the clock had moved past
    it and the run had succeeded, and kept UTC after "Times in" changed, until reopened."""
    from selenium.webdriver.support.ui import Select

    second_failure = MIDNIGHT + wait_after(1)
    next_attempt = second_failure + wait_after(2)  # flaky's third attempt: it succeeds
    with runs_daemon() as (daemon, _), chromium() as driver:
        daemon.move_to(second_failure)
        driver.get(daemon.url + "/")
        wait_for(driver, timeline_ready)
        open_run(driver, "flaky")
        wait_for(driver, lambda d: by_testid(d, "run-state").text.startswith("next attempt at"))
        daemon.move_to(next_attempt + timedelta(seconds=1))  # not from the page
        wait_for(driver, lambda d: by_testid(d, "run-state").text == "succeeded", 30)
        assert all_by_css(driver, '[data-testid="run-attempt-3"]')
        driver.save_screenshot(str(tmp_path / "run-view-followed.png"))
        press_escape(driver)
        wait_for(driver, panel_hidden)

        open_run(driver, "berlin")
        wait_for(driver, lambda d: "Started (UTC)" in by_testid(d, "run-attempts").text)
        Select(by_testid(driver, "time-zone")).select_by_value("job")
        wait_for(driver, lambda d: "Started (Europe/Berlin)" in by_testid(d, "run-attempts").text)


def test_zones_move_to_a_decoded_token_and_run_as_of(tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    with runs_daemon() as (daemon, target), chromium() as driver:
        job = {
            "name": f"{PARENT}/jobs/secured",
            "schedule": "0 0 * * *",
            "httpTarget": {
                "uri": f"http://127.0.0.1:{target_port(target, daemon)}/secured",
                "oidcToken": {
                    "serviceAccountEmail": "runner@my-project.iam.gserviceaccount.com",
                    "audience": "https://orders.example.com",
                },
            },
        }
        requests.post(f"{daemon.url}/v1/{PARENT}/jobs", json=job, timeout=30).raise_for_status()
        driver.get(daemon.url + "/#jobs")
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-times-berlin"]'))
        assert by_testid(driver, "job-times-berlin").text.splitlines()[0] == "2026-09-25 00:00:00"
        Select(by_testid(driver, "time-zone")).select_by_value("job")
        wait_for(driver, lambda d: "Europe/Berlin" in by_testid(d, "job-times-berlin").text)
        times = by_testid(driver, "job-times-berlin").text.splitlines()
        # with the offset, so that a repeated local time (a fall-back) reads apart (trial 38)
        assert times[0] == "2026-09-25 02:00:00+02:00" and times[1] == "2026-09-26 02:00:00+02:00"
        driver.save_screenshot(str(tmp_path / "jobs-in-their-zones.png"))
        driver.refresh()  # the choice is remembered
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-times-berlin"]'))
        assert (
            Select(by_testid(driver, "time-zone")).first_selected_option.get_attribute("value")
            == "job"
        )
        assert "Europe/Berlin" in by_testid(driver, "job-times-berlin").text
        Select(by_testid(driver, "time-zone")).select_by_value("utc")
        wait_for(driver, lambda d: "Europe/Berlin" not in by_testid(d, "job-times-berlin").text)

        by_testid(driver, "job-run-as-of-berlin").click()
        field = wait_for(driver, lambda d: by_testid(d, "job-run-as-of-input-berlin"))
        field.send_keys("2026-03-29T01:30:00+01:00")
        before = len(target.requests)
        by_testid(driver, "job-run-as-of-send-berlin").click()
        [received] = target.wait_for(before + 1)[before:]
        assert received.path == "/berlin"
        assert received.headers["X-Cloudscheduler-Scheduletime"] == "2026-03-29T01:30:00+01:00"
        wait_for(driver, lambda d: "as if scheduled at" in by_testid(d, "status").text)
        # shown in the job's zone, a typed time is read in it (trial 130: it was read as UTC),
        # one in the spring-forward gap as the instant the clocks jump on, west of UTC too
        # (trial 201: New York's 02:30 was sent as 01:30-05:00)
        nyc = {**job, "name": f"{PARENT}/jobs/nyc", "timeZone": "America/New_York"}
        requests.post(f"{daemon.url}/v1/{PARENT}/jobs", json=nyc, timeout=30).raise_for_status()
        Select(by_testid(driver, "time-zone")).select_by_value("job")
        wait_for(driver, lambda d: "Europe/Berlin" in by_testid(d, "job-times-berlin").text)
        for job_id, zone, typed, sent, instant in (  # (said in the zone typed in: trial 137)
            ("berlin", "Europe/Berlin", "2026-03-29 01:30", "2026-03-29T01:30:00+01:00",
             "2026-03-29 01:30:00+01:00"),
            ("berlin", "Europe/Berlin", "2026-03-29 02:30", "2026-03-29T03:30:00+02:00",
             "2026-03-29 03:30:00+02:00"),
            ("nyc", "America/New_York", "2027-03-14 02:30", "2027-03-14T03:30:00-04:00",
             "2027-03-14 03:30:00-04:00"),
            ("berlin", "Europe/Berlin", "2026-02-30 10:00", None,
             "has no such date or time"),  # (trial 137: rolled over)
        ):  # fmt: skip
            wait_for(driver, lambda d, j=job_id: by_testid(d, f"job-run-as-of-{j}").click() or 1)
            field = wait_for(driver, lambda d, j=job_id: by_testid(d, f"job-run-as-of-input-{j}"))
            assert field.get_attribute("placeholder") == f"YYYY-MM-DD HH:MM ({zone})"
            before = len(target.requests)
            wait_for(  # (typed again into the form a refresh may have drawn anew)
                driver,
                lambda d, typed=typed, j=job_id: (
                    by_testid(d, f"job-run-as-of-input-{j}").send_keys(typed),
                    by_testid(d, f"job-run-as-of-send-{j}").click(),
                ),
            )
            wait_for(driver, lambda d, instant=instant: instant in by_testid(d, "status").text)
            if sent is None:
                assert len(target.requests) == before
                continue
            [received] = target.wait_for(before + 1)[before:]
            assert received.headers["X-Cloudscheduler-Scheduletime"] == sent
        Select(by_testid(driver, "time-zone")).select_by_value("utc")

        by_testid(driver, "tab-timeline").click()
        wait_for(driver, timeline_ready)
        move_from_page(driver, "2026-09-25 03:00")
        wait_for(driver, lambda d: drawn_at(d) == "2026-09-25T03:00:00Z")
        # A refresh already under way when the move was sent may draw the timeline after it but
        # show the clock read before; the refresh that follows it shows the move.
        wait_for(driver, lambda d: by_testid(d, "clock-now").text == "2026-09-25 03:00:00 UTC")
        # what comes next, whichever job's (trial 163: found only by comparing the lanes)
        clock = daemon.get("/_emulator/clock")
        due, jobs = text(datetime.fromisoformat(clock["nextDue"])), clock["nextDueJobs"]
        more = f" +{len(jobs) - 1}" if len(jobs) > 1 else ""  # and which jobs (trial 172)
        shown = f"next due {due} UTC: {jobs[0]}{more}"
        wait_for(driver, lambda d: by_testid(d, "clock-next-due").text == shown)
        title = by_testid(driver, "clock-next-due").get_attribute("title")
        assert title == f"Due then: {', '.join(jobs)}"
        wait_for(
            driver,
            lambda d: "Moved the clock to 2026-09-25 03:00:00" in by_testid(d, "status").text,
        )
        # The date picker follows the clock (a trial's kept its page-load time, and "Move to"
        # with it was refused as a move back), until someone picks a time of their own.
        picker = by_testid(driver, "clock-moveto-picker")
        assert picker.get_attribute("value").startswith("2026-09-25T03:00")
        [attempt] = all_by_css(driver, '[data-testid="lane-secured"] .tl-attempt')
        attempt.click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="detail-token"]'))
        aud = by_testid(driver, "token-claims-aud").text
        exp = by_testid(driver, "token-claims-exp").text
        assert aud == "claims.aud https://orders.example.com"
        assert exp.startswith("claims.exp ") and "2026-09-25 01:00:00 UTC" in exp  # an hour
        assert by_testid(driver, "token-header-alg").text == "header.alg RS256"
        driver.execute_script("arguments[0].scrollIntoView()", by_testid(driver, "detail-token"))
        driver.save_screenshot(str(tmp_path / "decoded-token.png"))
        by_testid(driver, "attempt-details-close").click()
        wait_for(driver, panel_hidden)

        # In the browser's zone "Move to" shows and reads its times there, and names the zone
        # (a trial's picker showed UTC without saying so beside New York's times).
        driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "America/New_York"})
        try:
            Select(by_testid(driver, "time-zone")).select_by_value("local")
            wait_for(driver, lambda d: by_testid(d, "clock-moveto-zone").text == "America/New_York")
            picker = by_testid(driver, "clock-moveto-picker")
            assert picker.get_attribute("value").startswith("2026-09-24T23:00")  # 03:00Z in EDT
            assert by_testid(driver, "clock-moveto-input").get_attribute("value") == ""  # (UTC)
            driver.save_screenshot(str(tmp_path / "move-to-in-new-york.png"))
            move_from_page(driver, "2026-09-24 23:30")
            wait_for(driver, lambda d: drawn_at(d) == "2026-09-25T03:30:00Z")
            now = by_testid(driver, "clock-now").text
            assert now == "2026-09-24 23:30:00-04:00 America/New_York"
            # 01:30 happens twice on 1 November: typed at 01:45 EDT, the one still ahead (EST)
            for typed, drawn in [("01:45", "05:45"), ("01:30", "06:30")]:
                move_from_page(driver, f"2026-11-01 {typed}")
                wait_for(driver, lambda d, at=drawn: drawn_at(d) == f"2026-11-01T{at}:00Z")
            now = by_testid(driver, "clock-now").text
            assert now == "2026-11-01 01:30:00-05:00 America/New_York"
        finally:
            Select(by_testid(driver, "time-zone")).select_by_value("utc")  # (kept by the browser)
            driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})


def target_port(target: object, daemon: object) -> str:
    """The recording target's port, from the jobs the scene created."""
    job = requests.get(f"{daemon.url}/v1/{PARENT}/jobs/berlin", timeout=30).json()  # type: ignore[attr-defined]
    return str(job["httpTarget"]["uri"].split(":")[2].split("/")[0])


def test_the_replay_reports_panel_closes_with_escape_and_its_close_button(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    scenario = ROOT / "examples" / "orders" / "scenarios" / "duplicates.yaml"
    subprocess.run(
        [sys.executable, "-m", "scheduler_emulator", "replay", str(scenario), "--report",
         str(report)],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    with chromium(1280, 720) as driver:
        driver.get(report.as_uri())
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="lane-nightly"]'))
        driver.execute_script("window.scrollTo(0, 400)")  # the header stays fixed over the page
        bars = all_by_css(driver, '[data-testid="lane-nightly"] [data-testid^="runbar-"]')
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", bars[0])
        click_run_bar(driver, bars[0])
        wait_for(driver, lambda d: "nightly · run" in by_testid(d, "details-title").text)
        assert all_by_css(driver, '[data-testid="run-attempt-1"]')
        assert by_testid(driver, "run-state").text == "succeeded"
        close = by_testid(driver, "attempt-details-close")
        assert clickable(driver, close)  # not under the page's header
        driver.save_screenshot(str(tmp_path / "report-run-view.png"))
        close.click()
        wait_for(driver, panel_hidden)
        attempt = all_by_css(driver, '[data-testid="lane-nightly"] .tl-attempt')[0]
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", attempt)
        attempt.click()
        wait_for(driver, lambda d: "attempt" in by_testid(d, "details-title").text)
        assert clickable(driver, by_testid(driver, "attempt-details-close"))
        press_escape(driver)
        wait_for(driver, panel_hidden)


def timeline_page(tmp_path: Path) -> str:
    """A page of the dashboard's style sheet and timeline.js with an empty ``<div id="t">``
    (a test draws into it), as a ``file://`` URL."""
    assets = Path(__file__).parents[3] / "scheduler_emulator/server/dashboard"
    page = tmp_path / "timeline.html"
    page.write_text(
        '<meta charset="utf-8">'
        f'<link rel="stylesheet" href="{(assets / "dashboard.css").as_uri()}"><div id="t"></div>'
        f'<script src="{(assets / "timeline.js").as_uri()}"></script>'
    )
    return page.as_uri()


def on_timeline(driver: Any, tmp_path: Path, data: dict[str, Any], then: str) -> Any:
    """Open :func:`timeline_page`, draw ``data`` into ``c`` (1000 px wide; a click on a run
    pushes its id to ``opened``), run the script ``then``; return what it returns."""
    driver.get(timeline_page(tmp_path))
    return driver.execute_script(
        "var opened = [], c = document.getElementById('t');"
        "SchedulerTimeline.draw(c, arguments[0], {width: 1000,"
        "  onRun: function (run) { opened.push(run.id); }});" + then,
        data,
    )


def run_view_rows(tmp_path: Path, run: dict[str, Any], row: str) -> Any:
    """Draw ``run``'s run view (timeline.js alone, lane ``j``); return the JavaScript
    expression ``row`` (of ``tr``, an attempt's row) for each attempt's row."""
    lane = {"job": "projects/p/locations/l/jobs/j", "id": "j", "timeZone": "Etc/UTC"}
    with chromium() as driver:
        driver.get(timeline_page(tmp_path))
        return driver.execute_script(
            "var p = document.getElementById('t'); SchedulerTimeline.runView(p, arguments[0], "
            "arguments[1]); return Array.from(p.querySelectorAll('.run-attempt')).map("
            f"function (tr) {{ return {row}; }});",
            run,
            lane,
        )


def hour_window(lanes: list[dict[str, Any]]) -> dict[str, Any]:
    """A timeline of 00:00 to 01:00 on a manual clock at 00:10, with ``lanes``."""
    return {"start": "2026-09-24T00:00:00Z", "end": "2026-09-24T01:00:00Z",
            "now": "2026-09-24T00:10:00Z", "clock": "manual", "lanes": lanes}  # fmt: skip


def test_a_bar_takes_no_click_and_a_retry_after_the_window_points_past_its_edge(
    tmp_path: Path,
) -> None:
    """Two trial findings, on timeline.js drawn with runs of our own: a click on a run's grey
    bar did nothing (the bar took it from the run's band), and a retry due after the window
    was drawn as a ring at its edge, as if nearly due."""
    attempt = {"id": 1, "attempt": 1, "code": "INTERNAL", "responseStatus": 500,
               "startTime": "2026-09-24T00:05:00Z", "endTime": "2026-09-24T00:05:01Z"}  # fmt: skip
    runs = [  # retries due inside the window (00:40) and after it (03:00)
        {"id": n, "state": "retrying", "nominalTime": "2026-09-24T00:05:00Z",
         "nextAttemptTime": at, "nextAttempt": 2, "attempts": [attempt | {"id": n}]}
        for n, at in ((1, "2026-09-24T00:40:00Z"), (2, "2026-09-24T03:00:00Z"))
    ]  # fmt: skip
    data = hour_window(
        [{"job": f"projects/p/locations/l/jobs/j{r['id']}", "id": f"j{r['id']}",
          "timeZone": "Etc/UTC", "runs": [r]} for r in runs]
    )  # fmt: skip
    with chromium() as driver:
        opened = on_timeline(
            driver,
            tmp_path,
            data,
            "var bar = c.querySelector('[data-run=\"1\"] .tl-run').getBoundingClientRect();"
            "var at = document.elementFromPoint(bar.right - 20, bar.y + bar.height / 2);"
            "at.dispatchEvent(new MouseEvent('click', {bubbles: true})); return opened;",
        )
        markers = all_by_css(driver, '[data-testid="pending-marker"]')
        driver.save_screenshot(str(tmp_path / "retry-after-the-window.png"))
        shapes = [(m.tag_name, m.get_attribute("data-time")) for m in markers]
        later = markers[1].find_element("tag name", "title").get_attribute("textContent")
    assert opened == [1]  # the point on the bar is the run's band, which opens the run view
    assert shapes == [("circle", "2026-09-24T00:40:00Z"), ("path", "2026-09-24T03:00:00Z")]
    assert later.endswith("(after this window)")


def test_a_long_or_paused_lane_name_stops_short_of_its_count(tmp_path: Path) -> None:
    """A trial's screenshot: ``oidc-wrong-aud (paused)`` was drawn over ``2 gave up``."""
    lanes = [
        ("oidc-wrong-audience", "PAUSED", 2, 2),
        ("a-rather-long-job-identifier", "ENABLED", 12, 0),
        ("x" * 40, "PAUSED", 0, 0),
        ("short", "ENABLED", 1, 1),
    ]
    drawn_lanes = [
        {"job": f"projects/p/locations/l/jobs/{job}", "id": job, "state": state,
         "timeZone": "Etc/UTC", "runs": [], "failedRuns": failed, "gaveUpRuns": gave_up}
        for job, state, failed, gave_up in lanes
    ]  # fmt: skip
    data = hour_window(drawn_lanes)
    with chromium() as driver:
        drawn = on_timeline(
            driver,
            tmp_path,
            data,
            "return Array.from(c.querySelectorAll('.tl-lane-group')).map(function (g) {"
            "  var name = g.querySelector('.tl-label').getBBox(),"
            "      count = g.querySelector('.tl-failed');"
            "  return [g.querySelector('.tl-label').firstChild.nodeValue, name.x + name.width,"
            "          count ? count.getBBox().x : 190]; });",
        )
        driver.save_screenshot(str(tmp_path / "lane-names.png"))
    for text, right, limit in drawn:
        assert right < limit - 4, (text, right, limit)
    assert [text for text, _, _ in drawn][2:] == ["x" * 13 + "… (paused)", "short"]
    assert drawn[0][0].endswith("… (paused)") and drawn[1][0].endswith("…")


def test_a_forced_attempts_panel_says_when_it_was_forced_and_where_app_engine_routes(
    tmp_path: Path,
) -> None:
    """A trial's panel of a run "as if scheduled at 18:30" read ``Run 10 (Run now)`` and
    ``Schedule time 19:01`` beside ``ScheduleTime header 18:30``, without ``appEngineHost``."""
    attempt = {"job": "projects/p/locations/l/jobs/legacy", "runId": 10, "attempt": 1,
               "forced": True, "nominalTime": "2026-12-04T19:01:00Z",
               "scheduleTime": "2026-12-04T18:30:00Z", "startTime": "2026-12-04T19:01:00Z",
               "endTime": "2026-12-04T19:01:00.012Z", "code": "OK", "responseStatus": 200,
               "request": {"method": "GET", "url": "http://127.0.0.1:1/legacy/cron",
                           "appEngineHost": "worker.p.appspot.com", "headers": {}}}  # fmt: skip
    with chromium() as driver:
        driver.get(timeline_page(tmp_path))
        text = driver.execute_script(
            "var p = document.getElementById('t');"
            "SchedulerTimeline.details(p, arguments[0], 'Etc/UTC'); return p.innerText;",
            attempt,
        )
        run = {"id": 10, "job": attempt["job"], "forced": True, "state": "succeeded",
               "nominalTime": attempt["nominalTime"], "scheduleTime": attempt["scheduleTime"],
               "tries": 1, "maxAttempts": 1, "attempts": [attempt]}  # fmt: skip
        panel = driver.execute_script(
            "var p = document.getElementById('t');"
            "SchedulerTimeline.runView(p, arguments[0], null); return p.innerText;",
            run,
        )
    # its run: when it was forced, and the header it sent (trial 193: "Scheduled for" the click)
    assert "Forced at\n2026-12-04 19:01:00" in panel and "Scheduled for" not in panel
    assert "ScheduleTime header\n2026-12-04T18:30:00Z" in panel
    assert "Run\n10 (forced: Run now, or run as if scheduled)" in text
    assert "Forced at\n2026-12-04 19:01:00" in text and "Schedule time" not in text
    assert "(App Engine: production routes it to worker.p.appspot.com)" in text


def test_a_task_found_running_at_a_restart_reads_interrupted_without_a_code(
    tmp_path: Path,
) -> None:
    """A trial's panel read ``interrupted (undefined)`` after a daemon killed mid-execution."""
    tasks = [
        {"exitCode": 0},
        {"stopped": "timeout", "exitCode": -15},
        {"stopped": "interrupted"},
        {"stopped": "not started"},
    ]
    with chromium() as driver:
        driver.get(timeline_page(tmp_path))
        shown = driver.execute_script("return arguments[0].map(SchedulerTimeline.exitText);", tasks)
    assert shown == ["0", "timeout (-15)", "interrupted", "not started"]


def test_a_run_views_waits_and_durations_read_in_hours_and_minutes(tmp_path: Path) -> None:
    """A trial's run view read ``Waited 16200 s`` before a retry 4.5 hours on."""

    def attempt(n: int, start: str, end: str) -> dict[str, Any]:
        return {"attempt": n, "code": "INTERNAL", "responseStatus": 500,
                "startTime": start, "endTime": end}  # fmt: skip

    attempts = [attempt(1, "2026-09-24T00:00:00Z", "2026-09-24T00:00:03.25Z"),
                attempt(2, "2026-09-24T04:30:03.25Z", "2026-09-24T04:32:08.25Z"),
                attempt(3, "2026-09-24T04:33:08.25Z", "2026-09-24T05:33:08.25Z")]  # fmt: skip
    run = {"id": 3, "state": "retrying", "tries": 3, "nominalTime": "2026-09-24T00:00:00Z",
           "attempts": attempts}  # fmt: skip
    rows = run_view_rows(tmp_path, run, "[tr.children[2].innerText, tr.children[4].innerText]")
    assert rows == [["—", "3.3 s"], ["4 h 30 min", "2 min 5 s"], ["1 min", "1 h"]]


def test_an_attempt_opens_its_run_and_the_notices_say_what_a_pause_and_run_now_did(
    tmp_path: Path,
) -> None:
    """Trial 65: a run's bar at the 1-day window is mostly covered by its attempts (the run
    view took a click 11 px above it); "Run now" did not say which ScheduleTime it sent (the
    CLI's run does); pausing a job with a pending retry did not say the retry was dropped; the
    Jobs tab with no jobs was a bare header; disabled buttons looked enabled; a time the page
    could not read was answered with the server's RFC 3339 message, not the forms it takes."""
    second_failure = MIDNIGHT + wait_after(1)
    with runs_daemon() as (daemon, _), chromium() as driver:
        driver.get(daemon.url + "/")
        wait_for(driver, timeline_ready)
        move_from_page(driver, "yesterday")  # (the server's answer named RFC 3339 only)
        assert by_testid(driver, "status").text == (
            'Not a time: "yesterday". Type YYYY-MM-DD HH:MM[:SS] (UTC) or RFC 3339, such as '
            "2026-09-24T02:00:00Z or 2026-09-24T02:00:00-04:00."
        )
        move_from_page(driver, text(second_failure, "%Y-%m-%d %H:%M"))
        wait_for(driver, lambda d: drawn_at(d) == text(second_failure, "%Y-%m-%dT%H:%M:%SZ"))
        first = all_by_css(driver, '[data-testid="lane-flaky"] .tl-attempt')[0]
        driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click'))", first)
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="details-open-run"]'))
        driver.save_screenshot(str(tmp_path / "attempt-and-its-run.png"))
        by_testid(driver, "details-open-run").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="run-attempt-2"]'))
        assert by_testid(driver, "details-title").text.startswith("flaky · run ")
        press_escape(driver)

        by_testid(driver, "tab-jobs").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-pending-flaky"]'))
        by_testid(driver, "job-pause-flaky").click()
        wait_for(driver, lambda d: by_testid(d, "job-state-flaky").text == "PAUSED")
        assert by_testid(driver, "status").text == (
            "Paused flaky (its pending retry is dropped: the run gave up)"
        )
        by_testid(driver, "job-run-berlin").click()
        wait_for(driver, lambda d: by_testid(d, "status").text.startswith("Started"))
        runs = daemon.get("/_emulator/runs", params={"job": "berlin"})["runs"]
        [run] = [run for run in runs if run["forced"]]
        assert by_testid(driver, "status").text == (
            f"Started a run of berlin, sending ScheduleTime {run['scheduleTime']}"
        )
        driver.save_screenshot(str(tmp_path / "notices.png"))

        colour = "return getComputedStyle(arguments[0]).color"
        enabled, disabled = by_testid(driver, "clock-advance"), by_testid(driver, "jobs-prev")
        assert disabled.get_attribute("disabled") and not enabled.get_attribute("disabled")
        assert driver.execute_script(colour, disabled) != driver.execute_script(colour, enabled)
        daemon.post("/_emulator/reset", {}).raise_for_status()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="jobs-none"]'))
        assert by_testid(driver, "jobs-none").text == "No jobs yet."
        driver.save_screenshot(str(tmp_path / "no-jobs.png"))
        by_testid(driver, "tab-timeline").click()  # it said "No jobs match." with no filter
        wait_for(driver, lambda d: "No jobs yet." in by_testid(d, "timeline-svg").text)


def test_a_run_view_names_an_injected_copy_and_colours_each_failure(tmp_path: Path) -> None:
    """Trial 65: an injected duplicate copy had no note in the run view (the CLI's attempts
    says "injected duplicate delivery"), and failed codes were black beside a green OK."""

    def attempt(n: int, code: str, status: int | None, debug: str = "") -> dict[str, Any]:
        return {"id": n, "attempt": n, "code": code, "responseStatus": status,
                "startTime": "2026-09-24T00:00:00Z", "endTime": "2026-09-24T00:00:01Z",
                "debugInfo": debug, "injected": bool(debug)}  # fmt: skip

    copy = "Injected duplicate delivery. URL_CRAWLED. Original HTTP response code number = 200"
    attempts = [attempt(1, "OK", 200), attempt(1, "OK", 200, copy),
                attempt(2, "INTERNAL", 500), attempt(3, "DEADLINE_EXCEEDED", None),
                attempt(4, "UNAVAILABLE", None)]  # fmt: skip
    run = {"id": 1, "state": "succeeded", "nominalTime": "2026-09-24T00:00:00Z",
           "attempts": attempts}  # fmt: skip
    rows = run_view_rows(
        tmp_path,
        run,
        "[getComputedStyle(tr.children[3]).color, tr.nextElementSibling && tr.nextElementSibling"
        ".classList.contains('run-attempt-reason') ? tr.nextElementSibling.innerText.trim() : '']",
    )
    ok, red, amber, purple = (
        "rgb(46, 157, 79)",
        "rgb(214, 69, 69)",
        "rgb(230, 155, 0)",
        "rgb(123, 75, 196)",
    )
    assert rows == [
        [ok, ""], [ok, "injected duplicate delivery"], [red, ""], [amber, ""], [purple, ""]
    ]  # fmt: skip


def test_the_jobs_tab_names_the_late_run_a_retrying_run_owes(tmp_path: Path) -> None:
    """Trial 149: a ``*/2`` job retrying past its next times had the Jobs tab list those times
    (which its run skipped) and not the missed one that runs late as the run ends."""
    with runs_daemon() as (daemon, _), chromium() as driver:
        jobs = f"{daemon.url}/v1/{PARENT}/jobs"
        uri = requests.get(f"{jobs}/doomed", timeout=30).json()["httpTarget"]["uri"]
        retry = {"retryCount": 1, "minBackoffDuration": "300s"}
        often = {"name": f"{PARENT}/jobs/often", "schedule": "*/2 * * * *",
                 "httpTarget": {"uri": uri}, "retryConfig": retry}  # fmt: skip
        requests.post(jobs, json=often, timeout=30).raise_for_status()
        advance = {"seconds": 240}  # to 00:03: the 00:00 run failed, retried at 00:05
        requests.post(f"{daemon.url}/_emulator/clock:advance", json=advance, timeout=60)
        driver.get(daemon.url + "/")
        wait_for(driver, timeline_ready)
        by_testid(driver, "tab-jobs").click()
        wait_for(driver, lambda d: all_by_css(d, '[data-testid="job-late-often"]'))
        late = by_testid(driver, "job-late-often").text
        assert late == "then 2026-09-25 00:02:00, late, as the run ends"
        times = by_testid(driver, "job-times-often").text
        assert times.startswith(f"retry: attempt 2 of 2 at 2026-09-25 00:05:00\n{late}\n"), times
        driver.save_screenshot(str(tmp_path / "jobs-late-run.png"))
