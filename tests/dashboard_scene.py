"""The Orders example on a daemon, seen through the dashboard: what the browser test checks and
what makes ``docs/dashboard.png`` (``python tests/dashboard_scene.py docs/dashboard.png``).

The daemon runs on a manual clock from 2026-03-01T00:00:00Z with the Orders service's
``nightly`` and ``report`` jobs pointed at the service on a free port, and ``hourly-ping``, a job
whose name differs from the timer route it posts to (every attempt fails with 500).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "examples" / "orders")]

from tests.browser import by_testid, chromium, wait_for  # noqa: E402
from tests.daemon import Daemon, running_daemon, serving  # noqa: E402
from tests.support import Received, RecordingTarget  # noqa: E402

START = "2026-03-01T00:00:00Z"
PARENT = "projects/my-project/locations/us-central1"
ORDER_BODY = "eyJpZCI6ICJBLTEwMDEiLCAidG90YWwiOiA0Mi41fQ=="  # {"id": "A-1001", "total": 42.5}


def orders_jobs(base: str) -> list[dict[str, Any]]:
    """The jobs of ``examples/orders/jobs.yaml`` (the HTTP ones) pointed at ``base``, and
    ``hourly-ping``, posting to the timer route ``cleanup``."""
    return [
        {
            "name": f"{PARENT}/jobs/nightly",
            "schedule": "0 2 * * *",
            "timeZone": "Etc/UTC",
            "httpTarget": {"uri": f"{base}/_triggers/timer/nightly"},
            "retryConfig": {"retryCount": 3},
        },
        {
            "name": f"{PARENT}/jobs/report",
            "description": "Six-hourly order report",
            "schedule": "0 */6 * * *",
            "timeZone": "America/New_York",
            "httpTarget": {"uri": f"{base}/_triggers/timer/report", "body": ORDER_BODY},
            "retryConfig": {"retryCount": 2, "minBackoffDuration": "10s"},
        },
        {
            "name": f"{PARENT}/jobs/hourly-ping",
            "schedule": "0 * * * *",
            "timeZone": "Etc/UTC",
            "httpTarget": {"uri": f"{base}/_triggers/timer/cleanup"},
        },
    ]


@contextmanager
def orders_daemon(*extra: str) -> Iterator[Daemon]:
    """The Orders service on a free port and a daemon on a manual clock with its jobs."""
    from app import create_app

    with (
        serving(create_app()) as base,
        running_daemon("--in-memory", "--clock", "manual", "--start", START, *extra) as daemon,
    ):
        headers = {"Authorization": f"Bearer {extra[-1]}"} if "--admin-token" in extra else {}
        for job in orders_jobs(base):
            response = requests.post(
                f"{daemon.url}/v1/{PARENT}/jobs", json=job, headers=headers, timeout=30
            )
            response.raise_for_status()
        yield daemon


#: The runs scene: a manual clock a minute before midnight, two jobs due at 00:00 with this retry
#: config (waits of 60 s, 120 s, 240 s after each failure: 60 s doubling).
RUNS_START = "2026-09-24T23:59:00Z"
RETRY = {"retryCount": 3, "minBackoffDuration": "60s", "maxBackoffDuration": "3600s",
         "maxDoublings": 5}  # fmt: skip


def flaky_then_doomed() -> Callable[[Received], int]:
    """The runs scene's target's answers: ``/flaky`` fails twice then succeeds, ``/doomed``
    always fails, anything else succeeds."""
    flaky: list[Received] = []

    def status(received: Received) -> int:
        if received.path == "/doomed":
            return 503
        if received.path == "/flaky":
            flaky.append(received)
            return 500 if len(flaky) <= 2 else 200
        return 200

    return status


@contextmanager
def runs_daemon(*extra: str) -> Iterator[tuple[Daemon, RecordingTarget]]:
    """A daemon on a manual clock at :data:`RUNS_START` with ``flaky`` and ``doomed`` (daily at
    00:00, :data:`RETRY`), ``berlin`` (02:00 Europe/Berlin, retrying nothing) and ``acked``
    (daily at 00:00), all pointed at one recording target."""
    target = RecordingTarget(status=flaky_then_doomed())
    with (
        serving(target) as base,
        running_daemon("--in-memory", "--clock", "manual", "--start", RUNS_START, *extra) as daemon,
    ):
        jobs = [
            ("flaky", "0 0 * * *", "Etc/UTC", RETRY),
            ("doomed", "0 0 * * *", "Etc/UTC", RETRY),
            ("berlin", "0 2 * * *", "Europe/Berlin", {}),
            ("acked", "0 0 * * *", "Etc/UTC", {}),
        ]
        for name, schedule, zone, retry in jobs:
            job = {"name": f"{PARENT}/jobs/{name}", "schedule": schedule, "timeZone": zone,
                   "httpTarget": {"uri": f"{base}/{name}"}, "retryConfig": retry}  # fmt: skip
            requests.post(f"{daemon.url}/v1/{PARENT}/jobs", json=job, timeout=30).raise_for_status()
        yield daemon, target


def timeline_ready(driver: Any) -> str | None:
    """The page's mark that the timeline was drawn (a millisecond count), or ``None``."""
    return driver.find_element("css selector", "body").get_attribute("data-timeline-ready")


def drawn_at(driver: Any) -> str | None:
    """The clock instant the timeline on the page was drawn for."""
    return str(by_testid(driver, "timeline-svg").get_attribute("data-now"))


def redrawn(driver: Any, after: str | None) -> bool:
    """Whether the timeline was drawn again since the mark ``after``."""
    mark = timeline_ready(driver)
    return mark is not None and mark != after


def choose(driver: Any, testid: str, label: str) -> None:
    """Pick the option shown as ``label`` in the select ``testid``."""
    from selenium.webdriver.support.ui import Select

    Select(by_testid(driver, testid)).select_by_visible_text(label)


def advance_one_day(driver: Any, url: str) -> None:
    """Open the dashboard, show a day's window, and advance the clock by a day from the page."""
    driver.get(url + "/")
    wait_for(driver, timeline_ready)
    choose(driver, "timeline-span", "1 day")
    choose(driver, "clock-step", "1 day")
    by_testid(driver, "clock-advance").click()
    wait_for(driver, lambda d: drawn_at(d) == "2026-03-02T00:00:00Z", 60)


def main(out: str) -> int:
    """Write the README's screenshot: the timeline after a day of the Orders jobs."""
    with orders_daemon() as daemon, chromium(1400, 520) as driver:
        advance_one_day(driver, daemon.url)
        driver.save_screenshot(out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/dashboard.png"))
