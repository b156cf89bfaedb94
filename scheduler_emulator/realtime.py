"""Real time and real datetime objects, whatever freezegun is doing.

The pytest plugin freezes time (with freezegun) so that a mounted app sees the virtual instant,
and users freeze time in their own tests. None of that may reach the emulator's own arithmetic:
fire times, UTC offsets, deadlines and backoffs are computed on real ``datetime`` objects and
real clocks (issue: a ``FakeDatetime`` drops ``fold`` in arithmetic, which moved fall-back fire
times by a day and poisoned the time-zone cache).

How: freezegun swaps the ``datetime.datetime`` class and the ``time`` functions for fakes, in
the ``datetime`` and ``time`` modules and in every loaded module's attributes that *are* the
real objects. This module finds the real ones even when it is imported inside a freeze
(``FakeDatetime`` subclasses the real class; freezegun keeps its real time functions) and keeps
them inside a tuple, where freezegun does not look. It imports only the standard library, so
the target-side helpers use it too::

    >>> from freezegun import freeze_time
    >>> with freeze_time("2001-01-01"):
    ...     now().year > 2001, type(now()) is REAL_DATETIME
    (True, True)
"""

from __future__ import annotations

import datetime as _datetime
import sys
import time as _time
from collections.abc import Callable
from datetime import UTC
from typing import Any

__all__ = [
    "CLASSES",
    "REAL_DATETIME",
    "date_from_ordinal",
    "datetime_from_ordinal",
    "new_date",
    "new_datetime",
    "now",
    "real_monotonic",
    "real_time",
    "unfreeze",
]


def _unfrozen(cls: type) -> type:
    """The standard-library class behind ``cls`` (freezegun's fakes subclass it)."""
    return next((c for c in cls.__mro__ if c.__module__ == "datetime"), cls)


def _real_functions() -> tuple[Callable[[], float], Callable[[], float]]:
    time, monotonic = _time.time, _time.monotonic
    api = sys.modules.get("freezegun.api")
    if api is not None and getattr(time, "__module__", "") == "freezegun.api":
        time, monotonic = api.real_time, api.real_monotonic  # imported inside a freeze
    return time, monotonic


#: The real ``(datetime, date)`` classes. Inside a tuple: freezegun replaces module attributes
#: that *are* the real objects, but does not look into tuples. Hot loops bind them to locals.
CLASSES: tuple[type[_datetime.datetime], type[_datetime.date]] = (
    _unfrozen(_datetime.datetime),
    _unfrozen(_datetime.date),
)
_FUNCTIONS = _real_functions()

#: The real ``datetime.datetime`` class (a fresh name bound to it would be patched; use
#: :func:`new_datetime` and the helpers below to make instances).
REAL_DATETIME = CLASSES[0]


def real_time() -> float:
    """Real seconds since the Unix epoch, never frozen."""
    return _FUNCTIONS[0]()


def real_monotonic() -> float:
    """Real monotonic seconds, never frozen."""
    return _FUNCTIONS[1]()


def now() -> _datetime.datetime:
    """The real current instant as an aware UTC datetime (a real ``datetime``)."""
    return CLASSES[0].fromtimestamp(_FUNCTIONS[0](), UTC)


def new_datetime(*args: Any, **kwargs: Any) -> _datetime.datetime:
    """``datetime.datetime(*args, **kwargs)`` with the real class, even inside a freeze."""
    return CLASSES[0](*args, **kwargs)


def datetime_from_ordinal(ordinal: int) -> _datetime.datetime:
    """``datetime.datetime.fromordinal(ordinal)`` with the real class (naive midnight)."""
    return CLASSES[0].fromordinal(ordinal)


def date_from_ordinal(ordinal: int) -> _datetime.date:
    """``datetime.date.fromordinal(ordinal)`` with the real class."""
    return CLASSES[1].fromordinal(ordinal)


def new_date(year: int, month: int, day: int) -> _datetime.date:
    """``datetime.date(year, month, day)`` with the real class."""
    return CLASSES[1](year, month, day)


def unfreeze(value: _datetime.datetime) -> _datetime.datetime:
    """Return ``value`` as a real ``datetime`` (the same instant, zone and fold).

    A ``FakeDatetime`` (made while freezegun was active) loses ``fold`` in arithmetic and zone
    conversions; everything the emulator keeps goes through here at its boundary.
    """
    if type(value) is CLASSES[0]:
        return value
    return CLASSES[0](
        value.year, value.month, value.day, value.hour, value.minute, value.second,
        value.microsecond, value.tzinfo, fold=value.fold,
    )  # fmt: skip
