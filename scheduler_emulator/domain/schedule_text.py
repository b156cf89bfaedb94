"""A unix-cron schedule read out in plain English, for the dashboard and the terminal views.

The reading is a help, not a second parser: it covers the shapes people write (fixed times,
every N minutes or hours, weekday and day-of-month lists, months) and falls back to
``"cron: <fields>"`` for anything else. English-like schedules (``every 5 minutes``) are
already English and come back as given.
"""

from __future__ import annotations

from .schedule import is_english_like

__all__ = [
    "describe_schedule",
]

_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_DAY_NAMES = {name[:3].lower(): i for i, name in enumerate(_DAYS[:7])}
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_MONTH_NAMES = {name[:3].lower(): i + 1 for i, name in enumerate(_MONTHS)}


def _number(text: str, names: dict[str, int]) -> int | None:
    if text.isdigit():
        return int(text)
    return names.get(text.lower())


def _values(field: str, names: dict[str, int] | None = None) -> list[int] | None:
    """The field's values when it is a plain list of numbers and ranges (no steps)."""
    out: list[int] = []
    for item in field.split(","):
        low_text, _, high_text = item.partition("-")
        low = _number(low_text, names or {})
        high = low if not high_text else _number(high_text, names or {})
        if low is None or high is None or high < low or high - low > 60:
            return None
        out.extend(range(low, high + 1))
    return out


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _step(field: str) -> int | None:
    if field.startswith("*/") and field[2:].isdigit() and int(field[2:]) > 0:
        return int(field[2:])
    return None


def _times(minute: str, hour: str) -> str | None:
    """The time-of-day part: ``at 02:00``, ``every 15 minutes``, ``every hour at :30``…"""
    if minute == "*" and hour == "*":
        return "every minute"
    minute_step = 1 if minute == "*" else _step(minute)
    last = 59 // (minute_step or 1) * (minute_step or 1)
    every = "every minute" if minute_step == 1 else f"every {minute_step} minutes"
    if minute_step is not None and hour == "*":  # (trial 201: */7 read as "every 7 minutes")
        return every + ("" if 60 % minute_step == 0 else f" from :00 to :{last:02d} of every hour")
    hours = _values(hour)
    if minute_step is not None and hours == list(range(hours[0], hours[-1] + 1) if hours else []):
        return f"{every} from {hours[0]:02d}:00 to {hours[-1]:02d}:{last:02d}"
    minutes = _values(minute)
    if minutes is None:
        return None
    at = "on the hour" if minutes == [0] else "at " + _join([f":{m:02d}" for m in minutes])
    if hour == "*":
        return f"every hour {at}"
    hour_step = _step(hour)
    if hour_step is not None and 24 % hour_step == 0:
        return f"every {hour_step} hours {at}" if hour_step > 1 else f"every hour {at}"
    if hour_step is not None:  # one that does not divide the day: its hours, read out
        hours = list(range(0, 24, hour_step))
    if hours is None:
        return None
    stamps = [f"{h:02d}:{m:02d}" for h in hours for m in minutes]
    if len(stamps) > 6:
        return f"at minute {_join([str(m) for m in minutes])} of hours {_join(map_str(hours))}"
    return "at " + _join(stamps)


def map_str(values: list[int]) -> list[str]:
    """``[1, 2]`` → ``["1", "2"]``."""
    return [str(v) for v in values]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _weekdays(dow: str) -> str | None:
    """The day-of-week part (``Monday to Friday``, ``on Mondays and Fridays``), ``None`` for a
    field it does not read out."""
    weekdays = _values(dow, _DAY_NAMES)
    if weekdays is None or any(d > 7 for d in weekdays):
        return None
    names = sorted({d % 7 for d in weekdays})
    if names == [1, 2, 3, 4, 5]:
        return "Monday to Friday"
    if names == [0, 6]:
        return "on Saturdays and Sundays"
    return "on " + _join([_DAYS[d] + "s" for d in names])


def describe_schedule(schedule: str) -> str:
    """Read ``schedule`` out in English.

    >>> describe_schedule("0 2 * * *")
    'at 02:00, every day'
    >>> describe_schedule("*/15 * * * *")
    'every 15 minutes'
    >>> describe_schedule("0 */6 * * *")
    'every 6 hours on the hour'
    >>> describe_schedule("*/7 * * * *")
    'every 7 minutes from :00 to :56 of every hour'
    >>> describe_schedule("0 */5 * * *")
    'at 00:00, 05:00, 10:00, 15:00 and 20:00, every day'
    >>> describe_schedule("*/30 1-3 * * *")
    'every 30 minutes from 01:00 to 03:30'
    >>> describe_schedule("30 9 * * mon-fri")
    'at 09:30, Monday to Friday'
    >>> describe_schedule("0 0 1 * *")
    'at 00:00, on the 1st of every month'
    >>> describe_schedule("0 9 1 * 1")
    'at 09:00, on the 1st of every month and on Mondays'
    >>> describe_schedule("every 5 minutes"), describe_schedule("1st monday of month 09:00")
    ('every 5 minutes', '1st monday of month 09:00')

    :param schedule: a unix-cron or English-like schedule (not validated here).
    :return: the reading, or ``"cron: …"`` for a shape it does not read out.
    """
    fields = schedule.split()
    if len(fields) != 5 or is_english_like(schedule):  # English already
        return " ".join(fields)
    minute, hour, dom, month, dow = fields
    fallback = f"cron: {' '.join(fields)}"
    times = _times(minute, hour)
    if times is None:
        return fallback
    weekdays, month_days = _weekdays(dow), _values(dom)
    if dom == "*" and dow == "*":
        days = "every day"
    elif dom == "*" and weekdays:
        days = weekdays
    elif dow == "*" and month_days:
        days = "on the " + _join([_ordinal(d) for d in month_days]) + " of every month"
    elif weekdays and month_days:  # both restricted: either matches
        days = f"on the {_join([_ordinal(d) for d in month_days])} of every month and {weekdays}"
        days = days.replace("and Monday to Friday", "and on Mondays to Fridays")
    else:
        return fallback
    if month != "*":
        months = _values(month, _MONTH_NAMES)
        if months is None or any(not 1 <= m <= 12 for m in months):
            return fallback
        shown = _join([_MONTHS[m - 1] for m in months])
        days = days.replace(" of every month", "") + f", in {shown}"
    if days == "every day" and times.startswith("every"):
        return times
    return f"{times}, {days}"
