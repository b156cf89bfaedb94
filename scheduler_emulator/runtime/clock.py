"""Clocks: the only place the emulator reads the time or waits.

The engine asks its clock for ``now()`` and waits through it; nothing else in the package calls
``datetime.now()`` or ``time.sleep``. Two clocks:

- :class:`SystemClock` — real UTC time; :meth:`~SystemClock.wait` blocks on a
  :class:`threading.Event` so that a new, earlier deadline wakes the waiter at once.
- :class:`ManualClock` — virtual time that moves only when told. :meth:`~ManualClock.advance`
  and :meth:`~ManualClock.move_to` step through every instant at which a registered
  :class:`Sleeper` (the engine) has work due, in order, set the clock to that instant, let the
  sleeper run everything due then (deliveries included), and return once all has settled::

      clock = ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))
      emulator = Emulator(clock=clock)
      clock.advance(timedelta(minutes=2))   # fires 02:00 and any retries due by 02:01

Both hand out real ``datetime`` objects and read real time whatever freezegun (which the pytest
plugin uses to show a target the virtual instant) is doing (:mod:`scheduler_emulator.realtime`).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol

from ..domain.errors import ClockError
from ..realtime import new_datetime, real_monotonic
from ..realtime import now as real_now
from ..wire import format_timestamp as iso
from ..wire import to_instant

__all__ = [
    "Clock",
    "ManualClock",
    "Sleeper",
    "SystemClock",
    "require_aware",
]

_EPOCH = new_datetime(1970, 1, 1, tzinfo=UTC)


def require_aware(value: datetime, what: str = "datetime") -> datetime:
    """Return ``value`` converted to UTC; refuse a naive datetime.

    :param value: a timezone-aware datetime.
    :param what: how to call the value in the error message.
    :raises NaiveDatetimeError: when ``value`` has no tzinfo (:func:`wire.to_instant
        <scheduler_emulator.wire.to_instant>`).
    :return: a real ``datetime`` (never freezegun's ``FakeDatetime``) in UTC.
    """
    return to_instant(value, what)


class Sleeper(Protocol):
    """What a clock drives: the engine (:class:`~scheduler_emulator.runtime.engine.Engine`)."""

    def next_due(self) -> datetime | None:
        """The earliest instant (UTC) at which work is due, or ``None`` when nothing is pending."""
        ...

    def run_due(self) -> None:
        """Run everything due at or before the clock's current instant and wait until it settles."""
        ...

    def idle(self) -> None:
        """Called when a manual clock is about to return from a move: nothing is due any more
        up to its target, so work left running in the background may be waited for."""
        ...


class Clock(Protocol):
    """The clock interface the engine uses.

    ``manual`` tells whether time moves only by :meth:`ManualClock.advance` /
    :meth:`ManualClock.move_to`.
    """

    manual: bool

    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a monotonic scale (virtual seconds for a manual clock)."""
        ...

    def wait(self, until: datetime | None, wakeup: threading.Event) -> None:
        """Block until ``until`` (``None``: indefinitely) or until ``wakeup`` is set."""
        ...

    def attach(self, sleeper: Sleeper) -> None:
        """Register the engine the clock drives (a manual clock steps it; see :class:`Sleeper`)."""
        ...


class SystemClock:
    """Real time (UTC). Never patched by freezegun."""

    manual = False

    def now(self) -> datetime:
        """Return the current real instant as an aware UTC datetime."""
        return real_now()

    def monotonic(self) -> float:
        """Return real monotonic seconds."""
        return real_monotonic()

    def wait(self, until: datetime | None, wakeup: threading.Event) -> None:
        """Block until the real instant ``until`` or until ``wakeup`` is set.

        :param until: aware datetime, or ``None`` to wait for ``wakeup`` only.
        :param wakeup: an event the engine sets when its next due instant changes.
        """
        timeout = None if until is None else max(0.0, (until - self.now()).total_seconds())
        wakeup.wait(timeout)

    def attach(self, sleeper: Sleeper) -> None:
        """Nothing to do: the engine's own thread waits on a system clock."""


class ManualClock:
    """Virtual time that moves only when told, firing every due instant in order.

    :param start: the initial instant (aware). Defaults to 2026-01-01T00:00:00Z.
    :raises NaiveDatetimeError: if ``start`` is naive.
    """

    manual = True

    def __init__(self, start: datetime | None = None) -> None:
        self._now = require_aware(start, "start") if start else new_datetime(2026, 1, 1, tzinfo=UTC)
        self._sleepers: list[Sleeper] = []
        self._lock = threading.RLock()

    def now(self) -> datetime:
        """Return the virtual instant (aware UTC)."""
        return self._now

    def monotonic(self) -> float:
        """Return virtual seconds since the Unix epoch (monotonic: the clock never goes back)."""
        return (self._now - _EPOCH).total_seconds()

    def wait(self, until: datetime | None, wakeup: threading.Event) -> None:
        """Wait for ``wakeup`` only: virtual time passes by :meth:`advance`, not by waiting."""
        wakeup.wait()

    def attach(self, sleeper: Sleeper) -> None:
        """Register ``sleeper`` so that :meth:`advance` and :meth:`move_to` step it."""
        self._sleepers.append(sleeper)

    def advance(self, delta: timedelta | float) -> datetime:
        """Move the clock forward by ``delta``, firing everything that falls due on the way.

        :param delta: a non-negative :class:`timedelta` or number of seconds.
        :raises ClockError: if ``delta`` is negative.
        :return: the new instant.
        """
        if not isinstance(delta, timedelta):
            delta = timedelta(seconds=delta)
        if delta < timedelta(0):
            raise ClockError(f"cannot advance a ManualClock by a negative amount ({delta}).")
        return self.move_to(self._now + delta)

    def move_to(self, target: datetime) -> datetime:
        """Move the clock to ``target``, firing every due instant in order on the way.

        At each instant where a sleeper has work due the clock stops, sets itself to that
        instant, and lets the sleeper run everything due (including retries that fall due by
        then) before going on. Returns when the clock is at ``target`` and nothing due remains.

        :param target: an aware datetime, not before :meth:`now`.
        :raises NaiveDatetimeError: if ``target`` is naive.
        :raises ClockError: if ``target`` is in the past.
        :return: the new instant.
        """
        target = require_aware(target, "move_to target")
        with self._lock:
            if target < self._now:
                raise ClockError(
                    f"the manual clock cannot go back: it is at {iso(self._now)}, "
                    f"{iso(target)} is earlier."
                )
            self._settle()  # what is due now (a sleeper may also note the starting instant)
            while True:  # stop at each instant where something is due, up to the target
                due = [d for d in (s.next_due() for s in self._sleepers) if d is not None]
                earliest = min(due) if due else None
                if earliest is None or earliest > target:
                    break  # nothing is left due at or before the target
                self._now = max(self._now, earliest)
                self._settle()
            self._now = target
            for sleeper in self._sleepers:
                sleeper.idle()
            return self._now

    def reset_to(self, instant: datetime) -> None:
        """Set the clock to ``instant``, backwards too, firing nothing. Only for an emulator
        with no jobs (after a reset): pending work would otherwise be due in the past.

        :raises NaiveDatetimeError: if ``instant`` is naive.
        """
        with self._lock:
            self._now = require_aware(instant, "reset_to instant")

    def settle(self) -> None:
        """Run everything due at the current instant (e.g. a job forced to run) and wait."""
        with self._lock:
            self._settle()
            for sleeper in self._sleepers:
                sleeper.idle()

    def _settle(self) -> None:
        for sleeper in self._sleepers:
            sleeper.run_due()
