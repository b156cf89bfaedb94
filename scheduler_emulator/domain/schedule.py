"""Schedules: parse unix-cron and English-like schedules and compute their fire times.

Pure functions of (schedule, instant): nothing here reads a clock. A schedule is parsed once
(:func:`parse_schedule`) into an immutable :class:`Schedule`; ``next_after`` and ``iter_after``
give its fire instants as timezone-aware datetimes in the job's zone::

    >>> import itertools
    >>> s = parse_schedule("30 1 * * *", "America/New_York")
    >>> after = datetime(2026, 10, 31, 12, tzinfo=UTC)
    >>> [wire.format_schedule_time(t) for t in itertools.islice(s.iter_after(after), 3)]
    ['2026-11-01T01:30:00-04:00', '2026-11-01T01:30:00-05:00', '2026-11-02T01:30:00-05:00']

1 Nov 2026 is the fall-back day in New York, so 01:30 happens twice (``fold`` 0, then 1). The
returned datetimes carry the job's zone; compare or subtract them after ``.astimezone(UTC)``,
because Python compares two datetimes of the same zone by wall time and ignores ``fold``.

How fire times are computed (our pinned rule; Google documents none)
--------------------------------------------------------------------
The rule is defined as a walk over absolute minutes: convert each instant to the job's zone and
fire when the local wall time matches the fields. Walking minutes is slow, so the code computes
the same set in jumps. :func:`~scheduler_emulator.domain.timezones.segment_at` splits time into
*segments* of constant UTC offset. Inside one segment with offset ``o``, instant ``t`` has wall
time ``t + o``, a bijection that keeps order, so the fire instants of the segment are exactly the
wall-clock matches ``L`` (found by integer arithmetic over precomputed minute-of-day lists and
per-month day tables) with ``L - o`` inside the segment. The search visits segments in order:
after a spring-forward transition the next segment's wall times start past the gap, so a wall
time inside the gap is never produced; after a fall-back transition the next segment's wall
times start again below the ones already seen, so a wall time inside the overlap is produced a
second time, with ``fold=1`` and the later offset. ``dst_policy="vixie"`` changes only
"fixed-time" jobs (minute and hour fields both not starting with ``*``): the part of a segment
that repeats wall times is skipped, and when a segment starts with a forward jump and some wall
time inside the gap matches, the job fires once at the first instant after the gap.

Search horizon: a schedule that does not fire within :data:`HORIZON` (ten years) of the instant
asked about is treated as never firing (``None``), e.g. ``0 0 30 2 *``.
"""

from __future__ import annotations

import calendar
import difflib
import functools
import re
import zoneinfo
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from .. import wire
from ..realtime import CLASSES as _REAL
from ..realtime import new_datetime
from .errors import INVALID_SCHEDULE_MESSAGE, InvalidArgument
from .timezones import (
    DAY_SECONDS,
    DEFAULT_ZONE_NAME,
    MAX_ABSOLUTE,
    MIN_ABSOLUTE,
    resolve_time_zone,
    segment_at,
)

__all__ = [
    "DST_POLICIES",
    "HORIZON",
    "Schedule",
    "parse_schedule",
    "resolve_time_zone",
]

#: The accepted values of ``dst_policy`` (the module docstring describes both).
DST_POLICIES: Final = ("absolute", "vixie")
#: The default ``dst_policy``: wall-clock matching on absolute minutes; the emulator's settings take
#: it from :class:`~scheduler_emulator.EmulatorOptions`.
DEFAULT_DST_POLICY: Final = DST_POLICIES[0]
#: How far ahead a fire time is searched for before a schedule counts as never firing.
HORIZON: Final = timedelta(days=3653)
_HORIZON_SECONDS: Final = 3653 * DAY_SECONDS

_MINUTES_PER_DAY: Final = 1440
_DAYS_IN_MONTH: Final = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MAX_DAYS_IN_MONTH: Final = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MONTH_NAMES: Final = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_WEEKDAY_NAMES: Final = {
    name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
}
_FULL_WEEKDAY_NAMES: Final = {
    name: number
    for number, name in enumerate(
        ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
    )
}
#: English-like names: full and three-letter weekdays and months, and the ordinal weeks of a
#: month (``1st`` or ``first``: days 1-7, … ``5th``: days 29-31).
_ENGLISH_WEEKDAYS: Final = _WEEKDAY_NAMES | _FULL_WEEKDAY_NAMES
_ENGLISH_MONTHS: Final = _MONTH_NAMES | {
    calendar.month_name[number].lower(): number for number in range(1, 13)
}
_ORDINALS: Final = {
    word: number
    for number, words in enumerate(
        (("1st", "first"), ("2nd", "second"), ("3rd", "third"), ("4th", "fourth"),
         ("5th", "fifth")),
        start=1,
    )
    for word in words
}  # fmt: skip
#: The unix-cron fields of the ``@`` macros crontab takes (refused, naming these).
_MACROS: Final = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                  "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
                  "@hourly": "0 * * * *"}  # fmt: skip
_DAY_OF_MONTH_RE: Final = re.compile(r"([1-9]|[12][0-9]|3[01])(?:st|nd|rd|th)?")
#: Longest interval an English-like ``every N …`` schedule may have (one leap year), minutes.
_MAX_INTERVAL_MINUTES: Final = 366 * _MINUTES_PER_DAY
_EPOCH: Final = new_datetime(1, 1, 1, tzinfo=UTC)

_ITEM_RE: Final = re.compile(r"(\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/([0-9]+))?")
_TIME_RE: Final = re.compile(r"([01]?[0-9]|2[0-3]):([0-5][0-9])")
_ENGLISH_FORMS: Final = (
    "every N minutes|mins|hours [from HH:MM to HH:MM | synchronized], "
    "every day|<weekday>[,<weekday>...] [of month|<month>[,<month>...]] HH:MM, "
    "<1st|first..5th>[,...] <weekday>[,...] [of month|<months>] HH:MM, "
    "<day>[,<day>...] of month|<months> HH:MM"
)


def _schedule_error(description: str) -> InvalidArgument:
    return InvalidArgument(INVALID_SCHEDULE_MESSAGE, field="schedule", description=description)


# --------------------------------------------------------------------------------------------
# unix-cron parsing (names case-insensitive; day of month OR day of week when both restricted)
# --------------------------------------------------------------------------------------------


class _Field:
    """Bounds and names of one unix-cron field."""

    __slots__ = ("name", "low", "high", "names", "step_high")

    def __init__(
        self, name: str, low: int, high: int, names: dict[str, int] | None, step_high: int
    ) -> None:
        self.name = name
        self.low = low
        self.high = high
        self.names = names or {}
        #: Upper end of ``*`` and of ``a/n`` (6 for day-of-week: ``*`` is 0-6, 7 is an alias).
        self.step_high = step_high


_FIELDS: Final = (
    _Field("minute", 0, 59, None, 59),
    _Field("hour", 0, 23, None, 23),
    _Field("day-of-month", 1, 31, None, 31),
    _Field("month", 1, 12, _MONTH_NAMES, 12),
    _Field("day-of-week", 0, 7, _WEEKDAY_NAMES, 6),
)

_UNSUPPORTED_CHARACTERS: Final = (
    ("l", "'L' (last day), which Cloud Scheduler does not support"),
    ("w", "'W' (nearest weekday), which Cloud Scheduler does not support"),
    ("#", "'#' (nth weekday), which Cloud Scheduler does not support"),
    ("?", "'?', which unix-cron does not have (use '*')"),
)


def _parse_field(text: str, schedule: str, spec: _Field) -> set[int]:
    """Return the values one cron field selects, or raise the schedule error naming the part."""

    def fail(reason: str) -> InvalidArgument:
        return _schedule_error(f"Schedule {schedule!r}: {spec.name} field {text!r} {reason}.")

    values: set[int] = set()
    for original in text.split(","):
        if original == "":
            raise fail("has an empty list item")
        item = original.lower()
        match = _ITEM_RE.fullmatch(item)
        if match is None:
            for character, reason in _UNSUPPORTED_CHARACTERS:
                if character in item and (character not in "lw" or not spec.names):
                    raise fail(f"uses {reason}")
            raise fail(f"has {original!r}, which is not '*', a value, a range 'a-b' or a step '/n'")
        base, step_text = match.groups()
        if base == "*":
            low, high = spec.low, spec.step_high
        else:
            first, _, last = original[: len(base)].partition("-")  # original letter case
            low = _parse_value(first, spec, fail, upper=False)
            if last:
                high = _parse_value(last, spec, fail, upper=True)
                if low > high:
                    raise fail(f"has range {original!r} whose start is after its end")
            elif step_text is not None:
                high = spec.step_high  # a/n means a-max/n, as in vixie cron and croniter
                if low > high:
                    raise fail(f"has {original!r}, whose start is after {spec.step_high}")
            else:
                high = low
        step = 1
        if step_text is not None:
            if len(step_text) > 4 or int(step_text) == 0:
                raise fail(f"has step {step_text!r}; a step must be a whole number from 1")
            step = int(step_text)
        values.update(range(low, high + 1, step))
    if spec.names is _WEEKDAY_NAMES and 7 in values:
        values.discard(7)
        values.add(0)  # 7 is Sunday
    return values


def _parse_value(
    token: str, spec: _Field, fail: Callable[[str], InvalidArgument], *, upper: bool
) -> int:
    if token.isdigit() and token.isascii():
        value = int(token) if len(token) <= 4 else spec.high + 1
        if not spec.low <= value <= spec.high:
            raise fail(f"has value {token} outside {spec.low}-{spec.high}")
        return value
    name = token.lower()
    if name in spec.names:
        value = spec.names[name]
        # "mon-sun", "fri-sun": SUN as the end of a range means 7, so the range is not reversed.
        return 7 if upper and spec.names is _WEEKDAY_NAMES and value == 0 else value
    for character, reason in _UNSUPPORTED_CHARACTERS:
        quartz_style = name.rstrip(character).isdigit() or name == character  # 5L, 15W, L
        if character in name and (quartz_style or not spec.names):
            raise fail(f"uses {reason}")
    if spec.names is _WEEKDAY_NAMES:
        kind = "a number or a three-letter day name (SUN-SAT)"
    elif spec.names:
        kind = "a number or a three-letter month name (JAN-DEC)"
    else:
        kind = "a number"
    raise fail(f"has {token!r}, which is not {kind}")


class _Matcher:
    """A compiled wall-clock pattern: months, days and the sorted minutes of a matching day.

    Wall-clock instants are handled as integers: a *local minute* is
    ``date.toordinal() * 1440 + minute_of_day`` and *local seconds* are 60 times that (plus
    seconds); see :mod:`scheduler_emulator.domain.timezones` for the absolute counterpart.
    """

    __slots__ = (
        "minutes_of_day",
        "hours",
        "minutes",
        "month_ok",
        "day_table",
        "day_masks",
        "never",
        "day_cache",
    )

    def __init__(
        self,
        minutes_of_day: list[int],
        months: set[int],
        days_of_month: set[int],
        days_of_week: set[int],
        *,
        dom_star: bool,
        dow_star: bool,
        weeks: frozenset[int] = frozenset(),
    ) -> None:
        #: Memo of :meth:`day_ok` (bounded; a race between threads only recomputes).
        self.day_cache: dict[int, bool] = {}
        self.minutes_of_day = tuple(sorted(minutes_of_day))
        self.hours = tuple(m // 60 for m in self.minutes_of_day)
        self.minutes = tuple(m % 60 for m in self.minutes_of_day)
        self.month_ok = tuple(month in months for month in range(13))
        # day_table[days_in_month][weekday of the 1st (0 = Sunday)] -> matching days, sorted.
        self.day_table: dict[int, tuple[tuple[int, ...], ...]] = {}
        self.day_masks: dict[int, tuple[int, ...]] = {}
        for length in (28, 29, 30, 31):
            rows: list[tuple[int, ...]] = []
            for first_weekday in range(7):
                days = []
                for day in range(1, length + 1):
                    in_dom = day in days_of_month
                    in_dow = (first_weekday + day - 1) % 7 in days_of_week
                    if weeks:  # English-like "1st,3rd monday": the weekday's week of the month
                        in_dow = in_dow and (day - 1) // 7 + 1 in weeks
                    if dom_star and dow_star:
                        ok = True
                    elif dom_star:
                        ok = in_dow
                    elif dow_star:
                        ok = in_dom
                    else:  # both restricted: either matches (our pinned rule)
                        ok = in_dom or in_dow
                    if ok:
                        days.append(day)
                rows.append(tuple(days))
            self.day_table[length] = tuple(rows)
            self.day_masks[length] = tuple(sum(1 << d for d in row) for row in rows)
        self.never = not self.minutes_of_day or not any(
            self.month_ok[month] and self.day_table[_MAX_DAYS_IN_MONTH[month]][first]
            for month in range(1, 13)
            for first in range(7)
        )

    def day_ok(self, ordinal: int) -> bool:
        """Whether the local date with this ordinal matches the month and day fields."""
        known = self.day_cache.get(ordinal)
        if known is not None:
            return known
        day = _REAL[1].fromordinal(ordinal)
        month = day.month
        length = _DAYS_IN_MONTH[month] + (month == 2 and calendar.isleap(day.year))
        ok = self.month_ok[month] and bool(
            self.day_masks[length][(ordinal - day.day + 1) % 7] >> day.day & 1
        )
        if len(self.day_cache) >= 4096:
            self.day_cache.clear()
        self.day_cache[ordinal] = ok
        return ok

    def next_day(self, ordinal: int, bound: int) -> int | None:
        """Return the first matching local date ordinal ``>= ordinal`` and ``<= bound``."""
        if ordinal > bound:
            return None
        current = _REAL[1].fromordinal(ordinal)
        year, month, day = current.year, current.month, current.day
        first = ordinal - day + 1
        month_ok = self.month_ok
        while first <= bound:
            length = _DAYS_IN_MONTH[month] + (month == 2 and calendar.isleap(year))
            if month_ok[month]:
                days = self.day_table[length][first % 7]
                index = bisect_left(days, day)
                if index < len(days):
                    found = first + days[index] - 1
                    return found if found <= bound else None
            first += length
            day = 1
            month += 1
            if month == 13:
                month = 1
                year += 1
        return None

    def next_local_minute(self, local_seconds: int, bound: int) -> int | None:
        """Return the first matching local minute at or after ``local_seconds``.

        :param local_seconds: lower bound in local seconds (rounded up to a whole minute).
        :param bound: last local date ordinal to search.
        :return: the local minute, or ``None`` when nothing matches up to ``bound``.
        """
        minute = -(-local_seconds // 60)
        ordinal, minute_of_day = divmod(minute, _MINUTES_PER_DAY)
        if ordinal > bound:
            return None
        index = bisect_left(self.minutes_of_day, minute_of_day)
        if index < len(self.minutes_of_day) and self.day_ok(ordinal):
            return ordinal * _MINUTES_PER_DAY + self.minutes_of_day[index]
        found = self.next_day(ordinal + 1, bound)
        return None if found is None else found * _MINUTES_PER_DAY + self.minutes_of_day[0]


def _parse_cron(text: str, fields: list[str]) -> tuple[_Matcher, bool]:
    if len(fields) != 5:
        zone = any(
            "/" in part and part[:1].isalpha() or part.startswith(("CRON_TZ", "TZ="))
            for part in fields
        )
        words = any(part[:1].isalpha() for part in fields)  # ("daily at 2am")
        hint = "; a time zone goes in timeZone, not in the schedule" if zone else ""
        if words and not zone:
            hint = f"; English-like schedules the emulator accepts: {_ENGLISH_FORMS}"
            if difflib.get_close_matches(fields[0].lower(), ["every"], cutoff=0.7):  # (trial 79)
                hint = f"; did you mean 'every' for {fields[0]!r}? {hint[2:]}"
        raise _schedule_error(
            f"Schedule {text!r} has {len(fields)} field{'s' * (len(fields) != 1)}; unix-cron "
            "needs exactly 5 "
            f"(minute hour day-of-month month day-of-week){hint}."
        )
    minute, hour, dom, month, dow = (
        _parse_field(part, text, spec) for part, spec in zip(fields, _FIELDS, strict=True)
    )
    matcher = _Matcher(
        [h * 60 + m for h in hour for m in minute],
        month,
        dom,
        dow,
        dom_star=fields[2] == "*",
        dow_star=fields[4] == "*",
    )
    fixed_time = not fields[0].startswith("*") and not fields[1].startswith("*")
    return matcher, fixed_time


# --------------------------------------------------------------------------------------------
# English-like parsing (the subset the emulator supports)
# --------------------------------------------------------------------------------------------


def is_english_like(text: str) -> bool:
    """Whether ``text`` is read as an English-like schedule (``every …``, ``… of …``, ``1st
    …``), not unix-cron; says nothing of whether it is valid."""
    tokens = text.lower().split()
    return bool(tokens) and (
        tokens[0] == "every" or "of" in tokens or tokens[0].split(",")[0] in _ORDINALS
    )


def _parse_time_of_day(token: str, text: str) -> int:
    match = _TIME_RE.fullmatch(token)
    if match is None:
        raise _schedule_error(
            f"Schedule {text!r}: {token!r} is not a time of day HH:MM between 00:00 and 23:59."
        )
    return int(match[1]) * 60 + int(match[2])


def _parse_english(text: str, tokens: list[str]) -> tuple[_Matcher | None, int, bool]:
    """Return ``(matcher, interval_seconds, fixed_time)``; exactly one of the first two is set."""
    unsupported = _schedule_error(
        f"Schedule {text!r} is not a supported English-like schedule; the emulator accepts "
        f"{_ENGLISH_FORMS} (or five-field unix-cron)."
    )
    if len(tokens) < 3:
        raise unsupported
    every_day = set(range(7))
    all_months = set(range(1, 13))
    in_words = not (tokens[1].isdigit() and tokens[1].isascii())
    if tokens[0] == "every" and tokens[2] in ("minutes", "mins", "hours") and in_words:
        raise _schedule_error(  # (trial 82: it said 'minutes' is not a time of day)
            f"Schedule {text!r}: an interval's number is written in digits (every 5 "
            f"{tokens[2]}); got {tokens[1]!r}."
        )
    if tokens[0] == "every" and tokens[1].isdigit() and tokens[1].isascii():
        if len(tokens[1]) > 6 or int(tokens[1]) == 0:
            raise _schedule_error(
                f"Schedule {text!r}: the interval must be a whole number of at least 1 (and "
                f"at most 6 digits); got {tokens[1]!r}."
            )
        if tokens[2] in ("minutes", "mins"):
            step = int(tokens[1])
        elif tokens[2] == "hours":
            step = int(tokens[1]) * 60
        else:
            raise _schedule_error(
                f"Schedule {text!r}: {tokens[2]!r} is not a unit of an interval (minutes, mins "
                "or hours)."
            )
        if step > _MAX_INTERVAL_MINUTES:
            raise _schedule_error(
                f"Schedule {text!r}: the interval must be at most 366 days; got {step} minutes."
            )
        rest = tokens[3:]
        if not rest:
            return None, step * 60, False
        if rest == ["synchronized"]:
            if _MINUTES_PER_DAY % step:
                raise _schedule_error(
                    f"Schedule {text!r}: a synchronized interval must divide 24 hours evenly; "
                    f"{step} minutes does not."
                )
            minutes = list(range(0, _MINUTES_PER_DAY, step))
        elif len(rest) == 4 and rest[0] == "from" and rest[2] == "to":
            start = _parse_time_of_day(rest[1], text)
            end = _parse_time_of_day(rest[3], text)
            length = (end - start) % _MINUTES_PER_DAY  # a window may run past midnight
            minutes = sorted({(start + k) % _MINUTES_PER_DAY for k in range(0, length + 1, step)})
        else:
            raise unsupported
        matcher = _Matcher(minutes, all_months, set(), every_day, dom_star=True, dow_star=True)
        return matcher, 0, False
    return _parse_calendar(text, tokens, unsupported), 0, True


def _items(words: list[str]) -> list[str]:
    """The items of a comma list spread over ``words`` (spaces after commas allowed)."""
    return [item.strip() for item in " ".join(words).split(",")]


def _names(words: list[str], names: dict[str, int]) -> tuple[set[int], str | None]:
    """The numbers of a comma list of names (:func:`_items`), and the first item that is no
    name (``""`` for an empty one), ``None`` when all are."""
    items = _items(words)
    unknown = next((item for item in items if item not in names), None)
    return {names[item] for item in items if item in names}, unknown


def _parse_calendar(text: str, tokens: list[str], unsupported: InvalidArgument) -> _Matcher:
    """The App Engine cron calendar forms: ``(every | <ordinals>) (day | <weekdays>) [of (month |
    <months>)] HH:MM`` and ``<days of month> of (month | <months>) HH:MM``."""
    minutes = [_parse_time_of_day(tokens[-1], text)]
    head, months = tokens[:-1], set(range(1, 13))

    def not_a(word: str, what: str) -> InvalidArgument:
        return _schedule_error(f"Schedule {text!r}: {word!r} is not {what}.")

    if "of" in head:
        at = head.index("of")
        if head[at + 1 :] != ["month"]:
            months, unknown = _names(head[at + 1 :], _ENGLISH_MONTHS)
            if unknown is not None:
                raise not_a(unknown, "a month (month, or jan…dec, january…december)")
        head = head[:at]
    first, rest = (head[0], head[1:]) if head else ("", [])
    if first == "every" and rest == ["day"]:
        return _Matcher(minutes, months, set(), set(range(7)), dom_star=True, dow_star=True)
    weeks, not_ordinal = _names([first], _ORDINALS) if first != "every" else (set(), None)
    if not_ordinal is None and rest:
        weekdays, unknown = _names(rest, _ENGLISH_WEEKDAYS)
        if unknown is not None:
            raise not_a(unknown, "a weekday (mon…sun, monday…sunday; every day for each day)")
        return _Matcher(
            minutes, months, set(), weekdays, dom_star=True, dow_star=False, weeks=frozenset(weeks)
        )
    days = [_DAY_OF_MONTH_RE.fullmatch(item) for item in _items(head)]
    if "of" not in tokens or not all(days):
        raise unsupported
    days_of_month = {int(match[1]) for match in days if match}
    return _Matcher(minutes, months, days_of_month, set(), dom_star=False, dow_star=True)


# --------------------------------------------------------------------------------------------
# Instants
# --------------------------------------------------------------------------------------------


def _absolute_seconds(instant: datetime, what: str) -> int:
    """Return an aware datetime as absolute seconds (whole seconds, rounded down)."""
    wire.to_instant(instant, what)
    offset = instant.utcoffset()
    assert offset is not None  # to_instant refused a naive one
    absolute = (
        instant.toordinal() * DAY_SECONDS
        + instant.hour * 3600
        + instant.minute * 60
        + instant.second
        - (offset.days * DAY_SECONDS + offset.seconds)
    )
    if offset.microseconds > instant.microsecond:
        absolute -= 1  # an offset with microseconds moves the instant below the whole second
    return max(absolute, MIN_ABSOLUTE - 1)


class Schedule:
    """A parsed schedule and the job's time zone: an immutable value that computes fire times.

    Build one with :func:`parse_schedule`, which caches; calling ``Schedule(...)`` parses
    afresh with the same rules. Equal schedules compare equal and hash alike (by text, time zone
    and policy); pickling re-parses.

    :param text: the schedule, unix-cron or English-like (see :func:`parse_schedule`).
    :param time_zone: the job's ``timeZone`` (an IANA name or ``utc``); ``""`` means ``Etc/UTC``.
    :param dst_policy: ``"absolute"`` or ``"vixie"`` (see the module docstring).
    :raises InvalidArgument: ``Schedule or time zone is invalid.`` with a ``schedule`` or
        ``timeZone`` field violation naming the bad part.
    :raises ValueError: for another ``dst_policy``.
    :ivar text: the schedule exactly as given.
    :ivar time_zone: the time zone exactly as given (``""`` stays ``""``).
    :ivar zone: the resolved zone (``Etc/UTC`` for ``""`` and every spelling of UTC).
    :ivar dst_policy: ``"absolute"`` (the default) or ``"vixie"``.
    :ivar is_cron: ``True`` for unix-cron, ``False`` for English-like schedules, which get no
        ``X-CloudScheduler-ScheduleTime`` header.
    """

    __slots__ = (
        "text",
        "time_zone",
        "zone",
        "dst_policy",
        "is_cron",
        "_matcher",
        "_interval",
        "_vixie_fixed",
        "_last",
    )

    text: str
    time_zone: str
    zone: zoneinfo.ZoneInfo
    dst_policy: str
    is_cron: bool
    _matcher: _Matcher | None
    _interval: int
    _vixie_fixed: bool
    #: The last ``next_after`` answer, by the absolute second asked: the jobs sharing this
    #: schedule (:func:`parse_schedule` caches) ask it for the same instant at each due time.
    _last: tuple[int, datetime | None]

    def __init__(
        self, text: str, time_zone: str = DEFAULT_ZONE_NAME, *, dst_policy: str = DEFAULT_DST_POLICY
    ) -> None:
        if dst_policy not in DST_POLICIES:
            raise ValueError(f"dst_policy must be 'absolute' or 'vixie'; got {dst_policy!r}.")
        if not isinstance(text, str):
            raise _schedule_error(f"Schedule must be a string; got {text!r}.")
        tokens = text.split()
        if not tokens:
            raise _schedule_error("Schedule is empty; give five unix-cron fields.")
        if tokens[0].startswith("@"):
            same = _MACROS.get(tokens[0].lower())
            example = f"{same!r} for {tokens[0]!r}" if same else "'0 * * * *' for hourly"
            raise _schedule_error(
                f"Schedule {text!r} is a '@' macro, which Cloud Scheduler does not accept; "
                f"give five unix-cron fields (e.g. {example})."
            )
        english = is_english_like(text)
        if english:
            matcher, interval, fixed_time = _parse_english(text, text.lower().split())
        else:
            (matcher, fixed_time), interval = _parse_cron(text, tokens), 0
        zone = resolve_time_zone(time_zone)
        setter = object.__setattr__
        setter(self, "text", text)
        setter(self, "time_zone", time_zone)
        setter(self, "zone", zone)
        setter(self, "dst_policy", dst_policy)
        setter(self, "is_cron", not english)
        setter(self, "_matcher", matcher)
        setter(self, "_interval", interval)
        setter(self, "_vixie_fixed", dst_policy == "vixie" and fixed_time)
        setter(self, "_last", (MIN_ABSOLUTE - 2, None))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Schedule is immutable; cannot set {name!r}.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Schedule is immutable; cannot delete {name!r}.")

    def __repr__(self) -> str:
        return (
            f"Schedule({self.text!r}, time_zone={self.time_zone!r}, dst_policy={self.dst_policy!r})"
        )

    def _key(self) -> tuple[str, str, str]:
        return (self.text, self.time_zone, self.dst_policy)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schedule):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.text, self.time_zone, self.dst_policy))

    # -- public ------------------------------------------------------------------------------

    @property
    def fixed_times(self) -> bool:
        """Whether its fire times are fixed instants — cron, and the English-like calendar
        times, windows and ``synchronized`` intervals — rather than counted from the one before
        (a plain ``every N minutes|hours``)."""
        return not self._interval

    def next_after(self, after: datetime) -> datetime | None:
        """Return the earliest fire instant strictly after ``after``.

        Cron and calendar schedules follow wall-clock matching on absolute minutes (see the
        module docstring), or the ``vixie`` variant. ``every N minutes|hours`` without
        a window or ``synchronized`` counts from ``after``: the result is ``after + N`` rounded
        down to the whole minute, so an engine that passes the previous fire time gets a steady
        cadence.

        :param after: a timezone-aware datetime, in any zone; microseconds are allowed.
        :raises NaiveDatetimeError: when ``after`` is naive.
        :return: an aware datetime in :attr:`zone` (whole minute of wall time, with ``fold=1``
            for the second occurrence of a repeated wall time), or ``None`` when the schedule
            does not fire within :data:`HORIZON` (ten years) of ``after``.
        """
        absolute = _absolute_seconds(after, "after")
        last = self._last
        if last[0] == absolute:
            return last[1]
        if self._interval:
            found = self._next_interval(absolute)
            answer = None if found is None else self._from_absolute(found)
        else:
            hit = self._next_cron(absolute)
            answer = None if hit is None else self._local_datetime(hit[1], hit[2])
        object.__setattr__(self, "_last", (absolute, answer))
        return answer

    def resume(self, since: datetime, now: datetime) -> datetime | None:
        """Where an ``every N minutes|hours`` interval without a window or ``synchronized``
        goes on at ``now`` when its next fire time was ``since`` (both aware; a restart): at
        ``since`` plus the fewest whole intervals that reach ``now``, so that its cadence stays
        "N after the previous run". ``None`` for every other schedule, whose fire instants do
        not depend on the one before, and past the last instant a datetime holds.
        """
        if not self._interval:
            return None
        start = _absolute_seconds(since, "since")
        late = max(0, _absolute_seconds(now, "now") - start)
        found = start + -(-late // self._interval) * self._interval
        return self._from_absolute(found) if found <= MAX_ABSOLUTE else None

    def iter_after(self, after: datetime) -> Iterator[datetime]:
        """Yield successive fire instants strictly after ``after``.

        Each value equals ``next_after`` of the value before (the first, ``next_after(after)``);
        the iterator ends where ``next_after`` would return ``None``. This is the fast path for
        bulk use: inside a stretch of constant UTC offset it steps through precomputed lists
        without any time-zone conversion.

        :param after: a timezone-aware datetime, in any zone.
        :raises NaiveDatetimeError: when ``after`` is naive (at the call, not at the first
            ``next()``).
        :return: an iterator of aware datetimes in :attr:`zone`, as :meth:`next_after` returns.
        """
        absolute = _absolute_seconds(after, "after")
        if self._interval:
            return self._iter_interval(absolute)
        return self._iter_cron(absolute)

    # -- English-like intervals --------------------------------------------------------------

    def _next_interval(self, absolute: int) -> int | None:
        found = (absolute + self._interval) // 60 * 60
        return found if found <= MAX_ABSOLUTE else None

    def _iter_interval(self, absolute: int) -> Iterator[datetime]:
        found = self._next_interval(absolute)
        while found is not None:
            yield self._from_absolute(found)
            found = self._next_interval(found)

    def _from_absolute(self, absolute: int) -> datetime:
        return (_EPOCH + timedelta(seconds=absolute - DAY_SECONDS)).astimezone(self.zone)

    # -- cron and calendar schedules ---------------------------------------------------------

    def _local_datetime(self, local_seconds: int, fold: int) -> datetime:
        ordinal, seconds = divmod(local_seconds, DAY_SECONDS)
        day = _REAL[1].fromordinal(ordinal)
        hour, rest = divmod(seconds, 3600)
        minute, second = divmod(rest, 60)
        if fold:
            return _REAL[0](
                day.year, day.month, day.day, hour, minute, second, 0, self.zone, fold=1
            )
        return _REAL[0](day.year, day.month, day.day, hour, minute, second, 0, self.zone)

    def _next_cron(self, absolute: int) -> tuple[int, int, int, tuple[int, int, int, int]] | None:
        """Return ``(instant, local_seconds, fold, segment)`` of the first fire after
        ``absolute`` (absolute seconds), or ``None`` beyond the horizon."""
        matcher = self._matcher
        assert matcher is not None
        if matcher.never:
            return None
        zone = self.zone
        limit = min(absolute + _HORIZON_SECONDS, MAX_ABSOLUTE)
        bound = min(limit // DAY_SECONDS + 2, MAX_ABSOLUTE // DAY_SECONDS)
        vixie_fixed = self._vixie_fixed
        x = absolute + 1
        previous_low = None
        candidate: int | None = None
        while x <= limit:
            segment = segment_at(zone, x)
            start, end, offset, before = segment
            if vixie_fixed and before < offset and x == start:
                # Spring forward: fire once at the first instant after the gap if any wall
                # time inside the gap matches (the vixie policy).
                in_gap = matcher.next_local_minute(start + before, bound)
                if in_gap is not None and in_gap * 60 < start + offset:
                    return start, start + offset, 0, segment
            low = x + offset
            if vixie_fixed and before > offset:
                low = max(low, start + before)  # fall back: only the first occurrence
            if (
                previous_low is None
                or low < previous_low
                or (candidate is not None and candidate < low)
            ):
                minute = matcher.next_local_minute(low, bound)
                candidate = None if minute is None else minute * 60
                previous_low = low
            if candidate is not None:
                instant = candidate - offset
                if instant < end:
                    if instant > limit:
                        return None
                    fold = 1 if before > offset and candidate < start + before else 0
                    return instant, candidate, fold, segment
            x = end
        return None

    def _iter_cron(self, absolute: int) -> Iterator[datetime]:
        make, from_ordinal = _REAL[0], _REAL[1].fromordinal  # real classes, bound once
        matcher = self._matcher
        assert matcher is not None
        zone = self.zone
        minutes_of_day = matcher.minutes_of_day
        hours = matcher.hours
        minutes = matcher.minutes
        count = len(minutes_of_day)
        next_day = matcher.next_day
        last_day = MAX_ABSOLUTE // DAY_SECONDS
        hit = self._next_cron(absolute)
        while hit is not None:
            last, local_seconds, fold, (start, end, offset, before) = hit
            yield self._local_datetime(local_seconds, fold)
            # Fast path: stay inside this constant-offset segment with integer arithmetic. The
            # values are those _next_cron would return: same segment, next wall-clock match.
            fold_below = start + before if before > offset else -1
            bound = min((end + offset) // DAY_SECONDS + 1, last_day)
            ordinal, second_of_day = divmod(local_seconds, DAY_SECONDS)
            if matcher.day_ok(ordinal):
                index = bisect_right(minutes_of_day, second_of_day // 60) - 1
            else:  # a vixie run after a gap can land on a day that does not match
                index = count - 1
            day = from_ordinal(ordinal)
            year, month, dom = day.year, day.month, day.day
            base = ordinal * DAY_SECONDS - offset  # the instant of local midnight
            while True:
                index += 1
                if index >= count:
                    following = next_day(ordinal + 1, bound)
                    if following is None:
                        break
                    ordinal = following
                    day = from_ordinal(ordinal)
                    year, month, dom = day.year, day.month, day.day
                    base = ordinal * DAY_SECONDS - offset
                    index = 0
                instant = base + minutes_of_day[index] * 60
                if instant >= end:
                    break
                last = instant
                if instant + offset < fold_below:
                    yield make(year, month, dom, hours[index], minutes[index], 0, 0, zone, fold=1)
                else:
                    yield make(year, month, dom, hours[index], minutes[index], 0, 0, zone)
            # Slow path across a segment boundary: exactly what next_after does.
            hit = self._next_cron(last)


def _rebuild(text: str, time_zone: str, dst_policy: str) -> Schedule:
    return parse_schedule(text, time_zone, dst_policy=dst_policy)


@functools.lru_cache(maxsize=512)
def _parse_cached(text: str, time_zone: str, dst_policy: str) -> Schedule:
    return Schedule(text, time_zone, dst_policy=dst_policy)


def parse_schedule(
    text: str, time_zone: str = DEFAULT_ZONE_NAME, *, dst_policy: str = DEFAULT_DST_POLICY
) -> Schedule:
    """Parse a job's ``schedule`` and ``timeZone`` into a :class:`Schedule`.

    unix-cron: exactly five whitespace-separated fields, minute (0-59), hour
    (0-23), day of month (1-31), month (1-12 or ``JAN``-``DEC``), day of week (0-7 or
    ``SUN``-``SAT``; 0 and 7 are Sunday). Each field is a comma list of ``*``, ``a``,
    ``a-b``, ``*/n``, ``a-b/n`` and ``a/n``; ``a/n`` means ``a-max/n`` as in vixie cron and
    croniter (max is 6 for day of week). Names are case-insensitive, also in ranges and lists;
    ``SUN`` at the end of a range means 7, so ``mon-sun`` is every day. Steps larger
    than the field select only the range's first value. Day of month and day of week: a field
    is unrestricted only when it is exactly ``*``; ``*/1`` or ``1-31`` count as restricted, and
    when both are restricted the job fires when either matches. Rejected: ``L``,
    ``W``, ``#``, ``?``, ``@`` macros, values out of range, ``a-b`` with a > b, step 0, empty
    fields or list items, and any other number of fields.

    English-like (the subset the emulator supports), case-insensitive:

    * ``every N minutes|mins|hours``: every N minutes counted from the instant asked about
      (``next_after(t)`` is ``t + N`` rounded down to the minute). N from 1 up to 366 days.
    * ``every N minutes|mins|hours from HH:MM to HH:MM``: each day at the window start and
      every N minutes after it while not past the end (inclusive), in wall-clock time. A window
      whose end is before its start runs past midnight.
    * ``every N minutes|mins|hours synchronized``: aligned to local midnight (every N minutes
      from 00:00); N must divide 24 hours evenly. Cannot be combined with a window.
    * ``every day HH:MM`` and ``every <weekday>[,<weekday>...] HH:MM`` with full names or
      three-letter abbreviations (``every mon,wed,fri 09:00``).
    * App Engine cron's calendar forms: ``<ordinals> <weekdays> [of <months>] HH:MM``, the
      ordinals ``1st``..``5th`` or ``first``..``fifth`` counting the weekday's weeks of the
      month (``1st,3rd monday of month 09:00``; the 1st is within days 1-7);
      ``every <weekdays>|day of <months> HH:MM``; and ``<days> of <months> HH:MM``, days of
      the month with or without their suffix (``1,15th of month 00:00``). ``<months>`` is
      ``month`` (every month) or a list of full or three-letter names (``jan,april``).

    Anything else (``every 5 minutes from 10:00``, ``last friday of month 09:00``) is rejected.

    Parsed schedules are cached; equal arguments may return the same object.

    :param text: the schedule string.
    :param time_zone: the job's ``timeZone`` (IANA name, see
        :func:`~scheduler_emulator.domain.timezones.resolve_time_zone`); ``""`` means ``Etc/UTC``.
    :param dst_policy: ``"absolute"`` (the default) or ``"vixie"`` (fixed-time jobs fire
        once after a spring-forward gap and once in a fall-back overlap). English-like interval
        forms never count as fixed-time; ``every day HH:MM``, weekday and calendar forms do.
    :raises InvalidArgument: ``Schedule or time zone is invalid.`` with a ``schedule`` field
        violation whose description names the bad value or part, or a ``timeZone`` violation
        for a bad zone.
    :raises ValueError: when ``dst_policy`` is neither ``"absolute"`` nor ``"vixie"``.
    :return: the schedule.
    """
    if dst_policy not in DST_POLICIES:
        raise ValueError(f"dst_policy must be 'absolute' or 'vixie'; got {dst_policy!r}.")
    if isinstance(text, str) and isinstance(time_zone, str):
        return _parse_cached(text, time_zone, dst_policy)
    return Schedule(text, time_zone, dst_policy=dst_policy)
