"""Property tests for ``scheduler_emulator.domain.schedule`` (hypothesis).

The oracle is our pinned daylight-saving rule taken literally: walk absolute minutes one at a
time, convert each to the job's zone with ``zoneinfo`` and fire when the wall time matches.
Expressions are generated together with the value sets they denote, so the oracle does not reuse
our parser.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import pytest
from croniter import CroniterBadDateError, croniter
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scheduler_emulator.domain.schedule import parse_schedule
from scheduler_emulator.domain.timezones import DAY_SECONDS, segment_at

MINUTE = timedelta(minutes=1)
#: Zones with DST, 30- and 45-minute offsets, midnight transitions, a skipped day (Apia 2011)
#: and Ramadan suspensions (Casablanca).
ZONES = (
    "Etc/UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "America/Santiago",
    "America/St_Johns",
    "Pacific/Chatham",
    "Pacific/Apia",
    "Africa/Casablanca",
)
PROPERTY_SETTINGS = settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
WEEKDAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def in_utc(instant: datetime) -> tuple[datetime, timedelta | None]:
    """An aware datetime as ``(UTC instant, UTC offset)``: equal only for the same instant
    rendered with the same offset (same-zone datetimes compare by wall time, PEP 495)."""
    return instant.astimezone(UTC), instant.utcoffset()


@dataclass(frozen=True)
class Case:
    """A generated schedule: its text, a wall-clock predicate and whether it is fixed-time."""

    text: str
    matches: Callable[[datetime], bool]
    fixed_time: bool

    def __repr__(self) -> str:
        return f"Case({self.text!r})"


# -- generating cron expressions together with their meaning ------------------------------------


def _render(draw: st.DrawFn, value: int, names: tuple[str, ...] | None, *, upper: bool) -> str:
    """A value as a number or, sometimes, as a name in random case."""
    if names is None or not draw(st.booleans()):
        return str(value)
    if names is WEEKDAY_NAMES:
        if value == 7 and upper:
            name = "sun"  # SUN at the end of a range means 7
        elif value == 0 and upper or value == 7:
            return str(value)
        else:
            name = names[value]
    else:
        name = names[value - 1]
    return draw(st.sampled_from([name, name.upper(), name.capitalize()]))


@st.composite
def cron_field(
    draw: st.DrawFn,
    low: int,
    high: int,
    star_high: int,
    names: tuple[str, ...] | None,
    *,
    for_croniter: bool = False,
) -> tuple[str, frozenset[int]]:
    """One field: ``(text, values)``; day-of-week values are folded to 0-6.

    ``for_croniter`` avoids what croniter 7 reads differently from our pinned cron rules: ``a-a``
    ranges (croniter reads ``*``) and day fields that list every value without being exactly
    ``*`` (croniter then treats the field as unrestricted).
    """
    if draw(st.integers(0, 3)) == 0:
        values = set(range(low, star_high + 1))
        text = "*"
    else:
        parts, values = [], set()
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(["value", "range", "star-step", "range-step", "a/n"]))
            step = draw(st.integers(1, star_high - low + 2))
            if kind == "value":
                a = draw(st.integers(low, high))
                parts.append(_render(draw, a, names, upper=False))
                values.add(a)
            elif kind == "star-step":
                parts.append(f"*/{step}")
                values.update(range(low, star_high + 1, step))
            elif kind == "a/n":
                a = draw(st.integers(low, star_high))
                parts.append(f"{_render(draw, a, names, upper=False)}/{step}")
                values.update(range(a, star_high + 1, step))
            else:
                a = draw(st.integers(low, high - 1 if for_croniter else high))
                b = draw(st.integers(a + 1 if for_croniter else a, high))
                text = (
                    f"{_render(draw, a, names, upper=False)}-{_render(draw, b, names, upper=True)}"
                )
                if kind == "range-step":
                    text += f"/{step}"
                else:
                    step = 1
                parts.append(text)
                values.update(range(a, b + 1, step))
        text = ",".join(parts)
    if names is WEEKDAY_NAMES and 7 in values:
        values = (values - {7}) | {0}
    day_field = names is WEEKDAY_NAMES or (names is None and low == 1)
    if for_croniter and day_field and text != "*":
        assume(values != set(range(low, star_high + 1)))
    return text, frozenset(values)


@st.composite
def cron_cases(draw: st.DrawFn, *, frequent: bool = False, for_croniter: bool = False) -> Case:
    """A random five-field expression. ``frequent`` keeps the day fields loose;
    ``for_croniter`` avoids what croniter reads differently (see :func:`cron_field`)."""
    minute_text, minutes = draw(cron_field(0, 59, 59, None, for_croniter=for_croniter))
    hour_text, hours = draw(cron_field(0, 23, 23, None, for_croniter=for_croniter))
    if frequent:
        dom_text, doms = "*", frozenset(range(1, 32))
        month_text, months = "*", frozenset(range(1, 13))
    else:
        dom_text, doms = draw(cron_field(1, 31, 31, None, for_croniter=for_croniter))
        month_text, months = draw(cron_field(1, 12, 12, MONTH_NAMES, for_croniter=for_croniter))
    dow_text, dows = draw(cron_field(0, 7, 6, WEEKDAY_NAMES, for_croniter=for_croniter))
    dom_star, dow_star = dom_text == "*", dow_text == "*"

    def matches(local: datetime) -> bool:
        if local.minute not in minutes or local.hour not in hours or local.month not in months:
            return False
        in_dom, in_dow = local.day in doms, local.isoweekday() % 7 in dows
        if dom_star and dow_star:
            return True
        if dom_star:
            return in_dow
        if dow_star:
            return in_dom
        return in_dom or in_dow

    text = " ".join([minute_text, hour_text, dom_text, month_text, dow_text])
    fixed = not minute_text.startswith("*") and not hour_text.startswith("*")
    return Case(text, matches, fixed)


@st.composite
def english_cases(draw: st.DrawFn) -> Case:
    """A random English-like calendar or window schedule (not the plain interval form)."""
    kind = draw(st.sampled_from(["window", "synchronized", "day", "weekdays"]))
    hh, mm = draw(st.integers(0, 23)), draw(st.integers(0, 59))
    at = hh * 60 + mm
    if kind in ("window", "synchronized"):
        if kind == "window":
            step = draw(st.integers(1, 180))
            hh2, mm2 = draw(st.integers(0, 23)), draw(st.integers(0, 59))
            length = (hh2 * 60 + mm2 - at) % 1440
            text = f"every {step} minutes from {hh:02d}:{mm:02d} to {hh2:02d}:{mm2:02d}"
        else:
            step = draw(st.sampled_from([1, 2, 3, 5, 15, 20, 30, 45, 60, 90, 120, 180, 480]))
            at, length = 0, 1439
            text = f"every {step} minutes synchronized"
        if step % 60 == 0 and draw(st.booleans()):
            text = text.replace(f"{step} minutes", f"{step // 60} hours")

        def in_window(local: datetime) -> bool:
            since = (local.hour * 60 + local.minute - at) % 1440
            return since <= length and since % step == 0

        return Case(text, in_window, False)
    if kind == "day":
        days = frozenset(range(7))
        text = f"every day {hh:02d}:{mm:02d}"
    else:
        days = frozenset(draw(st.lists(st.integers(0, 6), min_size=1, max_size=3)))
        names = [draw(st.sampled_from([WEEKDAY_NAMES[d], WEEKDAY_NAMES[d].upper()])) for d in days]
        text = f"every {','.join(names)} {hh}:{mm:02d}"

    def at_time(local: datetime) -> bool:
        return local.hour * 60 + local.minute == at and local.isoweekday() % 7 in days

    return Case(text, at_time, True)


# -- instants, with a bias towards DST transitions ----------------------------------------------


@functools.cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """Hours (UTC) at which the zone's offset changed in 2011 or 2026, by an hourly scan."""
    zone = ZoneInfo(zone_name)
    found = []
    for year in (2011, 2026):
        instant = datetime(year, 1, 1, tzinfo=UTC)
        before = instant.astimezone(zone).utcoffset()
        while instant.year == year:
            instant += timedelta(hours=1)
            offset = instant.astimezone(zone).utcoffset()
            if offset != before:
                found.append(instant)
            before = offset
    return tuple(found)


@st.composite
def zone_and_instant(draw: st.DrawFn) -> tuple[str, datetime]:
    """A zone and an aware UTC instant, half of the time within a day and a half of a DST
    transition of that zone."""
    zone = draw(st.sampled_from(ZONES))
    near = transitions(zone)
    if len(near) > 0 and draw(st.booleans()):
        base = draw(st.sampled_from(near))
        offset = draw(st.integers(-36 * 3600, 6 * 3600))
    else:
        base = datetime(2026, 1, 1, tzinfo=UTC)
        offset = draw(st.integers(0, 366 * DAY_SECONDS))
    micro = draw(st.sampled_from([0, 0, 1, 500_000, 999_999]))
    return zone, base + timedelta(seconds=offset, microseconds=micro)


# -- the oracle -----------------------------------------------------------------------------------


def oracle(
    case: Case, zone_name: str, after: datetime, until: datetime, dst_policy: str
) -> list[tuple[datetime, timedelta]]:
    """Fire instants in ``(after, until)`` by walking absolute minutes (the pinned rule).

    With ``dst_policy="vixie"`` a fixed-time job skips the second occurrence of a wall time
    (``fold == 1``), and at a forward jump fires once at the first minute after the gap when
    any wall minute inside the gap matches.
    """
    zone = ZoneInfo(zone_name)
    instant = after.astimezone(UTC).replace(second=0, microsecond=0) + MINUTE
    previous = (instant - MINUTE).astimezone(zone)
    fired = []
    vixie = dst_policy == "vixie" and case.fixed_time
    while instant < until:
        local = instant.astimezone(zone)
        offset = local.utcoffset()
        assert offset is not None
        if vixie:
            gap_hit = False
            previous_offset = previous.utcoffset()
            assert previous_offset is not None
            if offset > previous_offset:
                wall = previous.replace(tzinfo=None) + MINUTE
                while wall < local.replace(tzinfo=None):
                    gap_hit = gap_hit or case.matches(wall)
                    wall += MINUTE
            if gap_hit or (local.fold == 0 and case.matches(local)):
                fired.append((instant, offset))
        elif case.matches(local):
            fired.append((instant, offset))
        previous = local
        instant += MINUTE
    return fired


def ours(
    case: Case, zone_name: str, after: datetime, until: datetime, dst_policy: str
) -> list[tuple[datetime, timedelta]]:
    """Our fire instants in ``(after, until)`` as ``(UTC instant, UTC offset)``."""
    schedule = parse_schedule(case.text, zone_name, dst_policy=dst_policy)
    result = []
    for fire in schedule.iter_after(after):
        if fire.astimezone(UTC) >= until:
            break
        assert fire.tzinfo is schedule.zone
        assert (fire.second, fire.microsecond) == (0, 0)
        # The wall time and fold we return denote the instant we mean.
        assert fire.astimezone(UTC).astimezone(schedule.zone).fold == fire.fold
        offset = fire.utcoffset()
        assert offset is not None
        result.append((fire.astimezone(UTC), offset))
    return result


any_case = st.one_of(cron_cases(frequent=True), cron_cases(), english_cases())


class TestAgainstMinuteWalk:
    @pytest.mark.parametrize("dst_policy", ["absolute", "vixie"])
    @PROPERTY_SETTINGS
    @given(case=any_case, where=zone_and_instant())
    def test_each_policy_agrees_with_the_minute_walk(
        self, dst_policy: str, case: Case, where: tuple[str, datetime]
    ) -> None:
        zone, after = where
        until = after + timedelta(hours=36)
        expected = oracle(case, zone, after, until, dst_policy)
        assert ours(case, zone, after, until, dst_policy) == expected
        following = parse_schedule(case.text, zone, dst_policy=dst_policy).next_after(after)
        if expected:
            assert following is not None
            assert following.astimezone(UTC) == expected[0][0]
        else:
            assert following is None or following >= until


class TestSequences:
    @settings(max_examples=80, deadline=None, database=None)
    @given(
        case=st.one_of(cron_cases(), english_cases()),
        where=zone_and_instant(),
        dst_policy=st.sampled_from(["absolute", "vixie"]),
    )
    def test_fire_times_strictly_increase_and_iter_matches_next_after(
        self, case: Case, where: tuple[str, datetime], dst_policy: str
    ) -> None:
        zone, after = where
        schedule = parse_schedule(case.text, zone, dst_policy=dst_policy)
        fired = list(islice(schedule.iter_after(after), 150))
        # Same-zone datetimes compare by wall time and ignore fold (PEP 495): compare in UTC.
        instants = [t.astimezone(UTC) for t in [after, *fired]]
        assert all(a < b for a, b in zip(instants, instants[1:], strict=False))
        stepped = []
        instant: datetime | None = after
        for _ in fired:
            assert instant is not None
            instant = schedule.next_after(instant)
            stepped.append(instant)
        assert [None if t is None else in_utc(t) for t in stepped] == [in_utc(t) for t in fired]

    @settings(max_examples=60, deadline=None, database=None)
    @given(
        minutes=st.integers(1, 3000),
        unit=st.sampled_from(["minutes", "mins", "hours"]),
        where=zone_and_instant(),
    )
    def test_plain_interval_steps_by_the_interval_from_after(
        self, minutes: int, unit: str, where: tuple[str, datetime]
    ) -> None:
        zone, after = where
        number = minutes if unit != "hours" else max(1, minutes // 60)
        step = timedelta(minutes=number * (60 if unit == "hours" else 1))
        schedule = parse_schedule(f"every {number} {unit}", zone)
        fired = [t.astimezone(UTC) for t in islice(schedule.iter_after(after), 5)]
        first = (after + step).astimezone(UTC)
        assert fired[0] == first.replace(second=0, microsecond=0)
        assert all(b - a == step for a, b in zip(fired, fired[1:], strict=False))


def croniter_fires(text: str, zone: str, after: datetime, count: int) -> list[datetime]:
    iterator = croniter(text, after.astimezone(ZoneInfo(zone)))
    return [iterator.get_next(datetime) for _ in range(count)]


def steady(zone: str, start: datetime, end: datetime) -> bool:
    """Whether the zone's offset is the same at every hour from ``start`` to ``end``."""
    tz = ZoneInfo(zone)
    offsets = set()
    instant = start
    while instant <= end + timedelta(hours=1):
        offsets.add(instant.astimezone(tz).utcoffset())
        instant += timedelta(hours=1)
    return len(offsets) == 1


class TestAgainstCroniter:
    @settings(max_examples=120, deadline=None, database=None)
    @given(
        case=cron_cases(for_croniter=True),
        after=st.datetimes(
            min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1), timezones=st.just(UTC)
        ),
    )
    def test_ours_agrees_with_croniter_in_utc(self, case: Case, after: datetime) -> None:
        schedule = parse_schedule(case.text, "UTC")
        got = list(islice(schedule.iter_after(after), 12))
        try:
            expected = croniter_fires(case.text, "Etc/UTC", after, 12)
        except CroniterBadDateError:  # a day that never comes (30 2): ours never fires either
            assert got == []
            return
        assert [in_utc(t) for t in got] == [in_utc(t) for t in expected]

    @settings(max_examples=120, deadline=None, database=None)
    @given(
        case=cron_cases(frequent=True, for_croniter=True),
        zone=st.sampled_from(ZONES),
        after=st.sampled_from([datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)]),
        shift_minutes=st.integers(0, 30 * 1440),
    )
    def test_ours_agrees_with_croniter_on_days_without_a_dst_change(
        self, case: Case, zone: str, after: datetime, shift_minutes: int
    ) -> None:
        after += timedelta(minutes=shift_minutes)
        until = after + timedelta(days=2)
        assume(steady(zone, after, until))
        schedule = parse_schedule(case.text, zone)
        got = [in_utc(t) for t in islice(schedule.iter_after(after), 100)]
        got = [t for t in got if t[0] < until]
        expected = [in_utc(t) for t in croniter_fires(case.text, zone, after, len(got) + 1)]
        assert got == expected[: len(got)]
        if len(got) < 100:
            assert expected[len(got)][0] >= until


class TestSegments:
    @settings(max_examples=150, deadline=None, database=None)
    @given(where=zone_and_instant())
    def test_segment_has_one_offset_from_start_to_end(self, where: tuple[str, datetime]) -> None:
        zone_name, instant = where
        zone = ZoneInfo(zone_name)
        absolute = instant.toordinal() * DAY_SECONDS + (
            instant.hour * 3600 + instant.minute * 60 + instant.second
        )
        start, end, offset, before = segment_at(zone, absolute)
        assert start <= absolute < end

        def offset_at(second: int) -> int:
            days, rest = divmod(second, DAY_SECONDS)
            moment = datetime.fromordinal(days).replace(tzinfo=UTC) + timedelta(seconds=rest)
            value = moment.astimezone(zone).utcoffset()
            assert value is not None
            return int(value.total_seconds())

        assert offset_at(start) == offset_at(absolute) == offset_at(end - 1) == offset
        if before != offset:  # a real transition at `start`
            assert offset_at(start - 1) == before


@pytest.mark.parametrize("zone", ZONES)
def test_every_zone_of_the_property_tests_resolves(zone: str) -> None:
    assert parse_schedule("0 0 * * *", zone).zone.key == zone
