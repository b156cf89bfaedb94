"""Daylight saving time: spec §8 table and §17 P1, for both ``dst_policy`` values.

Every case lists the fire times after a given instant, rendered as the
``X-CloudScheduler-ScheduleTime`` value would be (P2), so the offsets show which occurrence of a
repeated wall time fired.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any

import pytest

from scheduler_emulator.domain.schedule import format_schedule_time, parse_schedule

NEW_YORK = "America/New_York"
#: Noon UTC the day before the 2026 spring-forward (8 Mar, 02:00 EST -> 03:00 EDT).
BEFORE_SPRING = datetime(2026, 3, 7, 12, tzinfo=UTC)
#: Noon UTC the day before the 2026 fall-back (1 Nov, 02:00 EDT -> 01:00 EST).
BEFORE_FALL = datetime(2026, 10, 31, 12, tzinfo=UTC)
#: 01:00 and 01:30 New York time on fall-back day, in daylight time and then in standard time.
HALF_HOURS_OF_THE_REPEATED_HOUR = [
    "2026-11-01T01:00:00-04:00",
    "2026-11-01T01:30:00-04:00",
    "2026-11-01T01:00:00-05:00",
    "2026-11-01T01:30:00-05:00",
]


def fires(
    text: str, zone: str, after: datetime, count: int, dst_policy: str = "absolute"
) -> list[str]:
    """The first ``count`` fire times as RFC 3339 strings in the job's zone."""
    schedule = parse_schedule(text, zone, dst_policy=dst_policy)
    return [format_schedule_time(t) for t in islice(schedule.iter_after(after), count)]


def fires_by_next_after(
    text: str, zone: str, after: datetime, count: int, dst_policy: str = "absolute"
) -> list[str]:
    """Like :func:`fires`, but by calling ``next_after`` repeatedly."""
    schedule = parse_schedule(text, zone, dst_policy=dst_policy)
    result: list[str] = []
    instant = schedule.next_after(after)
    while instant is not None and len(result) < count:
        result.append(format_schedule_time(instant))
        instant = schedule.next_after(instant)
    return result


def case(
    name: str,
    text: str,
    zone: str,
    after: datetime,
    absolute: list[str],
    vixie: list[str] | None = None,
) -> Any:
    """One row of :data:`CASES`, named ``name``: schedule ``text`` in ``zone`` fires after
    ``after`` at ``absolute`` under the absolute policy and at ``vixie`` under the vixie policy
    (when omitted, the same times)."""
    return pytest.param(text, zone, after, absolute, absolute if vixie is None else vixie, id=name)


#: (schedule, zone, after, absolute-policy fires, vixie-policy fires)
CASES = [
    case(
        "spring-gap-time-skipped-or-run-after-gap",
        "30 2 * * *",
        NEW_YORK,
        BEFORE_SPRING,
        ["2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"],
        ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"],
    ),
    case(
        "spring-two-gap-times-run-once",
        "0,30 2 * * *",
        NEW_YORK,
        BEFORE_SPRING,
        ["2026-03-09T02:00:00-04:00", "2026-03-09T02:30:00-04:00"],
        ["2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00", "2026-03-09T02:30:00-04:00"],
    ),
    case(
        "spring-gap-run-coincides-with-the-next-time",
        "0 2,3 * * *",
        NEW_YORK,
        BEFORE_SPRING,
        ["2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00", "2026-03-09T03:00:00-04:00"],
    ),
    case(
        "spring-last-minute-before-gap-runs",
        "59 1 * * *",
        NEW_YORK,
        BEFORE_SPRING,
        ["2026-03-08T01:59:00-05:00", "2026-03-09T01:59:00-04:00"],
    ),
    case(
        "spring-first-minute-after-gap-runs",
        "0 3 * * *",
        NEW_YORK,
        BEFORE_SPRING,
        ["2026-03-08T03:00:00-04:00", "2026-03-09T03:00:00-04:00"],
    ),
    case(
        "spring-minute-wildcard-is-not-fixed-time",
        "*/30 2 * * *",
        NEW_YORK,
        BEFORE_SPRING,
        ["2026-03-09T02:00:00-04:00", "2026-03-09T02:30:00-04:00"],
    ),
    case(
        "spring-hour-wildcard-keeps-hourly-cadence",
        "30 * * * *",
        NEW_YORK,
        datetime(2026, 3, 8, 5, tzinfo=UTC),
        ["2026-03-08T00:30:00-05:00", "2026-03-08T01:30:00-05:00", "2026-03-08T03:30:00-04:00"],
    ),
    case(
        "fall-repeated-time-runs-twice-or-once",
        "30 1 * * *",
        NEW_YORK,
        BEFORE_FALL,
        ["2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"],
        ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00", "2026-11-03T01:30:00-05:00"],
    ),
    case(
        "fall-start-of-overlap",
        "0 1 * * *",
        NEW_YORK,
        BEFORE_FALL,
        ["2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-02T01:00:00-05:00"],
        ["2026-11-01T01:00:00-04:00", "2026-11-02T01:00:00-05:00", "2026-11-03T01:00:00-05:00"],
    ),
    case(
        "fall-time-after-overlap-runs-once",
        "0 2 * * *",
        NEW_YORK,
        BEFORE_FALL,
        ["2026-11-01T02:00:00-05:00", "2026-11-02T02:00:00-05:00"],
    ),
    case(
        "fall-minute-wildcard-runs-in-both-occurrences",
        "*/30 1 * * *",
        NEW_YORK,
        BEFORE_FALL,
        [*HALF_HOURS_OF_THE_REPEATED_HOUR, "2026-11-02T01:00:00-05:00"],
    ),
    case(
        "fall-hourly-keeps-absolute-cadence",
        "0 * * * *",
        NEW_YORK,
        datetime(2026, 11, 1, 3, 30, tzinfo=UTC),
        [
            "2026-11-01T00:00:00-04:00",
            "2026-11-01T01:00:00-04:00",
            "2026-11-01T01:00:00-05:00",
            "2026-11-01T02:00:00-05:00",
        ],
    ),
    case(
        "english-every-day-is-fixed-time",
        "every day 01:30",
        NEW_YORK,
        BEFORE_FALL,
        ["2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"],
        ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00", "2026-11-03T01:30:00-05:00"],
    ),
    case(
        "english-weekday-in-spring-gap",
        "every sun 02:30",
        NEW_YORK,
        BEFORE_SPRING,
        ["2026-03-15T02:30:00-04:00"],
        ["2026-03-08T03:00:00-04:00", "2026-03-15T02:30:00-04:00"],
    ),
    case(
        "english-window-is-not-fixed-time",
        "every 30 minutes from 01:00 to 02:00",
        NEW_YORK,
        BEFORE_FALL,
        [*HALF_HOURS_OF_THE_REPEATED_HOUR, "2026-11-01T02:00:00-05:00"],
    ),
    # Australia/Lord_Howe: 30-minute DST. 2026-04-05 02:00 (+11) -> 01:30 (+10:30);
    # 2026-10-04 02:00 (+10:30) -> 02:30 (+11).
    case(
        "lord-howe-half-hour-gap",
        "15 2 * * *",
        "Australia/Lord_Howe",
        datetime(2026, 10, 3, tzinfo=UTC),
        ["2026-10-05T02:15:00+11:00", "2026-10-06T02:15:00+11:00"],
        ["2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"],
    ),
    case(
        "lord-howe-half-hour-overlap",
        "45 1 * * *",
        "Australia/Lord_Howe",
        datetime(2026, 4, 4, tzinfo=UTC),
        ["2026-04-05T01:45:00+11:00", "2026-04-05T01:45:00+10:30", "2026-04-06T01:45:00+10:30"],
        ["2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30", "2026-04-07T01:45:00+10:30"],
    ),
    case(
        "lord-howe-time-before-overlap-runs-once",
        "15 1 * * *",
        "Australia/Lord_Howe",
        datetime(2026, 4, 4, tzinfo=UTC),
        ["2026-04-05T01:15:00+11:00", "2026-04-06T01:15:00+10:30"],
    ),
    # America/Santiago: transitions at local midnight. 2026-04-05 00:00 (-03) -> 04-04 23:00
    # (-04); 2026-09-06 00:00 (-04) -> 01:00 (-03).
    case(
        "santiago-overlap-before-midnight",
        "30 23 * * *",
        "America/Santiago",
        datetime(2026, 4, 4, 12, tzinfo=UTC),
        ["2026-04-04T23:30:00-03:00", "2026-04-04T23:30:00-04:00", "2026-04-05T23:30:00-04:00"],
        ["2026-04-04T23:30:00-03:00", "2026-04-05T23:30:00-04:00", "2026-04-06T23:30:00-04:00"],
    ),
    case(
        "santiago-gap-at-midnight",
        "30 0 * * *",
        "America/Santiago",
        datetime(2026, 9, 5, 12, tzinfo=UTC),
        ["2026-09-07T00:30:00-03:00"],
        ["2026-09-06T01:00:00-03:00", "2026-09-07T00:30:00-03:00"],
    ),
    case(
        "santiago-gap-on-a-specific-date",
        "30 0 6 9 *",
        "America/Santiago",
        datetime(2026, 9, 5, 12, tzinfo=UTC),
        ["2027-09-06T00:30:00-03:00"],
        ["2026-09-06T01:00:00-03:00", "2027-09-06T00:30:00-03:00"],
    ),
    # Pacific/Apia skipped 30 December 2011 entirely (-10 -> +14).
    case(
        "apia-skipped-day",
        "0 12 * * *",
        "Pacific/Apia",
        datetime(2011, 12, 29, tzinfo=UTC),
        ["2011-12-29T12:00:00-10:00", "2011-12-31T12:00:00+14:00"],
        ["2011-12-29T12:00:00-10:00", "2011-12-31T00:00:00+14:00", "2011-12-31T12:00:00+14:00"],
    ),
    case(
        "apia-run-after-gap-lands-on-a-non-matching-day",
        "1 0 * * fri,sun",
        "Pacific/Apia",
        datetime(2011, 12, 29, tzinfo=UTC),
        ["2012-01-01T00:01:00+14:00", "2012-01-06T00:01:00+14:00"],
        ["2011-12-31T00:00:00+14:00", "2012-01-01T00:01:00+14:00", "2012-01-06T00:01:00+14:00"],
    ),
    # Africa/Casablanca: DST suspended for Ramadan, 2026-02-15 03:00 (+01) -> 02:00 (+00).
    case(
        "casablanca-ramadan-overlap",
        "30 2 * * *",
        "Africa/Casablanca",
        datetime(2026, 2, 14, tzinfo=UTC),
        ["2026-02-14T02:30:00+01:00", "2026-02-15T02:30:00+01:00", "2026-02-15T02:30:00Z"],
        ["2026-02-14T02:30:00+01:00", "2026-02-15T02:30:00+01:00", "2026-02-16T02:30:00Z"],
    ),
]


class TestDstPolicies:
    @pytest.mark.parametrize(("text", "zone", "after", "absolute", "vixie"), CASES)
    def test_absolute_policy_matches_wall_time_on_absolute_minutes(
        self, text: str, zone: str, after: datetime, absolute: list[str], vixie: list[str]
    ) -> None:
        assert fires(text, zone, after, len(absolute)) == absolute
        assert fires_by_next_after(text, zone, after, len(absolute)) == absolute

    @pytest.mark.parametrize(("text", "zone", "after", "absolute", "vixie"), CASES)
    def test_vixie_policy_runs_fixed_time_jobs_once_around_transitions(
        self, text: str, zone: str, after: datetime, absolute: list[str], vixie: list[str]
    ) -> None:
        assert fires(text, zone, after, len(vixie), "vixie") == vixie
        assert fires_by_next_after(text, zone, after, len(vixie), "vixie") == vixie


class TestRepeatedWallTime:
    def test_two_runs_in_the_overlap_carry_fold_and_distinct_offsets(self) -> None:
        schedule = parse_schedule("30 1 * * *", NEW_YORK)
        first, second = islice(schedule.iter_after(BEFORE_FALL), 2)
        assert (first.fold, second.fold) == (0, 1)
        assert first.astimezone(UTC) == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
        assert second.astimezone(UTC) == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
        assert format_schedule_time(first) != format_schedule_time(second)

    def test_next_after_the_first_occurrence_is_the_second(self) -> None:
        schedule = parse_schedule("30 1 * * *", NEW_YORK)
        first = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
        second = schedule.next_after(first)
        assert second is not None
        assert second.fold == 1
        assert second.astimezone(UTC) == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)


class TestSteadyCadence:
    @pytest.mark.parametrize(
        ("text", "zone", "after", "step"),
        [
            pytest.param(
                "0 * * * *", NEW_YORK, BEFORE_SPRING, timedelta(hours=1), id="ny-spring-hourly"
            ),
            pytest.param(
                "0 * * * *", NEW_YORK, BEFORE_FALL, timedelta(hours=1), id="ny-fall-hourly"
            ),
            pytest.param(
                "*/15 * * * *",
                "Australia/Lord_Howe",
                datetime(2026, 10, 3, 6, tzinfo=UTC),
                timedelta(minutes=15),
                id="lord-howe-spring-quarter-hourly",
            ),
            pytest.param(
                "*/15 * * * *",
                "Australia/Lord_Howe",
                datetime(2026, 4, 4, 6, tzinfo=UTC),
                timedelta(minutes=15),
                id="lord-howe-fall-quarter-hourly",
            ),
            pytest.param(
                "every 7 minutes",
                NEW_YORK,
                BEFORE_FALL,
                timedelta(minutes=7),
                id="english-interval",
            ),
            pytest.param(
                "* * * * *",
                "Asia/Kathmandu",
                datetime(2026, 1, 1, tzinfo=UTC),
                timedelta(minutes=1),
                id="kathmandu-minutely",
            ),
        ],
    )
    def test_wildcard_hour_jobs_keep_an_absolute_cadence_through_transitions(
        self, text: str, zone: str, after: datetime, step: timedelta
    ) -> None:
        schedule = parse_schedule(text, zone)
        count = int(timedelta(hours=36) / step)
        instants = [t.astimezone(UTC) for t in islice(schedule.iter_after(after), count)]
        assert all(b - a == step for a, b in zip(instants, instants[1:], strict=False))

    def test_kolkata_has_no_transition_all_year(self) -> None:
        schedule = parse_schedule("0 9 * * *", "Asia/Kolkata")
        instants = list(islice(schedule.iter_after(datetime(2026, 1, 1, tzinfo=UTC)), 365))
        assert {t.astimezone(UTC).time().isoformat() for t in instants} == {"03:30:00"}
        assert {format_schedule_time(t)[-6:] for t in instants} == {"+05:30"}
