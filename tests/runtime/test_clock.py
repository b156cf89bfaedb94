"""Clocks: manual time steps through every due instant in order (style: one injected clock)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from scheduler_emulator.domain.errors import ClockError
from scheduler_emulator.runtime import _clock
from scheduler_emulator.runtime._clock import ManualClock, SystemClock
from scheduler_emulator.wire import NaiveDatetimeError, to_instant

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Recorder:
    """A sleeper with fixed due instants; records the clock's time at each run."""

    def __init__(self, clock: ManualClock, due: list[datetime]) -> None:
        self.clock = clock
        self.due = sorted(due)
        self.seen: list[datetime] = []

    def next_due(self) -> datetime | None:
        return self.due[0] if self.due else None

    def run_due(self) -> None:
        while self.due and self.due[0] <= self.clock.now():
            self.due.pop(0)
            self.seen.append(self.clock.now())

    def idle(self) -> None:
        """Nothing runs in the background here."""


class TestManualClock:
    def test_an_advance_during_a_move_counts_from_where_that_move_ends(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Trial 173: an advance asked for while another thread's move was under way added
        its seconds to where that move had got to, then was refused as a move back."""
        clock, asked, moved = ManualClock(T0), threading.Event(), []
        real = _clock.advance_seconds
        monkeypatch.setattr(_clock, "advance_seconds", lambda d: asked.set() or real(d))
        second = threading.Thread(target=lambda: moved.append(clock.advance(60)))

        class Slow(Recorder):
            def run_due(self) -> None:  # at the first due instant, another advance comes
                super().run_due()
                if self.seen and second.ident is None:
                    second.start()
                    assert asked.wait(10)

        clock.attach(Slow(clock, [T0 + timedelta(hours=1)]))
        assert clock.advance(timedelta(hours=3)) == T0 + timedelta(hours=3)
        second.join(10)
        assert moved == [T0 + timedelta(hours=3, minutes=1)]

    def test_advance_stops_at_every_due_instant_in_order(self) -> None:
        clock = ManualClock(T0)
        due = [T0 + timedelta(seconds=s) for s in (30, 5, 90, 61)]
        recorder = Recorder(clock, due)
        clock.attach(recorder)
        assert clock.advance(timedelta(minutes=1, seconds=1)) == T0 + timedelta(seconds=61)
        assert recorder.seen == sorted(due)[:3]
        clock.advance(60)
        assert recorder.seen == sorted(due)

    def test_move_to_a_past_instant_is_refused(self) -> None:
        clock = ManualClock(T0)
        with pytest.raises(
            ClockError, match="the manual clock cannot go back: it is at 2026-01-01T00:00:00Z"
        ):
            clock.move_to(T0 - timedelta(seconds=1))

    @pytest.mark.parametrize(
        ("delta", "says"),
        [
            (-1, "by -1 seconds: give 0 or more"),
            (timedelta(hours=-1), "by -3600 seconds: give 0 or more"),  # not "-1 day, 23:00:00"
            (float("nan"), "by nan seconds"),
            (1e12, "by 1e+12 seconds: give 0 or more, under 10^12"),
            ("1h", "advance takes a timedelta or a number of seconds; got '1h'"),
            (True, "advance takes a timedelta or a number of seconds; got True"),
        ],
    )
    def test_an_advance_that_is_not_a_step_forward_is_refused(
        self, delta: object, says: str
    ) -> None:
        """A trial's ``advance("1h")`` was a raw TypeError from timedelta."""
        with pytest.raises(ClockError) as caught:
            ManualClock(T0).advance(delta)  # type: ignore[arg-type]
        assert says in str(caught.value)

    def test_naive_datetimes_are_refused_with_a_hint(self) -> None:
        with pytest.raises(NaiveDatetimeError, match="naive; pass a timezone-aware datetime"):
            ManualClock(datetime(2026, 1, 1))

    def test_times_are_kept_in_utc(self) -> None:
        plus_two = timezone(timedelta(hours=2))
        clock = ManualClock(datetime(2026, 1, 1, 2, tzinfo=plus_two))
        assert clock.now() == T0 and clock.now().tzinfo is UTC
        assert to_instant(datetime(2026, 1, 1, 2, tzinfo=plus_two)).tzinfo is UTC


class TestSystemClock:
    def test_now_is_aware_utc_and_unaffected_by_freezegun(self) -> None:
        from freezegun import freeze_time

        with freeze_time("2001-01-01"):
            assert SystemClock().now().year >= 2026

    def test_wait_returns_at_once_when_woken(self) -> None:
        wakeup = threading.Event()
        wakeup.set()
        clock = SystemClock()
        started = time.monotonic()
        clock.wait(clock.now() + timedelta(hours=1), wakeup)
        assert time.monotonic() - started < 5  # not the hour it was asked to wait

    def test_wait_returns_at_its_instant_when_not_woken(self) -> None:
        clock = SystemClock()
        until = clock.now() + timedelta(milliseconds=100)
        started = time.monotonic()
        clock.wait(until, threading.Event())
        assert 0.05 <= time.monotonic() - started < 5
        assert clock.now() >= until
