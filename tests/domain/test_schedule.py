"""Schedule syntax, time zones and the public API of ``scheduler_emulator.domain.schedule``.

DST behaviour is in ``test_schedule_dst.py``; property tests (brute-force oracle, croniter) are
in ``test_schedule_properties.py``.
"""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta, timezone
from itertools import islice
from zoneinfo import ZoneInfo

import pytest

from scheduler_emulator.domain.errors import INVALID_SCHEDULE_MESSAGE, InvalidArgument
from scheduler_emulator.domain.schedule import (
    Schedule,
    format_schedule_time,
    parse_schedule,
    resolve_time_zone,
)
from scheduler_emulator.wire import NaiveDatetimeError
from tests.support import case_table

#: Thursday 1 January 2026, midnight UTC.
AFTER = datetime(2026, 1, 1, tzinfo=UTC)


def fires(text: str, count: int = 4, after: datetime = AFTER, zone: str = "Etc/UTC") -> list[str]:
    """The first ``count`` fire times of ``text`` after ``after`` as RFC 3339 strings."""
    schedule = parse_schedule(text, zone)
    return [format_schedule_time(t) for t in islice(schedule.iter_after(after), count)]


def schedule_error(text: str, time_zone: str = "Etc/UTC") -> InvalidArgument:
    """Parse ``text``, expect the schedule error and return it after checking its shape."""
    with pytest.raises(InvalidArgument) as caught:
        parse_schedule(text, time_zone)
    error = caught.value
    assert error.message == INVALID_SCHEDULE_MESSAGE
    assert error.http_status == 400
    assert error.status == "INVALID_ARGUMENT"
    assert len(error.violations) == 1
    return error


class TestCronAccepted:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            pytest.param(
                "* * * * *",
                ["2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z"],
                id="every-minute",
            ),
            pytest.param(
                "5 4 * * *",
                ["2026-01-01T04:05:00Z", "2026-01-02T04:05:00Z", "2026-01-03T04:05:00Z"],
                id="single-values",
            ),
            pytest.param(
                "10-12 0 * * *",
                ["2026-01-01T00:10:00Z", "2026-01-01T00:11:00Z", "2026-01-01T00:12:00Z"],
                id="range-is-inclusive",
            ),
            pytest.param(
                "*/20 0 * * *",
                ["2026-01-01T00:20:00Z", "2026-01-01T00:40:00Z", "2026-01-02T00:00:00Z"],
                id="step-after-star",
            ),
            pytest.param(
                "0 0-6/3 * * *",
                ["2026-01-01T03:00:00Z", "2026-01-01T06:00:00Z", "2026-01-02T00:00:00Z"],
                id="step-after-range",
            ),
            pytest.param(
                "5/20 0 * * *",
                ["2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:45:00Z"],
                id="step-after-single-value-runs-to-field-max",
            ),
            pytest.param(
                "0 1,5,9 * * *",
                ["2026-01-01T01:00:00Z", "2026-01-01T05:00:00Z", "2026-01-01T09:00:00Z"],
                id="list",
            ),
            pytest.param(
                "0,30-31 2 * * *",
                ["2026-01-01T02:00:00Z", "2026-01-01T02:30:00Z", "2026-01-01T02:31:00Z"],
                id="list-of-value-and-range",
            ),
            pytest.param(
                "05 09 * * *",
                ["2026-01-01T09:05:00Z", "2026-01-02T09:05:00Z", "2026-01-03T09:05:00Z"],
                id="leading-zeros",
            ),
            pytest.param(
                " 0\t0  * * *  ",
                ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"],
                id="any-whitespace-separates-fields",
            ),
            pytest.param(
                "*/90 * * * *",
                ["2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"],
                id="step-larger-than-field-selects-first-value",
            ),
            pytest.param(
                "0 0 31 * *",
                ["2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z"],
                id="day-31-skips-short-months",
            ),
            pytest.param(
                "0 0 29 2 *",
                ["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z"],
                id="february-29-only-in-leap-years",
            ),
            pytest.param(
                "0 12 1 1 *",
                ["2026-01-01T12:00:00Z", "2027-01-01T12:00:00Z", "2028-01-01T12:00:00Z"],
                id="yearly",
            ),
        ],
    )
    def test_expression_fires_at_the_expected_times(self, text: str, expected: list[str]) -> None:
        assert fires(text, len(expected)) == expected

    def test_cron_schedule_is_cron(self) -> None:
        assert parse_schedule("0 2 * * *").is_cron is True


class TestNames:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            pytest.param(
                "0 0 1 feb,Mar *",
                ["2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2027-02-01T00:00:00Z"],
                id="month-names-in-list-any-case",
            ),
            pytest.param(
                "0 0 1 NOV-dec *",
                ["2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "2027-11-01T00:00:00Z"],
                id="month-name-range",
            ),
            pytest.param(
                "0 0 1 jan-MAR/2 *",
                ["2026-03-01T00:00:00Z", "2027-01-01T00:00:00Z", "2027-03-01T00:00:00Z"],
                id="month-name-range-with-step",
            ),
            pytest.param(
                "0 0 * * MON,wed",
                ["2026-01-05T00:00:00Z", "2026-01-07T00:00:00Z", "2026-01-12T00:00:00Z"],
                id="weekday-names-in-list",
            ),
            pytest.param(
                "0 0 * * Fri-SUN",
                ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"],
                id="weekday-name-range-ending-at-sunday",
            ),
            pytest.param(
                "0 0 * * mon-sun",
                ["2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"],
                id="mon-sun-is-every-day",
            ),
            pytest.param(
                "0 0 * * sun-tue",
                ["2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-06T00:00:00Z"],
                id="sun-at-range-start-is-zero",
            ),
            pytest.param(
                "0 0 * 2,mar 1-2,fri",
                ["2026-02-02T00:00:00Z", "2026-02-03T00:00:00Z", "2026-02-06T00:00:00Z"],
                id="numbers-and-names-mixed",
            ),
        ],
    )
    def test_names_are_case_insensitive_in_ranges_and_lists(
        self, text: str, expected: list[str]
    ) -> None:
        assert fires(text, len(expected)) == expected


class TestSunday:
    @pytest.mark.parametrize(
        "dow", [pytest.param("0", id="zero"), pytest.param("7", id="seven"), "sun", "SUN"]
    )
    def test_every_spelling_of_sunday_fires_on_sundays(self, dow: str) -> None:
        assert fires(f"0 0 * * {dow}", 2) == ["2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"]

    def test_range_ending_at_seven_includes_sunday(self) -> None:
        assert fires("0 0 * * 5-7", 4) == [
            "2026-01-02T00:00:00Z",
            "2026-01-03T00:00:00Z",
            "2026-01-04T00:00:00Z",
            "2026-01-09T00:00:00Z",
        ]

    def test_weekday_step_after_star_covers_zero_to_six(self) -> None:
        # */2 = 0,2,4,6 = Sun, Tue, Thu, Sat
        assert fires("0 0 * * */2", 4) == [
            "2026-01-03T00:00:00Z",
            "2026-01-04T00:00:00Z",
            "2026-01-06T00:00:00Z",
            "2026-01-08T00:00:00Z",
        ]


class TestDayOfMonthOrDayOfWeek:
    """A day field is unrestricted only when it is exactly ``*`` (cases/schedule.toml)."""

    @case_table(__file__, "day_fields")
    def test_day_fields_combine_with_or(self, schedule: str, expected: list[str]) -> None:
        assert [t[:10] for t in fires(schedule, len(expected))] == expected


class TestCronRejected:
    @pytest.mark.parametrize(
        ("text", "fragment"),
        [
            pytest.param("", "empty", id="empty"),
            pytest.param("   ", "empty", id="blank"),
            pytest.param("* * * *", "has 4 fields", id="four-fields"),
            pytest.param("0 * * * * *", "has 6 fields", id="six-fields-with-seconds"),
            pytest.param("0 0 * * * 2026", "has 6 fields", id="six-fields-with-year"),
            pytest.param("@hourly", "'@' macro", id="macro-hourly"),
            pytest.param("@daily", "'@' macro", id="macro-daily"),
            pytest.param("@reboot", "'@' macro", id="macro-reboot"),
            pytest.param("0 0 L * *", "'L' (last day)", id="L-in-day-of-month"),
            pytest.param("0 0 15W * *", "'W' (nearest weekday)", id="W-in-day-of-month"),
            pytest.param("0 0 * * 5#3", "'#' (nth weekday)", id="hash-in-day-of-week"),
            pytest.param("0 0 ? * 1", "'?'", id="question-mark"),
            pytest.param("0 0 * * 5L", "'L' (last day)", id="L-in-day-of-week"),
            pytest.param("0 0 LW * *", "'L' (last day)", id="LW-in-day-of-month"),
            pytest.param("0 0 * * L", "'L' (last day)", id="L-alone-in-day-of-week"),
            pytest.param("0 0 * jul-l *", "'L' (last day)", id="L-in-month-range"),
            pytest.param("60 * * * *", "minute field '60' has value 60 outside 0-59", id="min"),
            pytest.param("0 24 * * *", "hour field '24' has value 24 outside 0-23", id="hour"),
            pytest.param("0 0 0 * *", "value 0 outside 1-31", id="day-of-month-zero"),
            pytest.param("0 0 32 * *", "value 32 outside 1-31", id="day-of-month-32"),
            pytest.param("0 0 * 0 *", "value 0 outside 1-12", id="month-zero"),
            pytest.param("0 0 * 13 *", "value 13 outside 1-12", id="month-13"),
            pytest.param("0 0 * * 8", "value 8 outside 0-7", id="day-of-week-8"),
            pytest.param("0 0 * * 1-8", "value 8 outside 0-7", id="range-end-out-of-range"),
            pytest.param("0 5-3 * * *", "range '5-3' whose start is after its end", id="a>b"),
            pytest.param("0 0 * * fri-mon", "range 'fri-mon'", id="a>b-weekday-names"),
            pytest.param("0 0 1 dec-jan *", "range 'dec-jan'", id="a>b-month-names"),
            pytest.param("*/0 * * * *", "step '0'", id="step-zero-after-star"),
            pytest.param("0 0-10/0 * * *", "step '0'", id="step-zero-after-range"),
            pytest.param("1,,2 * * * *", "empty list item", id="empty-list-item"),
            pytest.param("1, * * * *", "empty list item", id="trailing-comma"),
            pytest.param("a * * * *", "'a', which is not a number", id="letter"),
            pytest.param("1-2-3 * * * *", "'1-2-3'", id="double-range"),
            pytest.param("-1 * * * *", "'-1'", id="negative"),
            pytest.param("*/ * * * *", "'*/'", id="step-without-number"),
            pytest.param("/5 * * * *", "'/5'", id="step-without-base"),
            pytest.param("*-5 * * * *", "'*-5'", id="star-range"),
            pytest.param("1.5 * * * *", "'1.5'", id="decimal"),
            pytest.param("+1 * * * *", "'+1'", id="plus-sign"),
            pytest.param("mon * * * *", "'mon', which is not a number", id="name-in-minute"),
            pytest.param("0 0 jan * *", "day-of-month field 'jan'", id="month-name-in-dom"),
            pytest.param(
                "0 0 * foo *",
                "'foo', which is not a number or a three-letter month name (JAN-DEC)",
                id="bad-name",
            ),
            pytest.param("0 0 * * monday", "'monday'", id="full-weekday-name"),
            pytest.param("0 0 * * 1/0", "step '0'", id="step-zero-after-value"),
            pytest.param("\u0665 * * * *", "minute field", id="non-ascii-digit"),
            pytest.param("99999999999 * * * *", "outside 0-59", id="huge-number"),
            pytest.param("0 0 * * 1/99999", "step '99999'", id="huge-step"),
        ],
    )
    def test_bad_expression_is_rejected_naming_the_part(self, text: str, fragment: str) -> None:
        error = schedule_error(text)
        violation = error.violations[0]
        assert violation.field == "schedule"
        assert fragment in violation.description
        if text.strip():
            assert repr(text) in violation.description

    def test_envelope_carries_the_field_violation(self) -> None:
        envelope = schedule_error("61 * * * *").to_envelope()
        assert envelope["error"]["message"] == "Schedule or time zone is invalid."
        [detail] = envelope["error"]["details"]
        assert detail["fieldViolations"][0]["field"] == "schedule"

    def test_non_string_schedule_is_rejected(self) -> None:
        with pytest.raises(InvalidArgument) as caught:
            parse_schedule(5)  # type: ignore[arg-type]
        assert caught.value.violations[0].field == "schedule"


class TestEnglishLike:
    """Spec §7.2, §17 P16."""

    @pytest.mark.parametrize(
        ("text", "after", "expected"),
        [
            pytest.param(
                "every 5 minutes",
                datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC),
                ["2026-01-01T12:05:00Z", "2026-01-01T12:10:00Z", "2026-01-01T12:15:00Z"],
                id="interval-counts-from-after-rounded-down",
            ),
            pytest.param(
                "every 5 mins",
                datetime(2026, 1, 1, 12, 3, tzinfo=UTC),
                ["2026-01-01T12:08:00Z", "2026-01-01T12:13:00Z"],
                id="mins",
            ),
            pytest.param(
                "Every 2 HOURS",
                datetime(2026, 1, 1, 12, 3, 59, 999999, tzinfo=UTC),
                ["2026-01-01T14:03:00Z", "2026-01-01T16:03:00Z"],
                id="hours-case-insensitive",
            ),
            pytest.param(
                "every 5 minutes from 10:00 to 10:12",
                AFTER,
                [
                    "2026-01-01T10:00:00Z",
                    "2026-01-01T10:05:00Z",
                    "2026-01-01T10:10:00Z",
                    "2026-01-02T10:00:00Z",
                ],
                id="window-aligned-to-its-start",
            ),
            pytest.param(
                "every 15 minutes from 09:00 to 9:30",
                datetime(2026, 1, 1, 9, 0, tzinfo=UTC),
                ["2026-01-01T09:15:00Z", "2026-01-01T09:30:00Z", "2026-01-02T09:00:00Z"],
                id="window-end-is-inclusive",
            ),
            pytest.param(
                "every 1 hours from 22:00 to 01:00",
                datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
                [
                    "2026-01-01T22:00:00Z",
                    "2026-01-01T23:00:00Z",
                    "2026-01-02T00:00:00Z",
                    "2026-01-02T01:00:00Z",
                    "2026-01-02T22:00:00Z",
                ],
                id="window-past-midnight",
            ),
            pytest.param(
                "every 4 hours synchronized",
                datetime(2026, 1, 1, 5, 0, tzinfo=UTC),
                ["2026-01-01T08:00:00Z", "2026-01-01T12:00:00Z"],
                id="synchronized-aligned-to-midnight",
            ),
            pytest.param(
                "every 90 minutes synchronized",
                datetime(2026, 1, 1, 22, 0, tzinfo=UTC),
                ["2026-01-01T22:30:00Z", "2026-01-02T00:00:00Z", "2026-01-02T01:30:00Z"],
                id="synchronized-minutes",
            ),
            pytest.param(
                "every day 09:05",
                AFTER,
                ["2026-01-01T09:05:00Z", "2026-01-02T09:05:00Z"],
                id="every-day",
            ),
            pytest.param(
                "every monday 09:00",
                AFTER,
                ["2026-01-05T09:00:00Z", "2026-01-12T09:00:00Z"],
                id="one-weekday",
            ),
            pytest.param(
                "every mon,wed,fri 9:00",
                AFTER,
                ["2026-01-02T09:00:00Z", "2026-01-05T09:00:00Z", "2026-01-07T09:00:00Z"],
                id="weekday-abbreviations",
            ),
            pytest.param(
                "Every Tuesday, SUNDAY 23:59",
                AFTER,
                ["2026-01-04T23:59:00Z", "2026-01-06T23:59:00Z"],
                id="full-weekday-names-with-space-after-comma",
            ),
        ],
    )
    def test_english_schedule_fires_at_the_expected_times(
        self, text: str, after: datetime, expected: list[str]
    ) -> None:
        assert fires(text, len(expected), after) == expected

    def test_english_schedule_is_not_cron(self) -> None:
        assert parse_schedule("every 5 minutes").is_cron is False
        assert parse_schedule("every day 09:00").is_cron is False

    def test_interval_next_after_adds_the_interval_to_any_instant(self) -> None:
        schedule = parse_schedule("every 10 minutes", "Asia/Kolkata")
        after = datetime(2026, 1, 1, 12, 7, 45, tzinfo=UTC)
        assert schedule.next_after(after) == datetime(2026, 1, 1, 12, 17, tzinfo=UTC)

    def test_window_is_wall_clock_in_the_zone(self) -> None:
        assert fires("every 30 minutes from 09:00 to 10:00", 2, zone="Asia/Kolkata") == [
            "2026-01-01T09:00:00+05:30",
            "2026-01-01T09:30:00+05:30",
        ]

    @pytest.mark.parametrize(
        ("text", "fragment"),
        [
            pytest.param("every 0 minutes", "whole number from 1", id="zero-interval"),
            pytest.param("every 5 seconds", "not a supported English-like", id="seconds"),
            pytest.param("every 5 minute", "not a supported English-like", id="singular-unit"),
            pytest.param("every 5", "not a supported English-like", id="no-unit"),
            pytest.param("every minutes", "not a supported English-like", id="no-number"),
            pytest.param("every 5 minutes from 10:00", "not a supported", id="window-no-end"),
            pytest.param("every 5 minutes from 10:00 to 25:00", "'25:00'", id="bad-window-end"),
            pytest.param("every 5 minutes from 9 to 10:00", "'9'", id="bad-window-start"),
            pytest.param("every 7 minutes synchronized", "divide 24 hours", id="sync-not-dividing"),
            pytest.param(
                "every 5 minutes synchronized from 10:00 to 11:00",
                "not a supported",
                id="sync-and-window",
            ),
            pytest.param("every 10000 hours", "at most 366 days", id="interval-too-long"),
            pytest.param("every day", "not a supported", id="day-without-time"),
            pytest.param("every day 24:00", "'24:00'", id="time-24-00"),
            pytest.param("every day 9:60", "'9:60'", id="minute-60"),
            pytest.param("every day 09:00 09:30", "not a supported", id="two-times"),
            pytest.param("every funday 09:00", "not a supported", id="unknown-weekday"),
            pytest.param("every weekday 09:00", "not a supported", id="weekday-keyword"),
            pytest.param("every mon,,wed 09:00", "not a supported", id="empty-weekday"),
            pytest.param("1st monday of month 09:00", "not a supported", id="ordinal-of-month"),
            pytest.param("2nd wednesday of sep,oct 09:00", "not a supported", id="of-months"),
            pytest.param("1 of jan,april,july,october 00:00", "not a supported", id="day-of"),
        ],
    )
    def test_unsupported_english_is_rejected(self, text: str, fragment: str) -> None:
        violation = schedule_error(text).violations[0]
        assert violation.field == "schedule"
        assert fragment in violation.description
        assert repr(text) in violation.description


class TestTimeZones:
    """Spec §8, §17 P10."""

    @pytest.mark.parametrize(
        ("name", "key"),
        [
            pytest.param("America/New_York", "America/New_York", id="iana-name"),
            pytest.param("Asia/Kolkata", "Asia/Kolkata", id="half-hour-zone"),
            pytest.param("Europe/London", "Europe/London", id="europe"),
            pytest.param("US/Eastern", "US/Eastern", id="backward-link"),
            pytest.param("Etc/GMT+5", "Etc/GMT+5", id="etc-fixed-offset"),
            pytest.param("utc", "Etc/UTC", id="utc-lower"),
            pytest.param("UTC", "Etc/UTC", id="utc-upper"),
            pytest.param("Utc", "Etc/UTC", id="utc-mixed"),
            pytest.param("Etc/UTC", "Etc/UTC", id="etc-utc"),
            pytest.param("etc/utc", "Etc/UTC", id="etc-utc-lower"),
            pytest.param("", "Etc/UTC", id="empty-means-utc"),
        ],
    )
    def test_accepted_zone_resolves(self, name: str, key: str) -> None:
        assert resolve_time_zone(name).key == key

    @pytest.mark.parametrize(
        "name",
        ["EST", "MST", "HST", "EST5EDT", "CST6CDT", "MST7MDT", "PST8PDT", "CET", "EET", "WET"],
    )
    def test_legacy_abbreviation_is_rejected(self, name: str) -> None:
        with pytest.raises(InvalidArgument) as caught:
            resolve_time_zone(name)
        violation = caught.value.violations[0]
        assert caught.value.message == INVALID_SCHEDULE_MESSAGE
        assert violation.field == "timeZone"
        assert repr(name) in violation.description
        assert "legacy abbreviation" in violation.description

    @pytest.mark.parametrize(
        "name",
        [
            pytest.param("Mars/Olympus_Mons", id="unknown"),
            pytest.param("america/new_york", id="wrong-case"),
            pytest.param("America", id="directory"),
            pytest.param("../../etc/passwd", id="path-traversal"),
            pytest.param("/usr/share/zoneinfo/UTC", id="absolute-path"),
            pytest.param("localtime", id="localtime"),
            pytest.param("Factory", id="factory"),
            pytest.param(" UTC", id="leading-space"),
            pytest.param("+05:30", id="offset"),
        ],
    )
    def test_unknown_zone_is_rejected_naming_the_value(self, name: str) -> None:
        with pytest.raises(InvalidArgument) as caught:
            resolve_time_zone(name)
        violation = caught.value.violations[0]
        assert caught.value.message == INVALID_SCHEDULE_MESSAGE
        assert violation.field == "timeZone"
        assert f"Unknown time zone {name!r}" in violation.description

    def test_bad_zone_in_parse_schedule_names_the_time_zone_field(self) -> None:
        error = schedule_error("0 2 * * *", "EST")
        assert error.violations[0].field == "timeZone"

    def test_schedule_keeps_the_zone_name_as_given(self) -> None:
        schedule = parse_schedule("0 2 * * *", "utc")
        assert schedule.time_zone == "utc"
        assert schedule.zone == ZoneInfo("Etc/UTC")

    def test_default_zone_is_etc_utc(self) -> None:
        schedule = parse_schedule("0 2 * * *")
        assert schedule.time_zone == "Etc/UTC"
        assert schedule.next_after(AFTER) == datetime(2026, 1, 1, 2, tzinfo=UTC)

    def test_odd_offset_zones_fire_at_local_wall_time(self) -> None:
        assert fires("0 9 * * *", 1, zone="Asia/Kolkata") == ["2026-01-01T09:00:00+05:30"]
        assert fires("0 0 * * *", 1, zone="Asia/Kathmandu") == ["2026-01-02T00:00:00+05:45"]
        kathmandu = parse_schedule("0 0 * * *", "Asia/Kathmandu").next_after(AFTER)
        assert kathmandu == datetime(2026, 1, 1, 18, 15, tzinfo=UTC)

    def test_hourly_in_kolkata_fires_at_half_past_utc(self) -> None:
        assert [t[11:] for t in fires("0 * * * *", 2, zone="Asia/Kolkata")] == [
            "06:00:00+05:30",
            "07:00:00+05:30",
        ]


class TestNextAfter:
    def test_result_is_strictly_after_a_fire_instant(self) -> None:
        schedule = parse_schedule("0 2 * * *")
        fire = datetime(2026, 1, 1, 2, tzinfo=UTC)
        assert schedule.next_after(fire) == datetime(2026, 1, 2, 2, tzinfo=UTC)

    def test_microseconds_before_a_fire_instant_still_yield_it(self) -> None:
        schedule = parse_schedule("* * * * *")
        after = datetime(2026, 1, 1, 12, 0, 59, 999999, tzinfo=UTC)
        assert schedule.next_after(after) == datetime(2026, 1, 1, 12, 1, tzinfo=UTC)

    def test_result_is_in_the_job_zone_whatever_the_zone_of_after(self) -> None:
        schedule = parse_schedule("0 9 * * *", "America/New_York")
        tokyo = datetime(2026, 1, 1, 9, tzinfo=ZoneInfo("Asia/Tokyo"))
        result = schedule.next_after(tokyo)
        assert result is not None
        assert result.tzinfo == ZoneInfo("America/New_York")
        assert format_schedule_time(result) == "2026-01-01T09:00:00-05:00"
        assert schedule.next_after(tokyo.astimezone(UTC)) == result

    def test_after_with_a_fixed_offset_tzinfo_is_accepted(self) -> None:
        schedule = parse_schedule("30 * * * *")
        after = datetime(2026, 1, 1, 12, 45, tzinfo=timezone(timedelta(hours=-7)))
        assert schedule.next_after(after) == datetime(2026, 1, 1, 20, 30, tzinfo=UTC)

    def test_iter_after_matches_repeated_next_after(self) -> None:
        schedule = parse_schedule("*/7 */5 * * 1-5", "Europe/London")
        expected, instant = [], AFTER
        for _ in range(50):
            found = schedule.next_after(instant)
            assert found is not None
            expected.append(found)
            instant = found
        assert list(islice(schedule.iter_after(AFTER), 50)) == expected

    def test_fire_times_are_whole_minutes(self) -> None:
        schedule = parse_schedule("every 3 minutes")
        after = datetime(2026, 1, 1, 12, 0, 31, 5, tzinfo=UTC)
        for instant in islice(schedule.iter_after(after), 3):
            assert (instant.second, instant.microsecond) == (0, 0)


class TestNeverFiring:
    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("0 0 30 2 *", id="30-february"),
            pytest.param("0 0 31 2 *", id="31-february"),
            pytest.param("0 0 31 4,6,9,11 *", id="31-in-30-day-months"),
            pytest.param("* * 31 apr-apr/5 *", id="31-april-via-step"),
        ],
    )
    def test_impossible_date_never_fires(self, text: str) -> None:
        schedule = parse_schedule(text)
        assert schedule.next_after(AFTER) is None
        assert list(schedule.iter_after(AFTER)) == []

    def test_leap_day_eight_years_away_is_still_found(self) -> None:
        schedule = parse_schedule("0 0 29 2 *")
        after = datetime(2096, 3, 1, tzinfo=UTC)
        assert schedule.next_after(after) == datetime(2104, 2, 29, tzinfo=UTC)

    def test_end_of_the_calendar_gives_none(self) -> None:
        schedule = parse_schedule("* * * * *", "Pacific/Kiritimati")
        assert schedule.next_after(datetime.max.replace(tzinfo=UTC)) is None
        interval = parse_schedule("every 5 minutes")
        assert list(interval.iter_after(datetime.max.replace(tzinfo=UTC))) == []


class TestNaiveDatetimes:
    def test_next_after_rejects_a_naive_datetime_saying_what_to_pass(self) -> None:
        with pytest.raises(NaiveDatetimeError, match="timezone-aware.*tzinfo"):
            parse_schedule("* * * * *").next_after(datetime(2026, 1, 1))

    @pytest.mark.parametrize("text", ["every 5 minutes", "0 2 * * *"])
    def test_iter_after_rejects_a_naive_datetime_at_the_call(self, text: str) -> None:
        with pytest.raises(NaiveDatetimeError, match="timezone-aware"):
            parse_schedule(text).iter_after(datetime(2026, 1, 1))

    def test_format_schedule_time_rejects_a_naive_datetime(self) -> None:
        with pytest.raises(NaiveDatetimeError, match="timezone-aware"):
            format_schedule_time(datetime(2026, 1, 1))


class TestFormatScheduleTime:
    """Spec §10.2, §17 P2."""

    @pytest.mark.parametrize(
        ("instant", "expected"),
        [
            pytest.param(
                datetime(2026, 9, 24, 2, tzinfo=UTC), "2026-09-24T02:00:00Z", id="utc-is-Z"
            ),
            pytest.param(
                datetime(2026, 9, 24, 2, tzinfo=ZoneInfo("Etc/UTC")),
                "2026-09-24T02:00:00Z",
                id="etc-utc-is-Z",
            ),
            pytest.param(
                datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York")),
                "2026-11-01T01:30:00-04:00",
                id="first-of-a-repeated-time",
            ),
            pytest.param(
                datetime(2026, 11, 1, 1, 30, tzinfo=ZoneInfo("America/New_York"), fold=1),
                "2026-11-01T01:30:00-05:00",
                id="second-of-a-repeated-time",
            ),
            pytest.param(
                datetime(2026, 10, 16, 5, tzinfo=ZoneInfo("America/Los_Angeles")),
                "2026-10-16T05:00:00-07:00",
                id="pacific-daylight",
            ),
            pytest.param(
                datetime(2026, 1, 1, 9, tzinfo=ZoneInfo("Asia/Kolkata")),
                "2026-01-01T09:00:00+05:30",
                id="kolkata",
            ),
            pytest.param(
                datetime(2026, 1, 1, 9, tzinfo=ZoneInfo("Asia/Kathmandu")),
                "2026-01-01T09:00:00+05:45",
                id="kathmandu",
            ),
            pytest.param(
                datetime(2026, 1, 1, 9, tzinfo=ZoneInfo("America/St_Johns")),
                "2026-01-01T09:00:00-03:30",
                id="st-johns",
            ),
            pytest.param(
                datetime(2026, 1, 1, 9, 15, 42, 123456, tzinfo=UTC),
                "2026-01-01T09:15:42Z",
                id="fraction-dropped",
            ),
            pytest.param(
                datetime(2026, 1, 1, 9, tzinfo=timezone(timedelta(hours=-7))),
                "2026-01-01T09:00:00-07:00",
                id="fixed-offset",
            ),
            pytest.param(
                datetime(1850, 1, 1, 12, tzinfo=ZoneInfo("America/New_York")),
                "1850-01-01T16:56:02Z",
                id="offset-with-seconds-rendered-in-utc",
            ),
        ],
    )
    def test_instant_is_rendered_in_its_own_offset(self, instant: datetime, expected: str) -> None:
        assert format_schedule_time(instant) == expected


class TestScheduleValue:
    def test_schedule_is_immutable(self) -> None:
        schedule = parse_schedule("0 2 * * *")
        with pytest.raises(AttributeError):
            schedule.text = "0 3 * * *"
        with pytest.raises(AttributeError):
            del schedule.zone

    def test_equal_arguments_give_equal_schedules(self) -> None:
        first = Schedule("0 2 * * *", "America/New_York")
        second = parse_schedule("0 2 * * *", "America/New_York")
        assert first == second
        assert hash(first) == hash(second)
        assert first != parse_schedule("0 2 * * *", "America/New_York", dst_policy="vixie")

    def test_repr_shows_the_arguments(self) -> None:
        assert repr(parse_schedule("0 2 * * *", "utc")) == (
            "Schedule('0 2 * * *', time_zone='utc', dst_policy='absolute')"
        )

    def test_schedule_survives_pickling(self) -> None:
        schedule = parse_schedule("0 2 * * *", "America/New_York", dst_policy="vixie")
        assert pickle.loads(pickle.dumps(schedule)) == schedule

    def test_unknown_dst_policy_is_a_value_error(self) -> None:
        with pytest.raises(ValueError, match="dst_policy must be 'absolute' or 'vixie'"):
            parse_schedule("0 2 * * *", dst_policy="smart")
