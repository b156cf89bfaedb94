"""Frozen time can't reach the emulator: offsets, fire times and clocks stay real under freezegun.

Issue: ``create_job`` of ``45 1 * * *`` in America/New_York inside
``freeze_time("2024-11-03 06:30:00")`` gave 2024-11-04T06:45Z (freezegun's ``FakeDatetime``
drops ``fold``) and poisoned the time-zone cache for the rest of the process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime

import pytest
from freezegun import freeze_time

from scheduler_emulator import Emulator, ManualClock, SystemClock
from scheduler_emulator.domain.schedule import parse_schedule

pytest_plugins = ["pytester"]

FALL_BACK_MORNING = datetime(2024, 11, 3, 6, 30, tzinfo=UTC)  # 01:30 EST, the second 01:30


def new_york_job_time(start: datetime) -> datetime | None:
    emulator = Emulator(ManualClock(start))
    job = emulator.create_job(
        name="early",
        schedule="45 1 * * *",
        time_zone="America/New_York",
        http_target={"uri": "http://svc.test/"},
    )
    emulator.close()
    return job.schedule_time


def test_fire_times_inside_a_freeze_are_right() -> None:
    with freeze_time("2024-11-03 06:30:00"):
        inside = new_york_job_time(FALL_BACK_MORNING)
    assert inside == datetime(2024, 11, 3, 6, 45, tzinfo=UTC)  # 01:45 EST the same day


def test_a_freeze_leaves_no_wrong_values_behind() -> None:
    with freeze_time("2024-11-03 06:30:00"):
        new_york_job_time(FALL_BACK_MORNING)
        parse_schedule("45 1 * * *", "America/New_York").next_after(FALL_BACK_MORNING)
    assert new_york_job_time(FALL_BACK_MORNING) == datetime(2024, 11, 3, 6, 45, tzinfo=UTC)


def test_a_start_instant_made_inside_a_freeze_is_a_real_datetime() -> None:
    with freeze_time("2024-11-03 06:30:00"):
        start = datetime(2024, 11, 3, 6, 30, tzinfo=UTC)
        assert type(start).__module__ == "freezegun.api"  # a FakeDatetime
        clock = ManualClock(start)
    assert type(clock.now()).__module__ == "datetime"


def run_python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip()


def test_imported_inside_a_freeze_the_system_clock_still_reads_real_time() -> None:
    out = run_python(
        """
        from freezegun import freeze_time
        with freeze_time("2001-01-01"):
            from scheduler_emulator.runtime._clock import SystemClock
            from scheduler_emulator.runtime._emulator import Emulator
        with freeze_time("2002-02-02"):
            print(SystemClock().now().year)
            emulator = Emulator(SystemClock())
            job = emulator.create_job(name="a", schedule="0 2 * * *",
                                      http_target={"uri": "http://svc.test/"})
            print(job.schedule_time.year)
        """
    )
    now_year, fire_year = (int(line) for line in out.split())
    real_year = datetime.now(UTC).year
    assert now_year == real_year
    assert fire_year in (real_year, real_year + 1)  # the next 02:00 from now, not from 2002


def test_the_system_clock_ignores_a_freeze_begun_after_import() -> None:
    with freeze_time("2002-02-02"):
        year = SystemClock().now().year
    assert year == datetime.now(UTC).year


PLUGIN_TEST = """
from datetime import UTC, datetime, timedelta
import pytest


@pytest.mark.cloud_scheduler(start=datetime({start}, tzinfo=UTC))
def test_{name}(cloud_scheduler):
    seen = []

    def app(environ, start_response):
        seen.append(environ["HTTP_X_CLOUDSCHEDULER_SCHEDULETIME"])
        start_response("200 OK", [])
        return [b""]

    cloud_scheduler.mount("http://svc.test", app)
    cloud_scheduler.create_job(name="ny", schedule="{schedule}", time_zone="America/New_York",
                               http_target={{"uri": "http://svc.test/"}})
    cloud_scheduler.advance(timedelta(hours={hours}))
    assert seen == {expected!r}
"""
#: Across New Year, in New York.
NEW_YEAR_TEST = PLUGIN_TEST.format(
    name="new_year", start="2026, 12, 31, 12", schedule="0 9 * * *", hours=48,
    expected=["2026-12-31T09:00:00-05:00", "2027-01-01T09:00:00-05:00"],
)  # fmt: skip
#: 2027-11-07 is New York's fall-back day: 01:30 happens twice, and runs twice (the default
#: daylight-saving policy).
FALL_BACK_TEST = PLUGIN_TEST.format(
    name="fall_back", start="2027, 11, 7, 4", schedule="30 1 * * *", hours=4,
    expected=["2027-11-07T01:30:00-04:00", "2027-11-07T01:30:00-05:00"],
)  # fmt: skip


@pytest.mark.parametrize("workers", [None, "2"])
def test_a_plugin_test_across_new_year_does_not_bend_the_next_tests_fire_times(
    pytester: pytest.Pytester, workers: str | None
) -> None:
    """New Year, then fall-back, then New Year again, in one pytest run (without xdist, in one
    process): each order of the two is checked in the same run, the second test after the
    first and the third after the second."""
    again = NEW_YEAR_TEST.replace("def test_new_year(", "def test_new_year_again(")
    pytester.makepyfile(test_a=NEW_YEAR_TEST, test_b=FALL_BACK_TEST, test_c=again)
    args = ["-p", "no:cacheprovider"] + (["-n", workers] if workers else [])
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=3)
