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
    parse_schedule,
    resolve_time_zone,
)
from scheduler_emulator.wire import NaiveDatetimeError, format_schedule_time
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


def zone_error_description(name: str) -> str:
    """Resolve ``name``, expect the schedule error on ``timeZone`` and return its description."""
    with pytest.raises(InvalidArgument) as caught:
        resolve_time_zone(name)
    assert caught.value.message == INVALID_SCHEDULE_MESSAGE
    violation = caught.value.violations[0]
    assert violation.field == "timeZone"
    return violation.description


def in_zone(wall: datetime, zone: str, fold: int = 0) -> datetime:
    """The wall time ``wall`` in ``zone`` (an IANA name, or a fixed offset written ``+HH:MM``)."""
    if zone[0] in "+-":
        return datetime.fromisoformat(wall.isoformat() + zone)
    return wall.replace(tzinfo=ZoneInfo(zone), fold=fold)


class TestCronAccepted:
    @case_table(__file__, "cron_accepted")
    def test_expression_fires_at_the_expected_times(self, text: str, expected: list[str]) -> None:
        assert fires(text, len(expected)) == expected

    def test_cron_schedule_is_cron(self) -> None:
        assert parse_schedule("0 2 * * *").is_cron is True


class TestNames:
    @case_table(__file__, "names")
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

    @case_table(__file__, "sunday_in_ranges")
    def test_sunday_in_a_range_or_step(self, schedule: str, expected: list[str]) -> None:
        assert fires(schedule, len(expected)) == expected


class TestDayOfMonthOrDayOfWeek:
    """A day field is unrestricted only when it is exactly ``*`` (cases/schedule.toml)."""

    @case_table(__file__, "day_fields")
    def test_day_fields_combine_with_or(self, schedule: str, expected: list[str]) -> None:
        assert [t[:10] for t in fires(schedule, len(expected))] == expected


class TestCronRejected:
    @case_table(__file__, "cron_rejected")
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
    """English-like schedules, Google's alternative format (App Engine cron's):
    ``every N minutes|mins|hours`` (with ``from HH:MM to HH:MM`` or ``synchronized``),
    ``every day HH:MM``, ``every <weekday>[,<weekday>…] HH:MM`` and the calendar forms
    (``1st,3rd monday of month 09:00``, ``1 of jan,jul 00:00``); anything else is invalid."""

    @case_table(__file__, "english_accepted")
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

    @pytest.mark.parametrize("ordinal", ["1st", "second", "3rd", "fourth", "5th"])
    def test_an_ordinal_weekday_fires_on_that_week_of_every_month_in_its_zone(
        self, ordinal: str
    ) -> None:
        """Against a day-by-day reading of the rule, through New York's DST changes: the Nth
        weekday of a month is the one on days 7N-6 to 7N, at the wall time, in every month."""
        week = ["1st", "second", "3rd", "fourth", "5th"].index(ordinal) + 1
        zone = ZoneInfo("America/New_York")
        for day, name in enumerate(["mon", "tuesday", "wed", "thursday", "fri", "sat", "sun"]):
            schedule = parse_schedule(f"{ordinal} {name} of month 09:30", "America/New_York")
            start = datetime(2026, 1, 1, tzinfo=zone)
            got = [t for t in islice(schedule.iter_after(start), 13) if t.year == 2026]
            oracle = [
                start + timedelta(days=n, hours=9, minutes=30)
                for n in range(365)
                if (start + timedelta(days=n)).weekday() == day
                and ((start + timedelta(days=n)).day - 1) // 7 + 1 == week
            ]
            assert [t.isoformat() for t in got] == [t.isoformat() for t in oracle], name
            assert len(oracle) == 12 or (week == 5 and 4 <= len(oracle) <= 5)

    @case_table(__file__, "english_rejected")
    def test_unsupported_english_is_rejected(self, text: str, fragment: str) -> None:
        violation = schedule_error(text).violations[0]
        assert violation.field == "schedule"
        assert fragment in violation.description
        assert repr(text) in violation.description


class TestTimeZones:
    """Time zones: IANA names, and ``utc`` in any case. Our pinned rule refuses legacy
    abbreviations such as ``EST`` with ``Schedule or time zone is invalid.`` (as production
    refuses ``EST``) and echoes a zone as given."""

    @case_table(__file__, "zones_accepted")
    def test_accepted_zone_resolves(self, name: str, key: str) -> None:
        assert resolve_time_zone(name).key == key

    @pytest.mark.parametrize(
        "name",
        ["EST", "MST", "HST", "EST5EDT", "CST6CDT", "MST7MDT", "PST8PDT", "CET", "EET", "WET"],
    )
    def test_legacy_abbreviation_is_rejected(self, name: str) -> None:
        description = zone_error_description(name)
        assert repr(name) in description
        assert "legacy abbreviation" in description

    @case_table(__file__, "zones_unknown")
    def test_unknown_zone_is_rejected_naming_the_value(self, name: str) -> None:
        assert f"Unknown time zone {name!r}" in zone_error_description(name)

    @pytest.mark.parametrize(
        ("name", "hint"),
        [
            ("america/new_york", "did you mean 'America/New_York'? (case matters)"),
            ("Europe/Berlinn", "did you mean 'Europe/Berlin'?"),
            ("Mars/Olympus", "use an IANA name such as 'America/New_York' or 'Etc/UTC'."),
            ("Berlin", "did you mean 'Europe/Berlin'?"),  # a city alone (trial 72)
            ("new_york", "did you mean 'America/New_York'?"),
            ("Eastern", "did you mean 'Canada/Eastern' or 'US/Eastern'?"),
        ],
    )
    def test_an_unknown_zone_near_a_known_one_is_suggested(self, name: str, hint: str) -> None:
        """A trial: ``america/new_york`` got the generic hint, with no word on the case."""
        assert zone_error_description(name) == f"Unknown time zone {name!r}; {hint}"

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
    @case_table(__file__, "never_firing")
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
    """The ``X-CloudScheduler-ScheduleTime`` value; our pinned rendering: RFC 3339 without
    fractional seconds, in the job zone's offset at that instant, ``Z`` for a zero offset
    (cases/schedule.toml)."""

    @case_table(__file__, "rendered_instants")
    def test_instant_is_rendered_in_its_own_offset(
        self, wall: datetime, zone: str, fold: int, expected: str
    ) -> None:
        assert format_schedule_time(in_zone(wall, zone, fold)) == expected


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


def test_a_wrong_field_count_is_said_under_the_schedule_field() -> None:
    """Trial 211: "English-like schedules" in the text stood for the field's name, so a job
    file's problem read without its ``schedule:``; and "1 fields"."""
    with pytest.raises(InvalidArgument) as raised:
        parse_schedule("daily", "Etc/UTC")
    assert raised.value.describe().startswith("schedule: Schedule 'daily' has 1 field; ")
