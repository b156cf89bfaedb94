"""The time a handler reads while the plugin delivers: the virtual instant, on every clock.

The ``cloud_scheduler`` fixture shows a mounted app (and a server in the test's process) the
emulator's virtual instant with freezegun. Left alone, freezegun's clocks disagree with each
other in two cases (freezegun issues #89, #314, #405, #506):

- **a local zone other than UTC** (``TZ=Asia/Kolkata``): its naive ``datetime.now()``,
  ``datetime.today()``, ``date.today()`` and ``datetime.fromtimestamp(t)`` read the UTC wall
  time, while its ``time.localtime()`` subtracts the zone's *standard* offset (wrong by an hour
  under daylight saving time); its ``tz_offset`` option fixes the first and breaks
  ``datetime.now(UTC)`` instead;
- **the repeated hour of a fall-back day**: ``datetime.now(ZoneInfo("America/New_York"))`` at
  06:30Z on 2024-11-03 says 01:30 with ``fold=0`` (the first 01:30, an hour early), and so
  does ``datetime.now(UTC).astimezone(…)`` (every result freezegun wraps drops ``fold``).

The monotonic clocks (``time.monotonic()``, ``time.perf_counter()``) start at the frozen
instant and run in real time while it stays frozen, so that a handler's time budget ends; they
never go back, even when a handler's real seconds outrun the virtual gap to the next delivery.

:func:`freeze` starts freezegun and, while it is active, answers those calls from the frozen
instant through the real ``datetime`` and ``time`` functions, which know the process's zone,
its daylight saving time and ``fold``: every clock a handler reads agrees with
``time.time()``, on the thread that calls the handler or on a worker thread it hands work to
(freezegun alone gives real time to a call made within 5 frames of a ``threading`` one).
``time.time()``, ``datetime.now(UTC)``, ``utcnow()`` and ``time.gmtime()`` were right already
and are left to freezegun. A freeze the test starts itself with a
``tz_offset`` keeps freezegun's own arithmetic. The clocks grpc, google-api-core and
google-auth read themselves (call and retry deadlines, token expiry) stay real
(:data:`REAL_TIME_MODULES`).

A class that subclasses ``datetime`` in a module first imported while freezegun runs subclasses
freezegun's ``FakeDatetime`` instead, and every real ``datetime`` then passes its ``isinstance``
check for good: Google's ``DatetimeWithNanoseconds`` did, and Firestore (the run-once guard's
store) failed with ``'datetime.datetime' object has no attribute 'timestamp_pb'``.
:func:`freeze` imports such modules first (:data:`DATETIME_SUBCLASSES`, those installed).
"""

from __future__ import annotations

import contextlib
import datetime as _datetime
import functools
import importlib
import threading
import time as _time
from asyncio.base_events import BaseEventLoop
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from freezegun import api as _freezegun
from freezegun import freeze_time

__all__ = ["MonotonicFloor", "freeze"]

#: Modules whose classes subclass ``datetime``, imported before a freeze (see above).
DATETIME_SUBCLASSES = ("google.api_core.datetime_helpers",)
#: Client libraries whose own clocks stay real under a freeze (added to freezegun's ignore
#: list, which has Google's older ``google.gax``): the deadlines grpc sets on a call and
#: google-api-core's retry and google-auth's token deadlines. Frozen at an instant before the
#: real one, every call of a Firestore client (the run-once guard's store) was past its
#: deadline, and was retried until the attempt's own deadline ended it.
REAL_TIME_MODULES = ["grpc", "google.api_core", "google.auth"]


@functools.cache
def _import_datetime_subclasses() -> None:
    """Import :data:`DATETIME_SUBCLASSES` (those installed), once per process: a freeze comes
    with every delivery, and a missing module would be searched for each time."""
    for module in DATETIME_SUBCLASSES:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def _frozen_timestamp() -> float:
    """The frozen instant in seconds since the Unix epoch (freezegun keeps it as naive UTC)."""
    return _freezegun.get_current_time().replace(tzinfo=_datetime.UTC).timestamp()


def _fake(value: _datetime.datetime) -> Any:
    """``value`` as freezegun's ``FakeDatetime``, keeping ``fold`` (freezegun's own drops it)."""
    return _freezegun.FakeDatetime(
        value.year, value.month, value.day, value.hour, value.minute, value.second,
        value.microsecond, value.tzinfo, fold=value.fold,
    )  # fmt: skip


def _ours_or(original: Callable[..., Any], ours: Callable[..., Any]) -> Callable[..., Any]:
    """``ours`` while a freeze is active and keeps freezegun's default zero ``tz_offset``
    (:func:`freeze`'s, or one nested in it), else ``original``."""

    def choose(*args: Any, **kwargs: Any) -> Any:
        active = _freezegun.freeze_factories and not _freezegun.tz_offsets[-1]
        return (ours if active else original)(*args, **kwargs)

    return choose


class MonotonicFloor:
    """The highest monotonic reading (ns) a test's handlers got, kept across its freezes (one
    per clock move), so that ``time.monotonic()`` never goes back (trial 131: a retry a
    virtual second after an attempt whose handler worked 2 real seconds read 1 s less). Its lock
    is re-entrant: a finalizer the cyclic collector runs inside a reading may read the clock too
    (a suite's ASGI test hung on a plain lock)."""

    def __init__(self) -> None:
        self.ns = 0
        self.lock = threading.RLock()


def _corrections(floor: MonotonicFloor) -> dict[tuple[Any, str], Any]:
    """The replacements installed on freezegun's fakes while :func:`freeze` is active."""
    fake_datetime, fake_date = _freezegun.FakeDatetime, _freezegun.FakeDate
    # (read from freezegun's module: it is the one module freezegun's patching skips)
    real_datetime, real_localtime = _freezegun.real_datetime, _freezegun.real_localtime

    # The real class's fromtimestamp: local naive time without tz, that zone's time with it,
    # fold set on a repeated hour either way.
    def now(tz: _datetime.tzinfo | None = None) -> Any:
        return _fake(real_datetime.fromtimestamp(_frozen_timestamp(), tz))

    def fromtimestamp(t: float, tz: _datetime.tzinfo | None = None) -> Any:
        return _fake(real_datetime.fromtimestamp(t, tz))

    def localtime(t: float | None = None) -> _time.struct_time:
        """``time.localtime`` on the frozen instant, with the zone's real offset and DST flag."""
        if t is not None:
            return real_localtime(t)
        if _freezegun._should_use_real_time():  # a module on freezegun's ignore list
            return real_localtime()
        return real_localtime(_frozen_timestamp())

    frozen_ns, real_ns = _freezegun._get_fake_monotonic_ns, _freezegun.real_monotonic_ns
    moved = [-1, 0, 0]  # the frozen instant last read (ns), the real time then, the reading then

    def monotonic_ns() -> int:
        """From each frozen instant (or the last reading, when a handler's real time ran past
        it), plus the real time since (ns): a time budget in a handler ends (trial 109: ``while
        time.monotonic() < deadline`` never did), the next delivery starts from its own
        instant (trial 131: the real time of every delivery of a clock move added up), and the
        clock never goes back (trial 131) nor slows (trial 133: a retry's 0.5 s read 0.1 s)."""
        with floor.lock:
            if (frozen := frozen_ns()) != moved[0]:
                moved[:] = frozen, real_ns(), max(frozen, floor.ns)
            floor.ns = max(floor.ns, moved[2] + real_ns() - moved[1])
            return floor.ns

    # The originals are bound to the fake class already: installed as staticmethods, the
    # replacements take no ``cls``; ``timestamp`` stays a method (naive: read as local time).
    return {
        (fake_datetime, "now"): staticmethod(_ours_or(fake_datetime.now, now)),
        (fake_datetime, "today"): staticmethod(_ours_or(fake_datetime.now, now)),
        (fake_datetime, "fromtimestamp"): staticmethod(
            _ours_or(fake_datetime.fromtimestamp, fromtimestamp)
        ),
        (fake_datetime, "timestamp"): _ours_or(fake_datetime.timestamp, real_datetime.timestamp),
        (fake_date, "today"): staticmethod(
            _ours_or(fake_date.today, lambda: _freezegun.date_to_fakedate(now().date()))
        ),
        # freezegun installs whatever its module's ``fake_localtime`` is at start (in ``time``
        # and in every module that imported ``localtime``), and its ``strftime`` calls it.
        (_freezegun, "fake_localtime"): _ours_or(_freezegun.fake_localtime, localtime),
        # (read by freezegun's monotonic, perf_counter and their _ns forms)
        (_freezegun, "_get_fake_monotonic"): _ours_or(
            _freezegun._get_fake_monotonic, lambda: monotonic_ns() / 1e9
        ),
        (_freezegun, "_get_fake_monotonic_ns"): _ours_or(frozen_ns, monotonic_ns),
        # (what astimezone, arithmetic and freezegun's own now wrap their results with: trial
        # 131's datetime.now(UTC).astimezone(ZoneInfo) read the repeated hour's first 01:30)
        (_freezegun, "datetime_to_fakedatetime"): _ours_or(
            _freezegun.datetime_to_fakedatetime, _fake
        ),
    }


@contextmanager
def freeze(instant: _datetime.datetime, floor: MonotonicFloor | None = None) -> Iterator[Any]:
    """Freeze time for the app at ``instant`` (aware) with every clock agreeing; yield
    freezegun's factory (``.move_to(instant)`` moves the frozen instant). ``floor``: the
    monotonic clocks' lowest reading, kept across the freezes of one test (one per clock move).

    Asyncio event loops keep real monotonic time, so a handler's ``await asyncio.sleep(0.05)``
    ends after 50 ms and a server's loop in another thread never sets a timer by the frozen
    instant: their ``time`` is real from before freezegun starts until after it stops
    (freezegun's own ``real_asyncio`` covers neither its start nor its stop, and a uvicorn
    loop that read the frozen instant there never stopped). Inside a freeze the test started
    itself, freezegun's own behaviour is kept (this one nests in it).
    """
    _import_datetime_subclasses()
    nested = bool(_freezegun.freeze_factories)  # in the test's own freeze: freezegun's rules
    corrected = {} if nested else _corrections(floor or MonotonicFloor())
    corrected[(BaseEventLoop, "time")] = lambda self: _freezegun.real_monotonic()
    depth = _freezegun.call_stack_inspection_limit
    with contextlib.ExitStack() as corrections:
        for (owner, name), value in corrected.items():
            corrections.enter_context(mock.patch.object(owner, name, value))
        with freeze_time(instant, tick=False, ignore=REAL_TIME_MODULES) as factory:
            # Real time only for a call that a module on freezegun's ignore list makes itself:
            # freezegun looks 5 frames up, and a handler that a worker thread runs near
            # ``threading``'s bootstrap (``asyncio.to_thread``, Starlette's ``def`` endpoints)
            # read real ``time.time()`` beside the frozen ``datetime.now()``. Lowered only while
            # frozen: freezegun's start and stop keep its own rule.
            _freezegun.call_stack_inspection_limit = depth if nested else 1
            try:
                yield factory
            finally:
                _freezegun.call_stack_inspection_limit = depth
