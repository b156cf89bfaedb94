"""Clocks: the engine asks its clock for ``now()`` and waits through it; nothing else in the
package calls ``datetime.now()`` or ``time.sleep``. Two clocks:

- :class:`SystemClock` — real UTC time; :meth:`~SystemClock.wait` blocks on a
  :class:`threading.Event` so that a new, earlier deadline wakes the waiter at once.
- :class:`ManualClock` — virtual time that moves only when told. :meth:`~ManualClock.advance`
  and :meth:`~ManualClock.move_to` step through every instant at which a registered
  :class:`Sleeper` (the engine) has work due, in order, set the clock to that instant,
  let the sleeper run everything due then (deliveries included), and return once all has
  settled::

      clock = ManualClock(datetime(2026, 9, 24, 1, 59, tzinfo=UTC))
      emulator = Emulator(clock=clock)
      clock.advance(timedelta(minutes=2))   # fires 02:00 and any retries due by 02:01

Both hand out real ``datetime`` objects and read real time whatever freezegun (which the pytest
plugin uses to show a target the virtual instant) is doing (:mod:`scheduler_emulator.realtime`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

from ..domain.errors import ClockError
from ..realtime import new_datetime, real_monotonic
from ..realtime import now as real_now
from ..wire import format_timestamp as iso
from ..wire import parse_timestamp, to_instant


class Sleeper(Protocol):
    """What a clock drives: the engine (:class:`~scheduler_emulator.Emulator`)."""

    def next_due(self) -> datetime | None:
        """The earliest instant (UTC) at which work is due, or ``None`` when nothing is pending."""

    def run_due(self) -> None:
        """Run everything due at or before the clock's current instant and wait until it settles."""

    def idle(self) -> None:
        """Called when a manual clock is about to return from a move: nothing is due any more
        up to its target, so work left running in the background may be waited for."""


class Clock(Protocol):
    """The clock interface the engine uses. Which kind runs is the engine's driver's business
    (:func:`~scheduler_emulator.runtime.pipeline.drivers.driver_for`): a :class:`ManualClock` moves
    only by :meth:`ManualClock.advance` / :meth:`ManualClock.move_to`, any other clock is real time.
    """

    def now(self) -> datetime:
        """The current instant, timezone-aware UTC."""

    def monotonic(self) -> float:
        """Seconds on a monotonic scale (virtual seconds for a manual clock)."""

    def wait(self, until: datetime | None, wakeup: threading.Event) -> None:
        """Block until ``until`` (``None``: indefinitely) or until ``wakeup`` is set."""

    def attach(self, sleeper: Sleeper) -> None:
        """Register the engine the clock drives (a manual clock steps it; see :class:`Sleeper`)."""


class SystemClock:
    """Real time (UTC). Never patched by freezegun."""

    def now(self) -> datetime:
        """Return the current real instant as an aware UTC datetime."""
        return real_now()

    def monotonic(self) -> float:
        """Return real monotonic seconds."""
        return real_monotonic()

    def wait(self, until: datetime | None, wakeup: threading.Event) -> None:
        """Block until the real instant ``until`` (aware; ``None``: indefinitely) or until
        ``wakeup`` is set (the engine sets it when its next due instant changes)."""
        timeout = None if until is None else max(0.0, (until - self.now()).total_seconds())
        wakeup.wait(timeout)

    def attach(self, sleeper: Sleeper) -> None:
        """Nothing to do: the engine's own thread waits on a system clock."""


def advance_seconds(delta: timedelta | float) -> float:
    """The seconds a manual clock's advance by ``delta`` moves it (here or in a daemon).

    :raises ClockError: naming ``delta`` when it is neither a timedelta nor a number, or is
        negative, not finite, or 10^12 seconds or more.
    """
    if isinstance(delta, bool) or not isinstance(delta, timedelta | int | float):
        raise ClockError(
            f"advance takes a timedelta or a number of seconds; got {delta!r} "
            "(timedelta(hours=1), or 3600)."
        )
    seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
    if not 0 <= seconds < 1e12:  # NaN, infinity and a negative amount too
        raise ClockError(
            f"cannot advance a ManualClock by {seconds:g} seconds: give 0 or more, under "
            "10^12 (the clock only moves forward; start it earlier for an earlier instant)."
        )
    return seconds


class ManualClock:
    """Virtual time that moves only when told, firing every due instant in order.

    :param start: the initial instant (aware). Defaults to 2026-01-01T00:00:00Z.
    :param keep: called with the virtual now whenever the clock has moved (at the end of each
        :meth:`move_to`, :meth:`reset_to` and :meth:`settle`, and at most once a real second
        during a long move), e.g. :meth:`ClockFile.write`, so that a restart resumes there.
    :raises NaiveDatetimeError: if ``start`` is naive.
    """

    def __init__(
        self, start: datetime | None = None, *, keep: Callable[[datetime], None] | None = None
    ) -> None:
        self._now = to_instant(start, "start") if start else new_datetime(2026, 1, 1, tzinfo=UTC)
        self._sleepers: list[Sleeper] = []
        self._lock = threading.RLock()
        self._keep = keep
        self._kept_at = 0.0  # real monotonic seconds of the last keep() during a move
        self._interrupted = False

    def now(self) -> datetime:
        """Return the virtual instant (aware UTC)."""
        return self._now

    def monotonic(self) -> float:
        """Return virtual seconds since the Unix epoch (monotonic: the clock never goes back)."""
        return self._now.timestamp()

    def wait(self, until: datetime | None, wakeup: threading.Event) -> None:
        """Wait for ``wakeup`` only: virtual time passes by :meth:`advance`, not by waiting."""
        wakeup.wait()

    def attach(self, sleeper: Sleeper) -> None:
        """Register ``sleeper`` so that :meth:`advance` and :meth:`move_to` step it."""
        self._sleepers.append(sleeper)

    def advance(self, delta: timedelta | float) -> datetime:
        """Move the clock forward by ``delta``, firing everything that falls due on the way.

        :param delta: a non-negative :class:`timedelta` or number of seconds.
        :raises ClockError: if ``delta`` is negative, not finite, 10^12 seconds or more, or neither
            a timedelta nor a number.
        :return: the new instant (from where a move under way in another thread ends: trial
            173's second ``clock:advance`` counted from partway and was refused as going back).
        """
        seconds = advance_seconds(delta)
        with self._lock:
            return self.move_to(self._now + timedelta(seconds=seconds))

    def move_to(self, target: datetime) -> datetime:
        """Move the clock to ``target``, stopping at every due instant in order on the way to
        run what is due there, retries included (see the module docstring).

        :param target: an aware datetime, not before :meth:`now`.
        :raises NaiveDatetimeError: if ``target`` is naive.
        :raises ClockError: if ``target`` is in the past.
        :return: the new instant.
        """
        target = to_instant(target, "move_to target")
        with self._lock:
            if target < self._now:
                raise ClockError(
                    f"the manual clock cannot go back: it is at {iso(self._now)}, "
                    f"{iso(target)} is earlier."
                )
            self._settle()  # what is due now (a sleeper may also note the starting instant)
            while not self._interrupted:  # stop at each due instant, up to the target
                earliest = min(filter(None, (s.next_due() for s in self._sleepers)), default=None)
                if earliest is None or earliest > target:
                    break  # nothing is left due at or before the target
                self._now = max(self._now, earliest)
                self._settle()
                if self._keep is not None and real_monotonic() - self._kept_at >= 1.0:
                    self._keep_now()
            if not self._interrupted:  # (stopped: the move ends at the instant it reached)
                self._now = target
                for sleeper in self._sleepers:
                    sleeper.idle()
            self._keep_now()
            return self._now

    def interrupt(self, timeout: float) -> bool:
        """Stop moving for good (the emulator is stopping): a move under way ends at the due
        instant it is at, once what runs there has run, and later moves do not move.

        :param timeout: real seconds to wait for a move under way to end.
        :return: ``True`` if no move is under way any more, ``False`` if one still is.
        """
        self._interrupted = True
        if acquired := self._lock.acquire(timeout=max(0.0, timeout)):
            self._lock.release()
        return acquired

    def reset_to(self, instant: datetime) -> None:
        """Set the clock to ``instant``, backwards too, firing nothing. Only for an emulator
        with no jobs (after a reset): pending work would otherwise be due in the past.

        :raises NaiveDatetimeError: if ``instant`` is naive.
        """
        with self._lock:
            self._now = to_instant(instant, "reset_to instant")
            self._keep_now()

    def settle(self) -> None:
        """Run everything due at the current instant (e.g. a job forced to run) and wait."""
        with self._lock:
            self._settle()
            for sleeper in self._sleepers:
                sleeper.idle()
            self._keep_now()

    def _keep_now(self) -> None:
        if self._keep is not None:
            self._kept_at = real_monotonic()
            self._keep(self._now)

    def _settle(self) -> None:
        for sleeper in self._sleepers:
            sleeper.run_due()


class ClockFile:
    """Where a manual clock's virtual now is kept in a data directory, so that a daemon
    restarted on it resumes at the instant it stopped instead of jumping to real time.

    The file holds ``{"now": "2026-03-02T14:03:00Z"}``; it is replaced atomically (written
    beside, then renamed), so a crash leaves the previous instant or the new one.

    :param path: the file (``<data dir>/manual-clock.json``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> datetime | None:
        """The kept instant, or ``None`` when there is none yet.

        :raises ClockError: when the file exists but does not hold an instant (the message
            names the file and says to move it aside or pass ``--start``).
        """
        try:
            return parse_timestamp(json.loads(self.path.read_text(encoding="utf-8"))["now"])
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ClockError(f"cannot read the manual clock's file {self.path}: {exc}.") from None
        except (ValueError, KeyError, TypeError):  # not UTF-8 or JSON, no "now", no instant
            raise ClockError(
                f"{self.path} does not hold a manual clock instant such as "
                '{"now": "2026-03-02T14:03:00Z"}; move it aside or pass --start.'
            ) from None

    def write(self, instant: datetime) -> None:
        """Keep ``instant`` (atomically). A failure to write is ignored: the store, not this
        file, is what must survive; a restart then resumes from an earlier kept instant."""
        temporary = self.path.with_name(self.path.name + ".tmp")
        with contextlib.suppress(OSError):
            temporary.write_text(json.dumps({"now": iso(instant)}), encoding="utf-8")
            os.replace(temporary, self.path)
