"""Benchmark: fire-time iteration of ``scheduler_emulator.domain.schedule`` against croniter.

Run from the repository root::

    python bench/bench_schedule.py [--repeat 5]

For each expression (all in America/New_York) it takes the fire times in one stretch without a
DST change (10 Mar 2026 – 31 Oct 2026, at most 20 000 of them), computes them with our
``iter_after``, with repeated ``next_after`` and with croniter's ``get_next``, asserts that all
three agree (croniter is compared only there because its DST behaviour differs from spec §17
P1), and prints microseconds per fire time (best of ``--repeat`` runs) and the speed-ups. It
exits non-zero when ``iter_after`` is less than 10 times as fast as croniter.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from croniter import croniter

try:
    from scheduler_emulator.domain.schedule import parse_schedule
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from scheduler_emulator.domain.schedule import parse_schedule

ZONE_NAME = "America/New_York"
EXPRESSIONS = ("* * * * *", "0 2 * * *", "*/15 9-17 * * 1-5")
MAX_FIRES = 20_000
REQUIRED_SPEEDUP = 10.0


def _stretch() -> tuple[datetime, datetime]:
    zone = ZoneInfo(ZONE_NAME)
    return datetime(2026, 3, 10, tzinfo=zone), datetime(2026, 10, 31, tzinfo=zone)


def _ours_iter(expression: str, start: datetime, count: int) -> list[datetime]:
    schedule = parse_schedule(expression, ZONE_NAME)
    result = []
    for instant in schedule.iter_after(start):
        result.append(instant)
        if len(result) == count:
            break
    return result


def _ours_next(expression: str, start: datetime, count: int) -> list[datetime]:
    schedule = parse_schedule(expression, ZONE_NAME)
    result = []
    instant: datetime | None = start
    for _ in range(count):
        assert instant is not None
        instant = schedule.next_after(instant)
        assert instant is not None
        result.append(instant)
    return result


def _croniter(expression: str, start: datetime, count: int) -> list[datetime]:
    iterator = croniter(expression, start)
    return [iterator.get_next(datetime) for _ in range(count)]


def _best(
    run: Callable[[str, datetime, int], list[datetime]],
    expression: str,
    start: datetime,
    count: int,
    repeat: int,
) -> tuple[float, list[datetime]]:
    best = float("inf")
    result: list[datetime] = []
    for _ in range(repeat):
        began = time.perf_counter()
        result = run(expression, start, count)
        best = min(best, time.perf_counter() - began)
    return best / count * 1e6, result


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table and return the exit status.

    :param argv: command-line arguments (``--repeat N``); ``None`` reads ``sys.argv``.
    :return: 0 when every expression agrees with croniter and ``iter_after`` is at least
        :data:`REQUIRED_SPEEDUP` times as fast as croniter, else 1.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (best)")
    args = parser.parse_args(argv)
    start, end = _stretch()
    print(f"zone {ZONE_NAME}, stretch {start.date()} .. {end.date()} (no DST change)")
    header = (
        f"{'expression':<20} {'fires':>6} {'iter_after':>11} {'next_after':>11} "
        f"{'croniter':>9} {'iter x':>7} {'next x':>7}"
    )
    print(header)
    print("-" * len(header))
    ok = True
    for expression in EXPRESSIONS:
        everything = _ours_iter(expression, start, MAX_FIRES + 1)
        count = min(MAX_FIRES, sum(1 for instant in everything if instant < end))
        iter_us, ours = _best(_ours_iter, expression, start, count, args.repeat)
        next_us, ours_next = _best(_ours_next, expression, start, count, args.repeat)
        cron_us, theirs = _best(_croniter, expression, start, count, max(1, args.repeat // 2))
        assert ours == ours_next, f"{expression}: iter_after and next_after disagree"
        assert ours == theirs, f"{expression}: ours and croniter disagree"
        assert [t.utcoffset() for t in ours] == [t.utcoffset() for t in theirs]
        iter_ratio, next_ratio = cron_us / iter_us, cron_us / next_us
        ok = ok and iter_ratio >= REQUIRED_SPEEDUP
        print(
            f"{expression:<20} {count:>6} {iter_us:>9.2f}µs {next_us:>9.2f}µs "
            f"{cron_us:>7.2f}µs {iter_ratio:>6.1f}x {next_ratio:>6.1f}x"
        )
    print("results agree with croniter on the whole stretch")
    if not ok:
        print(f"FAIL: iter_after is less than {REQUIRED_SPEEDUP:.0f}x as fast as croniter")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
