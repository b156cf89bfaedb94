"""Time-zone names and constant-offset segments for fast schedule evaluation.

Two things live here:

* :func:`resolve_time_zone` turns a job's ``timeZone`` string into a :class:`zoneinfo.ZoneInfo`,
  accepting exactly what the emulator accepts (IANA names, ``utc`` in any case;
  legacy abbreviations such as ``EST`` refused) and raising the API error otherwise.
* :func:`segment_at` answers "which UTC offset does this zone have at this instant, since when,
  and until when?" so that :mod:`scheduler_emulator.domain.schedule` can turn wall-clock matches
  into
  instants with integer arithmetic instead of one ``zoneinfo`` conversion per candidate.

Instants are *absolute seconds*: ``date.toordinal() * 86400 + seconds since midnight`` of the
instant in UTC (an integer count that starts at 0001-01-01, chosen so that local wall-clock
seconds, computed the same way from a local date and time, are ``absolute + utc_offset``).

How segments are found: ``zoneinfo`` does not expose its transition table, so for each UTC year
the zone's offset is sampled once a day (from two days before the year starts to its end) and
every change between two samples is located to the second by bisection. A zone that changed its
offset *and changed it back* within one day would be missed; no zone in the tz database does
that (the closest such pair, Africa/Freetown in 1939, is four days apart). Results are cached
per ``(zone, year)``; the first use of a zone-year costs about half a millisecond.
"""

from __future__ import annotations

import difflib
import functools
import zoneinfo
from bisect import bisect_right
from datetime import UTC, date, timedelta

from ..realtime import date_from_ordinal, datetime_from_ordinal, new_date
from .errors import INVALID_SCHEDULE_MESSAGE, InvalidArgument, cut_words

__all__ = [
    "DAY_SECONDS",
    "DEFAULT_ZONE_NAME",
    "LEGACY_ZONE_NAMES",
    "MAX_ABSOLUTE",
    "MIN_ABSOLUTE",
    "resolve_time_zone",
    "segment_at",
]

#: Seconds in a day.
DAY_SECONDS = 86400
#: The zone used when a job names none.
DEFAULT_ZONE_NAME = "Etc/UTC"
#: tz-database names that are legacy abbreviations or POSIX-style rules rather than regions
#: (the real service rejects ``EST``). Rejected even though ``zoneinfo`` knows them.
LEGACY_ZONE_NAMES = frozenset(
    {
        "EST",
        "MST",
        "HST",
        "EST5EDT",
        "CST6CDT",
        "MST7MDT",
        "PST8PDT",
        "CET",
        "MET",
        "EET",
        "WET",
    }
)
#: Files in the zoneinfo directory that are not zones a job can name.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})
_UTC_SPELLINGS = frozenset({"utc", "etc/utc"})

#: Smallest and largest absolute second the schedule code works with (one day inside the range
#: :class:`datetime.datetime` can represent, so that zone conversions never overflow).
MIN_ABSOLUTE = (date.min.toordinal() + 1) * DAY_SECONDS
MAX_ABSOLUTE = date.max.toordinal() * DAY_SECONDS - DAY_SECONDS


@functools.cache
def _known_zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def resolve_time_zone(name: str) -> zoneinfo.ZoneInfo:
    """Return the zone a job's ``timeZone`` names, applying the emulator's rule.

    Accepted: any IANA tz-database name the system knows, spelled exactly (case matters, as in
    the tz database); ``utc`` and ``etc/utc`` in any letter case; the empty string, meaning
    ``Etc/UTC``. Rejected: unknown names, and legacy abbreviations that are not region names
    (:data:`LEGACY_ZONE_NAMES`: ``EST``, ``MST``, ``HST``, ``EST5EDT``, ``CST6CDT``, ``MST7MDT``,
    ``PST8PDT``, ``CET``, ``MET``, ``EET``, ``WET``). Backward-compatible region links such as
    ``US/Eastern`` or ``Japan`` and the fixed ``Etc/GMT+5`` style are accepted.

    :param name: the ``timeZone`` value as the client sent it.
    :raises InvalidArgument: ``Schedule or time zone is invalid.`` with a ``timeZone`` field
        violation naming the value, when the name is not accepted.
    :return: the zone; ``Etc/UTC`` for the empty string and every spelling of UTC.
    """
    if not isinstance(name, str):
        raise InvalidArgument(
            INVALID_SCHEDULE_MESSAGE,
            field="timeZone",
            description=f"Time zone must be a string; got {name!r}.",
        )
    if name == "" or name.lower() in _UTC_SPELLINGS:
        return zoneinfo.ZoneInfo(DEFAULT_ZONE_NAME)
    if name in LEGACY_ZONE_NAMES:
        raise InvalidArgument(
            INVALID_SCHEDULE_MESSAGE,
            field="timeZone",
            description=(
                f"Time zone {name!r} is a legacy abbreviation, not an IANA region name; "
                "use a name such as 'America/New_York'."
            ),
        )
    if name in _NOT_ZONES or name not in _known_zone_names():
        zones = sorted(_known_zone_names() - _NOT_ZONES - set(LEGACY_ZONE_NAMES))
        cased = [
            f"did you mean {zone!r}? (case matters)"
            for zone in zones
            if zone.lower() == name.lower()
        ]
        near = [
            f"did you mean {zone!r}?"
            for zone in difflib.get_close_matches(name, zones, n=1, cutoff=0.8)
        ]
        # Berlin → Europe/Berlin, new_york → America/New_York (trial 72)
        cities = [z for z in zones if "/" not in name and z.lower().endswith("/" + name.lower())]
        city = [f"did you mean {' or '.join(map(repr, cities))}?"] * bool(cities)
        fallback = "use an IANA name such as 'America/New_York' or 'Etc/UTC'."
        hint = [*cased, *city, *near, fallback][0]
        raise InvalidArgument(
            INVALID_SCHEDULE_MESSAGE,
            field="timeZone",
            description=f"Unknown time zone {cut_words(name, 80)!r}; {hint}",  # (trial 181)
        )
    return zoneinfo.ZoneInfo(name)


def _offset_at(zone: zoneinfo.ZoneInfo, absolute: int) -> int:
    """Return the UTC offset in seconds that ``zone`` has at absolute second ``absolute``."""
    absolute = min(max(absolute, MIN_ABSOLUTE), MAX_ABSOLUTE)
    days, seconds = divmod(absolute, DAY_SECONDS)
    instant = datetime_from_ordinal(days).replace(tzinfo=UTC) + timedelta(seconds=seconds)
    offset = instant.astimezone(zone).utcoffset()
    assert offset is not None  # a ZoneInfo always has an offset
    return offset.days * DAY_SECONDS + offset.seconds


class _YearSegments:
    """The constant-offset segments of one zone that overlap one UTC year.

    ``starts[i]`` is the absolute second where segment ``i`` begins (a real transition, or the
    sampling start two days before the year for ``i == 0``), ``offsets[i]`` its UTC offset and
    ``previous[i]`` the offset just before it (equal to ``offsets[i]`` for ``i == 0``).
    """

    __slots__ = ("starts", "offsets", "previous", "end")

    def __init__(self, zone: zoneinfo.ZoneInfo, year: int) -> None:
        first = max(new_date(year, 1, 1).toordinal() * DAY_SECONDS - 2 * DAY_SECONDS, MIN_ABSOLUTE)
        end = min(
            (new_date(year, 12, 31).toordinal() + 1) * DAY_SECONDS,
            MAX_ABSOLUTE + 1,
        )
        offset = _offset_at(zone, first)
        self.starts = [first]
        self.offsets = [offset]
        self.previous = [offset]
        self.end = end
        left = first
        while left < end:
            right = min(left + DAY_SECONDS, end)
            target = _offset_at(zone, right)
            while target != offset:
                # Bisect (left, right] for the first second whose offset differs from `offset`.
                low, high = left, right
                while high - low > 1:
                    middle = (low + high) // 2
                    if _offset_at(zone, middle) == offset:
                        low = middle
                    else:
                        high = middle
                new = _offset_at(zone, high)
                self.starts.append(high)
                self.offsets.append(new)
                self.previous.append(offset)
                offset = new
                left = high
            left = right


@functools.lru_cache(maxsize=2048)
def _year_segments(zone: zoneinfo.ZoneInfo, year: int) -> _YearSegments:
    return _YearSegments(zone, year)


#: The segment each zone's last lookup returned (a one-entry cache per zone; replacing an entry
#: is atomic, so concurrent threads at worst recompute).
_last_segment: dict[zoneinfo.ZoneInfo, tuple[int, int, int, int]] = {}


def segment_at(zone: zoneinfo.ZoneInfo, absolute: int) -> tuple[int, int, int, int]:
    """Return the constant-offset segment of ``zone`` that contains an instant.

    :param zone: the zone.
    :param absolute: the instant in absolute seconds (module docstring), between
        :data:`MIN_ABSOLUTE` and :data:`MAX_ABSOLUTE`.
    :return: ``(start, end, offset, previous_offset)``: the zone's UTC offset is ``offset``
        seconds for every instant in ``[start, end)``; ``previous_offset`` is the offset just
        before ``start`` when ``start`` is a real transition, else ``offset``. ``end`` may be
        a year boundary rather than a transition (the next segment then has the same offset).
    """
    last = _last_segment.get(zone)
    if last is not None and last[0] <= absolute < last[1]:
        return last
    year = date_from_ordinal(absolute // DAY_SECONDS).year
    segments = _year_segments(zone, year)
    index = bisect_right(segments.starts, absolute) - 1
    end = segments.starts[index + 1] if index + 1 < len(segments.starts) else segments.end
    found = (segments.starts[index], end, segments.offsets[index], segments.previous[index])
    _last_segment[zone] = found
    return found
